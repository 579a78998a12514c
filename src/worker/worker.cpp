#include "worker/worker.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <list>
#include <memory>
#include <optional>

#include "core/backoff.hpp"
#include "core/errors.hpp"
#include "core/human_time.hpp"
#include "core/process.hpp"
#include "core/subprocess.hpp"
#include "core/validate.hpp"
#include "db/admin_repository.hpp"
#include "db/job_repository.hpp"
#include "worker/call_thread.hpp"
#include "worker/heartbeat.hpp"

namespace queuectl {
namespace {

using Clock = std::chrono::steady_clock;

// Shared with the signal handler, which runs in the main thread (helper threads block the
// signals) but must stay correct in any thread: lock-free atomics are safe in a handler, and
// fetch_add counts two signals that interrupt each other as two.
std::atomic<int> g_wake_fd{-1};
std::atomic<int> g_stop_signals{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

void on_signal(int sig) {
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) g_stop_signals.fetch_add(1);
  char c = static_cast<char>(sig);
  const int fd = g_wake_fd.load();
  if (fd >= 0) (void)!write(fd, &c, 1);
}

// Installs the handlers for the worker's lifetime and restores the old ones after.
class SignalScope {
 public:
  SignalScope() {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) throw Error("cannot create the wake pipe");
    g_wake_fd = fds_[1];
    g_stop_signals = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &sa, &old_[i]);
    // A command that exits without reading all of its payload must not take the worker
    // with it: writes to its closed stdin fail with EPIPE instead.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &old_pipe_);
  }
  ~SignalScope() {
    for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &old_[i], nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    g_wake_fd = -1;
    close(fds_[0]);
    close(fds_[1]);
  }
  int read_fd() const { return fds_[0]; }
  int write_fd() const { return fds_[1]; }
  void drain() const {
    char buf[64];
    while (read(fds_[0], buf, sizeof buf) > 0) {
    }
  }

 private:
  static constexpr int kCount = 4;
  static constexpr int kSignals[kCount] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};
  int fds_[2] = {-1, -1};
  struct sigaction old_[kCount];
  struct sigaction old_pipe_;
};

struct Running {
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

// How long a job ran, as every table prints durations: "850ms", "42s", "9m58s".
std::string seconds(Clock::duration d) {
  return human_duration(std::chrono::duration<double>(d).count());
}

// A finishing write (ack, fail, release) waiting to be written, with what to say about it.
struct PendingWrite {
  std::int64_t id;
  std::string head;  // "job 42 attempt 1/25", for the log
  std::string verb;  // what the write does to the job, for the log: "recorded", "released"
  std::function<void()> write;
};

// A job whose command exited 0, waiting for its ack: the acks of all the jobs that finished
// since the last turn are written together, in one transaction (ack_many).
struct PendingAck {
  AckItem item;
  std::string head;
  std::string done;  // the line to log once the ack has landed
  std::chrono::steady_clock::time_point queued;
};

// One trip of the call thread: the acks that were due, then a claim, each with what it
// returned or threw. The claim is not tried when the acks met trouble.
struct Turn {
  std::vector<PendingAck> acks;
  std::vector<std::int64_t> lost;
  std::exception_ptr ack_error;
  std::optional<ClaimRequest> claim;
  // Nothing was running or waiting when the claim went out: an empty one means the queue
  // had nothing for this worker (--drain), not that its limit was taken by our own jobs.
  bool claimed_idle = false;
  std::vector<Job> jobs;
  std::exception_ptr claim_error;
};

class Worker {
 public:
  Worker(std::unique_ptr<Database> db, const WorkerOptions& o,
         const std::function<void(const std::string&)>& log,
         const std::function<void(const std::string&)>& debug,
         const std::function<void(const std::string&)>& job_stderr)
      : url_(db->url()),
        o_(o),
        log_(log),
        debug_(debug ? debug : [](const std::string&) {}),
        job_stderr_(job_stderr),
        db_(std::move(db)) {
    db_->give_up = [] { return g_stop_signals >= 2; };
    repo_ = std::make_unique<JobRepository>(*db_);
    command_path_ = Subprocess::find_in_path(o_.command.front());
  }

  WorkerSummary run();

 private:
  bool can_claim() const;
  // A claim is worth its round trip: it can take a batch (half the slots), or a slot would
  // otherwise stay idle.
  bool wants_claim() const;
  int batch_min() const { return std::max(1, o_.concurrency / 2); }
  // The queued finishing writes are due: fails and releases at once; acks once every job of
  // their claim has finished (one token: one statement), or all of them once nothing runs,
  // the worker stops, or the oldest has waited kAckWait.
  bool writes_due(Clock::time_point now) const;
  bool all_acks_due(Clock::time_point now) const;
  // Whether an ack can go now: no job claimed with its token is still running or waiting.
  bool claim_finished(const std::string& token) const;
  // Hands the acks that are due and a claim, if one is wanted, to the call thread: the loop
  // goes on while they wait for the database. One turn at a time; the main thread touches
  // the claiming connection only while none is out.
  void start_turn(Clock::time_point now);
  // What a turn that has come back did: the acks landed (or not), the jobs claimed.
  void finish_turn(Clock::time_point now);
  void acks_landed(Turn& turn, Clock::time_point now);
  void claim_landed(Turn& turn, Clock::time_point now);
  // Jobs claimed and not started yet, besides the free slots: twice as many as there are
  // slots, so that a slot that frees starts its next job at once instead of after an ack
  // and a claim, and each turn of the call thread (an ack and a claim, one round trip
  // after the other) serves more jobs. bench/work.sh, --concurrency 8: with half as many
  // as slots 0.63x of the bare spawn on PostgreSQL, with as many 0.72-0.74x (MariaDB
  // 0.63-0.70x), with twice as many 0.83-0.86x (MariaDB 0.77-0.86x); three times as many
  // did no better. Only while jobs are short (a job claimed ahead then waits a fraction of
  // a second for its slot); none with one slot, nor on a queue with a concurrency limit
  // (they would hold its slots idle).
  int prefetch() const;
  // Starts waiting jobs while there are free slots.
  void fill_slots();
  void start_job(const Job& job);
  void finish(Running& r);
  void stop_job(Running& r, int sig, Clock::time_point now);
  void check_timers(Clock::time_point now);
  // Queues a finishing write of a job. `write` counts and logs its own success; every other
  // outcome is handled in flush_pending, the one place that does.
  void queue_write(std::int64_t id, std::string head, std::string verb,
                   std::function<void()> write);
  // Writes what is queued, in order (fails and releases; the acks go by the call thread).
  // A temporary error keeps the rest queued for the next turn; any other failure drops that
  // job's write (logged) and goes on with the others. False when database trouble left
  // writes for the next turn.
  bool flush_pending();
  // The acks that can go now, taken out of acks_: every one once all_acks_due, else those
  // whose claim has no job left running or waiting.
  std::vector<PendingAck> take_due_acks(Clock::time_point now);
  // A lost lease or a deleted job found when its finishing write changed nothing, logged as
  // each write reports it.
  void report_lost(const std::string& head, const std::string& verb, bool not_found);
  // The heartbeat no longer keeps job `id`'s lease: a running command is stopped, a job
  // not started is not run, and a finished job whose outcome is still queued says that its
  // outcome is written only if the lease is still its own when the database answers.
  void lease_ended(std::int64_t id, Heartbeat::Lapse lapse, Clock::time_point now);
  // A second signal and a database in trouble: what is still queued is left to the reaper.
  void abandon_writes();
  // Queues a release of a job that was claimed but will not run.
  void give_back(const Job& job, const std::string& why);
  JobRepository& repo();
  // A paused queue looks empty: says so once, and again if it is paused anew.
  // On an empty claim: reads the queue's settings, says once that it is paused, and
  // notes whether it has a concurrency limit.
  void note_if_paused();
  void connection_trouble(const std::exception& e);
  // The database answered: ends an outage that connection_trouble told of.
  void connection_back();
  static constexpr std::chrono::seconds kOutageReminder{60};
  std::optional<Clock::time_point> outage_since_;
  bool listen_failing_ = false;  // a failed LISTEN was told; its retries go to -v
  Clock::time_point outage_told_;
  // Wake-ups: listen for new jobs where the backend can announce them, and read them.
  void open_listener(Clock::time_point now);
  void read_notifications(Clock::time_point now);
  int listen_fd();

  DbUrl url_;
  WorkerOptions o_;
  std::function<void(const std::string&)> log_;
  std::function<void(const std::string&)> debug_;
  std::function<void(const std::string&)> job_stderr_;
  std::unique_ptr<Database> db_;
  // The listening connection (PostgreSQL), apart from the one that claims: notifications
  // queue up on it while the worker sleeps in poll().
  std::unique_ptr<Database> listen_db_;
  bool can_listen_ = true;
  Clock::time_point listen_retry_at_ = Clock::now();
  std::unique_ptr<JobRepository> repo_;
  bool paused_noted_ = false;
  bool unknown_checked_ = false;
  // The queue has a concurrency limit: a slot that frees is not announced, so an empty
  // claim is tried again soon rather than after the whole poll interval.
  bool limited_ = false;
  std::unique_ptr<Heartbeat> heartbeat_;
  // Kills the process groups of running commands if the worker itself is killed.
  std::shared_ptr<GroupGuard> guard_;
  std::list<Running> running_;
  // Finishing writes (ack, fail, release) not written yet, in order; those that hit database
  // trouble are retried.
  std::deque<PendingWrite> pending_;
  std::vector<PendingAck> acks_;
  static constexpr Clock::duration kAckWait = std::chrono::milliseconds(10);
  // The last finishing writes met database trouble: no claim until they are written.
  bool writes_failing_ = false;
  Clock::time_point retry_pending_at_ = Clock::now();
  // Claimed (leases tracked by the heartbeat) and waiting for a free slot, in claim order.
  std::deque<Job> waiting_;
  // The command's file, searched in PATH once rather than at every job's exec.
  std::string command_path_;
  // How long jobs have been running lately (a moving average of the finished ones), and
  // below what jobs are claimed ahead of a free slot.
  std::optional<Clock::duration> typical_run_;
  static constexpr Clock::duration kShortJob = std::chrono::milliseconds(500);
  WorkerSummary summary_;
  std::int64_t claimed_ = 0;  // started or waiting
  Clock::time_point next_claim_ = Clock::now();
  Duration idle_ = Duration();
  bool stopping_ = false;
  bool drained_ = false;
  // A second signal: finishing writes get one try each, and what cannot be written is left
  // to the reaper, so that a database that hangs cannot hold the worker.
  bool abandon_ = false;
  std::optional<Clock::time_point> grace_deadline_;
  // Claims and acks, off the loop; declared last, so that it is gone (its call returned)
  // before the connection it uses.
  std::unique_ptr<CallThread> calls_;
  std::shared_ptr<Turn> turn_;  // out on the call thread
};

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
    db_->give_up = [] { return g_stop_signals >= 2; };
    repo_ = std::make_unique<JobRepository>(*db_);
  }
  return *repo_;
}

// An outage is told in two lines, not one a retry: when it starts (what failed, where,
// how often the worker tries again) and when the database answers again, with a reminder
// every kOutageReminder between them. The retries themselves go to -v.
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
    log_("database still in trouble after " + seconds(now - *outage_since_) + ": " + reason +
         "; retrying");
  } else {
    debug_("database trouble: " + reason + "; retrying");
  }
  repo_.reset();
  db_.reset();
}

void Worker::connection_back() {
  if (!outage_since_) return;
  log_("database answers again after " + seconds(Clock::now() - *outage_since_) + " (" +
       url_.redacted() + ")");
  outage_since_.reset();
}

void Worker::open_listener(Clock::time_point now) {
  if (listen_db_ || !can_listen_ || now < listen_retry_at_ || stopping_ || drained_) return;
  if (!make_dialect(url_.backend)->listen_notify()) {
    can_listen_ = false;  // this backend cannot announce jobs: poll only
    return;
  }
  try {
    auto db = std::make_unique<Database>(url_);
    db->session() << db->sql().listen;
    listen_db_ = std::move(db);
    listen_failing_ = false;
    debug_("listening for new jobs on " + o_.queue + " (LISTEN/NOTIFY); polling every " +
           o_.idle_max.str() + " besides");
    next_claim_ = now;  // a job announced before the LISTEN took effect is not missed
  } catch (const std::exception& e) {
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

int Worker::listen_fd() {
  return listen_db_ ? listen_db_->dialect().notification_socket(listen_db_->session()) : -1;
}

void Worker::read_notifications(Clock::time_point now) {
  try {
    const auto queues = listen_db_->dialect().take_notifications(listen_db_->session());
    if (std::find(queues.begin(), queues.end(), o_.queue) != queues.end()) {
      debug_("woken: a job is due on " + o_.queue);
      next_claim_ = now;
      idle_ = Duration();
    }
  } catch (const std::exception& e) {
    log_(std::string(e.what()) + "; polling every " + o_.idle_max.str() + " until it is back");
    listen_db_.reset();
    listen_retry_at_ = now + o_.idle_max.chrono();
    next_claim_ = now;  // announcements may have been missed meanwhile
  }
}

int Worker::prefetch() const {
  if (o_.concurrency < 2 || limited_ || !typical_run_ || *typical_run_ >= kShortJob) return 0;
  return 2 * o_.concurrency;
}

bool Worker::can_claim() const {
  if (stopping_ || drained_ || turn_) return false;
  const auto held = static_cast<int>(running_.size() + waiting_.size());
  if (held >= o_.concurrency + prefetch()) return false;
  if (o_.max_jobs > 0 && claimed_ >= o_.max_jobs) return false;
  return pending_.empty() && !writes_failing_;
}

bool Worker::wants_claim() const {
  if (stopping_ || drained_) return false;
  if (o_.max_jobs > 0 && claimed_ >= o_.max_jobs) return false;
  const auto held = static_cast<int>(running_.size() + waiting_.size());
  const int room = o_.concurrency + prefetch() - held;
  if (room <= 0) return false;
  return room >= batch_min() || (waiting_.empty() && held < o_.concurrency);
}

bool Worker::claim_finished(const std::string& token) const {
  for (const Running& r : running_)
    if (r.job.lock_token == token) return false;
  for (const Job& job : waiting_)
    if (job.lock_token == token) return false;
  return true;
}

bool Worker::all_acks_due(Clock::time_point now) const {
  return running_.empty() || stopping_ ||
         (!acks_.empty() && now >= acks_.front().queued + kAckWait);
}

bool Worker::writes_due(Clock::time_point now) const {
  if (!pending_.empty()) return true;
  if (acks_.empty()) return false;
  if (all_acks_due(now)) return true;
  for (const PendingAck& a : acks_)
    if (claim_finished(a.item.token)) return true;
  return false;
}

void Worker::fill_slots() {
  while (!waiting_.empty() && static_cast<int>(running_.size()) < o_.concurrency) {
    const Job job = std::move(waiting_.front());
    waiting_.pop_front();
    start_job(job);
  }
}

void Worker::start_turn(Clock::time_point now) {
  if (turn_) return;
  auto turn = std::make_shared<Turn>();
  if (now >= retry_pending_at_) turn->acks = take_due_acks(now);
  if (can_claim() && wants_claim() && now >= next_claim_) {
    // Free slots, and room for a few jobs to wait for the next one that frees.
    const int room =
        o_.concurrency + prefetch() - static_cast<int>(running_.size() + waiting_.size());
    int limit = o_.batch > 0 ? std::min(o_.batch, room) : room;
    if (o_.max_jobs > 0)
      limit = static_cast<int>(std::min<std::int64_t>(limit, o_.max_jobs - claimed_));
    turn->claim = ClaimRequest{o_.queue, limit, o_.lease, o_.worker};
    turn->claimed_idle = running_.empty() && waiting_.empty();
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
    } catch (const std::exception& e) {
      // Temporary or not, a worker keeps going: log it, reconnect, back off (jittered).
      connection_trouble(e);
      idle_ = Duration(
          std::min(o_.idle_max.chrono(), std::max(o_.idle_min.chrono(), idle_.chrono() * 2)));
      next_claim_ = now + std::chrono::milliseconds(static_cast<long>(
                              static_cast<double>(idle_.ms()) * (0.5 + 0.5 * random_unit())));
    }
    return;
  }
  connection_back();
  std::vector<Job>& jobs = turn.jobs;
  if (jobs.empty()) {
    note_if_paused();
    if (o_.drain && running_.empty() && waiting_.empty()) {
      // Nothing held when it went out: the queue has nothing more for this worker. Jobs
      // that finished while it was out may have held the queue's limit: ask again now.
      if (turn.claimed_idle)
        drained_ = true;
      else
        next_claim_ = now;
      return;
    }
    // Idle: a short first pause growing to a cap, jittered so that a fleet spreads out.
    // While listening, new jobs are announced: sleep the whole poll interval at once (the
    // poll still finds jobs that became due by their run_at).
    idle_ = listen_db_ && !limited_
                ? o_.idle_max
                : Duration(std::min(o_.idle_max.chrono(),
                                    std::max(o_.idle_min.chrono(), idle_.chrono() * 2)));
    auto pause = std::chrono::milliseconds(
        static_cast<long>(static_cast<double>(idle_.ms()) * (0.5 + 0.5 * random_unit())));
    next_claim_ = now + pause;
    return;
  }
  idle_ = Duration();
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
    limited_ = s.max_processing.has_value();
  } catch (const std::exception&) {
    return;  // only a hint: the next claim reports the connection's trouble
  }
  if (paused && !paused_noted_)
    log_("queue " + o_.queue + " is paused: no job is handed out until `queuectl resume " +
         o_.queue + "`");
  paused_noted_ = paused;
}

void Worker::give_back(const Job& job, const std::string& why) {
  const std::string token = job.lock_token.value_or("");
  const std::string head = "job " + std::to_string(job.id);
  queue_write(job.id, head, "released", [this, job, token, head, why] {
    repo().release(job.id, token);
    ++summary_.released;
    log_(head + ": released, " + why);
  });
}

void Worker::queue_write(std::int64_t id, std::string head, std::string verb,
                         std::function<void()> write) {
  pending_.push_back({id, std::move(head), std::move(verb), std::move(write)});
}

void Worker::start_job(const Job& job) {
  std::map<std::string, std::string> env = {
      {"QUEUECTL_JOB_ID", std::to_string(job.id)},
      {"QUEUECTL_QUEUE", job.queue},
      {"QUEUECTL_ATTEMPT", std::to_string(job.attempts)},
      {"QUEUECTL_MAX_ATTEMPTS", std::to_string(job.max_attempts)},
      {"QUEUECTL_LOCK_TOKEN", job.lock_token.value_or("")},
  };
  if (job.group_key) env["QUEUECTL_GROUP_KEY"] = *job.group_key;
  Running r;
  r.job = job;
  r.started = Clock::now();
  if (o_.timeout) r.deadline = r.started + o_.timeout->chrono();
  Subprocess::Options options;
  options.argv = o_.command;
  options.path = command_path_;
  options.env = std::move(env);
  options.capture = true;
  options.input = job.payload;
  options.to_default = {SIGPIPE};  // ignored by the worker, not by the commands it runs
  options.guard = guard_;
  // The job's stderr goes on to the worker's (the journal, under systemd), a line at a
  // time so that the lines of concurrent jobs never mix, each naming its job.
  if (job_stderr_) {
    const std::string prefix = "job " + std::to_string(job.id) + ": ";
    options.on_stderr_line = [this, prefix](const std::string& line) {
      job_stderr_(prefix + line);
    };
  }
  try {
    r.child = Subprocess::start(std::move(options));
  } catch (const Error& e) {
    // Out of processes or descriptors: not the job's fault. Give it back, pause claiming.
    give_back(job, std::string("could not start the command: ") + e.what());
    next_claim_ = Clock::now() + o_.idle_max.chrono();
    return;
  }
  running_.push_back(std::move(r));
}

void Worker::stop_job(Running& r, int sig, Clock::time_point now) {
  r.child->signal(sig);
  if (sig != SIGKILL && !r.kill_at) r.kill_at = now + o_.kill_after.chrono();
}

void Worker::check_timers(Clock::time_point now) {
  for (Running& r : running_) {
    if (r.child->finished()) continue;
    if (r.deadline && now >= *r.deadline && !r.timed_out) {
      r.timed_out = true;
      stop_job(r, SIGTERM, now);
    }
    if (r.kill_at && now >= *r.kill_at) {
      r.child->signal(SIGKILL);
      r.kill_at.reset();
    }
  }
  if (stopping_ && grace_deadline_ && now >= *grace_deadline_) {
    for (Running& r : running_) {
      if (!r.child->finished() && !r.release_on_exit) {
        r.release_on_exit = true;
        stop_job(r, SIGTERM, now);
      }
    }
    grace_deadline_.reset();  // done: from here on the kill timers take over
  }
}

void Worker::finish(Running& r) {
  const Job job = r.job;
  const std::string token = job.lock_token.value_or("");
  const std::string head = "job " + std::to_string(job.id) + " attempt " +
                           std::to_string(job.attempts) + "/" + std::to_string(job.max_attempts);
  const Clock::duration ran = Clock::now() - r.started;
  const std::string took = seconds(ran);
  typical_run_ = typical_run_ ? (*typical_run_ * 7 + ran) / 8 : ran;
  const int code = r.child->exit_code();
  std::function<void()> write;
  const auto fail_write = [this, job, token, head](std::string error, std::string what) {
    return [this, job, token, head, error, what] {
      Job after = repo().fail({job.id, token, error, std::nullopt, false, {}});
      ++summary_.failed;
      // Where the job went: a job out of attempts whose queue names a dead-letter queue is
      // ready there now (dead_from names this queue), not waiting for a retry here.
      std::string next;
      if (after.status == Status::failed)
        next = "failed for good";
      else if (after.dead_from && after.queue != job.queue)
        next = "gave up; moved to dead-letter queue " + after.queue + " as job " +
               std::to_string(after.id);
      else
        next = "retry at " + after.run_at;
      log_(head + ": " + what + ", " + next);
    };
  };
  if (r.lease_lost) {
    heartbeat_->untrack(job.id);
    ++summary_.lost;
    log_(head + (r.lease_unconfirmed
                     ? ": stopped before its lease could end unconfirmed, not acked (" + took +
                           "); the reaper returns it"
                     : ": lease lost while running; stopped, not acked (" + took + ")"));
    return;
  }
  if (r.release_on_exit) {
    write = [this, job, token, head, took] {
      repo().release(job.id, token);
      ++summary_.released;
      log_(head + ": released at shutdown (" + took + ")");
    };
  } else if (r.wait_error) {
    // It ran, but how it ended is unknown: not a success. Failing it counts the attempt, so
    // that a job cannot come back forever.
    write = fail_write("exit status unknown: " + *r.wait_error,
                       "exit status unknown (" + *r.wait_error + ") (" + took + ")");
  } else if (r.timed_out) {
    // What the command last said is often why it hung.
    std::string error = "timed out after " + o_.timeout->str() + "; stopped";
    if (std::string tail = r.child->err_tail(); !tail.empty()) error += ": " + tail;
    write = [this, job, token, head, took, error] {
      Job after = repo().fail({job.id, token, error, std::nullopt, false, {}});
      ++summary_.timed_out;
      log_(head + ": timed out (" + took + "), " +
           (after.status == Status::failed ? "failed for good" : "will retry"));
    };
  } else if (code == 0) {
    // stdout becomes the result when it is one JSON document queuectl could store (the
    // same check as `ack --result`); anything else acks the job without a result.
    // Output that is not stored is said so in the job's line, not dropped unseen.
    std::optional<std::string> result;
    std::string unstored;
    const std::string& out = r.child->out();
    if (r.child->out_truncated()) {
      unstored = "; its stdout is over " + std::to_string(Subprocess::kMaxStdout) +
                 " bytes: not stored as the result";
    } else if (!out.empty()) {
      try {
        result = validate_json(out, "result", Subprocess::kMaxStdout);
      } catch (const Error&) {
        unstored = "; its stdout (" + std::to_string(out.size()) +
                   " bytes) is not one JSON document: not stored as the result";
      }
    }
    acks_.push_back(
        {{job.id, token, result}, head, head + ": done (" + took + ")" + unstored, Clock::now()});
    return;  // written with the other acks of this turn (flush_acks)
  } else {
    std::string error = (code > 128 ? "killed by signal " + std::to_string(code - 128)
                                    : "exit code " + std::to_string(code));
    std::string tail = r.child->err_tail();
    if (!tail.empty()) error += ": " + tail;
    write = fail_write(error, "failed with " +
                                  (code > 128 ? "signal " + std::to_string(code - 128)
                                              : "exit " + std::to_string(code)) +
                                  " (" + took + ")");
  }
  // The lease stays tracked (and extended) until the finishing write has landed.
  queue_write(job.id, head, r.release_on_exit ? "released" : "recorded", write);
}

void Worker::abandon_writes() {
  const std::size_t left = pending_.size() + acks_.size();
  summary_.lost += static_cast<std::int64_t>(left);
  log_("stopping at once: " + std::to_string(left) +
       " job outcome(s) not recorded; their leases run out and the reaper returns them");
  for (const PendingWrite& p : pending_) heartbeat_->untrack(p.id);
  for (const PendingAck& a : acks_) heartbeat_->untrack(a.item.id);
  pending_.clear();
  acks_.clear();
}

void Worker::lease_ended(std::int64_t id, Heartbeat::Lapse lapse, Clock::time_point now) {
  const bool unconfirmed = lapse == Heartbeat::Lapse::unconfirmed;
  for (Running& r : running_)
    if (r.job.id == id) {
      if (!r.lease_lost) {
        r.lease_lost = true;
        r.lease_unconfirmed = unconfirmed;
        stop_job(r, SIGTERM, now);
      }
      return;
    }
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
    if (it->id == id) {
      ++summary_.lost;
      log_("job " + std::to_string(id) +
           (unconfirmed ? ": its lease could not be extended in time; not run, the reaper "
                          "returns it"
                        : ": lease lost before it started; not run"));
      waiting_.erase(it);
      return;
    }
  // Its command has ended and its outcome waits in a queue: said now, so that the line
  // written when the outcome lands (or is refused) follows a true account.
  if (!unconfirmed) return;  // the finishing write will find the loss and say so
  std::string head;
  for (const PendingAck& a : acks_)
    if (a.item.id == id) head = a.head;
  for (const PendingWrite& p : pending_)
    if (p.id == id) head = p.head;
  if (turn_)  // out on the call thread, which only reads them too
    for (const PendingAck& a : turn_->acks)
      if (a.item.id == id) head = a.head;
  if (head.empty()) return;
  log_(head +
       ": its command has ended, but its lease could not be extended and may run out "
       "before its outcome is written; written if the lease is still its own when the "
       "database answers, else the reaper returns it");
}

void Worker::report_lost(const std::string& head, const std::string& verb, bool not_found) {
  ++summary_.lost;
  if (not_found)
    log_(head + ": gone (deleted meanwhile) before it could be " + verb);
  else
    log_(head + ": lease lost before it could be " + verb + "; another worker may run it");
}

std::vector<PendingAck> Worker::take_due_acks(Clock::time_point now) {
  std::vector<PendingAck> due, later;
  if (acks_.empty()) return due;
  // Those due go now; the others (their claim still running) keep their order.
  if (all_acks_due(now)) {
    due.swap(acks_);
  } else {
    for (PendingAck& a : acks_)
      (claim_finished(a.item.token) ? due : later).push_back(std::move(a));
    acks_.swap(later);
  }
  return due;
}

void Worker::acks_landed(Turn& turn, Clock::time_point now) {
  std::vector<PendingAck>& due = turn.acks;
  if (turn.ack_error) {
    try {
      std::rethrow_exception(turn.ack_error);
    } catch (const TemporaryError& e) {
      // Nothing was written (one transaction): all of them wait for the next turn, before
      // those that finished meanwhile.
      due.insert(due.end(), std::make_move_iterator(acks_.begin()),
                 std::make_move_iterator(acks_.end()));
      acks_.swap(due);
      connection_trouble(e);
      if (abandon_) abandon_writes();
      writes_failing_ = !pending_.empty() || !acks_.empty();
      if (writes_failing_) retry_pending_at_ = now + std::chrono::seconds(1);
    } catch (const std::exception&) {
      // The database refused the transaction itself: one ack at a time instead, so that only
      // the job it refuses is left to the reaper and the others are done.
      for (PendingAck& a : due) {
        queue_write(a.item.id, a.head, "recorded", [this, item = a.item, done = a.done] {
          repo().ack(item);
          ++summary_.done;
          log_(done);
        });
      }
    }
    return;
  }
  writes_failing_ = false;
  connection_back();
  std::vector<std::int64_t>& lost = turn.lost;
  std::sort(lost.begin(), lost.end());
  for (const PendingAck& a : due) {
    if (std::binary_search(lost.begin(), lost.end(), a.item.id)) {
      // Only on the failure path: one read tells a deleted job from a lost lease.
      bool gone = false;
      try {
        gone = !repo().find(a.item.id).has_value();
      } catch (const std::exception&) {
      }
      report_lost(a.head, "recorded", gone);
    } else {
      ++summary_.done;
      log_(a.done);
    }
    heartbeat_->untrack(a.item.id);
  }
}

bool Worker::flush_pending() {
  while (!pending_.empty()) {
    PendingWrite& p = pending_.front();
    try {
      p.write();
    } catch (const TemporaryError& e) {
      // Contention or a lost connection: this write and those after it wait for the next
      // turn, with the leases still kept alive, unless a second signal said to stop now.
      connection_trouble(e);
      if (abandon_) abandon_writes();
      return false;
    } catch (const LeaseLost&) {
      report_lost(p.head, p.verb, false);
    } catch (const NotFound&) {
      report_lost(p.head, p.verb, true);
    } catch (const std::exception& e) {
      // The database refused the write itself: retrying cannot help. The lease runs out and
      // the reaper hands the job out again; the other jobs' writes go on.
      ++summary_.lost;
      log_(p.head + ": could not be " + p.verb + " (" + e.what() + "); left to the reaper");
    }
    heartbeat_->untrack(p.id);
    pending_.pop_front();
  }
  return true;
}

WorkerSummary Worker::run() {
  SignalScope signals;
  guard_ = std::make_shared<GroupGuard>();
  int wake_fd = signals.write_fd();
  heartbeat_ = std::make_unique<Heartbeat>(
      url_, o_.lease, [wake_fd] { (void)!write(wake_fd, "h", 1); }, log_);
  // A queue with a concurrency limit gets no jobs claimed ahead: known before the first claim.
  try {
    limited_ = AdminRepository(*db_).settings(o_.queue).max_processing.has_value();
  } catch (const std::exception&) {
    // Only a hint: the first claim reports the connection's trouble; an empty one reads it again.
  }
  calls_ = std::make_unique<CallThread>([wake_fd] { (void)!write(wake_fd, "c", 1); });
  int handled_signals = 0;
  while (true) {
    auto now = Clock::now();
    // Signals: the first stops claiming and waits up to --grace; the second stops at once.
    // (Two may have come while a database call held the loop: both count.)
    if (g_stop_signals > handled_signals) {
      handled_signals = g_stop_signals;
      if (!stopping_) {
        stopping_ = true;
        grace_deadline_ = now + o_.grace.chrono();
        if (!running_.empty())
          log_("stopping: waiting up to " + o_.grace.str() + " for " +
               std::to_string(running_.size()) + " running job(s)");
        // Claimed ahead and not started: given back at once, the attempt returned.
        for (const Job& job : waiting_) give_back(job, "not started before shutdown");
        waiting_.clear();
      }
      if (handled_signals >= 2 && !abandon_) {
        grace_deadline_ = now;
        abandon_ = true;
        retry_pending_at_ = now;
        for (Running& r : running_)
          if (!r.child->finished()) {
            r.release_on_exit = true;
            r.child->signal(SIGKILL);
          }
      }
    }
    for (const auto& [id, lapse] : heartbeat_->take_lost()) lease_ended(id, lapse, now);
    bool finished_any = false;
    for (auto it = running_.begin(); it != running_.end();) {
      try {
        it->child->reap();
      } catch (const Error& e) {
        it->wait_error = e.what();
      }
      if (it->child->finished() || it->wait_error) {
        finish(*it);
        it = running_.erase(it);
        finished_any = true;
        // At the queue's limit, the slot this job held is the one to take.
        if (limited_) next_claim_ = now;
      } else {
        ++it;
      }
    }
    // Freed slots take the jobs already claimed before anything is written or claimed.
    if (!stopping_) fill_slots();
    // Draining: the last job is done, so whether anything is left is asked now rather than
    // after the idle pause an earlier empty claim set.
    if (finished_any && o_.drain && running_.empty() && waiting_.empty())
      next_claim_ = std::min(next_claim_, now);
    finish_turn(now);
    // Fails and releases are written here, between turns (the claiming connection is the
    // loop's then); acks and claims go by the call thread.
    if (!turn_ && now >= retry_pending_at_ && !pending_.empty()) {
      writes_failing_ = !flush_pending() && (!pending_.empty() || !acks_.empty());
      if (writes_failing_) retry_pending_at_ = now + std::chrono::seconds(1);
    }
    check_timers(now);
    open_listener(now);
    if (writes_due(now) || can_claim()) start_turn(now);
    bool limit_reached = o_.max_jobs > 0 && claimed_ >= o_.max_jobs;
    if (running_.empty() && waiting_.empty() && pending_.empty() && acks_.empty() && !turn_ &&
        (stopping_ || drained_ || limit_reached))
      break;

    // Sleep until something happens: output, an exit, a signal, or the next timer.
    std::vector<pollfd> fds{{signals.read_fd(), POLLIN, 0}};
    const int notices = listen_fd();
    if (notices >= 0) fds.push_back({notices, POLLIN, 0});
    for (const Running& r : running_) r.child->poll_fds(fds);
    auto wait = std::chrono::milliseconds(1000);
    auto until = [&](Clock::time_point t) {
      auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - now);
      wait = std::max(std::chrono::milliseconds(0), std::min(wait, d));
    };
    // While a turn is out, its return wakes the loop; the timers of the next wait for it.
    if (!turn_) {
      if (can_claim() && wants_claim()) until(next_claim_);
      if (!pending_.empty() || writes_failing_) until(retry_pending_at_);
      if (!acks_.empty()) until(std::max(retry_pending_at_, acks_.front().queued + kAckWait));
    }
    for (const Running& r : running_) {
      if (r.deadline && !r.timed_out) until(*r.deadline);
      if (r.kill_at) until(*r.kill_at);
    }
    if (grace_deadline_) until(*grace_deadline_ + std::chrono::milliseconds(1));
    poll(fds.data(), fds.size(), static_cast<int>(wait.count()));
    for (const pollfd& p : fds) {
      if (!p.revents) continue;
      if (p.fd == signals.read_fd()) {
        signals.drain();
        continue;
      }
      if (p.fd == notices) {
        read_notifications(Clock::now());
        continue;
      }
      for (Running& r : running_)
        if (r.child->handle(p.fd, p.revents)) break;
    }
  }
  calls_.reset();
  heartbeat_.reset();
  listen_db_.reset();
  guard_.reset();
  return summary_;
}

}  // namespace

WorkerSummary run_worker(std::unique_ptr<Database> db, const WorkerOptions& options,
                         const std::function<void(const std::string&)>& log,
                         const std::function<void(const std::string&)>& debug,
                         const std::function<void(const std::string&)>& job_stderr) {
  return Worker(std::move(db), options, log, debug, job_stderr).run();
}

}  // namespace queuectl
