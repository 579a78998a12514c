// The finishing writes of `work` waiting to be written: fails and releases one at a time,
// in order; acks batched, so that the acks of jobs that finished together go in one
// statement (JobRepository::ack_many). What is due when, and what waits after database
// trouble; the writing itself is the worker's (it knows the connection and the log).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/job_repository.hpp"

namespace queuectl {

// A fail or a release waiting to be written, with what to say about it.
struct PendingWrite {
  std::int64_t id;
  std::string head;  // "job 42 attempt 1/25", for the log
  std::string verb;  // what the write does to the job, for the log: "recorded", "released"
  std::function<void()> write;  // counts and logs its own success
};

// A job whose command exited 0, waiting for its ack.
struct PendingAck {
  AckItem item;
  std::string head;
  std::string done;  // the line to log once the ack has landed
  std::chrono::steady_clock::time_point queued;
};

class WriteQueue {
 public:
  using Clock = std::chrono::steady_clock;
  // How long an ack may wait for others to join it.
  static constexpr Clock::duration kAckWait = std::chrono::milliseconds(10);
  // After database trouble, how long the writes wait before they are tried again.
  static constexpr Clock::duration kRetry = std::chrono::seconds(1);

  void push(PendingWrite w) { writes_.push_back(std::move(w)); }
  void push_ack(PendingAck a) { acks_.push_back(std::move(a)); }
  // A batch of acks that met database trouble, to go again before those queued since.
  void put_back(std::vector<PendingAck> acks);

  bool empty() const { return writes_.empty() && acks_.empty(); }
  std::size_t size() const { return writes_.size() + acks_.size(); }
  std::deque<PendingWrite>& writes() { return writes_; }
  const std::deque<PendingWrite>& writes() const { return writes_; }
  const std::vector<PendingAck>& acks() const { return acks_; }
  // The line head of job `id`'s queued write or ack (empty: none queued).
  std::string head_of(std::int64_t id) const;

  // Acks go once every job of their claim has finished (one token, one statement), or all
  // of them when `all` (nothing runs, the worker stops) or the oldest has waited kAckWait.
  // `running(token)`: a job claimed with that token still runs or waits for a slot.
  bool all_acks_due(Clock::time_point now, bool all) const;
  bool due(Clock::time_point now, bool all,
           const std::function<bool(const std::string&)>& running) const;
  std::vector<PendingAck> take_due_acks(Clock::time_point now, bool all,
                                        const std::function<bool(const std::string&)>& running);
  // When the oldest ack is due of itself.
  std::optional<Clock::time_point> ack_deadline() const;

  // Whether the last writes met database trouble (then no claim goes until they are
  // written), and when they are tried again.
  bool failing() const { return failing_; }
  Clock::time_point retry_at() const { return retry_at_; }
  bool may_retry(Clock::time_point now) const { return now >= retry_at_; }
  // The writes went through (`ok`), or trouble left some of them queued.
  void result(bool ok, Clock::time_point now);
  void retry_now(Clock::time_point now) { retry_at_ = now; }
  // Everything queued is dropped (a second signal while the database is in trouble); the
  // ids of the jobs whose outcome is lost.
  std::vector<std::int64_t> drop_all();

 private:
  std::deque<PendingWrite> writes_;
  std::vector<PendingAck> acks_;
  bool failing_ = false;
  Clock::time_point retry_at_ = Clock::now();
};

}  // namespace queuectl
