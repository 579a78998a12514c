// MySQL 8.0.1+ and MariaDB 10.6+ (InnoDB): times are DATETIME(6) in UTC (the session
// time zone is set to +00:00 and every time comes from NOW(6)), printed as RFC 3339 UTC
// text with microseconds; payload and result are JSON (LONGTEXT checked by json_valid
// on MariaDB); the claim is one short READ COMMITTED transaction, SELECT ... FOR UPDATE
// SKIP LOCKED on the claim index then UPDATE ... WHERE id IN (...), since neither server
// has UPDATE ... RETURNING in common; named locks are GET_LOCK on the session.
//
// What SOCI's MySQL backend asks of the SQL text:
//   - it splices every bound value into the text client-side (strings quoted with
//     mysql_real_escape_string, numbers printed, NULL as NULL), so a placeholder may
//     stand anywhere a literal may, LIMIT included;
//   - it takes every ":name" outside single-quoted literals for a placeholder: a colon
//     may appear only inside a literal ('%H:%i:%s'), never in a comment or a double-quoted
//     string; a statement run without binds is cut at its first stray colon;
//   - the session connects with CLIENT_FOUND_ROWS, so an UPDATE reports the rows it
//     matched, and INSERT ... ON DUPLICATE KEY UPDATE id = id reports 1 for a duplicate:
//     inserts that skip duplicates use INSERT IGNORE, which reports 0 for them;
//   - every column is read back as text (std::string, integers and doubles parse it).
// Each placeholder name appears once per statement (the other backends need that).
//
// Single-table UPDATE assigns left to right, later assignments seeing earlier new
// values: the CASEs below test only attempts and max_attempts, which they leave alone,
// and reap_mark reads lock_until into last_error before clearing it.

#include <soci/mysql/soci-mysql.h>

#include <fcntl.h>

#include <algorithm>
#include <cstdio>

#include "core/engine.hpp"
#include "core/errors.hpp"
#include "db/dialect.hpp"
#include "db/driver.hpp"

namespace queuectl {
namespace {

#define QC_NOW "NOW(6)"
// A bound millisecond count added to now.
#define QC_NOW_PLUS(ms) "(NOW(6) + INTERVAL (" ms " * 1000) MICROSECOND)"
#define QC_NOW_MINUS(ms) "(NOW(6) - INTERVAL (" ms " * 1000) MICROSECOND)"
// A DATETIME(6) column as RFC 3339 UTC text with microseconds (NULL stays NULL).
#define QC_TS(col) "DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%fZ')"
// Backoff for the attempt just made, in milliseconds: min(cap, base * 2^(attempts-1))
// times jitter. POW works in doubles: with 1 << n (BIGINT UNSIGNED) the product
// overflows, error 1690, once base * 2^40 passes 2^64, e.g. --retry-in 5h at attempt 41.
#define QC_BACKOFF_MS_TIMES(jitter) \
  "(LEAST(:cap_ms, :base_ms * POW(2, LEAST(GREATEST(attempts - 1, 0), 40))) * " jitter ")"
// Kept within TIMESTAMP(6), which ends in 2038 (a retry that far out is as good as never).
#define QC_RUN_AT_AFTER_BACKOFF_TIMES(jitter) \
  "LEAST(NOW(6) + INTERVAL ROUND(" QC_BACKOFF_MS_TIMES(jitter) " * 1000) MICROSECOND, " \
  "TIMESTAMP'2038-01-19 03:14:07.999999')"
// fail: the jitter drawn by the client for its one job.
#define QC_RUN_AT_AFTER_BACKOFF QC_RUN_AT_AFTER_BACKOFF_TIMES(":jitter")
// reap: a jitter drawn per row, so that a dead host's jobs do not all come back at once.
#define QC_RUN_AT_AFTER_BACKOFF_ROW_JITTER QC_RUN_AT_AFTER_BACKOFF_TIMES("(0.5 + 0.5 * RAND())")

// A ready job `j` with a group key is its group's head and may run: no job of its group is
// processing, no older one is ready (waiting out a backoff, or not yet due), and, when the
// queue is in strict mode, no older one has failed. Each NOT EXISTS is one probe of
// ix_job_queue_groups (queue, group_key, group_status, id; migration 8), where group_status
// is the status of a job with a group key (NULL without one, so that claims and acks of
// those leave the index alone); jobs without a key pass at once.
// (k.id <> j.id, true of any processing row, keeps the first probe a per-row lookup:
// without it MariaDB materialized it, reading the whole index on every claim.)
constexpr const char* kGroupHead = R"((j.group_key IS NULL OR (
           NOT EXISTS (SELECT 1 FROM job_queue k FORCE INDEX (ix_job_queue_groups)
                        WHERE k.queue = j.queue AND k.group_key = j.group_key AND k.group_status = 1
                          AND k.id <> j.id)
       AND NOT EXISTS (SELECT 1 FROM job_queue k FORCE INDEX (ix_job_queue_groups)
                        WHERE k.queue = j.queue AND k.group_key = j.group_key AND k.group_status = 0
                          AND k.id < j.id)
       AND NOT (EXISTS (SELECT 1 FROM queuectl_queues p
                         WHERE p.queue = j.queue AND p.strict_groups = 1)
                AND EXISTS (SELECT 1 FROM job_queue k FORCE INDEX (ix_job_queue_groups)
                             WHERE k.queue = j.queue AND k.group_key = j.group_key
                               AND k.group_status = 3 AND k.id < j.id)))))";

constexpr const char* kJobColumns =
    "id, queue, status, priority, " QC_TS("run_at") ", attempts, max_attempts, payload, "
    "result, last_error, locked_by, lock_token, " QC_TS("locked_at") ", " QC_TS("lock_until") ", "
    "dedupe_key, group_key, " QC_TS("created_at") ", " QC_TS("updated_at") ", "
    QC_TS("finished_at") ", dead_from";

Statements make_statements() {
  Statements s;
  const std::string cols = kJobColumns;
  s.job_columns = cols;
  s.now = "SELECT " QC_TS(QC_NOW);

  // INSERT IGNORE, not ON DUPLICATE KEY UPDATE: see CLIENT_FOUND_ROWS above. IGNORE also
  // turns other row errors into warnings, which is why every value is validated first.
  s.insert_job = R"(
    INSERT IGNORE INTO job_queue
           (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key)
    VALUES (:queue, :priority,
            COALESCE(CAST(:run_at AS DATETIME(6)), NOW(6)) + INTERVAL (:delay_ms * 1000) MICROSECOND,
            :max_attempts, :payload, :dedupe_key, :group_key))";
  s.insert_many_prefix =
      "INSERT IGNORE INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, "
      "group_key) VALUES ";
  s.insert_values_row =
      "(:q{n}, :p{n}, COALESCE(CAST(:r{n} AS DATETIME(6)), NOW(6)) + INTERVAL (:d{n} * 1000) "
      "MICROSECOND, :m{n}, :j{n}, :k{n}, :g{n})";
  s.insert_many_suffix = "";
  s.last_insert_id = "SELECT LAST_INSERT_ID()";
  s.job_by_id = "SELECT " + cols + " FROM job_queue WHERE id = :id";
  s.job_by_dedupe_key =
      "SELECT " + cols + " FROM job_queue WHERE queue = :queue AND dedupe_key = :dedupe_key";

  // The claim, in one transaction at READ COMMITTED (set on the session). The SELECT
  // locks the rows it returns and skips rows other claimers hold; the UPDATE marks them.
  // A grouped job must be its group's head (kGroupHead). The NOT EXISTS sub-selects are
  // consistent reads: InnoDB locks only the outer table's rows in a locking read, so a
  // head that another claimer holds still blocks its followers here (checked on MariaDB
  // 10.11). claim_recheck reads the heads again by primary key once they are locked.
  // The queue's concurrency limit comes along as a consistent read too (it locks nothing);
  // only a limited queue then takes claim_limit_lock and counts with claim_limit_busy.
  // The pick reads the whole rows and the time of the claim, which claim_mark then writes:
  // the claimed jobs are known without reading them again.
  //
  // Where the pick starts. A claim changes status, so each job it takes leaves a
  // delete-marked entry at the head of ix_job_queue_claim's ready range until InnoDB's purge
  // removes it, and purge starts only once innodb_purge_batch_size (127) transactions are
  // waiting: on a busy queue thousands of such entries lie ahead of the first live one. A
  // plain read steps over them cheaply; the pick's locking read took each in turn, with a
  // lookup of its table row (measured on MariaDB 10.11 with 4,000 of them: 8,212 pages and
  // 6.2 ms a pick of 100, against 204 pages and 1.4 ms when it starts at the first live
  // entry). So claim_start finds that entry with a plain read, and the pick's range begins
  // there. A job that became ready ahead of it since is left to the next claim, as if it
  // had come a moment later; every job ready when claim_start read is at or after it.
  s.claim_start = R"(
    SELECT priority, DATE_FORMAT(run_at, '%Y-%m-%d %H:%i:%s.%f'), id
      FROM job_queue FORCE INDEX (ix_job_queue_claim)
     WHERE queue = :queue AND status = 0 AND run_at <= NOW(6)
     ORDER BY priority DESC, run_at, id
     LIMIT 1)";
  s.claim_pick = R"(
    SELECT j.id, CASE WHEN j.group_key IS NULL THEN 0 ELSE 1 END,
           (SELECT p.max_processing FROM queuectl_queues p WHERE p.queue = j.queue),
           DATE_FORMAT(NOW(6), '%Y-%m-%d %H:%i:%s.%f'), )" +
                 cols + R"(
      FROM job_queue j FORCE INDEX (ix_job_queue_claim)
     WHERE j.queue = :queue
       AND j.status = 0
       AND j.run_at <= NOW(6)
       AND (j.priority < :start_priority
            OR (j.priority = :start_priority_eq
                AND (j.run_at > :start_run_at
                     OR (j.run_at = :start_run_at_eq AND j.id >= :start_id))))
       AND NOT EXISTS (SELECT 1 FROM queuectl_queues p
                        WHERE p.queue = j.queue AND p.paused_at IS NOT NULL)
       AND )" + std::string(kGroupHead) +
                 R"(
     ORDER BY j.priority DESC, j.run_at, j.id
     LIMIT :limit
       FOR UPDATE SKIP LOCKED)";
  s.claim_recheck =
      "SELECT j.id FROM job_queue j WHERE j.id IN ({ids}) AND " + std::string(kGroupHead);
  // Claimers of a limited queue take turns on its settings row; each counts the
  // processing jobs once it holds the lock (READ COMMITTED: a fresh read per statement,
  // which sees every claim committed before), through ix_job_queue_claim.
  s.claim_limit_lock = "SELECT max_processing FROM queuectl_queues WHERE queue = :queue FOR UPDATE";
  s.claim_limit_busy = "SELECT COUNT(*) FROM job_queue WHERE queue = :queue AND status = 1";
  // Left to right: lock_until and updated_at read the new locked_at, the pick's time.
  s.claim_mark = R"(
    UPDATE job_queue
       SET status = 1,
           attempts = attempts + 1,
           locked_by = :worker,
           lock_token = :token,
           locked_at = CAST(:claimed_at AS DATETIME(6)),
           lock_until = locked_at + INTERVAL (:lease_ms * 1000) MICROSECOND,
           updated_at = locked_at
     WHERE id IN ({ids}))";

  s.ack = R"(
    UPDATE job_queue
       SET status = 2, result = :result, lock_until = NULL,
           finished_at = NOW(6), updated_at = NOW(6)
     WHERE id = :id AND status = 1 AND lock_token = :token)";
  // No RETURNING on UPDATE: each guarded write first locks the rows its guard admits.
  s.ack_ids.pick = R"(
    SELECT id FROM job_queue
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token
       FOR UPDATE)";
  s.ack_ids.write = R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = NOW(6), updated_at = NOW(6)
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token)";
  const std::string held_pick = R"(
    SELECT id FROM job_queue WHERE id = :id AND status = 1 AND lock_token = :token FOR UPDATE)";
  s.fail_retry.pick = held_pick;
  s.fail_final.pick = held_pick;
  s.extend.pick = R"(
    SELECT id FROM job_queue
     WHERE id = :id AND status = 1 AND lock_token = :token AND lock_until > NOW(6)
       FOR UPDATE)";
  s.release.pick = held_pick;
  s.fail_retry.write = R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE )" QC_RUN_AT_AFTER_BACKOFF R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN NOW(6) END,
           last_error = :error, lock_token = NULL, lock_until = NULL,
           updated_at = NOW(6)
     WHERE id = :id AND status = 1 AND lock_token = :token)";
  s.fail_final.write = R"(
    UPDATE job_queue
       SET status = 3, last_error = :error, lock_token = NULL, lock_until = NULL,
           finished_at = NOW(6), updated_at = NOW(6)
     WHERE id = :id AND status = 1 AND lock_token = :token)";
  s.extend.write = R"(
    UPDATE job_queue
       SET lock_until = )" QC_NOW_PLUS(":lease_ms") R"(, updated_at = NOW(6)
     WHERE id = :id AND status = 1 AND lock_token = :token AND lock_until > NOW(6))";
  s.release.write = R"(
    UPDATE job_queue
       SET status = 0, attempts = GREATEST(attempts - 1, 0), run_at = NOW(6),
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = NOW(6)
     WHERE id = :id AND status = 1 AND lock_token = :token)";

  s.list_jobs = "SELECT " + cols + R"(
      FROM job_queue
     WHERE queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND id > :after
     ORDER BY id
     LIMIT :limit)";
  s.list_jobs_newest = "SELECT " + cols + R"(
      FROM job_queue
     WHERE queue = COALESCE(:queue, queue)
       AND ((:status_mask >> status) & 1) = 1
       AND id < :before
     ORDER BY id DESC
     LIMIT :limit)";

  // Ready rows per queue. The derived table lists the queues with a loose index scan
  // ("Using index for group-by", a few reads per queue), and the join reads each queue's
  // ready rows from the claim index (ref on queue, status = 0), so that finished jobs,
  // however many, are never scanned. Queues with nothing ready are left out.
  s.stats_ready = R"(
    SELECT q.queue,
           SUM(CASE WHEN j.run_at <= NOW(6) THEN 1 ELSE 0 END),
           SUM(CASE WHEN j.run_at > NOW(6) THEN 1 ELSE 0 END),
           TIMESTAMPDIFF(MICROSECOND, MIN(CASE WHEN j.run_at <= NOW(6) THEN j.run_at END),
                         NOW(6)) / 1e6
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

  // queuectl top, through ix_job_queue_finished (finished_status, finished_at, queue;
  // migrations 7 and 8; finished_status = S is status = S for S >= 2):
  // the jobs done in the last minute, the failed ones and the newest failures are each one
  // range of it, so no statement reads the done rows of the past.
  s.top_failed = R"(
    SELECT queue, COUNT(*)
      FROM job_queue FORCE INDEX (ix_job_queue_finished)
     WHERE finished_status = 3
     GROUP BY queue)";
  s.top_done_recently = R"(
    SELECT queue, COUNT(*)
      FROM job_queue FORCE INDEX (ix_job_queue_finished)
     WHERE finished_status = 2 AND finished_at > NOW(6) - INTERVAL 60 SECOND
     GROUP BY queue)";
  s.top_queue_settings = R"(
    SELECT queue, CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END,
           CASE WHEN strict_groups = 1 THEN 1 ELSE 0 END, max_processing
      FROM queuectl_queues
     WHERE paused_at IS NOT NULL OR strict_groups = 1 OR max_processing IS NOT NULL)";
  s.top_workers = R"(
    SELECT locked_by, COUNT(*), SUM(CASE WHEN lock_until < NOW(6) THEN 1 ELSE 0 END)
      FROM job_queue FORCE INDEX (ix_job_queue_lease)
     WHERE status = 1
     GROUP BY locked_by
     ORDER BY 2 DESC, 1
     LIMIT :limit)";
  s.top_failures = R"(
    SELECT id, queue, attempts, TIMESTAMPDIFF(MICROSECOND, finished_at, NOW(6)) / 1e6,
           SUBSTRING(last_error, 1, 400)
      FROM job_queue FORCE INDEX (ix_job_queue_finished)
     WHERE finished_status = 3 AND finished_at IS NOT NULL
     ORDER BY finished_at DESC
     LIMIT :limit)";

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
  s.statuses_by_ids = "SELECT id, status FROM job_queue WHERE id IN ({ids}) ORDER BY id";
  s.reaped_by_ids =
      "SELECT id, status, queue, locked_by, attempts, dead_from FROM job_queue"
      " WHERE id IN ({ids}) ORDER BY id";

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
  s.pause_queue = R"(
    INSERT INTO queuectl_queues (queue, paused_at) VALUES (:queue, NOW(6))
    ON DUPLICATE KEY UPDATE paused_at = NOW(6))";
  s.resume_queue =
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
  s.queue_settings = R"(
    SELECT CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END, strict_groups, dead_letter,
           max_processing
      FROM queuectl_queues WHERE queue = :queue)";
  s.queue_policies = R"(
    SELECT queue, strict_groups, dead_letter, max_processing
      FROM queuectl_queues
     WHERE strict_groups = 1 OR dead_letter IS NOT NULL OR max_processing IS NOT NULL)";
  s.dead_letter_targets =
      "SELECT queue, dead_letter FROM queuectl_queues WHERE dead_letter IS NOT NULL";
  s.list_groups = R"(
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
  s.queue_names = R"(
    SELECT queue FROM job_queue GROUP BY queue
    UNION
    SELECT queue FROM queuectl_queues
    ORDER BY 1)";
  s.named_queues = R"(
    SELECT n.queue, CASE WHEN s.paused_at IS NULL THEN 0 ELSE 1 END
      FROM (SELECT queue FROM job_queue GROUP BY queue
            UNION
            SELECT queue FROM queuectl_queues
             WHERE paused_at IS NOT NULL OR strict_groups = 1 OR dead_letter IS NOT NULL
                OR max_processing IS NOT NULL) n
      LEFT JOIN queuectl_queues s ON s.queue = n.queue
     ORDER BY 1)";

  // GET_LOCK is held by the session until RELEASE_LOCK or disconnect: nothing to refresh,
  // only a check that the session still holds it (which also keeps wait_timeout away).
  // All use :key only; acquire returns 1 when taken, 0 when held elsewhere.
  s.session_lock.acquire = "SELECT GET_LOCK(:key, 0)";
  s.session_lock.check = "SELECT CASE WHEN IS_USED_LOCK(:key) = CONNECTION_ID() THEN 1 ELSE 0 END";
  s.session_lock.release = "SELECT RELEASE_LOCK(:key)";
  // IS_FREE_LOCK checks the name as GET_LOCK does (an error when the server refuses it)
  // without taking it.
  s.session_lock.shown_key =
      "SELECT CASE WHEN IS_FREE_LOCK(k) IS NULL THEN NULL ELSE k END FROM (SELECT :key AS k) t";
  // Lock rows (migration 6), for Galera, where GET_LOCK holds on one node only: the row is
  // replicated and certified like any write, so two nodes cannot both take it (the loser's
  // COMMIT fails with 1213, retried, and then finds the row taken). The upsert takes over
  // an expired row only; each assignment reads the row's old expires_at (the token's is
  // made first and leaves expires_at alone).
  s.row_lock.acquire = R"(
    INSERT INTO queuectl_locks (name, token, expires_at)
    VALUES (:key, :token, )" QC_NOW_PLUS(":ttl_ms") R"()
    ON DUPLICATE KEY UPDATE
       token = IF(expires_at < NOW(6), VALUES(token), token),
       expires_at = IF(expires_at < NOW(6), VALUES(expires_at), expires_at))";
  s.row_lock.check = "SELECT COUNT(*) FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row_lock.refresh = R"(
    UPDATE queuectl_locks SET expires_at = )" QC_NOW_PLUS(":ttl_ms") R"(
     WHERE name = :key AND token = :token)";
  s.row_lock.release = "DELETE FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row_lock.shown_key = "SELECT :key";

  s.create_migrations_table = R"(
    CREATE TABLE IF NOT EXISTS queuectl_schema_migrations (
      version    INT          NOT NULL,
      name       VARCHAR(255) NOT NULL,
      applied_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
      PRIMARY KEY (version)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin)";
  s.applied_migrations = "SELECT version, name, " QC_TS(
      "applied_at") " FROM queuectl_schema_migrations ORDER BY version";
  s.record_migration =
      "INSERT INTO queuectl_schema_migrations (version, name) VALUES (:version, :name)";
  s.migration_applied = "SELECT 1 FROM queuectl_schema_migrations WHERE version = :version";
  // GET_LOCK is held by the session, across the implicit commits of DDL. It waits up to
  // :wait_s seconds (migrate --lock-wait) and returns 0 when that ran out, NULL on an error.
  s.migrate_lock = "SELECT COALESCE(GET_LOCK(:key, :wait_s), 0)";
  s.migrate_unlock = "SELECT COALESCE(RELEASE_LOCK(:key), 0)";
  // MySQL 8 names JSON's type json, MariaDB longtext (its JSON is an alias): one name.
  s.table_columns =
      "SELECT column_name, CASE LOWER(data_type) WHEN 'json' THEN 'longtext' "
      "ELSE LOWER(data_type) END FROM information_schema.columns "
      "WHERE table_schema = DATABASE() AND table_name = :name ORDER BY ordinal_position";
  return s;
}

// Error numbers (server: mysqld_error.h / MariaDB's; client: errmsg.h).
constexpr unsigned kLockWaitTimeout = 1205;  // ER_LOCK_WAIT_TIMEOUT
constexpr unsigned kDeadlock = 1213;         // ER_LOCK_DEADLOCK
// Galera: a write set that could not be replicated (e.g. "Error while appending streaming
// replication fragment (provider status: Not connected to Primary Component)", seen on a
// node leaving or rejoining the cluster): the transaction is gone, as after a deadlock.
constexpr unsigned kErrorDuringCommit = 1180;  // ER_ERROR_DURING_COMMIT
// Galera: "WSREP has not yet prepared node for application use": a node outside the
// Primary Component, not ready for queries; another node (or later) will be.
constexpr unsigned kNodeNotReady = 1047;       // ER_UNKNOWN_COM_ERROR
constexpr unsigned kServerShutdown = 1053;     // ER_SERVER_SHUTDOWN
constexpr unsigned kConnectionKilled = 1927;   // ER_CONNECTION_KILLED (MariaDB)
constexpr unsigned kClientTimeout = 4031;      // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
constexpr unsigned kConnectionError = 2002;    // CR_CONNECTION_ERROR (socket)
constexpr unsigned kConnHostError = 2003;      // CR_CONN_HOST_ERROR (TCP)
constexpr unsigned kServerGone = 2006;         // CR_SERVER_GONE_ERROR
constexpr unsigned kServerLost = 2013;         // CR_SERVER_LOST
constexpr unsigned kDuplicateKey = 1062;       // ER_DUP_ENTRY
constexpr unsigned kNoSuchTable = 1146;        // ER_NO_SUCH_TABLE
constexpr unsigned kForeignKey = 1452;         // ER_NO_REFERENCED_ROW_2
constexpr unsigned kCheckMysql = 3819;         // ER_CHECK_CONSTRAINT_VIOLATED (MySQL 8.0.16+)
constexpr unsigned kCheckMariadb = 4025;       // ER_CONSTRAINT_FAILED (MariaDB)
constexpr unsigned kInvalidJsonMysql = 3140;   // ER_INVALID_JSON_TEXT: MariaDB's is a CHECK
constexpr unsigned kTooLongIdent = 1059;       // ER_TOO_LONG_IDENT: MariaDB's lock names
constexpr unsigned kUserLockWrongName = 3057;  // ER_USER_LOCK_WRONG_NAME: MySQL 8's

const soci::mysql_soci_error* mysql_error(const soci::soci_error& e) {
  return mysql_driver().as_error(e);
}

class MysqlDialect final : public Dialect {
 public:
  Backend backend() const override { return Backend::mysql; }
  const Statements& sql() const override { return statements_; }
  bool skip_locked() const override { return true; }
  bool update_returning() const override { return false; }
  bool session_locks() const override { return true; }
  // Galera (wsrep_on): GET_LOCK is local to a node (or refused), so named locks are rows.
  bool session_locks_cluster_wide(soci::session& session) const override {
    std::string name, value;
    soci::statement st =
        (session.prepare << "SHOW VARIABLES LIKE 'wsrep_on'", soci::into(name), soci::into(value));
    const bool got = st.execute(true);
    return !(got && (value == "ON" || value == "1"));
  }
  // From the version the server announced in its handshake: no round trip.
  void check_engine(soci::session& session, bool writes) const override {
    (void)writes;
    MYSQL* conn = static_cast<soci::mysql_session_backend*>(session.get_backend())->conn_;
    const char* version = mysql_driver().get_server_info(conn);
    const std::string why = mysql_engine_refusal(version ? version : "");
    if (!why.empty()) throw UsageError(why);
  }

  void configure_session(soci::session& session) const override {
    // The client library leaves its socket inheritable: a command run by `lock` or `work`
    // would keep queuectl's connection (and a named lock on it) open after queuectl exits.
    MYSQL* conn = static_cast<soci::mysql_session_backend*>(session.get_backend())->conn_;
    const int fd = static_cast<int>(mysql_driver().get_socket(conn));
    if (fd >= 0) fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
    // One round trip for the settings every command needs (issue 13), then the isolation
    // level, whose SET form cannot share a statement:
    // - utf8mb4 whatever the client library's default; UTC for NOW(6) and TIMESTAMP;
    // - a known sql_mode, whatever the server's (strict, and no ANSI_QUOTES,
    //   PIPES_AS_CONCAT or NO_BACKSLASH_ESCAPES to change how this SQL reads);
    // - every skipped row of a 500-row INSERT IGNORE must stay visible to SHOW WARNINGS;
    // - the lock waits of set_lock_wait.
    long long wait = lock_wait_seconds(kLockWait), again = wait;
    session << "SET NAMES utf8mb4, time_zone = '+00:00',"
               " sql_mode = 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,"
               "NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',"
               " SESSION max_error_count = 65535,"
               " SESSION innodb_lock_wait_timeout = :s, SESSION lock_wait_timeout = :t",
        soci::use(wait, "s"), soci::use(again, "t");
    // The claim's locking read must lock only the rows it returns (no gap locks), and
    // each statement must see rows committed since the transaction began.
    session << "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
  }
  // Row locks (innodb_lock_wait_timeout, 50 s by default) and metadata locks
  // (lock_wait_timeout, a year by default, met behind an ALTER TABLE) both end in error 1205,
  // which is contention. Whole seconds, at least 1.
  static long long lock_wait_seconds(std::chrono::milliseconds wait) {
    return std::max<long long>(1, (wait.count() + 999) / 1000);
  }
  void set_lock_wait(soci::session& session, std::chrono::milliseconds wait) const override {
    long long seconds = lock_wait_seconds(wait);
    long long again = seconds;
    session << "SET SESSION innodb_lock_wait_timeout = :s, SESSION lock_wait_timeout = :t",
        soci::use(seconds, "s"), soci::use(again, "t");
  }

  // INSERT IGNORE skips duplicates (warning 1062) but also rows that break a CHECK or
  // would be truncated: only duplicates may pass.
  void check_skipped_rows(soci::session& session) const override {
    std::string level, message;
    int code = 0;
    soci::statement st = (session.prepare << "SHOW WARNINGS", soci::into(level), soci::into(code),
                          soci::into(message));
    for (bool got = st.execute(true); got; got = st.fetch()) {
      if (code != 1062)
        throw Error("the database rejected a job: " + message + " (MySQL warning " +
                    std::to_string(code) + ")");
    }
  }
  void begin(soci::session& session) const override { session.begin(); }
  // The session reads at READ COMMITTED (see configure_session); a consistent snapshot
  // needs REPEATABLE READ, set for the next transaction only.
  void begin_snapshot(soci::session& session) const override {
    session << "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";
    session << "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY";
  }

  bool is_contention(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    return err && (err->err_num_ == kDeadlock || err->err_num_ == kLockWaitTimeout ||
                   err->err_num_ == kErrorDuringCommit);
  }
  bool is_connection_failure(const soci::soci_error& e) const override {
    if (e.get_error_category() == soci::soci_error::connection_error) return true;
    auto* err = mysql_error(e);
    if (!err) return false;
    switch (err->err_num_) {
      case kConnectionError:
      case kConnHostError:
      case kServerGone:
      case kServerLost:
      case kServerShutdown:
      case kConnectionKilled:
      case kClientTimeout:
      case kNodeNotReady:
        return true;
      default:
        return false;
    }
  }
  bool is_access_denied(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    if (err) switch (err->err_num_) {
        case 1044:  // ER_DBACCESS_DENIED_ERROR
        case 1045:  // ER_ACCESS_DENIED_ERROR: bad user or password
        case 1049:  // ER_BAD_DB_ERROR: unknown database
        case 1130:  // ER_HOST_NOT_PRIVILEGED: the user may not connect from this host
        case 1698:  // ER_ACCESS_DENIED_NO_PASSWORD_ERROR: no plugin for this user
        case 3118:  // ER_ACCOUNT_HAS_BEEN_LOCKED (MySQL)
        case 4151:  // ER_ACCOUNT_HAS_BEEN_LOCKED (MariaDB)
          return true;
        default:
          return false;
      }
    const std::string msg = e.get_error_message();
    return msg.find("Access denied") != std::string::npos ||
           msg.find("Unknown database") != std::string::npos;
  }
  bool is_bad_connection_setting(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    if (!err) return false;
    switch (err->err_num_) {
      case 1129:  // ER_HOST_IS_BLOCKED: needs FLUSH HOSTS
      case 1251:  // ER_NOT_SUPPORTED_AUTH_MODE
      case 2019:  // CR_CANT_READ_CHARSET: ?charset= names one the client library lacks
      case 2026:  // CR_SSL_CONNECTION_ERROR: SSL asked for and not possible
      case 2059:  // CR_AUTH_PLUGIN_CANNOT_LOAD
        return true;
      default:
        return false;
    }
  }
  bool is_missing_table(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    return err && err->err_num_ == kNoSuchTable;
  }
  std::vector<std::pair<std::string, std::string>> first_migration_columns() const override {
    return {{"id", "bigint"},           {"queue", "varchar"},       {"status", "tinyint"},
            {"priority", "int"},        {"run_at", "datetime"},     {"attempts", "int"},
            {"max_attempts", "int"},    {"payload", "longtext"},    {"result", "longtext"},
            {"last_error", "text"},     {"locked_by", "varchar"},   {"lock_token", "char"},
            {"locked_at", "datetime"},  {"lock_until", "datetime"}, {"dedupe_key", "varbinary"},
            {"group_key", "varbinary"}, {"created_at", "datetime"}, {"updated_at", "datetime"},
            {"finished_at", "datetime"}};
  }
  bool resumes_first_migration() const override { return true; }
  // TIMESTAMP(6) (migration 4) ends here on MariaDB before 11.5 and on MySQL 8.
  std::string latest_time() const override { return "2038-01-19 03:14:07"; }
  bool is_constraint_violation(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    if (!err) return false;
    switch (err->err_num_) {
      case kDuplicateKey:
      case kForeignKey:
      case kCheckMysql:
      case kCheckMariadb:
      case kInvalidJsonMysql:
        return true;
      default:
        return false;
    }
  }

  // GET_LOCK takes every name the server accepts as it is (lock_key): MariaDB up to 192
  // bytes (checked on 10.11), MySQL 8 up to 64 characters. A name it refuses (MariaDB: 1059
  // ER_TOO_LONG_IDENT; MySQL: 3057 ER_USER_LOCK_WRONG_NAME) can be locked by no
  // application, so queuectl locks its leading ASCII characters (at most 40), ':' and 16
  // hex digits of FNV-1a 64 of the whole name instead: at most 57 ASCII characters, which
  // every server takes (`queuectl lock --print-key NAME` shows it).
  bool refuses_lock_name(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    return err && (err->err_num_ == kTooLongIdent || err->err_num_ == kUserLockWrongName);
  }
  std::string lock_key_for_refused(const std::string& name) const override {
    std::size_t cut = 0;
    while (cut < kKeptPrefix && cut < name.size() && static_cast<unsigned char>(name[cut]) < 0x80)
      ++cut;
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  static_cast<unsigned long long>(stable_hash64(name)));
    return name.substr(0, cut) + ":" + hash;
  }

 private:
  static constexpr std::size_t kKeptPrefix = 40;
  Statements statements_ = make_statements();
};

}  // namespace

std::unique_ptr<Dialect> make_mysql_dialect() {
  return std::make_unique<MysqlDialect>();
}

}  // namespace queuectl
