// What a worker does for its queue besides running jobs, so that a fleet of workers needs
// no system cron: fires the queue's due schedules, returns its expired leases, and deletes
// its finished jobs past the queue's retention (`queue Q --retain DUR`). A thread with a
// connection of its own; each step bounded per turn and safe with any number of workers
// doing it at once (the schedules' locked pick and compare-and-swap, the reaper's and the
// purge's re-checking batches).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/db_url.hpp"

namespace queuectl {

// How often and how much. Reaping starts 15 s after the worker and comes every half lease
// (the worker's --lease), between 1s and 15s; purging every tenth of the queue's retention, between
// 1s and 60s (read again at each purge, so a retention set later is applied within a minute).
struct HousekeepingPlan {
  std::chrono::milliseconds fire_every{1000};
  int fire_batch = 100;  // schedules per turn
  std::chrono::milliseconds reap_every{15000};
  int reap_batch = 500;    // expired leases per turn
  int purge_batch = 1000;  // finished jobs per turn

  static HousekeepingPlan for_lease(std::chrono::milliseconds lease);
  // The pause after a purge: a tenth of the retention (none: 60s), between 1s and 60s.
  static std::chrono::milliseconds purge_every(std::optional<std::chrono::milliseconds> retain);
};

class Database;

// Fires the due schedules of `queue` (at most `batch`), once: what each turn of the
// housekeeping does first, and what `work --drain` does before its first claim, so that a
// tick already due makes its job before the worker decides nothing is due. `log` gets a
// line per fire; `last_errors` keeps the schedules that could not fire, said when they change.
void fire_due_schedules(Database& db, const std::string& queue, int batch,
                        const std::function<void(const std::string&)>& log,
                        std::string& last_errors);

class Housekeeping {
 public:
  // `log` gets one line per fire, reap and purge that did something, and trouble (once per
  // outage); `debug` what only -v shows.
  Housekeeping(DbUrl url, std::string queue, HousekeepingPlan plan,
               std::function<void(const std::string&)> log);
  ~Housekeeping();

 private:
  void loop();
  void turn(class Database& db, std::chrono::steady_clock::time_point now);

  DbUrl url_;
  std::string queue_;
  HousekeepingPlan plan_;
  std::function<void(const std::string&)> log_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::chrono::steady_clock::time_point next_reap_{}, next_purge_{};
  std::string last_errors_;  // the schedules that could not fire, as last said
  std::thread thread_;
};

}  // namespace queuectl
