// SQLite: recurring schedules (queuectl cron). What the SQL may contain: sqlite_sql.hpp.

#include <string>

#include "db/dialects/sqlite_sql.hpp"

namespace queuectl::sqlite_sql {

ScheduleStatements make_schedules() {
  ScheduleStatements s;
  const std::string cols =
      "s.name, s.queue, s.payload, s.priority, s.max_attempts, s.group_key, s.schedule, "
      "s.time_zone, s.misfire, s.misfire_limit, s.misfire_after, s.overlap, "
      "s.paused, s.next_fire, s.last_fire, s.last_job_id, s.fired, "
      "s.missed, s.skipped, s.seq";
  s.now = "SELECT CAST(strftime('%s', 'now') AS INTEGER)";
  s.get = "SELECT " + cols + " FROM queuectl_schedules s WHERE s.name = :name";
  // BEGIN IMMEDIATE already holds the write lock.
  s.lock = s.get;
  s.list = "SELECT " + cols + R"(, j.status
      FROM queuectl_schedules s LEFT JOIN job_queue j ON j.id = s.last_job_id
     ORDER BY s.name)";
  s.names = "SELECT name FROM queuectl_schedules ORDER BY name";
  s.insert = R"(
    INSERT INTO queuectl_schedules
           (name, queue, payload, priority, max_attempts, group_key, schedule, time_zone,
            misfire, misfire_limit, misfire_after, overlap, next_fire)
    VALUES (:name, :queue, :payload,
            :priority, :max_attempts,
            :group_key, :schedule, :time_zone,
            :misfire, :misfire_limit,
            :misfire_after, :overlap, :next_fire)
    ON CONFLICT (name) DO NOTHING)";
  s.redefine = R"(
    UPDATE queuectl_schedules
       SET queue = :queue, payload = :payload,
           priority = :priority, max_attempts = :max_attempts,
           group_key = :group_key, schedule = :schedule,
           time_zone = :time_zone, misfire = :misfire,
           misfire_limit = :misfire_limit,
           misfire_after = :misfire_after, overlap = :overlap,
           next_fire = :next_fire, updated_at = )" QC_NOW R"(
     WHERE name = :name)";
  s.remove = "DELETE FROM queuectl_schedules WHERE name = :name";
  s.remove_fires = "DELETE FROM queuectl_schedule_fires WHERE name = :name";
  s.set_paused = R"(
    UPDATE queuectl_schedules
       SET paused = :paused, next_fire = :next_fire,
           updated_at = )" QC_NOW R"(
     WHERE name = :name)";
  const std::string due = R"(
      FROM queuectl_schedules s
     WHERE s.queue = COALESCE(:queue, s.queue) AND s.paused = 0
       AND s.next_fire <= )";
  s.any_due = "SELECT 1" + due + "CAST(strftime('%s', 'now') AS INTEGER) LIMIT 1";
  s.due_pick = "SELECT " + cols + due + R"(:now
     ORDER BY s.next_fire, s.name
     LIMIT :batch OFFSET :skip)";
  s.job_status = "SELECT status FROM job_queue WHERE id = :id";
  s.advance = R"(
    UPDATE queuectl_schedules
       SET next_fire = :next_fire,
           last_fire = COALESCE(:last_fire, last_fire),
           last_job_id = COALESCE(:last_job_id, last_job_id),
           fired = fired + :fired, missed = missed + :missed,
           skipped = skipped + :skipped, seq = seq + :fires,
           updated_at = )" QC_NOW R"(
     WHERE name = :name AND next_fire = :old_next AND paused = 0)";
  s.triggered = R"(
    UPDATE queuectl_schedules
       SET last_job_id = :last_job_id, last_fire = :last_fire, seq = seq + 1, updated_at = )" QC_NOW
                R"(
     WHERE name = :name)";
  s.record_fires.prefix =
      "INSERT INTO queuectl_schedule_fires (name, seq, tick, job_id, missed) VALUES ";
  s.record_fires.row = "(:n{n}, :s{n}, :t{n}, :j{n}, :m{n})";
  s.prune_fires =
      "DELETE FROM queuectl_schedule_fires WHERE name = :name"
      " AND seq <= :below";
  s.recent_fires = R"(
    SELECT f.seq, f.tick, f.job_id, f.missed, j.status, )" QC_TS("f.fired_at") R"(
      FROM queuectl_schedule_fires f LEFT JOIN job_queue j ON j.id = f.job_id
     WHERE f.name = :name
     ORDER BY f.seq DESC
     LIMIT :limit)";
  s.late = R"(
    SELECT name, queue, CAST(strftime('%s', 'now') AS INTEGER) - next_fire
      FROM queuectl_schedules
     WHERE paused = 0 AND next_fire < CAST(strftime('%s', 'now') AS INTEGER) - misfire_after
     ORDER BY next_fire, name
     LIMIT :limit)";
  return s;
}

}  // namespace queuectl::sqlite_sql
