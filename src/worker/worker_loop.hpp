// Inside `queuectl work`: the Worker whose loop run_worker runs. Internal to src/worker/.
//
// The loop (worker.cpp) sleeps in poll() until something happens (a command's output or
// exit, a signal, a wake-up from a helper thread or the database, the next timer), then
// does what is due, in this order: signals, leases the heartbeat gave up, finished commands,
// waiting jobs into free slots, the call thread's turn that came back, fails and releases,
// timers, the listener, and a new turn (acks, then a claim). Its parts each have a file:
//   children.*       the commands running and their timers
//   pacing.*         when to claim and how many (pure)
//   writes.*         the finishing writes waiting, and when they are due
//   announcements.*  LISTEN/NOTIFY wake-ups (shared with `claim --wait`)
//   call_thread.*    claims and acks off the loop, one at a time
//   heartbeat.*      every running job's lease extended from a thread of its own
//   finishing.cpp    what a finished command, a lost lease or a landed turn means for a job
#pragma once

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/signal_scope.hpp"
#include "db/job_repository.hpp"
#include "worker/announcements.hpp"
#include "worker/call_thread.hpp"
#include "worker/children.hpp"
#include "worker/heartbeat.hpp"
#include "worker/housekeeping.hpp"
#include "worker/pacing.hpp"
#include "worker/worker.hpp"
#include "worker/writes.hpp"

namespace queuectl::worker_detail {

using Clock = std::chrono::steady_clock;
using LogFn = std::function<void(const std::string&)>;

// How long a job ran, as every table prints durations: "850ms", "42s", "9m58s".
std::string took_text(Clock::duration d);

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
  // The queue had a rate limit when the turn went out: an empty claim then asks when the
  // next token comes (rate_wait; the claim is tried again then, and --drain is not done).
  bool rated = false;
  std::optional<std::chrono::milliseconds> rate_wait;
};

class Worker {
 public:
  Worker(std::unique_ptr<Database> db, const WorkerOptions& o, LogFn log, LogFn debug,
         LogFn job_stderr);
  WorkerSummary run();

 private:
  // ---- the loop (worker.cpp)
  void on_signals(int count, Clock::time_point now);
  void reap_finished(Clock::time_point now);
  // A line from a command's report descriptor: to the heartbeat, or logged when it is bad.
  void on_report(std::int64_t id, const std::string& line);
  void fill_slots();
  void start_job(const Job& job);
  ClaimPacing::Held held() const;
  bool can_claim() const;
  // A job claimed with `token` still runs or waits for a slot: its claim's acks wait.
  bool claim_running(const std::string& token) const;
  bool all_acks_due() const { return children_.empty() || stopping_; }
  // Hands the acks that are due and a claim, if one is wanted, to the call thread: the loop
  // goes on while they wait for the database. One turn at a time; the main thread touches
  // the claiming connection only while none is out.
  void start_turn(Clock::time_point now);
  void finish_turn(Clock::time_point now);
  void claim_landed(Turn& turn, Clock::time_point now);
  void note_if_paused();
  bool done() const;
  // How long poll() may sleep: until the next timer, at most a second.
  std::chrono::milliseconds sleep_for(Clock::time_point now) const;
  // The claiming connection, opened again after trouble.
  JobRepository& repo();
  // An outage is told when it starts, every kOutageReminder while it lasts, and when the
  // database answers again; the retries themselves go to -v.
  void connection_trouble(const std::exception& e);
  void connection_back();
  void open_listener(Clock::time_point now);
  void read_announcements(Clock::time_point now);

  // ---- what happens to each job (finishing.cpp)
  // A command has ended: its outcome is queued (an ack, a fail, a release).
  void finish(Running& r);
  // Queues a release of a job that was claimed but will not run.
  void give_back(const Job& job, const std::string& why);
  // The heartbeat no longer keeps job `id`'s lease: a running command is stopped, a job
  // not started is not run, and a finished job whose outcome is still queued says that its
  // outcome is written only if the lease is still its own when the database answers.
  void lease_ended(std::int64_t id, Heartbeat::Lapse lapse, Clock::time_point now);
  // The acks of a turn landed, or met trouble.
  void acks_landed(Turn& turn, Clock::time_point now);
  // Writes the queued fails and releases in order. A temporary error keeps the rest queued
  // for the next turn; any other failure drops that job's write (logged) and goes on with
  // the others. False when database trouble left writes for the next turn.
  bool flush_writes();
  // A lost lease or a deleted job found when its finishing write changed nothing.
  void report_lost(const std::string& head, const std::string& verb, bool not_found);
  // A second signal and a database in trouble: what is still queued is left to the reaper.
  void abandon_writes();

  DbUrl url_;
  WorkerOptions o_;
  LogFn log_;
  LogFn debug_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<JobRepository> repo_;
  SignalScope signals_;
  // The listening connection (PostgreSQL), apart from the one that claims: announcements
  // queue up on it while the worker sleeps in poll().
  std::unique_ptr<Database> listen_db_;
  std::optional<Announcements> announced_;
  bool can_listen_ = true;
  bool listen_failing_ = false;  // a failed LISTEN was told; its retries go to -v
  Clock::time_point listen_retry_at_ = Clock::now();
  static constexpr std::chrono::seconds kOutageReminder{60};
  std::optional<Clock::time_point> outage_since_;
  Clock::time_point outage_told_;
  bool paused_noted_ = false;
  bool rate_retried_ = false;  // the last empty claim found a token back at once
  bool rated_ = false;         // the queue had a rate limit when its settings were last read
  bool unknown_checked_ = false;
  ClaimPacing pacing_;
  Children children_;
  // Claimed (leases tracked by the heartbeat) and waiting for a free slot, in claim order.
  std::deque<Job> waiting_;
  WriteQueue writes_;
  std::unique_ptr<Heartbeat> heartbeat_;
  std::unique_ptr<Housekeeping> housekeeping_;  // schedules, reaping, retention
  WorkerSummary summary_;
  std::int64_t claimed_ = 0;  // started or waiting
  bool stopping_ = false;
  bool drained_ = false;
  int handled_signals_ = 0;
  // A second signal: finishing writes get one try each, and what cannot be written is left
  // to the reaper, so that a database that hangs cannot hold the worker.
  bool abandon_ = false;
  std::optional<Clock::time_point> grace_deadline_;
  // Claims and acks, off the loop; declared last, so that it is gone (its call returned)
  // before the connection it uses.
  std::unique_ptr<CallThread> calls_;
  std::shared_ptr<Turn> turn_;  // out on the call thread
};

}  // namespace queuectl::worker_detail
