#include "worker/pacing.hpp"

#include <algorithm>

namespace queuectl {

void ClaimPacing::job_ran(Clock::duration d) {
  typical_run_ = typical_run_ ? (*typical_run_ * 7 + d) / 8 : d;
}

// bench/work.sh, --concurrency 8: with half as many jobs ahead as slots 0.63x of the bare
// spawn on PostgreSQL, with as many 0.72-0.74x (MariaDB 0.63-0.70x), with twice as many
// 0.83-0.86x (MariaDB 0.77-0.86x); three times as many did no better.
int ClaimPacing::prefetch() const {
  if (l_.concurrency < 2 || limited_ || !typical_run_ || *typical_run_ >= kShortJob) return 0;
  return 2 * l_.concurrency;
}

bool ClaimPacing::has_room(const Held& h) const {
  return h.total() < l_.concurrency + prefetch() && !limit_reached(h);
}

// A claim waits for room for half of all the worker may hold (slots and jobs ahead), or for
// --batch jobs if fewer: with jobs ahead, those still waiting keep the slots busy meanwhile.
// Half the slots alone, with jobs ahead, made a claim and an ack of about 7 jobs each under
// `work --concurrency 8 -- true`; half of all made 15 (on MariaDB 132 picks for 2,000 jobs
// instead of 276, and 130 µs of the server's CPU a job instead of 170-185), as many jobs a
// second (bench/work.sh).
bool ClaimPacing::wants(const Held& h) const {
  if (limit_reached(h)) return false;
  const int most = l_.concurrency + prefetch();
  const int room = most - h.total();
  if (room <= 0) return false;
  int batch_min = std::max(1, most / 2);
  if (l_.batch > 0) batch_min = std::min(batch_min, l_.batch);
  return room >= batch_min || (h.waiting == 0 && h.total() < l_.concurrency);
}

int ClaimPacing::claim_size(const Held& h) const {
  const int room = l_.concurrency + prefetch() - h.total();
  int size = l_.batch > 0 ? std::min(l_.batch, room) : room;
  if (l_.max_jobs > 0)
    size = static_cast<int>(std::min<std::int64_t>(size, l_.max_jobs - h.claimed));
  return size;
}

void ClaimPacing::woken(Clock::time_point now) {
  next_ = now;
  idle_ = Duration();
}

void ClaimPacing::grow_idle() {
  idle_ =
      Duration(std::min(l_.idle_max.chrono(), std::max(l_.idle_min.chrono(), idle_.chrono() * 2)));
}

void ClaimPacing::pause(Clock::time_point now, double jitter) {
  next_ = now + std::chrono::milliseconds(
                    static_cast<long>(static_cast<double>(idle_.ms()) * (0.5 + 0.5 * jitter)));
}

void ClaimPacing::found_none(Clock::time_point now, bool listening, double jitter) {
  // While listening, new jobs are announced: the whole poll interval at once (the poll still
  // finds jobs that became due by their run_at).
  if (listening && !limited_)
    idle_ = l_.idle_max;
  else
    grow_idle();
  pause(now, jitter);
}

void ClaimPacing::failed(Clock::time_point now, double jitter) {
  grow_idle();
  pause(now, jitter);
}

}  // namespace queuectl
