// Keeps the leases of running jobs alive from a thread with a connection of its own, so
// that a slow claim or ack on the main connection never delays an extend.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "core/db_url.hpp"
#include "core/duration.hpp"
#include "core/job.hpp"

namespace queuectl {

class Heartbeat {
 public:
  // Extends every tracked lease to now + `lease` every `lease / 3`. `wake` is called
  // (from the heartbeat thread) when a lease is found lost; `log` gets trouble reports.
  // A lease counts as lost when extend refuses its token, and also when no extend of it
  // has succeeded for so long that less than one and a half beats of the lease are left
  // (a row lock held elsewhere, a lost connection): the job is then given up before the
  // reaper could hand it to another worker, never run on unconfirmed.
  Heartbeat(DbUrl url, Duration lease, std::function<void()> wake,
            std::function<void(const std::string&)> log);
  ~Heartbeat();

  // Why a lease is no longer kept: an extend refused its token (another holder, or the
  // job was deleted), or no extend could be confirmed in time (the database did not
  // answer, or a row lock held elsewhere): given up while the lease is still ours.
  enum class Lapse { refused, unconfirmed };

  void track(std::int64_t id, const std::string& token);
  // Stops keeping the lease; a report not yet written is dropped.
  void untrack(std::int64_t id);
  // A tracked job's command reported: written soon (at most every kReportGap), with an
  // extend of its lease in the same statement; the newest of each part wins meanwhile. A
  // job not tracked is ignored.
  void report(std::int64_t id, const JobReport& report);
  // A report of job `id` waits to be written: the worker finishes the job after it.
  bool reporting(std::int64_t id);
  static constexpr std::chrono::milliseconds kReportGap{100};
  // The leases ended since the last call, and why. Each is no longer tracked.
  std::map<std::int64_t, Lapse> take_lost();

 private:
  void loop();

  DbUrl url_;
  Duration lease_;
  std::function<void()> wake_;
  std::function<void(const std::string&)> log_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  struct Tracked {
    std::string token;
    // When the last confirmed extend was sent (or the job tracked, just after its claim):
    // the lease lasts at least until this + lease.
    std::chrono::steady_clock::time_point confirmed;
  };
  std::map<std::int64_t, Tracked> tokens_;
  std::map<std::int64_t, JobReport> reports_;  // waiting to be written
  std::set<std::int64_t> writing_;             // taken by the thread, being written
  bool reported_ = false;                      // wakes the thread before the beat
  std::map<std::int64_t, Lapse> lost_;
  std::thread thread_;
};

}  // namespace queuectl
