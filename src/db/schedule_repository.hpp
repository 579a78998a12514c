// Recurring schedules (queuectl cron): kept in queuectl_schedules, fired by any number of
// processes at once, each tick one job. See sql/<backend>/010_schedules.sql.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cron_plan.hpp"
#include "core/job.hpp"
#include "db/database.hpp"

namespace queuectl {

// What a schedule is: what `cron add` and `cron apply` set.
struct ScheduleDefinition {
  std::string name;
  std::string queue;
  std::string payload = "{}";  // validated, compact JSON
  int priority = 0;
  int max_attempts = 25;
  std::optional<std::string> group_key;
  std::string schedule;  // CronSchedule::text()
  std::string time_zone = "UTC";
  MisfirePolicy misfire;
  bool overlap_skip = false;  // --overlap skip

  bool operator==(const ScheduleDefinition& o) const;
  bool operator!=(const ScheduleDefinition& o) const { return !(*this == o); }
};

// A schedule as stored: its definition and its state. Times in seconds since the epoch.
struct Schedule {
  ScheduleDefinition def;
  bool paused = false;
  std::int64_t next_fire = 0;
  std::optional<std::int64_t> last_fire;  // the last tick that made a job
  std::optional<std::int64_t> last_job_id;
  std::optional<Status> last_job_status;  // list() and find(); none: no job, or purged
  std::int64_t fired = 0, missed = 0, skipped = 0, seq = 0;
};

// One row of a schedule's recent fires.
struct ScheduleFire {
  std::int64_t seq = 0;
  std::optional<std::int64_t> tick;    // none: fired by hand (cron trigger)
  std::optional<std::int64_t> job_id;  // none: skipped, the last job still unfinished
  std::int64_t missed = 0;             // missed ticks this job stands for
  std::optional<Status> status;        // of the job; none: no job, or purged
  std::string fired_at;                // RFC 3339
};

// What one fire of one schedule did.
struct FireEvent {
  std::string name;
  std::string queue;
  std::optional<std::int64_t> tick;
  std::optional<std::int64_t> job_id;  // none: skipped (overlap)
  std::int64_t stands_for = 0;         // missed ticks it covers
};

struct TickResult {
  std::vector<FireEvent> fires;  // in firing order
  std::int64_t jobs = 0, missed = 0, skipped = 0;
  int schedules = 0;  // schedules that were due and fired (or skipped) by this call
  // Due schedules that could not fire (their schedule or zone no longer reads); the others
  // fired.
  std::vector<std::string> errors;
};

enum class PutOutcome { added, replaced, unchanged, removed };

// What `cron apply` did, or would do, to one schedule.
struct ApplyChange {
  std::string name;
  PutOutcome outcome = PutOutcome::unchanged;
  std::vector<std::string> changes;  // replaced: "schedule: '0 3 * * *' -> '0 4 * * *'", ...
};

// The fields in which `to` differs from `from`, each as "field: old -> new".
std::vector<std::string> definition_changes(const ScheduleDefinition& from,
                                            const ScheduleDefinition& to);

class ScheduleRepository {
 public:
  explicit ScheduleRepository(Database& db) : db_(db) {}

  // The database's clock, whole seconds since the epoch.
  std::int64_t now();

  // Adds the schedule, or replaces the one of that name. Its next fire time is the first tick
  // after now, unless it is replaced with the same schedule and time zone (then the ticks go
  // on as they were). Counters, pause and history are kept on a replace. A definition equal
  // to the stored one writes nothing.
  PutOutcome put(const ScheduleDefinition& def);
  // Makes `defs` the stored schedules in one transaction: each added, replaced or left as
  // it is; with `prune`, every other schedule removed. With `dry_run`, writes nothing and
  // says what it would do. In name order, removals last.
  std::vector<ApplyChange> apply(const std::vector<ScheduleDefinition>& defs, bool prune,
                                 bool dry_run);
  // Removes a schedule and its history; false when there was none.
  bool remove(const std::string& name);
  // Pauses (no ticks fire) or resumes (the next tick after now; the ticks of the pause are
  // neither fired nor counted missed). Throws NotFound. Returns false when already so.
  bool set_paused(const std::string& name, bool paused);

  std::vector<Schedule> list();
  std::optional<Schedule> find(const std::string& name);
  std::vector<std::string> names();
  std::vector<ScheduleFire> recent_fires(const std::string& name, int limit);

  // Fires what is due now: the schedules of `queue` (all when none), `batch` at a time, each
  // batch in one transaction, at most `max_batches` batches (0: until none is due).
  TickResult tick(const std::optional<std::string>& queue, int batch = 100, int max_batches = 0);
  // Fires the schedule now, once, whatever its schedule, pause or overlap say; its ticks go
  // on as before. Throws NotFound.
  FireEvent trigger(const std::string& name);

 private:
  // put() inside a transaction already open.
  std::vector<ApplyChange> apply_once(const std::vector<ScheduleDefinition>& defs, bool prune,
                                      bool dry_run);
  PutOutcome put_locked(const ScheduleDefinition& def, bool dry_run);
  // One batch: the due rows locked, their jobs inserted. Returns the schedules it handled.
  // `skip`: how many due schedules to pass over first (those that could not fire).
  int fire_batch(const std::optional<std::string>& queue, int batch, int skip, TickResult& out);

  Database& db_;
};

// The first tick of a schedule after `now` (seconds): for a new schedule, and on resume.
std::int64_t first_tick_after(const std::string& schedule, const std::string& time_zone,
                              std::int64_t now);

}  // namespace queuectl
