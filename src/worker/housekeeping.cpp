#include "worker/housekeeping.hpp"

#include <algorithm>
#include <memory>

#include "core/errors.hpp"
#include "core/process.hpp"
#include "db/admin_repository.hpp"
#include "db/database.hpp"
#include "db/lease_repository.hpp"
#include "db/schedule_repository.hpp"

namespace queuectl {

HousekeepingPlan HousekeepingPlan::for_lease(std::chrono::milliseconds lease) {
  HousekeepingPlan p;
  p.reap_every = std::clamp<std::chrono::milliseconds>(lease / 2, std::chrono::seconds(1),
                                                       std::chrono::seconds(15));
  return p;
}

std::chrono::milliseconds HousekeepingPlan::purge_every(
    std::optional<std::chrono::milliseconds> retain) {
  if (!retain) return std::chrono::seconds(60);
  return std::clamp<std::chrono::milliseconds>(*retain / 10, std::chrono::seconds(1),
                                               std::chrono::seconds(60));
}

Housekeeping::Housekeeping(DbUrl url, std::string queue, HousekeepingPlan plan,
                           std::function<void(const std::string&)> log)
    : url_(std::move(url)), queue_(std::move(queue)), plan_(plan), log_(std::move(log)) {
  // The first reap comes 15 s after the start (or one period, if longer), not at once: a
  // fleet started together does not sweep together, and a worker started for a short task
  // leaves other leases to the workers that stay. The first purge reads the retention at
  // the first turn.
  const auto now = std::chrono::steady_clock::now();
  next_reap_ =
      now + std::max<std::chrono::milliseconds>(plan_.reap_every, std::chrono::seconds(15));
  next_purge_ = now;
  thread_ = start_helper_thread([this] { loop(); });
}

Housekeeping::~Housekeeping() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void fire_due_schedules(Database& db, const std::string& queue, int batch,
                        const std::function<void(const std::string&)>& log,
                        std::string& last_errors) {
  const TickResult fired = ScheduleRepository(db).tick(queue, batch, 1);
  for (const FireEvent& e : fired.fires) {
    std::string line = "schedule " + e.name + ": ";
    line += e.job_id ? "job " + std::to_string(*e.job_id) : "skipped, its last job is unfinished";
    if (e.stands_for > 0)
      line += " (one job for " + std::to_string(e.stands_for + 1) + " missed ticks)";
    log(line);
  }
  // Said when they change, not every second.
  std::string errors;
  for (const std::string& e : fired.errors) errors += (errors.empty() ? "" : "; ") + e;
  if (errors != last_errors && !errors.empty()) log(errors);
  last_errors = errors;
  if (fired.missed > 0 && fired.fires.empty())
    log(std::to_string(fired.missed) + " missed tick(s) of queue " + queue +
        "'s schedules skipped");
}

void Housekeeping::turn(Database& db, std::chrono::steady_clock::time_point now) {
  fire_due_schedules(db, queue_, plan_.fire_batch, log_, last_errors_);
  if (now >= next_reap_) {
    next_reap_ = now + plan_.reap_every;
    ReapOptions o;
    o.queue = queue_;
    o.batch = plan_.reap_batch;
    o.max_batches = 1;
    const ReapResult r = LeaseRepository(db).reap(o);
    if (!r.requeued.empty() || !r.failed.empty())
      log_("reaped " + std::to_string(r.requeued.size() + r.failed.size()) +
           " expired lease(s) of queue " + queue_ + ": " + std::to_string(r.requeued.size()) +
           " back to ready, " + std::to_string(r.failed.size()) + " out of attempts");
  }
  if (now >= next_purge_) {
    AdminRepository admin(db);
    const QueueSettings s = admin.settings(queue_);
    next_purge_ = now + HousekeepingPlan::purge_every(s.retain ? std::optional(s.retain->chrono())
                                                               : std::nullopt);
    if (s.retain) {
      FinishedFilter f;
      f.queue = queue_;
      f.statuses = {Status::done, Status::failed, Status::canceled};
      f.older_than = *s.retain;
      f.batch = plan_.purge_batch;
      f.max_batches = 1;
      const std::int64_t n = admin.purge(f, DryRun::no);
      if (n > 0)
        log_("deleted " + std::to_string(n) + " finished job(s) of queue " + queue_ +
             " older than its retention of " + s.retain->str());
    }
  }
}

void Housekeeping::loop() {
  std::unique_ptr<Database> db;
  bool failing = false;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!cv_.wait_for(lock, plan_.fire_every, [this] { return stop_; })) {
    lock.unlock();
    try {
      if (!db) {
        db = std::make_unique<Database>(url_);
        db->give_up = [this] {
          std::lock_guard<std::mutex> guard(mutex_);
          return stop_;
        };
      }
      turn(*db, std::chrono::steady_clock::now());
      if (failing) log_("housekeeping: the database answers again");
      failing = false;
    } catch (const std::exception& e) {
      // Said once per outage; the connection is made again at the next turn.
      db.reset();
      if (!failing) log_(std::string("housekeeping: ") + e.what() + "; trying again every second");
      failing = true;
    }
    lock.lock();
  }
}

}  // namespace queuectl
