// PostgreSQL: recurring schedules (queuectl cron). What the SQL may contain: postgresql_sql.hpp.

#include <string>

#include "db/dialects/postgresql_sql.hpp"

namespace queuectl::postgresql_sql {

ScheduleStatements make_schedules() {
  ScheduleStatements s;
  const std::string cols =
      "s.name, s.queue, s.payload, s.priority, s.max_attempts, s.group_key, s.schedule, "
      "s.time_zone, s.misfire, s.misfire_limit, s.misfire_after, s.overlap, "
      "CASE WHEN s.paused THEN 1 ELSE 0 END, s.next_fire, s.last_fire, s.last_job_id, s.fired, "
      "s.missed, s.skipped, s.seq";
  s.now = "SELECT CAST(floor(extract(epoch FROM now())) AS bigint)";
  s.get = "SELECT " + cols + " FROM queuectl_schedules s WHERE s.name = CAST(:name AS text)";
  s.lock = s.get + " FOR UPDATE";
  s.list = "SELECT " + cols + R"(, j.status
      FROM queuectl_schedules s LEFT JOIN job_queue j ON j.id = s.last_job_id
     ORDER BY s.name)";
  s.names = "SELECT name FROM queuectl_schedules ORDER BY name";
  s.insert = R"(
    INSERT INTO queuectl_schedules
           (name, queue, payload, priority, max_attempts, group_key, schedule, time_zone,
            misfire, misfire_limit, misfire_after, overlap, next_fire)
    VALUES (CAST(:name AS text), CAST(:queue AS text), CAST(:payload AS text),
            CAST(:priority AS integer), CAST(:max_attempts AS integer),
            CAST(:group_key AS text), CAST(:schedule AS text), CAST(:time_zone AS text),
            CAST(:misfire AS text), CAST(:misfire_limit AS integer),
            CAST(:misfire_after AS integer), CAST(:overlap AS text), CAST(:next_fire AS bigint))
    ON CONFLICT (name) DO NOTHING)";
  s.redefine = R"(
    UPDATE queuectl_schedules
       SET queue = CAST(:queue AS text), payload = CAST(:payload AS text),
           priority = CAST(:priority AS integer), max_attempts = CAST(:max_attempts AS integer),
           group_key = CAST(:group_key AS text), schedule = CAST(:schedule AS text),
           time_zone = CAST(:time_zone AS text), misfire = CAST(:misfire AS text),
           misfire_limit = CAST(:misfire_limit AS integer),
           misfire_after = CAST(:misfire_after AS integer), overlap = CAST(:overlap AS text),
           next_fire = CAST(:next_fire AS bigint), updated_at = now()
     WHERE name = CAST(:name AS text))";
  s.remove = "DELETE FROM queuectl_schedules WHERE name = CAST(:name AS text)";
  s.remove_fires = "DELETE FROM queuectl_schedule_fires WHERE name = CAST(:name AS text)";
  s.set_paused = R"(
    UPDATE queuectl_schedules
       SET paused = (CAST(:paused AS integer) = 1), next_fire = CAST(:next_fire AS bigint),
           updated_at = now()
     WHERE name = CAST(:name AS text))";
  const std::string due = R"(
      FROM queuectl_schedules s
     WHERE s.queue = COALESCE(CAST(:queue AS text), s.queue) AND NOT s.paused
       AND s.next_fire <= )";
  s.any_due = "SELECT 1" + due + "CAST(floor(extract(epoch FROM now())) AS bigint) LIMIT 1";
  s.due_pick = "SELECT " + cols + due + R"(CAST(:now AS bigint)
     ORDER BY s.next_fire, s.name
     LIMIT :batch OFFSET :skip
       FOR UPDATE SKIP LOCKED)";
  s.job_status = "SELECT status FROM job_queue WHERE id = CAST(:id AS bigint)";
  s.advance = R"(
    UPDATE queuectl_schedules
       SET next_fire = CAST(:next_fire AS bigint),
           last_fire = COALESCE(CAST(:last_fire AS bigint), last_fire),
           last_job_id = COALESCE(CAST(:last_job_id AS bigint), last_job_id),
           fired = fired + CAST(:fired AS bigint), missed = missed + CAST(:missed AS bigint),
           skipped = skipped + CAST(:skipped AS bigint), seq = seq + CAST(:fires AS bigint),
           updated_at = now()
     WHERE name = CAST(:name AS text) AND next_fire = CAST(:old_next AS bigint) AND NOT paused)";
  s.triggered = R"(
    UPDATE queuectl_schedules
       SET last_job_id = CAST(:last_job_id AS bigint), last_fire = CAST(:last_fire AS bigint),
           seq = seq + 1, updated_at = now()
     WHERE name = CAST(:name AS text))";
  s.record_fires.prefix =
      "INSERT INTO queuectl_schedule_fires (name, seq, tick, job_id, missed) VALUES ";
  s.record_fires.row = "(:n{n}, :s{n}, :t{n}, :j{n}, :m{n})";
  s.prune_fires =
      "DELETE FROM queuectl_schedule_fires WHERE name = CAST(:name AS text)"
      " AND seq <= CAST(:below AS bigint)";
  s.recent_fires = R"(
    SELECT f.seq, f.tick, f.job_id, f.missed, j.status, )" QC_TS("f.fired_at") R"(
      FROM queuectl_schedule_fires f LEFT JOIN job_queue j ON j.id = f.job_id
     WHERE f.name = CAST(:name AS text)
     ORDER BY f.seq DESC
     LIMIT :limit)";
  s.late = R"(
    SELECT name, queue, CAST(floor(extract(epoch FROM now())) AS bigint) - next_fire
      FROM queuectl_schedules
     WHERE NOT paused AND next_fire < CAST(floor(extract(epoch FROM now())) AS bigint) - misfire_after
     ORDER BY next_fire, name
     LIMIT :limit)";
  return s;
}

}  // namespace queuectl::postgresql_sql
