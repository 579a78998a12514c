#include "worker/children.hpp"

#include <signal.h>

#include <map>

#include "core/errors.hpp"
#include "core/job_report.hpp"
#include "core/trace_context.hpp"

namespace queuectl {

Children::Children(Options options)
    : o_(std::move(options)),
      path_(Subprocess::find_in_path(o_.command.front())),
      guard_(std::make_shared<GroupGuard>()) {}

void Children::start(const Job& job) {
  std::map<std::string, std::string> env = {
      {"QUEUECTL_JOB_ID", std::to_string(job.id)},
      {"QUEUECTL_QUEUE", job.queue},
      {"QUEUECTL_ATTEMPT", std::to_string(job.attempts)},
      {"QUEUECTL_MAX_ATTEMPTS", std::to_string(job.max_attempts)},
      {"QUEUECTL_LOCK_TOKEN", job.lock_token.value_or("")},
  };
  if (job.group_key) env["QUEUECTL_GROUP_KEY"] = *job.group_key;
  // Linux refuses one variable over 128 KiB. A checkpoint of kMaxCheckpointBytes comes back
  // from the database under that even with a space after each ':' and ','; a larger one
  // written by other code is left out (`queuectl show ID --field checkpoint` reads it).
  if (job.checkpoint && job.checkpoint->size() < 128 * 1024 - sizeof("QUEUECTL_CHECKPOINT="))
    env["QUEUECTL_CHECKPOINT"] = *job.checkpoint;
  if (o_.job_report) env["QUEUECTL_REPORT_FD"] = std::to_string(Subprocess::kReportFd);
  // The enqueuer's trace context: as it is for the first attempt (attempts counts this
  // claim; a release gives its attempt back); a retry is a trace of its own, linked to
  // the first by QUEUECTL_TRACE_LINK. A job without one does not run in the worker's.
  // (Rows written by other code are checked again: a bad value is no context.)
  const bool traced = job.trace_parent && is_traceparent(*job.trace_parent);
  if (traced && job.attempts <= 1) {
    env["TRACEPARENT"] = *job.trace_parent;
    if (job.trace_state && is_tracestate(*job.trace_state)) env["TRACESTATE"] = *job.trace_state;
  } else if (traced) {
    env["TRACEPARENT"] = retry_traceparent(*job.trace_parent);
    env["QUEUECTL_TRACE_LINK"] = *job.trace_parent;
  }
  Running r;
  r.job = job;
  r.started = Clock::now();
  if (o_.timeout) r.deadline = r.started + o_.timeout->chrono();
  Subprocess::Options options;
  options.argv = o_.command;
  options.path = path_;
  options.env = std::move(env);
  options.unset = {"TRACEPARENT", "TRACESTATE", "QUEUECTL_TRACE_LINK", "QUEUECTL_CHECKPOINT",
                   "QUEUECTL_REPORT_FD"};
  options.capture = true;
  options.input = job.payload;
  options.to_default = {SIGPIPE};  // ignored by the worker, not by the commands it runs
  options.guard = guard_;
  // The job's stderr goes on to the worker's (the journal, under systemd), a line at a
  // time so that the lines of concurrent jobs never mix, each naming its job.
  if (o_.job_stderr) {
    const std::string prefix = "job " + std::to_string(job.id) + ": ";
    options.on_stderr_line = [this, prefix](const std::string& line) {
      o_.job_stderr(prefix + line);
    };
  }
  if (o_.job_report) {
    const std::int64_t id = job.id;
    options.on_report_line = [this, id](const std::string& line) { o_.job_report(id, line); };
  }
  r.child = Subprocess::start(std::move(options));
  running_.push_back(std::move(r));
}

Running* Children::find(std::int64_t id) {
  for (Running& r : running_)
    if (r.job.id == id) return &r;
  return nullptr;
}

bool Children::holds_token(const std::string& token) const {
  for (const Running& r : running_)
    if (r.job.lock_token == token) return true;
  return false;
}

std::vector<Running> Children::take_finished(const std::function<bool(std::int64_t)>& hold) {
  std::vector<Running> done;
  for (auto it = running_.begin(); it != running_.end();) {
    try {
      it->child->reap();
    } catch (const Error& e) {
      it->wait_error = e.what();
    }
    if ((it->child->finished() || it->wait_error) && !(hold && hold(it->job.id))) {
      done.push_back(std::move(*it));
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return done;
}

void Children::stop(Running& r, int sig, Clock::time_point now) {
  r.child->signal(sig);
  if (sig != SIGKILL && !r.kill_at) r.kill_at = now + o_.kill_after.chrono();
}

void Children::check_timers(Clock::time_point now) {
  for (Running& r : running_) {
    if (r.child->finished()) continue;
    if (r.deadline && now >= *r.deadline && !r.timed_out) {
      r.timed_out = true;
      stop(r, SIGTERM, now);
    }
    if (r.kill_at && now >= *r.kill_at) {
      r.child->signal(SIGKILL);
      r.kill_at.reset();
    }
  }
}

void Children::release_all(int sig, Clock::time_point now) {
  for (Running& r : running_) {
    if (r.child->finished()) continue;
    if (sig == SIGKILL) {
      r.release_on_exit = true;
      r.child->signal(SIGKILL);
    } else if (!r.release_on_exit) {
      r.release_on_exit = true;
      stop(r, sig, now);
    }
  }
}

std::optional<Children::Clock::time_point> Children::next_timer() const {
  std::optional<Clock::time_point> next;
  const auto consider = [&next](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  for (const Running& r : running_) {
    if (r.deadline && !r.timed_out) consider(*r.deadline);
    if (r.kill_at) consider(*r.kill_at);
  }
  return next;
}

void Children::poll_fds(std::vector<pollfd>& fds) const {
  for (const Running& r : running_) r.child->poll_fds(fds);
}

void Children::handle(const pollfd& p) {
  for (Running& r : running_)
    if (r.child->handle(p.fd, p.revents)) return;
}

}  // namespace queuectl
