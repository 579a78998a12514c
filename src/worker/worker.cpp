#include "worker/worker.hpp"

#include <poll.h>
#include <signal.h>

#include <algorithm>

#include "core/backoff.hpp"
#include "core/errors.hpp"
#include "core/human_time.hpp"
#include "core/job_report.hpp"
#include "db/admin_repository.hpp"
#include "worker/worker_loop.hpp"

namespace queuectl {
namespace worker_detail {

std::string took_text(Clock::duration d) {
  return human_duration(std::chrono::duration<double>(d).count());
}

namespace {

ClaimPacing::Limits pacing_limits(const WorkerOptions& o) {
  return {o.concurrency, o.batch, o.max_jobs, o.idle_min, o.idle_max};
}

Children::Options children_options(const WorkerOptions& o, const LogFn& job_stderr,
                                   std::function<void(std::int64_t, const std::string&)> report) {
  return {o.command, o.timeout, o.kill_after, job_stderr, std::move(report)};
}

// A second signal: a database that hangs may not hold the worker any longer.
bool give_up() {
  return SignalScope::stops() >= 2;
}

}  // namespace

Worker::Worker(std::unique_ptr<Database> db, const WorkerOptions& o, LogFn log, LogFn debug,
               LogFn job_stderr)
    : url_(db->url()),
      o_(o),
      log_(std::move(log)),
      debug_(debug ? std::move(debug) : [](const std::string&) {}),
      db_(std::move(db)),
      // SIGCHLD only wakes the loop; SIGPIPE is ignored, so that a command that exits
      // without reading all of its payload fails the write to its stdin, not the worker.
      signals_({SIGTERM, SIGINT, SIGHUP, SIGCHLD}, {SIGPIPE}),
      pacing_(pacing_limits(o), Clock::now()),
      children_(children_options(o, job_stderr, [this](std::int64_t id, const std::string& line) {
        on_report(id, line);
      })) {
  db_->give_up = give_up;
  repo_ = std::make_unique<JobRepository>(*db_);
}

JobRepository& Worker::repo() {
  if (!repo_) {
    // Connecting again after trouble: whatever stops it (a login refused while the server
    // restarts, an account locked for a while) is database trouble to wait out, never a
    // refusal of the write itself, which would drop the job's outcome.
    try {
      db_ = std::make_unique<Database>(url_);
    } catch (const TemporaryError&) {
      throw;
    } catch (const Error& e) {
      throw TemporaryError(e.what());
    }
    db_->give_up = give_up;
    repo_ = std::make_unique<JobRepository>(*db_);
  }
  return *repo_;
}

void Worker::connection_trouble(const std::exception& e) {
  const Clock::time_point now = Clock::now();
  std::string reason = e.what();
  if (reason.size() > 200) reason = reason.substr(0, 200) + "...";
  if (!outage_since_) {
    outage_since_ = now;
    outage_told_ = now;
    log_("database trouble: " + reason + "; retrying with backoff, at least every " +
         o_.idle_max.str() + "; running jobs go on");
  } else if (now - outage_told_ >= kOutageReminder) {
    outage_told_ = now;
    log_("database still in trouble after " + took_text(now - *outage_since_) + ": " + reason +
         "; retrying");
  } else {
    debug_("database trouble: " + reason + "; retrying");
  }
  repo_.reset();
  db_.reset();
}

void Worker::connection_back() {
  if (!outage_since_) return;
  log_("database answers again after " + took_text(Clock::now() - *outage_since_) + " (" +
       url_.redacted() + ")");
  outage_since_.reset();
}

// --drain does not listen: it ends when the queue has nothing due, and until then a claim
// that finds none while jobs run is tried again when they end or after the poll pause. A
// wake-up would only start a job enqueued meanwhile sooner; the connection costs a short run
// 5-10 ms of its start on PostgreSQL.
void Worker::open_listener(Clock::time_point now) {
  if (listen_db_ || !can_listen_ || o_.drain || now < listen_retry_at_ || stopping_) return;
  if (!Announcements::available(url_)) {
    can_listen_ = false;  // this backend cannot announce jobs: poll only
    return;
  }
  try {
    auto db = std::make_unique<Database>(url_);
    if (db->pooled()) {
      // A pooler in transaction mode would hand the listening server session to other
      // clients, and this worker would never hear a thing: polling only, and said so.
      can_listen_ = false;
      log_(
          "the database connection goes through a pooler (PgBouncer?), where LISTEN "
          "cannot be relied on: polling for new jobs every " +
          o_.idle_max.str());
      return;
    }
    announced_.emplace(*db);
    listen_db_ = std::move(db);
    listen_failing_ = false;
    debug_("listening for new jobs on " + o_.queue + " (LISTEN/NOTIFY); polling every " +
           o_.idle_max.str() + " besides");
    pacing_.due_at(now);  // a job announced before the LISTEN took effect is not missed
  } catch (const std::exception& e) {
    announced_.reset();
    // Said once until a LISTEN works again: during an outage the claims' lines tell it.
    const std::string line = std::string("cannot listen for new jobs (") + e.what() +
                             "); polling, trying again every " + o_.idle_max.str();
    if (listen_failing_)
      debug_(line);
    else
      log_(line);
    listen_failing_ = true;
    listen_retry_at_ = now + o_.idle_max.chrono();
  }
}

void Worker::read_announcements(Clock::time_point now) {
  try {
    if (announced_->take(o_.queue)) {
      debug_("woken: a job is due on " + o_.queue);
      pacing_.woken(now);
    }
  } catch (const std::exception& e) {
    log_(std::string(e.what()) + "; polling every " + o_.idle_max.str() + " until it is back");
    announced_.reset();
    listen_db_.reset();
    listen_retry_at_ = now + o_.idle_max.chrono();
    pacing_.due_at(now);  // announcements may have been missed meanwhile
  }
}

ClaimPacing::Held Worker::held() const {
  return {static_cast<int>(children_.size()), static_cast<int>(waiting_.size()), claimed_};
}

bool Worker::can_claim() const {
  if (stopping_ || drained_ || turn_) return false;
  return pacing_.has_room(held()) && writes_.writes().empty() && !writes_.failing();
}

bool Worker::claim_running(const std::string& token) const {
  if (children_.holds_token(token)) return true;
  for (const Job& job : waiting_)
    if (job.lock_token == token) return true;
  return false;
}

void Worker::fill_slots() {
  while (!waiting_.empty() && static_cast<int>(children_.size()) < o_.concurrency) {
    const Job job = std::move(waiting_.front());
    waiting_.pop_front();
    start_job(job);
  }
}

void Worker::start_job(const Job& job) {
  try {
    children_.start(job);
  } catch (const Error& e) {
    // Out of processes or descriptors: not the job's fault. Give it back, pause claiming.
    give_back(job, std::string("could not start the command: ") + e.what());
    pacing_.due_at(Clock::now() + o_.idle_max.chrono());
  }
}

void Worker::start_turn(Clock::time_point now) {
  if (turn_) return;
  auto turn = std::make_shared<Turn>();
  const auto running = [this](const std::string& token) { return claim_running(token); };
  if (writes_.may_retry(now)) turn->acks = writes_.take_due_acks(now, all_acks_due(), running);
  if (can_claim() && pacing_.wants(held()) && pacing_.due(now)) {
    // Free slots, and room for a few jobs to wait for the next one that frees.
    turn->claim = ClaimRequest{o_.queue, pacing_.claim_size(held()), o_.lease, o_.worker};
    turn->rated = rated_;
    turn->claimed_idle = children_.empty() && waiting_.empty();
  }
  if (turn->acks.empty() && !turn->claim) return;
  turn_ = turn;
  calls_->start([this, turn] {
    if (!turn->acks.empty()) {
      std::vector<AckItem> items;
      items.reserve(turn->acks.size());
      for (const PendingAck& a : turn->acks) items.push_back(a.item);
      try {
        turn->lost = repo().ack_many(items);
      } catch (...) {
        turn->ack_error = std::current_exception();
        return;  // no claim either: the acks come first (can_claim)
      }
    }
    if (turn->claim) {
      try {
        turn->jobs = repo().claim(*turn->claim);
        // Nothing: a rate limit may be what holds the queue's jobs back.
        if (turn->jobs.empty() && turn->rated)
          turn->rate_wait = AdminRepository(*db_).rate_wait(o_.queue);
      } catch (...) {
        turn->claim_error = std::current_exception();
      }
    }
  });
}

void Worker::finish_turn(Clock::time_point now) {
  if (!turn_ || !calls_->take_finished()) return;
  const std::shared_ptr<Turn> turn = std::move(turn_);
  turn_.reset();
  if (!turn->acks.empty()) acks_landed(*turn, now);
  if (turn->claim && !turn->ack_error) claim_landed(*turn, now);
}

void Worker::claim_landed(Turn& turn, Clock::time_point now) {
  if (turn.claim_error) {
    try {
      std::rethrow_exception(turn.claim_error);
    } catch (const TemporaryError& e) {
      // An outage or contention: log it, reconnect, back off (jittered), and go on.
      connection_trouble(e);
      pacing_.failed(now, random_unit());
    } catch (const std::exception& e) {
      // Anything else would fail the same way at every try. A worker that serves keeps
      // going (someone may mend it); a drain, run by a script that waits for it, ends, and
      // work exits 1 with the error, once its running jobs are done.
      if (o_.drain) {
        log_(std::string("claim failed: ") + e.what() + "; --drain stops");
        summary_.error = e.what();
        drained_ = true;
        return;
      }
      connection_trouble(e);
      pacing_.failed(now, random_unit());
    }
    return;
  }
  connection_back();
  std::vector<Job>& jobs = turn.jobs;
  // Held back by the queue's rate limit, not out of jobs: try again when the next token
  // comes (not sooner, not hot), and --drain goes on. A token there already: it came back
  // since the claim, so claim again at once; a second time in a row, the rate is not what
  // holds the jobs back, and the usual pause (or the end of --drain) follows.
  const bool rate_held =
      jobs.empty() && turn.rate_wait && (turn.rate_wait->count() > 0 || !rate_retried_);
  rate_retried_ = rate_held && turn.rate_wait->count() == 0;
  if (rate_held) {
    pacing_.set_limited(true);
    pacing_.due_at(now + std::max(std::chrono::milliseconds(1), *turn.rate_wait));
    return;
  }
  if (jobs.empty()) {
    note_if_paused();
    if (o_.drain && children_.empty() && waiting_.empty()) {
      // Nothing held when it went out: the queue has nothing more for this worker. Jobs
      // that finished while it was out may have held the queue's limit: ask again now.
      if (turn.claimed_idle)
        drained_ = true;
      else
        pacing_.due_at(now);
      return;
    }
    pacing_.found_none(now, announced_.has_value(), random_unit());
    return;
  }
  pacing_.got_jobs();
  paused_noted_ = false;
  for (Job& job : jobs) {
    // The lease runs from the claim: kept alive while the job waits for a slot and runs.
    ++claimed_;
    heartbeat_->track(job.id, job.lock_token.value_or(""));
    // A stop asked for while the claim was out: the job is not started.
    if (stopping_)
      give_back(job, "not started before shutdown");
    else
      waiting_.push_back(std::move(job));
  }
  if (!stopping_) fill_slots();
}

void Worker::note_if_paused() {
  bool paused = false;
  try {
    // A queue name nobody has used (a typo): said once, at the first empty claim.
    if (!unknown_checked_) {
      unknown_checked_ = true;
      if (auto note = AdminRepository(*db_).unknown_queue_note(o_.queue)) log_(*note);
    }
    const QueueSettings s = AdminRepository(*db_).settings(o_.queue);
    paused = s.paused;
    rated_ = s.rate.has_value();
    pacing_.set_limited(s.max_processing.has_value() || rated_);
  } catch (const std::exception&) {
    return;  // only a hint: the next claim reports the connection's trouble
  }
  if (paused && !paused_noted_)
    log_("queue " + o_.queue + " is paused: no job is handed out until `queuectl resume " +
         o_.queue + "`");
  paused_noted_ = paused;
}

// Signals: the first stops claiming and waits up to --grace; the second stops at once.
// (Two may have come while a database call held the loop: both count.)
void Worker::on_signals(int count, Clock::time_point now) {
  if (count <= handled_signals_) return;
  handled_signals_ = count;
  if (!stopping_) {
    stopping_ = true;
    grace_deadline_ = now + o_.grace.chrono();
    if (!children_.empty())
      log_("stopping: waiting up to " + o_.grace.str() + " for " +
           std::to_string(children_.size()) + " running job(s)");
    // Claimed ahead and not started: given back at once, the attempt returned.
    for (const Job& job : waiting_) give_back(job, "not started before shutdown");
    waiting_.clear();
  }
  if (handled_signals_ >= 2 && !abandon_) {
    grace_deadline_ = now;
    abandon_ = true;
    writes_.retry_now(now);
    children_.release_all(SIGKILL, now);
  }
}

void Worker::on_report(std::int64_t id, const std::string& line) {
  if (line.empty()) return;
  try {
    heartbeat_->report(id, parse_report_line(line, o_.max_checkpoint));
  } catch (const UsageError& e) {
    log_("job " + std::to_string(id) + ": report ignored: " + e.what());
  }
}

void Worker::reap_finished(Clock::time_point now) {
  // A command's last report is written before its outcome: its checkpoint reaches the
  // retry, its progress is not written over a finished job.
  std::vector<Running> finished =
      children_.take_finished([this](std::int64_t id) { return heartbeat_->reporting(id); });
  for (Running& r : finished) {
    finish(r);
    // At the queue's limit, the slot this job held is the one to take.
    if (pacing_.limited()) pacing_.due_at(now);
  }
  // Freed slots take the jobs already claimed before anything is written or claimed.
  if (!stopping_) fill_slots();
  // Draining: the last job is done, so whether anything is left is asked now rather than
  // after the idle pause an earlier empty claim set.
  if (!finished.empty() && o_.drain && children_.empty() && waiting_.empty())
    pacing_.due_at(std::min(pacing_.next(), now));
}

bool Worker::done() const {
  return children_.empty() && waiting_.empty() && writes_.empty() && !turn_ &&
         (stopping_ || drained_ || pacing_.limit_reached(held()));
}

std::chrono::milliseconds Worker::sleep_for(Clock::time_point now) const {
  auto wait = std::chrono::milliseconds(1000);
  auto until = [&](Clock::time_point t) {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - now);
    wait = std::max(std::chrono::milliseconds(0), std::min(wait, d));
  };
  // While a turn is out, its return wakes the loop; the timers of the next wait for it.
  if (!turn_) {
    if (can_claim() && pacing_.wants(held())) until(pacing_.next());
    if (!writes_.writes().empty() || writes_.failing()) until(writes_.retry_at());
    if (auto at = writes_.ack_deadline()) until(std::max(writes_.retry_at(), *at));
  }
  if (auto at = children_.next_timer()) until(*at);
  if (grace_deadline_) until(*grace_deadline_ + std::chrono::milliseconds(1));
  return wait;
}

WorkerSummary Worker::run() {
  heartbeat_ = std::make_unique<Heartbeat>(
      url_, o_.lease, [this] { signals_.wake(); }, log_);
  // A queue with a concurrency limit gets no jobs claimed ahead: known before the first claim.
  try {
    const QueueSettings s = AdminRepository(*db_).settings(o_.queue);
    rated_ = s.rate.has_value();
    pacing_.set_limited(s.max_processing.has_value() || rated_);
  } catch (const std::exception&) {
    // Only a hint: the first claim reports the connection's trouble; an empty one reads it again.
  }
  calls_ = std::make_unique<CallThread>([this] { signals_.wake(); });
  // --drain ends at its first empty claim, which may come before the housekeeping's first
  // turn: a tick already due fires now, so that its job is among those drained.
  if (o_.housekeeping && o_.drain) {
    try {
      std::string errors;
      fire_due_schedules(*db_, o_.queue, HousekeepingPlan{}.fire_batch, log_, errors);
    } catch (const std::exception& e) {
      log_(std::string("housekeeping: ") + e.what());
    }
  }
  if (o_.housekeeping)
    housekeeping_ = std::make_unique<Housekeeping>(
        url_, o_.queue, HousekeepingPlan::for_lease(o_.lease.chrono()), log_);
  while (true) {
    const auto now = Clock::now();
    on_signals(SignalScope::stops(), now);
    for (const auto& [id, lapse] : heartbeat_->take_lost()) lease_ended(id, lapse, now);
    reap_finished(now);
    finish_turn(now);
    // Fails and releases are written here, between turns (the claiming connection is the
    // loop's then); acks and claims go by the call thread.
    if (!turn_ && writes_.may_retry(now) && !writes_.writes().empty())
      writes_.result(flush_writes(), now);
    children_.check_timers(now);
    if (stopping_ && grace_deadline_ && now >= *grace_deadline_) {
      children_.release_all(SIGTERM, now);
      grace_deadline_.reset();  // done: from here on the kill timers take over
    }
    open_listener(now);
    const auto running = [this](const std::string& token) { return claim_running(token); };
    if (writes_.due(now, all_acks_due(), running) || can_claim()) start_turn(now);
    if (done()) break;

    // Sleep until something happens: output, an exit, a signal, or the next timer.
    std::vector<pollfd> fds{{signals_.fd(), POLLIN, 0}};
    const int notices = announced_ ? announced_->fd() : -1;
    if (notices >= 0) fds.push_back({notices, POLLIN, 0});
    children_.poll_fds(fds);
    poll(fds.data(), fds.size(), static_cast<int>(sleep_for(now).count()));
    for (const pollfd& p : fds) {
      if (!p.revents) continue;
      if (p.fd == signals_.fd())
        signals_.take();  // counted by the handler; the pipe only wakes the loop
      else if (p.fd == notices)
        read_announcements(Clock::now());
      else
        children_.handle(p);
    }
  }
  housekeeping_.reset();
  calls_.reset();
  heartbeat_.reset();
  announced_.reset();
  listen_db_.reset();
  return summary_;
}

}  // namespace worker_detail

WorkerSummary run_worker(std::unique_ptr<Database> db, const WorkerOptions& options,
                         const std::function<void(const std::string&)>& log,
                         const std::function<void(const std::string&)>& debug,
                         const std::function<void(const std::string&)>& job_stderr) {
  return worker_detail::Worker(std::move(db), options, log, debug, job_stderr).run();
}

}  // namespace queuectl
