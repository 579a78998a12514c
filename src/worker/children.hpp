// The commands `work` runs, one per job: started with the job on stdin and in the
// environment, watched by their pipes and their timers (--timeout, then SIGKILL after
// --kill-after), and handed back to the worker once they have ended and their output has
// been read. One place for a job's clock: every timer a running job has lives here.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/duration.hpp"
#include "core/job.hpp"
#include "core/process.hpp"
#include "core/subprocess.hpp"

namespace queuectl {

struct Running {
  using Clock = std::chrono::steady_clock;
  Job job;
  std::unique_ptr<Subprocess> child;
  // Set when the command's exit status could not be learned (waitpid failed).
  std::optional<std::string> wait_error;
  Clock::time_point started;
  std::optional<Clock::time_point> deadline;  // --timeout
  std::optional<Clock::time_point> kill_at;   // SIGKILL after SIGTERM
  bool timed_out = false;
  bool lease_lost = false;
  bool lease_unconfirmed = false;  // lost because no extend was confirmed in time
  bool release_on_exit = false;
};

class Children {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    std::vector<std::string> command;
    std::optional<Duration> timeout;             // per job
    Duration kill_after = Duration::seconds(5);  // SIGTERM -> SIGKILL
    // Each line a command writes to its stderr, prefixed "job ID: " (none: only kept for
    // the job's last_error).
    std::function<void(const std::string&)> job_stderr;
    // Each line a command writes to its report descriptor (QUEUECTL_REPORT_FD), with its
    // job's id (none: no report descriptor).
    std::function<void(std::int64_t, const std::string&)> job_report;
  };

  explicit Children(Options options);

  // Starts job's command; throws Error when it cannot (out of processes or descriptors).
  void start(const Job& job);
  std::size_t size() const { return running_.size(); }
  bool empty() const { return running_.empty(); }
  std::list<Running>& all() { return running_; }
  const std::list<Running>& all() const { return running_; }
  // The running job `id`, if it is one.
  Running* find(std::int64_t id);
  // A job claimed with `token` is still running.
  bool holds_token(const std::string& token) const;

  // Reaps the commands that have exited and whose output is read: they leave the set,
  // except those `hold` says to keep for now (a report still being written).
  std::vector<Running> take_finished(const std::function<bool(std::int64_t)>& hold = {});
  // Asks a command to stop (SIGTERM, then SIGKILL after --kill-after).
  void stop(Running& r, int sig, Clock::time_point now);
  // --timeout and --kill-after, due at `now`.
  void check_timers(Clock::time_point now);
  // Stops every command still running; what it did is released, not recorded. SIGTERM
  // (the grace is over) or SIGKILL (a second signal).
  void release_all(int sig, Clock::time_point now);
  // The earliest timer of any job, if any.
  std::optional<Clock::time_point> next_timer() const;

  // The pipes to poll, and what poll() found on one of them.
  void poll_fds(std::vector<pollfd>& fds) const;
  void handle(const pollfd& p);

 private:
  Options o_;
  // The command's file, searched in PATH once rather than at every job's exec.
  std::string path_;
  // Kills the process groups of running commands if the worker itself is killed.
  std::shared_ptr<GroupGuard> guard_;
  std::list<Running> running_;
};

}  // namespace queuectl
