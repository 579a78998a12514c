// `queuectl work`: turns any command into a queue worker. Claims jobs, runs the command
// once per job with the payload on stdin, keeps the lease alive while it runs, and acks
// or fails by its exit code.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/duration.hpp"
#include "db/database.hpp"

namespace queuectl {

struct WorkerOptions {
  std::string queue;
  std::vector<std::string> command;
  int concurrency = 1;
  int batch = 0;  // jobs per claim at most; 0 = the free slots and those claimed ahead
  Duration lease = Duration::seconds(30);
  std::optional<Duration> timeout;  // per job
  std::int64_t max_jobs = 0;        // 0 = no limit
  bool drain = false;
  Duration grace = Duration::seconds(30);
  Duration kill_after = Duration::seconds(5);  // SIGTERM -> SIGKILL
  // Idle polling: the first pause, growing to idle_max (--poll-interval). While the worker
  // listens for new jobs (PostgreSQL), it pauses idle_max at once.
  Duration idle_min = Duration(std::chrono::milliseconds(100));
  Duration idle_max = Duration::seconds(5);
  std::string worker;
  // Fire the queue's due schedules, reap its expired leases and purge its finished jobs past
  // retention, from a thread with a connection of its own (src/worker/housekeeping.hpp).
  bool housekeeping = true;
  // The largest checkpoint a command may report (--max-payload).
  std::size_t max_checkpoint = 1024 * 1024;
};

struct WorkerSummary {
  std::int64_t done = 0, failed = 0, timed_out = 0, released = 0, lost = 0;
  std::string error;  // --drain: the claim error that ended it (one a retry would not mend)
  std::int64_t total() const { return done + failed + timed_out + released + lost; }
};

// Runs until --drain finds nothing, --max-jobs is reached, or SIGTERM/SIGINT (then
// finishes or releases running jobs, and releases at once those claimed ahead). While jobs
// are short, claims take up to concurrency / 2 jobs beyond the free slots, held under their
// leases until a slot frees; the acks of jobs that finished together go in one statement. `db`
// becomes the worker's connection for claims and finishing writes (opened again from its URL after
// connection trouble); the heartbeat, the housekeeping and, on PostgreSQL, the listener open one
// each: four at most.
// `log` receives one line per job and event, `debug` what only -v shows (wake-ups), `job_stderr`
// each line a job's command writes to its stderr, prefixed `job ID: ` (none: the lines are only
// kept for last_error).
WorkerSummary run_worker(std::unique_ptr<Database> db, const WorkerOptions& options,
                         const std::function<void(const std::string&)>& log,
                         const std::function<void(const std::string&)>& debug = {},
                         const std::function<void(const std::string&)>& job_stderr = {});

}  // namespace queuectl
