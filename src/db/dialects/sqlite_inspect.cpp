// SQLite: what `list`, `stats`, `top` and `groups` read. What the SQL may contain: sqlite_sql.hpp.

#include <string>

#include "db/dialects/sqlite_sql.hpp"

namespace queuectl::sqlite_sql {

ListingStatements make_listing() {
  ListingStatements s;
  s.stats_ready = R"(
    SELECT queue,
           SUM(CASE WHEN run_at <= )" QC_NOW R"( THEN 1 ELSE 0 END),
           SUM(CASE WHEN run_at > )" QC_NOW R"( AND run_at < '9999-12-31 00:00:00.000'
                    THEN 1 ELSE 0 END),
           )" QC_AGE("MIN(CASE WHEN run_at <= " QC_NOW " THEN run_at END)") R"(,
           SUM(CASE WHEN run_at >= '9999-12-31 00:00:00.000' THEN 1 ELSE 0 END)
      FROM job_queue
     WHERE status = 0
     GROUP BY queue)";
  s.stats_processing = R"(
    SELECT queue, COUNT(*), SUM(CASE WHEN lock_until < )" QC_NOW R"( THEN 1 ELSE 0 END),
           SUM(CASE WHEN lock_until IS NULL THEN 1 ELSE 0 END)
      FROM job_queue INDEXED BY job_queue_leases
     WHERE status = 1
     GROUP BY queue)";
  s.stats_finished = R"(
    SELECT queue, status, COUNT(*)
      FROM job_queue
     WHERE status >= 2
     GROUP BY queue, status)";
  s.paused_queues = "SELECT queue FROM queuectl_queues WHERE paused_at IS NOT NULL";

  s.queue_policies = R"(
    SELECT queue, strict_groups, dead_letter, max_processing,
           rate_count, rate_period_ms, rate_burst, rate_per_key, retain_ms, keep_done
      FROM queuectl_queues
     WHERE strict_groups = 1 OR dead_letter IS NOT NULL OR max_processing IS NOT NULL
        OR rate_count IS NOT NULL OR retain_ms IS NOT NULL OR keep_done = 0)";
  return s;
}

TopStatements make_top() {
  TopStatements s;
  // queuectl top. Failed rows are counted and listed from job_queue_failed (migration 7),
  // which holds failed rows only. Jobs done in the last minute are counted per queue, each
  // queue one range of job_queue_finished (its WHERE term repeated, as SQLite needs), the
  // queues found by a loose scan of the dedupe index (one MIN probe per queue): no
  // statement reads the done rows of the past.
  s.failed = R"(
    SELECT queue, COUNT(*)
      FROM job_queue INDEXED BY job_queue_failed
     WHERE status = 3
     GROUP BY queue)";
  s.done_recently = R"(
    WITH RECURSIVE n (queue) AS (
      SELECT MIN(queue) FROM job_queue
      UNION ALL
      SELECT (SELECT MIN(j.queue) FROM job_queue j WHERE j.queue > n.queue)
        FROM n
       WHERE n.queue IS NOT NULL)
    SELECT n.queue,
           (SELECT COUNT(*)
              FROM job_queue j INDEXED BY job_queue_finished
             WHERE j.queue = n.queue AND j.status = 2 AND j.status >= 2
               AND j.finished_at > strftime('%Y-%m-%d %H:%M:%f', 'now', '-60 seconds'))
      FROM n
     WHERE n.queue IS NOT NULL)";
  s.queue_settings = R"(
    SELECT queue, CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END,
           CASE WHEN strict_groups = 1 THEN 1 ELSE 0 END, max_processing,
           rate_count, rate_period_ms, retain_ms, CASE WHEN keep_done = 1 THEN 1 ELSE 0 END
      FROM queuectl_queues
     WHERE paused_at IS NOT NULL OR strict_groups = 1 OR max_processing IS NOT NULL
        OR rate_count IS NOT NULL OR retain_ms IS NOT NULL OR keep_done = 0)";
  s.workers = R"(
    SELECT locked_by, COUNT(*), SUM(CASE WHEN lock_until < )" QC_NOW R"( THEN 1 ELSE 0 END)
      FROM job_queue INDEXED BY job_queue_leases
     WHERE status = 1
     GROUP BY locked_by
     ORDER BY 2 DESC, 1
     LIMIT :limit)";
  s.failures = R"(
    SELECT id, queue, attempts, )" QC_AGE("finished_at") R"(, substr(last_error, 1, 400)
      FROM job_queue INDEXED BY job_queue_failed
     WHERE status = 3 AND finished_at IS NOT NULL
     ORDER BY finished_at DESC
     LIMIT :limit)";
  s.progress = R"(
    SELECT id, queue, locked_by, progress, progress_note
      FROM job_queue INDEXED BY job_queue_leases
     WHERE status = 1 AND (progress IS NOT NULL OR progress_note IS NOT NULL)
     ORDER BY updated_at DESC
     LIMIT :limit)";
  return s;
}

GroupStatements make_groups() {
  GroupStatements s;
  // The candidate heads come from the three group indexes (processing, ready but not yet
  // due, and in strict mode failed); a candidate is its group's head when no older job of
  // its group is ready or processing (or, strict, failed): one probe of each index.
  s.list = R"(
    WITH a AS (SELECT t.q AS arg_queue, COALESCE(p.strict_groups, 0) AS strict,
                      t.b AS blocked_only
                 FROM (SELECT :queue AS q, :blocked_only AS b) t
                 LEFT JOIN queuectl_queues p ON p.queue = t.q),
         c AS (SELECT k.id FROM a JOIN job_queue k INDEXED BY job_queue_processing_groups
                ON k.queue = a.arg_queue AND k.status = 1
                WHERE k.group_key IS NOT NULL AND a.blocked_only = 0
               UNION ALL
               SELECT k.id FROM a JOIN job_queue k INDEXED BY job_queue_ready_groups
                ON k.queue = a.arg_queue AND k.status = 0 AND k.group_key IS NOT NULL
                WHERE k.run_at > )" QC_NOW R"( AND a.blocked_only = 0
               UNION ALL
               SELECT k.id FROM a JOIN job_queue k INDEXED BY job_queue_failed_groups
                ON k.queue = a.arg_queue AND k.status = 3 AND k.group_key IS NOT NULL
                WHERE a.strict = 1)
    SELECT h.group_key, h.id, h.status, h.attempts, )" QC_AGE("h.created_at") R"(,
           )" QC_TS("h.run_at") R"(,
           (SELECT COUNT(*) FROM job_queue w INDEXED BY job_queue_ready_groups
             WHERE w.queue = h.queue AND w.group_key = h.group_key AND w.status = 0
               AND w.group_key IS NOT NULL AND w.id > h.id),
           h.last_error
      FROM c JOIN job_queue h ON h.id = c.id CROSS JOIN a
     WHERE NOT EXISTS (SELECT 1 FROM job_queue o INDEXED BY job_queue_processing_groups
                        WHERE o.queue = h.queue AND o.group_key = h.group_key AND o.status = 1
                          AND o.id < h.id)
       AND NOT EXISTS (SELECT 1 FROM job_queue o INDEXED BY job_queue_ready_groups
                        WHERE o.queue = h.queue AND o.group_key = h.group_key AND o.status = 0
                          AND o.group_key IS NOT NULL AND o.id < h.id)
       AND NOT (a.strict = 1
                AND EXISTS (SELECT 1 FROM job_queue o INDEXED BY job_queue_failed_groups
                             WHERE o.queue = h.queue AND o.group_key = h.group_key
                               AND o.status = 3 AND o.group_key IS NOT NULL AND o.id < h.id))
     ORDER BY CASE h.status WHEN 1 THEN 0 WHEN 0 THEN 1 ELSE 2 END, h.id
     LIMIT :limit)";
  return s;
}

}  // namespace queuectl::sqlite_sql
