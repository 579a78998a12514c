// MySQL/MariaDB: what `list`, `stats`, `top` and `groups` read. What the SQL may contain:
// mysql_sql.hpp.

#include <string>

#include "db/dialects/mysql_sql.hpp"

namespace queuectl::mysql_sql {

ListingStatements make_listing() {
  ListingStatements s;
  // Ready rows per queue. The derived table lists the queues with a loose index scan
  // ("Using index for group-by", a few reads per queue), and the join reads each queue's
  // ready rows from the claim index (ref on queue, status = 0), so that finished jobs,
  // however many, are never scanned. Queues with nothing ready are left out.
  s.stats_ready = R"(
    SELECT q.queue,
           SUM(CASE WHEN j.run_at <= NOW(6) THEN 1 ELSE 0 END),
           SUM(CASE WHEN j.run_at > NOW(6) AND j.run_at < TIMESTAMP'2038-01-19 03:14:07.999999'
                    THEN 1 ELSE 0 END),
           TIMESTAMPDIFF(MICROSECOND, MIN(CASE WHEN j.run_at <= NOW(6) THEN j.run_at END),
                         NOW(6)) / 1e6,
           SUM(CASE WHEN j.run_at >= TIMESTAMP'2038-01-19 03:14:07.999999' THEN 1 ELSE 0 END)
      FROM (SELECT DISTINCT queue FROM job_queue) q
      JOIN job_queue j FORCE INDEX (ix_job_queue_claim) ON j.queue = q.queue AND j.status = 0
     GROUP BY q.queue)";
  s.stats_processing = R"(
    SELECT queue, COUNT(*), SUM(CASE WHEN lock_until < NOW(6) THEN 1 ELSE 0 END),
           SUM(CASE WHEN lock_until IS NULL THEN 1 ELSE 0 END)
      FROM job_queue FORCE INDEX (ix_job_queue_lease)
     WHERE status = 1
     GROUP BY queue)";
  // finished_status (migration 8) is status from 2 up, NULL before: one range of
  // ix_job_queue_finished, which holds queue too.
  s.stats_finished = R"(
    SELECT queue, finished_status, COUNT(*)
      FROM job_queue FORCE INDEX (ix_job_queue_finished)
     WHERE finished_status >= 2
     GROUP BY queue, finished_status)";
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
  // queuectl top, through ix_job_queue_finished (finished_status, finished_at, queue;
  // migrations 7 and 8; finished_status = S is status = S for S >= 2):
  // the jobs done in the last minute, the failed ones and the newest failures are each one
  // range of it, so no statement reads the done rows of the past.
  s.failed = R"(
    SELECT queue, COUNT(*)
      FROM job_queue FORCE INDEX (ix_job_queue_finished)
     WHERE finished_status = 3
     GROUP BY queue)";
  s.done_recently = R"(
    SELECT queue, COUNT(*)
      FROM job_queue FORCE INDEX (ix_job_queue_finished)
     WHERE finished_status = 2 AND finished_at > NOW(6) - INTERVAL 60 SECOND
     GROUP BY queue)";
  s.queue_settings = R"(
    SELECT queue, CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END,
           CASE WHEN strict_groups = 1 THEN 1 ELSE 0 END, max_processing,
           rate_count, rate_period_ms, retain_ms, CASE WHEN keep_done = 1 THEN 1 ELSE 0 END
      FROM queuectl_queues
     WHERE paused_at IS NOT NULL OR strict_groups = 1 OR max_processing IS NOT NULL
        OR rate_count IS NOT NULL OR retain_ms IS NOT NULL OR keep_done = 0)";
  s.workers = R"(
    SELECT locked_by, COUNT(*), SUM(CASE WHEN lock_until < NOW(6) THEN 1 ELSE 0 END)
      FROM job_queue FORCE INDEX (ix_job_queue_lease)
     WHERE status = 1
     GROUP BY locked_by
     ORDER BY 2 DESC, 1
     LIMIT :limit)";
  s.failures = R"(
    SELECT id, queue, attempts, TIMESTAMPDIFF(MICROSECOND, finished_at, NOW(6)) / 1e6,
           SUBSTRING(last_error, 1, 400)
      FROM job_queue FORCE INDEX (ix_job_queue_finished)
     WHERE finished_status = 3 AND finished_at IS NOT NULL
     ORDER BY finished_at DESC
     LIMIT :limit)";
  s.progress = R"(
    SELECT id, queue, locked_by, progress, progress_note
      FROM job_queue FORCE INDEX (ix_job_queue_lease)
     WHERE status = 1 AND (progress IS NOT NULL OR progress_note IS NOT NULL)
     ORDER BY updated_at DESC
     LIMIT :limit)";
  return s;
}

GroupStatements make_groups() {
  GroupStatements s;
  s.list = R"(
    SELECT h.group_key, h.id, h.status, h.attempts,
           TIMESTAMPDIFF(MICROSECOND, h.created_at, NOW(6)) / 1e6, )" QC_TS("h.run_at") R"(,
           (SELECT COUNT(*) FROM job_queue w FORCE INDEX (ix_job_queue_groups)
             WHERE w.queue = h.queue AND w.group_key = h.group_key AND w.group_status = 0
               AND w.id > h.id),
           h.last_error
      FROM job_queue h FORCE INDEX (ix_job_queue_groups)
      JOIN (SELECT t.q AS arg_queue, COALESCE(p.strict_groups, 0) AS strict, t.b AS blocked_only
              FROM (SELECT :queue AS q, :blocked_only AS b) t
              LEFT JOIN queuectl_queues p ON p.queue = t.q) a ON h.queue = a.arg_queue
     WHERE h.group_key IS NOT NULL
       AND h.group_status IN (0, 1, 3)
       AND (h.status <> 3 OR a.strict = 1)
       AND (h.status = 1 OR h.status = 3 OR h.run_at > NOW(6))
       AND (a.blocked_only = 0 OR h.status = 3)
       AND NOT EXISTS (SELECT 1 FROM job_queue o FORCE INDEX (ix_job_queue_groups)
                        WHERE o.queue = h.queue AND o.group_key = h.group_key AND o.id < h.id
                          AND (o.group_status IN (0, 1) OR (o.group_status = 3 AND a.strict = 1)))
     ORDER BY CASE h.status WHEN 1 THEN 0 WHEN 0 THEN 1 ELSE 2 END, h.id
     LIMIT :limit)";
  return s;
}

}  // namespace queuectl::mysql_sql
