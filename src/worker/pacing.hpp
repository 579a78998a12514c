// When `work` claims and how many jobs at a time: pure arithmetic on what the worker holds,
// with no database, no clock of its own and no randomness of its own, so that every rule
// here is unit-tested (tests/unit/test_claim_pacing.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "core/duration.hpp"

namespace queuectl {

class ClaimPacing {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    int concurrency = 1;
    int batch = 0;              // jobs per claim at most; 0 = as many as there is room for
    std::int64_t max_jobs = 0;  // jobs to claim in all; 0 = no limit
    Duration idle_min = Duration(std::chrono::milliseconds(100));
    Duration idle_max = Duration::seconds(5);
  };

  // What the worker holds when it asks: commands running, jobs claimed and waiting for a
  // slot, and jobs claimed since it started.
  struct Held {
    int running = 0;
    int waiting = 0;
    std::int64_t claimed = 0;
    int total() const { return running + waiting; }
  };

  ClaimPacing(Limits limits, Clock::time_point now) : l_(limits), next_(now) {}

  // A command ran this long: the moving average says whether jobs are short.
  void job_ran(Clock::duration d);
  // The queue has a concurrency limit: no job is claimed ahead (it would hold one of the
  // queue's slots idle), and a slot that frees is not announced, so empty claims are tried
  // again soon rather than after the whole poll interval.
  void set_limited(bool limited) { limited_ = limited; }
  bool limited() const { return limited_; }

  // Jobs claimed ahead, besides the free slots: twice as many as there are slots while jobs
  // are short (under kShortJob), so that a slot that frees starts its next job at once instead
  // of after an ack and a claim; none with one slot or on a queue with a limit.
  int prefetch() const;
  // --max-jobs jobs have been claimed.
  bool limit_reached(const Held& h) const { return l_.max_jobs > 0 && h.claimed >= l_.max_jobs; }
  // There is room for at least one more job.
  bool has_room(const Held& h) const;
  // A claim is worth its round trip: it can take half of what the worker may hold (its
  // slots and the jobs ahead; --batch jobs if that is fewer), or a slot would otherwise stay
  // idle.
  bool wants(const Held& h) const;
  // How many jobs the next claim asks for (at least 1 when wants()).
  int claim_size(const Held& h) const;

  // The next claim is due at `at` (a slot freed at a limited queue's limit, the last job of
  // --drain finished, a LISTEN took effect).
  void due_at(Clock::time_point at) { next_ = at; }
  // A job was announced: claim now, and forget the idle backoff.
  void woken(Clock::time_point now);
  bool due(Clock::time_point now) const { return now >= next_; }
  Clock::time_point next() const { return next_; }

  // A claim returned jobs: the idle backoff starts over.
  void got_jobs() { idle_ = Duration(); }
  // A claim returned none. The pause grows from idle_min to idle_max; while listening for
  // announcements (and the queue has no limit) it is idle_max at once. `jitter` in [0, 1)
  // spreads a fleet out: the pause is between half and all of it.
  void found_none(Clock::time_point now, bool listening, double jitter);
  // A claim failed (database trouble): the same growing pause, whatever listens.
  void failed(Clock::time_point now, double jitter);
  Duration idle() const { return idle_; }

  static constexpr Clock::duration kShortJob = std::chrono::milliseconds(500);

 private:
  void grow_idle();
  void pause(Clock::time_point now, double jitter);

  Limits l_;
  Clock::time_point next_;
  Duration idle_;
  bool limited_ = false;
  std::optional<Clock::duration> typical_run_;
};

}  // namespace queuectl
