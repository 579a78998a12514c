// What `queuectl top` shows, read in one snapshot by statements that stay cheap however
// many done jobs the table keeps. It only reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/database.hpp"

namespace queuectl {

struct TopQueue {
  std::string queue;
  std::int64_t ready = 0;      // due now
  std::int64_t scheduled = 0;  // ready with a future run_at
  std::int64_t waiting = 0;    // ready, but waiting for other jobs (enqueue --after)
  std::int64_t processing = 0;
  std::int64_t expired = 0;  // processing with a lapsed lease
  std::int64_t failed = 0;
  std::int64_t done_last_minute = 0;  // done (status 2) in the last 60 seconds
  std::optional<double> oldest_ready_age_seconds;
  bool paused = false;
  bool strict_groups = false;
  std::optional<std::int64_t> max_processing;  // the queue's concurrency limit, if any
  std::optional<std::string> rate;             // its rate limit ("20/s"), if any
  std::optional<std::int64_t> retain_ms;       // its retention (queue --retain), if any
  bool keep_done = true;                       // false: its acks delete (queue --keep-done off)
};

struct TopWorker {
  std::optional<std::string> worker;  // locked_by; none when the rows name no worker
  std::int64_t leases = 0;
  std::int64_t expired = 0;
};

struct TopFailure {
  std::int64_t id = 0;
  std::string queue;
  int attempts = 0;
  std::optional<double> age_seconds;  // since it failed (finished_at)
  std::string error;                  // the start of last_error (400 characters at most)
};

// A running job that reported progress or a note (extend, or a command under `work`).
struct TopProgress {
  std::int64_t id = 0;
  std::string queue;
  std::optional<std::string> worker;
  std::optional<int> progress;
  std::optional<std::string> note;
};

// A schedule whose tick is overdue past its misfire window: nothing is firing it.
struct TopLateSchedule {
  std::string name;
  std::string queue;
  std::int64_t late_seconds = 0;
};

struct TopSnapshot {
  std::string now;  // the database clock, RFC 3339
  // Queues with jobs ready, scheduled, processing or failed, jobs done in the last minute,
  // or a setting that is not the default; by name.
  std::vector<TopQueue> queues;
  std::vector<TopWorker> workers;               // most leases first
  std::vector<TopFailure> failures;             // newest first
  std::vector<TopProgress> progress;            // the latest reported first
  std::vector<TopLateSchedule> late_schedules;  // most overdue first
};

class TopRepository {
 public:
  explicit TopRepository(Database& db) : db_(db) {}

  // One frame's data, as of one instant: at most `workers` workers and `failures` failures.
  TopSnapshot read(int workers, int failures);

 private:
  Database& db_;
};

}  // namespace queuectl
