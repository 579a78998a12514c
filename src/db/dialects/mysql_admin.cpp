// MySQL/MariaDB: leases and the reaper; retry, cancel, move and purge; pausing and queue settings.
// What the SQL may contain: mysql_sql.hpp.

#include <string>

#include "db/dialects/mysql_sql.hpp"

namespace queuectl::mysql_sql {

LeaseStatements make_leases(const std::string& cols) {
  LeaseStatements s;
  // <=> is NULL-safe: a row other code claimed without naming a worker is listed too.
  // Rows without a lease come first: ascending order puts NULL first on MySQL.
  // The leases a filter matches, listed (list_leases) and counted per worker (lease_summary).
  const std::string leases_matching = R"(
      FROM job_queue FORCE INDEX (ix_job_queue_lease)
     WHERE status = 1
       AND queue = COALESCE(:queue, queue)
       AND locked_by <=> COALESCE(:worker, locked_by)
       AND ((:leased = 1 AND lock_until < )" QC_NOW_PLUS(":within_ms") R"()
            OR (:unleased = 1 AND lock_until IS NULL))
       AND COALESCE(locked_at, updated_at) <= )" QC_NOW_MINUS(":older_ms");
  s.list_leases = "SELECT " + cols + ", TIMESTAMPDIFF(MICROSECOND, NOW(6), lock_until) / 1e6" +
                  leases_matching + R"(
     ORDER BY lock_until, id
     LIMIT :limit)";
  s.lease_summary = R"(
    SELECT locked_by, COUNT(*), SUM(CASE WHEN lock_until < NOW(6) THEN 1 ELSE 0 END),
           SUM(CASE WHEN lock_until IS NULL THEN 1 ELSE 0 END),
           MIN(TIMESTAMPDIFF(MICROSECOND, NOW(6), lock_until) / 1e6))" +
                    leases_matching + R"(
     GROUP BY locked_by)";

  s.reap_pick = R"(
    SELECT id
      FROM job_queue FORCE INDEX (ix_job_queue_lease)
     WHERE status = 1 AND lock_until < NOW(6)
       AND queue = COALESCE(:queue, queue)
     ORDER BY lock_until, id
     LIMIT :batch
       FOR UPDATE SKIP LOCKED)";
  s.reap_mark = R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE )" QC_RUN_AT_AFTER_BACKOFF_ROW_JITTER R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN NOW(6) END,
           last_error = CONCAT('lease expired at ', )" QC_TS("lock_until") R"(,
                               ' while held by ', COALESCE(locked_by, 'an unknown worker')),
           lock_token = NULL, lock_until = NULL,
           updated_at = NOW(6)
     WHERE id IN ({ids}) AND status = 1 AND lock_until < NOW(6))";
  s.reap_unleased_pick = R"(
    SELECT id
      FROM job_queue FORCE INDEX (ix_job_queue_lease)
     WHERE status = 1 AND lock_until IS NULL
       AND COALESCE(locked_at, updated_at) < )" QC_NOW_MINUS(":older_ms") R"(
       AND queue = COALESCE(:queue, queue)
     ORDER BY id
     LIMIT :batch
       FOR UPDATE SKIP LOCKED)";
  s.reap_unleased_mark = R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE )" QC_RUN_AT_AFTER_BACKOFF_ROW_JITTER R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN NOW(6) END,
           last_error = CONCAT('no lease (lock_until NULL), processing since ',
                               )" QC_TS("COALESCE(locked_at, updated_at)") R"(,
                               ' while held by ', COALESCE(locked_by, 'an unknown worker')),
           lock_token = NULL,
           updated_at = NOW(6)
     WHERE id IN ({ids}) AND status = 1 AND lock_until IS NULL
       AND COALESCE(locked_at, updated_at) < )" QC_NOW_MINUS(":older_ms");
  s.reaped_by_ids =
      "SELECT id, status, queue, locked_by, attempts, dead_from FROM job_queue"
      " WHERE id IN ({ids}) ORDER BY id";
  return s;
}

AdminStatements make_admin() {
  AdminStatements s;
  s.statuses_by_ids = "SELECT id, status FROM job_queue WHERE id IN ({ids}) ORDER BY id";
  s.retry_ids.pick = "SELECT id FROM job_queue WHERE id IN ({ids}) AND status IN (3, 4) FOR UPDATE";
  s.cancel_ids.pick =
      "SELECT id FROM job_queue WHERE id IN ({ids}) AND status IN (0, 3) FOR UPDATE";
  s.cancel_ids_force.pick =
      "SELECT id FROM job_queue WHERE id IN ({ids}) AND status IN (0, 1, 3) FOR UPDATE";
  s.retry_ids.write = R"(
    UPDATE job_queue
       SET status = 0, attempts = 0, run_at = NOW(6), finished_at = NULL,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = NOW(6)
     WHERE id IN ({ids}) AND status IN (3, 4))";
  s.move_ids.pick =
      "SELECT id FROM job_queue WHERE id IN ({ids}) AND dead_from IS NOT NULL"
      " AND status IN (0, 3) FOR UPDATE";
  // Assignments run left to right on MySQL: queue reads dead_from before it is cleared.
  s.move_ids.write = R"(
    UPDATE job_queue
       SET queue = COALESCE(:to, dead_from), dead_from = NULL,
           status = 0, attempts = 0, run_at = NOW(6), finished_at = NULL,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = NOW(6)
     WHERE id IN ({ids}) AND dead_from IS NOT NULL AND status IN (0, 3))";
  s.dead_letters_pick = R"(
    SELECT id FROM job_queue
     WHERE dead_from IS NOT NULL AND status IN (0, 3)
       AND queue = COALESCE(:queue, queue)
       AND id > :after
     ORDER BY id
     LIMIT :batch)";
  s.cancel_ids.write = R"(
    UPDATE job_queue
       SET status = 4, finished_at = NOW(6), updated_at = NOW(6)
     WHERE id IN ({ids}) AND status IN (0, 3))";
  s.cancel_ids_force.write = R"(
    UPDATE job_queue
       SET status = 4, lock_token = NULL, lock_until = NULL,
           finished_at = NOW(6), updated_at = NOW(6)
     WHERE id IN ({ids}) AND status IN (0, 1, 3))";
  s.finished_pick = R"(
    SELECT id
      FROM job_queue
     WHERE id > :after
       AND status >= 2
       AND queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND finished_at < )" QC_NOW_MINUS(":older_ms") R"(
     ORDER BY id
     LIMIT :batch)";
  s.finished_count = R"(
    SELECT COUNT(*)
      FROM job_queue
     WHERE status >= 2
       AND queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND finished_at < )" QC_NOW_MINUS(":older_ms");
  s.delete_ids = R"(
    DELETE FROM job_queue
     WHERE id IN ({ids})
       AND status >= 2
       AND queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND finished_at < )" QC_NOW_MINUS(":older_ms");
  return s;
}

QueueStatements make_queues() {
  QueueStatements s;
  s.pause = R"(
    INSERT INTO queuectl_queues (queue, paused_at) VALUES (:queue, NOW(6))
    ON DUPLICATE KEY UPDATE paused_at = NOW(6))";
  s.resume =
      "UPDATE queuectl_queues SET paused_at = NULL WHERE queue = :queue AND paused_at IS NOT NULL";
  s.set_strict_groups = R"(
    INSERT INTO queuectl_queues (queue, strict_groups) VALUES (:queue, :strict)
    ON DUPLICATE KEY UPDATE strict_groups = VALUES(strict_groups))";
  s.set_dead_letter = R"(
    INSERT INTO queuectl_queues (queue, dead_letter) VALUES (:queue, :target)
    ON DUPLICATE KEY UPDATE dead_letter = VALUES(dead_letter))";
  s.set_max_processing = R"(
    INSERT INTO queuectl_queues (queue, max_processing) VALUES (:queue, :max)
    ON DUPLICATE KEY UPDATE max_processing = VALUES(max_processing))";
  s.set_retain = R"(
    INSERT INTO queuectl_queues (queue, retain_ms) VALUES (:queue, :retain_ms)
    ON DUPLICATE KEY UPDATE retain_ms = VALUES(retain_ms))";
  s.set_keep_done = R"(
    INSERT INTO queuectl_queues (queue, keep_done) VALUES (:queue, :keep)
    ON DUPLICATE KEY UPDATE keep_done = VALUES(keep_done))";
  s.set_rate = R"(
    INSERT INTO queuectl_queues (queue, rate_count, rate_period_ms, rate_burst, rate_per_key)
    VALUES (:queue, :count, :period_ms, :burst, :per_key)
    ON DUPLICATE KEY UPDATE
       rate_count = VALUES(rate_count), rate_period_ms = VALUES(rate_period_ms),
       rate_burst = VALUES(rate_burst), rate_per_key = VALUES(rate_per_key),
       rate_tokens = NULL, rate_refreshed_ms = NULL)";
  s.clear_rate_keys = "DELETE FROM queuectl_rate_keys WHERE queue = :queue";
  s.rate_state = R"(
    SELECT p.rate_count, p.rate_period_ms, p.rate_burst, p.rate_per_key,
           p.rate_tokens, p.rate_refreshed_ms, )" QC_NOW_MS R"(,
           EXISTS (SELECT 1 FROM job_queue j
                    WHERE j.queue = p.queue AND j.status = 0 AND j.run_at <= NOW(6))
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

}  // namespace queuectl::mysql_sql
