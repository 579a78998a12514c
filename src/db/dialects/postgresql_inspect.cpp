// PostgreSQL: what `list`, `stats`, `top` and `groups` read. What the SQL may contain:
// postgresql_sql.hpp.

#include <string>

#include "db/dialects/postgresql_sql.hpp"

namespace queuectl::postgresql_sql {

ListingStatements make_listing() {
  ListingStatements s;
  // Served by the claim index (status = 0), which an index-only scan can answer.
  s.stats_ready = R"(
    SELECT queue,
           COUNT(*) FILTER (WHERE run_at <= now()),
           COUNT(*) FILTER (WHERE run_at > now() AND run_at < TIMESTAMPTZ '9999-12-31 00:00:00+00'),
           CAST(EXTRACT(EPOCH FROM now() - MIN(run_at) FILTER (WHERE run_at <= now()))
                AS double precision),
           COUNT(*) FILTER (WHERE run_at >= TIMESTAMPTZ '9999-12-31 00:00:00+00')
      FROM job_queue
     WHERE status = 0
     GROUP BY queue)";
  // Served by the lease index (status = 1).
  s.stats_processing = R"(
    SELECT queue, COUNT(*), COUNT(*) FILTER (WHERE lock_until < now()),
           COUNT(*) FILTER (WHERE lock_until IS NULL)
      FROM job_queue
     WHERE status = 1
     GROUP BY queue)";
  // Served by the finished index (status >= 2).
  s.stats_finished = R"(
    SELECT queue, status, COUNT(*)
      FROM job_queue
     WHERE status >= 2
     GROUP BY queue, status)";
  s.paused_queues = "SELECT queue FROM queuectl_queues WHERE paused_at IS NOT NULL";

  s.queue_policies = R"(
    SELECT queue, CASE WHEN strict_groups THEN 1 ELSE 0 END, dead_letter, max_processing,
           rate_count, rate_period_ms, rate_burst, CASE WHEN rate_per_key THEN 1 ELSE 0 END,
           retain_ms, CASE WHEN keep_done THEN 1 ELSE 0 END
      FROM queuectl_queues
     WHERE strict_groups OR dead_letter IS NOT NULL OR max_processing IS NOT NULL
        OR rate_count IS NOT NULL OR retain_ms IS NOT NULL OR NOT keep_done)";
  return s;
}

TopStatements make_top() {
  TopStatements s;
  // queuectl top. Failed rows are counted and listed from job_queue_failed (migration 7),
  // which holds failed rows only. Jobs done in the last minute are counted per queue, each
  // queue one range of job_queue_finished, the queues found by a loose scan of the dedupe
  // index (one probe per queue): no statement reads the done rows of the past.
  s.failed = R"(
    SELECT queue, COUNT(*)
      FROM job_queue
     WHERE status = 3
     GROUP BY queue)";
  s.done_recently = std::string(R"(
    WITH RECURSIVE )") +
                    queues_of_jobs() +
                    R"(
    SELECT jq.queue, d.done
      FROM jq,
           LATERAL (SELECT COUNT(*) AS done
                      FROM job_queue j
                     WHERE j.queue = jq.queue AND j.status = 2
                       AND j.finished_at > now() - INTERVAL '60 seconds') d
     WHERE jq.queue IS NOT NULL AND d.done > 0)";
  s.queue_settings = R"(
    SELECT queue, CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END,
           CASE WHEN strict_groups THEN 1 ELSE 0 END, max_processing,
           rate_count, rate_period_ms, retain_ms, CASE WHEN keep_done THEN 1 ELSE 0 END
      FROM queuectl_queues
     WHERE paused_at IS NOT NULL OR strict_groups OR max_processing IS NOT NULL
        OR rate_count IS NOT NULL OR retain_ms IS NOT NULL OR NOT keep_done)";
  s.workers = R"(
    SELECT locked_by, COUNT(*), COUNT(*) FILTER (WHERE lock_until < now())
      FROM job_queue
     WHERE status = 1
     GROUP BY locked_by
     ORDER BY 2 DESC, 1
     LIMIT CAST(:limit AS integer))";
  s.failures = R"(
    SELECT id, queue, attempts, CAST(EXTRACT(EPOCH FROM now() - finished_at) AS double precision),
           substr(last_error, 1, 400)
      FROM job_queue
     WHERE status = 3 AND finished_at IS NOT NULL
     ORDER BY finished_at DESC
     LIMIT CAST(:limit AS integer))";
  s.progress = R"(
    SELECT id, queue, locked_by, progress, progress_note
      FROM job_queue
     WHERE status = 1 AND (progress IS NOT NULL OR progress_note IS NOT NULL)
     ORDER BY updated_at DESC
     LIMIT CAST(:limit AS integer))";
  return s;
}

GroupStatements make_groups() {
  GroupStatements s;
  // Heads are read from job_queue_groups, which holds only ready, processing and failed
  // grouped rows: the cost follows the unfinished jobs of the queue, not the finished ones.
  s.list = R"(
    SELECT h.group_key, h.id, h.status, h.attempts,
           CAST(EXTRACT(EPOCH FROM now() - h.created_at) AS double precision), )" QC_TS(
      "h.run_at") R"(,
           (SELECT COUNT(*) FROM job_queue w
             WHERE w.queue = h.queue AND w.group_key = h.group_key AND w.status = 0
               AND w.id > h.id),
           h.last_error
      FROM job_queue h,
           (SELECT t.q AS arg_queue, COALESCE(p.strict_groups, false) AS strict,
                   t.b AS blocked_only
              FROM (SELECT CAST(:queue AS text) AS q, CAST(:blocked_only AS integer) AS b) t
              LEFT JOIN queuectl_queues p ON p.queue = t.q) a
     WHERE h.queue = a.arg_queue
       AND h.group_key IS NOT NULL
       AND h.status IN (0, 1, 3)
       AND (h.status <> 3 OR a.strict)
       AND (h.status = 1 OR h.status = 3 OR h.run_at > now())
       AND (a.blocked_only = 0 OR h.status = 3)
       AND NOT EXISTS (SELECT 1 FROM job_queue o
                        WHERE o.queue = h.queue AND o.group_key = h.group_key AND o.id < h.id
                          AND o.status IN (0, 1, 3) AND (o.status <> 3 OR a.strict))
     ORDER BY CASE h.status WHEN 1 THEN 0 WHEN 0 THEN 1 ELSE 2 END, h.id
     LIMIT CAST(:limit AS integer))";
  return s;
}

}  // namespace queuectl::postgresql_sql
