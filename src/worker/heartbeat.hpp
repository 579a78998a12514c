// Keeps the leases of running jobs alive from a thread with a connection of its own, so
// that a slow claim or ack on the main connection never delays an extend.
#pragma once

#include <atomic>
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

namespace queuectl {

class Heartbeat {
 public:
  // Extends every tracked lease to now + `lease` every `lease / 3`. `wake` is called
  // (from the heartbeat thread) when a lease is found lost; `log` gets trouble reports.
  Heartbeat(DbUrl url, Duration lease, std::function<void()> wake,
            std::function<void(const std::string&)> log);
  ~Heartbeat();

  void track(std::int64_t id, const std::string& token);
  void untrack(std::int64_t id);
  // Ids whose leases were lost since the last call (token refused by extend).
  std::set<std::int64_t> take_lost();

 private:
  void loop();

  DbUrl url_;
  Duration lease_;
  std::function<void()> wake_;
  std::function<void(const std::string&)> log_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::map<std::int64_t, std::string> tokens_;
  std::set<std::int64_t> lost_;
  std::thread thread_;
};

}  // namespace queuectl
