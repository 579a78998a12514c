// SQLite: leases and the reaper; retry, cancel, move and purge; pausing and queue settings. What
// the SQL may contain: sqlite_sql.hpp.

#include <string>

#include "db/dialects/sqlite_sql.hpp"

namespace queuectl::sqlite_sql {

LeaseStatements make_leases(const std::string& cols) {
  LeaseStatements s;
  // IS is NULL-safe: a row other code claimed without naming a worker is listed too.
  // The leases a filter matches, listed (list_leases) and counted per worker (lease_summary).
  const std::string leases_matching = R"(
      FROM job_queue
     WHERE status = 1
       AND queue = COALESCE(:queue, queue)
       AND locked_by IS COALESCE(:worker, locked_by)
       AND ((:leased = 1 AND lock_until < )" QC_NOW_PLUS(":within_ms") R"()
            OR (:unleased = 1 AND lock_until IS NULL))
       AND COALESCE(locked_at, updated_at) <= )" QC_NOW_PLUS("-:older_ms");
  s.list_leases = "SELECT " + cols + ", " QC_AGE_NEG("lock_until") + leases_matching + R"(
     ORDER BY lock_until NULLS FIRST, id
     LIMIT :limit)";
  s.lease_summary = R"(
    SELECT locked_by, COUNT(*), SUM(CASE WHEN lock_until < )" QC_NOW R"( THEN 1 ELSE 0 END),
           SUM(CASE WHEN lock_until IS NULL THEN 1 ELSE 0 END),
           MIN()" QC_AGE_NEG("lock_until") R"())" +
                    leases_matching + R"(
     GROUP BY locked_by)";

  s.reap_pick = R"(
    SELECT id FROM job_queue
     WHERE status = 1 AND lock_until < )" QC_NOW R"(
       AND queue = COALESCE(:queue, queue)
     ORDER BY lock_until, id
     LIMIT :batch)";
  // A jitter drawn per row, so that a dead host's jobs do not all come back at once.
  s.reap_mark = R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE )" QC_RUN_AT_AFTER_BACKOFF_ROW_JITTER R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN )" QC_NOW R"( END,
           last_error = 'lease expired at ' || )" QC_TS("lock_until") R"( || ' while held by '
                        || COALESCE(locked_by, 'an unknown worker'),
           lock_token = NULL, lock_until = NULL,
           updated_at = )" QC_NOW R"(
     WHERE id IN ({ids}) AND status = 1 AND lock_until < )" QC_NOW;
  s.reap_unleased_pick = R"(
    SELECT id FROM job_queue
     WHERE status = 1 AND lock_until IS NULL
       AND COALESCE(locked_at, updated_at) < )" QC_NOW_PLUS("-:older_ms") R"(
       AND queue = COALESCE(:queue, queue)
     ORDER BY id
     LIMIT :batch)";
  s.reap_unleased_mark = R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE )" QC_RUN_AT_AFTER_BACKOFF_ROW_JITTER R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN )" QC_NOW R"( END,
           last_error = 'no lease (lock_until NULL), processing since '
                        || )" QC_TS("COALESCE(locked_at, updated_at)") R"( || ' while held by '
                        || COALESCE(locked_by, 'an unknown worker'),
           lock_token = NULL,
           updated_at = )" QC_NOW R"(
     WHERE id IN ({ids}) AND status = 1 AND lock_until IS NULL
       AND COALESCE(locked_at, updated_at) < )" QC_NOW_PLUS("-:older_ms");
  s.reaped_by_ids =
      "SELECT id, status, queue, locked_by, attempts, dead_from FROM job_queue"
      " WHERE id IN ({ids}) ORDER BY id";
  return s;
}

AdminStatements make_admin() {
  AdminStatements s;
  s.statuses_by_ids = "SELECT id, status FROM job_queue WHERE id IN ({ids}) ORDER BY id";
  s.retry_ids.write = returning(R"(
    UPDATE job_queue
       SET status = 0, attempts = 0, run_at = )" QC_NOW R"(, finished_at = NULL,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = )" QC_NOW R"(
     WHERE id IN ({ids}) AND status IN (3, 4))",
                                "id");
  s.move_ids.write = returning(R"(
    UPDATE job_queue
       SET queue = COALESCE(:to, dead_from), dead_from = NULL,
           status = 0, attempts = 0, run_at = )" QC_NOW R"(, finished_at = NULL,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = )" QC_NOW R"(
     WHERE id IN ({ids}) AND dead_from IS NOT NULL AND status IN (0, 3))",
                               "id");
  s.dead_letters_pick = R"(
    SELECT id FROM job_queue
     WHERE dead_from IS NOT NULL AND status IN (0, 3)
       AND (:queue IS NULL OR queue = :queue)
       AND id > :after
     ORDER BY id
     LIMIT :batch)";
  s.cancel_ids.write = returning(R"(
    UPDATE job_queue
       SET status = 4, finished_at = )" QC_NOW ", updated_at = " QC_NOW R"(
     WHERE id IN ({ids}) AND status IN (0, 3))",
                                 "id");
  s.cancel_ids_force.write = returning(R"(
    UPDATE job_queue
       SET status = 4, lock_token = NULL, lock_until = NULL,
           finished_at = )" QC_NOW ", updated_at = " QC_NOW R"(
     WHERE id IN ({ids}) AND status IN (0, 1, 3))",
                                       "id");
  s.finished_pick = R"(
    SELECT id FROM job_queue
     WHERE id > :after
       AND status >= 2
       AND queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND finished_at < )" QC_NOW_PLUS("-:older_ms") R"(
     ORDER BY id
     LIMIT :batch)";
  s.finished_count = R"(
    SELECT count(*) FROM job_queue
     WHERE status >= 2
       AND queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND finished_at < )" QC_NOW_PLUS("-:older_ms");
  s.delete_ids = R"(
    DELETE FROM job_queue
     WHERE id IN ({ids})
       AND status >= 2
       AND queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND finished_at < )" QC_NOW_PLUS("-:older_ms");
  return s;
}

QueueStatements make_queues() {
  QueueStatements s;
  s.pause = R"(
    INSERT INTO queuectl_queues (queue, paused_at) VALUES (:queue, )" QC_NOW R"()
    ON CONFLICT (queue) DO UPDATE SET paused_at = excluded.paused_at)";
  s.resume =
      "UPDATE queuectl_queues SET paused_at = NULL WHERE queue = :queue AND paused_at IS NOT NULL";
  s.set_strict_groups = R"(
    INSERT INTO queuectl_queues (queue, strict_groups) VALUES (:queue, :strict)
    ON CONFLICT (queue) DO UPDATE SET strict_groups = excluded.strict_groups)";
  s.set_dead_letter = R"(
    INSERT INTO queuectl_queues (queue, dead_letter) VALUES (:queue, :target)
    ON CONFLICT (queue) DO UPDATE SET dead_letter = excluded.dead_letter)";
  s.set_max_processing = R"(
    INSERT INTO queuectl_queues (queue, max_processing) VALUES (:queue, :max)
    ON CONFLICT (queue) DO UPDATE SET max_processing = excluded.max_processing)";
  s.set_retain = R"(
    INSERT INTO queuectl_queues (queue, retain_ms) VALUES (:queue, :retain_ms)
    ON CONFLICT (queue) DO UPDATE SET retain_ms = excluded.retain_ms)";
  s.set_keep_done = R"(
    INSERT INTO queuectl_queues (queue, keep_done) VALUES (:queue, :keep)
    ON CONFLICT (queue) DO UPDATE SET keep_done = excluded.keep_done)";
  s.set_rate = R"(
    INSERT INTO queuectl_queues (queue, rate_count, rate_period_ms, rate_burst, rate_per_key)
    VALUES (:queue, :count, :period_ms, :burst, :per_key)
    ON CONFLICT (queue) DO UPDATE
       SET rate_count = excluded.rate_count, rate_period_ms = excluded.rate_period_ms,
           rate_burst = excluded.rate_burst, rate_per_key = excluded.rate_per_key,
           rate_tokens = NULL, rate_refreshed_ms = NULL)";
  s.clear_rate_keys = "DELETE FROM queuectl_rate_keys WHERE queue = :queue";
  s.rate_state = R"(
    SELECT p.rate_count, p.rate_period_ms, p.rate_burst, p.rate_per_key,
           p.rate_tokens, p.rate_refreshed_ms, )" QC_NOW_MS R"(,
           EXISTS (SELECT 1 FROM job_queue j
                    WHERE j.queue = p.queue AND j.status = 0 AND j.run_at <= )" QC_NOW R"()
      FROM queuectl_queues p
     WHERE p.queue = :queue AND p.rate_count IS NOT NULL)";
  s.settings = R"(
    SELECT CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END, strict_groups, dead_letter,
           max_processing, retain_ms, rate_count, rate_period_ms, rate_burst, rate_per_key,
           keep_done
      FROM queuectl_queues WHERE queue = :queue)";
  s.dead_letter_targets =
      "SELECT queue, dead_letter FROM queuectl_queues WHERE dead_letter IS NOT NULL";
  s.names = R"(
    SELECT queue FROM job_queue GROUP BY queue
    UNION
    SELECT queue FROM queuectl_queues
    UNION
    SELECT queue FROM queuectl_schedules
    ORDER BY 1)";
  s.named = R"(
    SELECT n.queue, CASE WHEN s.paused_at IS NULL THEN 0 ELSE 1 END
      FROM (SELECT queue FROM job_queue GROUP BY queue
            UNION
            SELECT queue FROM queuectl_queues
             WHERE paused_at IS NOT NULL OR strict_groups = 1 OR dead_letter IS NOT NULL
                OR max_processing IS NOT NULL OR retain_ms IS NOT NULL OR rate_count IS NOT NULL
                OR keep_done = 0
            UNION
            SELECT queue FROM queuectl_schedules) n
      LEFT JOIN queuectl_queues s ON s.queue = n.queue
     ORDER BY 1)";
  return s;
}

}  // namespace queuectl::sqlite_sql
