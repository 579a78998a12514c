// PostgreSQL: leases and the reaper; retry, cancel, move and purge; pausing and queue settings.
// What the SQL may contain: postgresql_sql.hpp.

#include <string>

#include "db/dialects/postgresql_sql.hpp"

namespace queuectl::postgresql_sql {

LeaseStatements make_leases(const std::string& cols) {
  LeaseStatements s;
  // The leases a filter matches, listed (list_leases) and counted per worker (lease_summary).
  const std::string leases_matching = R"(
      FROM job_queue,
           (SELECT CAST(:queue AS text) AS arg_queue, CAST(:worker AS text) AS arg_worker,
                   CAST(:leased AS integer) AS arg_leased,
                   CAST(:unleased AS integer) AS arg_unleased) a
     WHERE status = 1
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND (a.arg_worker IS NULL OR locked_by = a.arg_worker)
       AND ((a.arg_leased = 1 AND lock_until < now() + )" QC_MS(":within_ms") R"()
            OR (a.arg_unleased = 1 AND lock_until IS NULL))
       AND COALESCE(locked_at, updated_at) <= now() - )" QC_MS(":older_ms");
  s.list_leases = "SELECT " + cols +
                  ", CAST(EXTRACT(EPOCH FROM lock_until - now()) AS double precision)" +
                  leases_matching + R"(
     ORDER BY lock_until NULLS FIRST, id
     LIMIT CAST(:limit AS integer))";
  s.lease_summary = R"(
    SELECT locked_by, COUNT(*), COUNT(*) FILTER (WHERE lock_until < now()),
           COUNT(*) FILTER (WHERE lock_until IS NULL),
           MIN(CAST(EXTRACT(EPOCH FROM lock_until - now()) AS double precision)))" +
                    leases_matching + R"(
     GROUP BY locked_by)";

  s.reap_pick = R"(
    SELECT id
      FROM job_queue, (SELECT CAST(:queue AS text) AS arg_queue) a
     WHERE status = 1 AND lock_until < now()
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
     ORDER BY lock_until, id
     LIMIT CAST(:batch AS integer)
       FOR UPDATE OF job_queue SKIP LOCKED)";
  s.reap_mark = R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE now() + )" QC_BACKOFF_ROW_JITTER R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
           last_error = 'lease expired at ' || )" QC_TS("lock_until") R"( || ' while held by '
                        || COALESCE(locked_by, 'an unknown worker'),
           lock_token = NULL, lock_until = NULL,
           updated_at = now()
     WHERE id IN ({ids}) AND CAST(status AS integer) = 1 AND lock_until < now())";
  s.reap_unleased_pick = R"(
    SELECT id
      FROM job_queue, (SELECT CAST(:queue AS text) AS arg_queue) a
     WHERE status = 1 AND lock_until IS NULL
       AND COALESCE(locked_at, updated_at) < now() - )" QC_MS(":older_ms") R"(
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
     ORDER BY id
     LIMIT CAST(:batch AS integer)
       FOR UPDATE OF job_queue SKIP LOCKED)";
  s.reap_unleased_mark = R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE now() + )" QC_BACKOFF_ROW_JITTER R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
           last_error = 'no lease (lock_until NULL), processing since '
                        || )" QC_TS("COALESCE(locked_at, updated_at)") R"( || ' while held by '
                        || COALESCE(locked_by, 'an unknown worker'),
           lock_token = NULL,
           updated_at = now()
     WHERE id IN ({ids}) AND CAST(status AS integer) = 1 AND lock_until IS NULL
       AND COALESCE(locked_at, updated_at) < now() - )" QC_MS(":older_ms");
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
       SET status = 0, attempts = 0, run_at = now(), finished_at = NULL,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = now()
     WHERE id IN ({ids}) AND status IN (3, 4))",
                                "id");
  s.move_ids.write = returning(R"(
    UPDATE job_queue
       SET queue = COALESCE(CAST(:to AS text), dead_from), dead_from = NULL,
           status = 0, attempts = 0, run_at = now(), finished_at = NULL,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = now()
     WHERE id IN ({ids}) AND num_nonnulls(dead_from) = 1 AND status IN (0, 3))",
                               "id");
  s.dead_letters_pick = R"(
    SELECT id
      FROM job_queue, (SELECT CAST(:queue AS text) AS arg_queue) a
     WHERE dead_from IS NOT NULL AND status IN (0, 3)
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND id > CAST(:after AS bigint)
     ORDER BY id
     LIMIT CAST(:batch AS integer))";
  s.cancel_ids.write = returning(R"(
    UPDATE job_queue
       SET status = 4, finished_at = now(), updated_at = now()
     WHERE id IN ({ids}) AND status IN (0, 3))",
                                 "id");
  s.cancel_ids_force.write = returning(R"(
    UPDATE job_queue
       SET status = 4, lock_token = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id IN ({ids}) AND status IN (0, 1, 3))",
                                       "id");
  s.finished_pick = R"(
    SELECT id
      FROM job_queue,
           (SELECT CAST(:queue AS text) AS arg_queue,
                   CAST(:status_mask AS integer) AS arg_mask) a
     WHERE id > CAST(:after AS bigint)
       AND status >= 2
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND )" QC_STATUS_IN_MASK("a.arg_mask") R"(
       AND finished_at < now() - )" QC_MS(":older_ms") R"(
     ORDER BY id
     LIMIT CAST(:batch AS integer))";
  s.finished_count = R"(
    SELECT count(*)
      FROM job_queue,
           (SELECT CAST(:queue AS text) AS arg_queue,
                   CAST(:status_mask AS integer) AS arg_mask) a
     WHERE status >= 2
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND )" QC_STATUS_IN_MASK("a.arg_mask") R"(
       AND finished_at < now() - )" QC_MS(":older_ms");
  s.delete_ids = R"(
    DELETE FROM job_queue
     USING (SELECT CAST(:queue AS text) AS arg_queue,
                   CAST(:status_mask AS integer) AS arg_mask) a
     WHERE id IN ({ids})
       AND CAST(status AS integer) >= 2
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND )" QC_STATUS_BY_ID_IN_MASK("a.arg_mask") R"(
       AND finished_at < now() - )" QC_MS(":older_ms");
  return s;
}

QueueStatements make_queues() {
  QueueStatements s;
  s.pause = R"(
    INSERT INTO queuectl_queues (queue, paused_at) VALUES (CAST(:queue AS text), now())
    ON CONFLICT (queue) DO UPDATE SET paused_at = excluded.paused_at)";
  s.resume =
      "UPDATE queuectl_queues SET paused_at = NULL"
      " WHERE queue = CAST(:queue AS text) AND paused_at IS NOT NULL";
  s.set_strict_groups = R"(
    INSERT INTO queuectl_queues (queue, strict_groups)
    VALUES (CAST(:queue AS text), CAST(:strict AS integer) = 1)
    ON CONFLICT (queue) DO UPDATE SET strict_groups = excluded.strict_groups)";
  s.set_dead_letter = R"(
    INSERT INTO queuectl_queues (queue, dead_letter)
    VALUES (CAST(:queue AS text), CAST(:target AS text))
    ON CONFLICT (queue) DO UPDATE SET dead_letter = excluded.dead_letter)";
  s.set_max_processing = R"(
    INSERT INTO queuectl_queues (queue, max_processing)
    VALUES (CAST(:queue AS text), CAST(:max AS integer))
    ON CONFLICT (queue) DO UPDATE SET max_processing = excluded.max_processing)";
  s.set_retain = R"(
    INSERT INTO queuectl_queues (queue, retain_ms)
    VALUES (CAST(:queue AS text), CAST(:retain_ms AS bigint))
    ON CONFLICT (queue) DO UPDATE SET retain_ms = excluded.retain_ms)";
  s.set_keep_done = R"(
    INSERT INTO queuectl_queues (queue, keep_done)
    VALUES (CAST(:queue AS text), CAST(:keep AS integer) = 1)
    ON CONFLICT (queue) DO UPDATE SET keep_done = excluded.keep_done)";
  s.set_rate = R"(
    INSERT INTO queuectl_queues (queue, rate_count, rate_period_ms, rate_burst, rate_per_key)
    VALUES (CAST(:queue AS text), CAST(:count AS integer), CAST(:period_ms AS bigint),
            CAST(:burst AS integer), CAST(:per_key AS integer) = 1)
    ON CONFLICT (queue) DO UPDATE
       SET rate_count = excluded.rate_count, rate_period_ms = excluded.rate_period_ms,
           rate_burst = excluded.rate_burst, rate_per_key = excluded.rate_per_key,
           rate_tokens = NULL, rate_refreshed_ms = NULL)";
  s.clear_rate_keys = "DELETE FROM queuectl_rate_keys WHERE queue = CAST(:queue AS text)";
  s.rate_state = R"(
    SELECT p.rate_count, p.rate_period_ms, p.rate_burst, CASE WHEN p.rate_per_key THEN 1 ELSE 0 END,
           p.rate_tokens, p.rate_refreshed_ms, )" QC_CLOCK_MS R"(,
           CASE WHEN EXISTS (SELECT 1 FROM job_queue j
                              WHERE j.queue = p.queue AND j.status = 0 AND j.run_at <= now())
                THEN 1 ELSE 0 END
      FROM queuectl_queues p
     WHERE p.queue = CAST(:queue AS text) AND p.rate_count IS NOT NULL)";
  s.settings = R"(
    SELECT CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END, CASE WHEN strict_groups THEN 1 ELSE 0 END,
           dead_letter, max_processing, retain_ms, rate_count, rate_period_ms, rate_burst,
           CASE WHEN rate_per_key THEN 1 ELSE 0 END, CASE WHEN keep_done THEN 1 ELSE 0 END
      FROM queuectl_queues WHERE queue = CAST(:queue AS text))";
  s.dead_letter_targets =
      "SELECT queue, dead_letter FROM queuectl_queues WHERE dead_letter IS NOT NULL";
  // Distinct queues by a loose index scan (queues_of_jobs()).
  s.names = std::string(R"(
    WITH RECURSIVE )") +
            queues_of_jobs() + R"(
    SELECT queue FROM jq WHERE queue IS NOT NULL
    UNION
    SELECT queue FROM queuectl_queues
    UNION
    SELECT queue FROM queuectl_schedules
    ORDER BY 1)";
  s.named = std::string(R"(
    WITH RECURSIVE )") +
            queues_of_jobs() + R"(,
    named (queue) AS (
      SELECT queue FROM jq WHERE queue IS NOT NULL
      UNION
      SELECT queue FROM queuectl_queues
       WHERE paused_at IS NOT NULL OR strict_groups OR dead_letter IS NOT NULL
          OR max_processing IS NOT NULL OR retain_ms IS NOT NULL OR rate_count IS NOT NULL
          OR NOT keep_done
      UNION
      SELECT queue FROM queuectl_schedules)
    SELECT n.queue, CASE WHEN s.paused_at IS NULL THEN 0 ELSE 1 END
      FROM named n
      LEFT JOIN queuectl_queues s ON s.queue = n.queue
     ORDER BY 1)";
  return s;
}

}  // namespace queuectl::postgresql_sql
