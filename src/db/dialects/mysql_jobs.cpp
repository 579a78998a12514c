// MySQL/MariaDB: enqueue, the claim, and the lease holder's writes (ack, fail, extend, release).
// What the SQL may contain: mysql_sql.hpp.

#include <string>

#include "db/dialects/mysql_sql.hpp"

namespace queuectl::mysql_sql {

namespace {

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

// A grouped job `j` of a queue whose group keys have buckets of their own (rate_per_key) may
// start only while its key's bucket holds a whole token, refilled to now; a key without a
// bucket has never started a job, and its bucket is full. A consistent read: a group runs one
// job at a time, and a key's bucket is written in the transaction that claims the key's
// job, so a read in which the next job of the key is its group's head also sees it.
constexpr const char* kKeyHasToken = R"((j.group_key IS NULL OR NOT EXISTS (
           SELECT 1 FROM queuectl_rate_keys b
            WHERE b.queue = j.queue AND b.group_key = j.group_key
              AND b.tokens + GREATEST(0, )" QC_NOW_MS R"( - b.refreshed_ms)
                  * (SELECT CAST(p.rate_count AS DOUBLE) / p.rate_period_ms FROM queuectl_queues p
                      WHERE p.queue = j.queue AND p.rate_per_key = 1 AND p.rate_count IS NOT NULL)
                  < 1)))";

}  // namespace

EnqueueStatements make_enqueue(const std::string& cols) {
  EnqueueStatements s;
  // INSERT IGNORE, not ON DUPLICATE KEY UPDATE: see CLIENT_FOUND_ROWS in mysql_sql.hpp.
  // IGNORE also turns other row errors into warnings, which is why every value is validated
  // first.
  s.insert_job = R"(
    INSERT IGNORE INTO job_queue
           (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key, trace_parent,
            trace_state)
    VALUES (:queue, :priority,
            COALESCE(CAST(:run_at AS DATETIME(6)), NOW(6)) + INTERVAL (:delay_ms * 1000) MICROSECOND,
            :max_attempts, :payload, :dedupe_key, :group_key, :trace_parent, :trace_state))";
  s.values_rows.prefix =
      "INSERT IGNORE INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, "
      "group_key, trace_parent, trace_state) VALUES ";
  s.values_rows.row =
      "(:q{n}, :p{n}, COALESCE(CAST(:r{n} AS DATETIME(6)), NOW(6)) + INTERVAL (:d{n} * 1000) "
      "MICROSECOND, :m{n}, :j{n}, :k{n}, :g{n}, :t{n}, :s{n})";
  s.values_rows.suffix = "";
  s.last_insert_id = "SELECT LAST_INSERT_ID()";
  // Lock modes 0 and 1 give a multi-row INSERT ... VALUES (a "simple insert": its row count
  // is known up front) consecutive auto-increment values, auto_increment_increment apart;
  // mode 2 may interleave them with another session's.
  s.id_step =
      "SELECT CASE WHEN @@innodb_autoinc_lock_mode <= 1 THEN @@auto_increment_increment"
      " ELSE 0 END";
  s.job_by_dedupe_key =
      "SELECT " + cols + " FROM job_queue WHERE queue = :queue AND dedupe_key = :dedupe_key";
  return s;
}

ClaimStatements make_claim(const std::string& cols) {
  ClaimPickThenMark s;
  // The claim, in one transaction at READ COMMITTED (set on the session). The SELECT
  // locks the rows it returns and skips rows other claimers hold; the UPDATE marks them.
  // A grouped job must be its group's head (kGroupHead). The NOT EXISTS sub-selects are
  // consistent reads: InnoDB locks only the outer table's rows in a locking read, so a
  // head that another claimer holds still blocks its followers here (checked on MariaDB
  // 10.11). `recheck` reads the heads again by primary key once they are locked.
  // The queue's concurrency limit comes along as a consistent read too (it locks nothing);
  // only a limited queue then takes `limit_lock` and counts with `limit_busy`.
  // The pick reads the whole rows and the time of the claim, which `mark` then writes:
  // the claimed jobs are known without reading them again.
  //
  // Where the pick starts. A claim changes status, so each job it takes leaves a
  // delete-marked entry at the head of ix_job_queue_claim's ready range until InnoDB's purge
  // removes it, and purge starts only once innodb_purge_batch_size (127) transactions are
  // waiting: on a busy queue thousands of such entries lie ahead of the first live one. A
  // plain read steps over them cheaply; the pick's locking read took each in turn, with a
  // lookup of its table row (measured on MariaDB 10.11 with 4,000 of them: 8,212 pages and
  // 6.2 ms a pick of 100, against 204 pages and 1.4 ms when it starts at the first live
  // entry). So `start` finds that entry with a plain read, and the pick's range begins
  // there. A job that became ready ahead of it since is left to the next claim, as if it
  // had come a moment later; every job ready when `start` read is at or after it.
  s.start = R"(
    SELECT priority, DATE_FORMAT(run_at, '%Y-%m-%d %H:%i:%s.%f'), id
      FROM job_queue FORCE INDEX (ix_job_queue_claim)
     WHERE queue = :queue AND status = 0 AND run_at <= NOW(6)
     ORDER BY priority DESC, run_at, id
     LIMIT 1)";
  // The pick up to its checks of grouped jobs; `pick` adds them, `pick_ungrouped` does not.
  // The queue's settings row is read by the bound name, not j.queue: each sub-select is then
  // one read for the statement, not one a row (SOCI's MySQL backend puts a repeated name's
  // value in each place). A one-job pick: 2,200 -> 2,250 claims+acks a second (2 claimers).
  const std::string pick_head = R"(
    SELECT j.id, CASE WHEN j.group_key IS NULL THEN 0 ELSE 1 END,
           (SELECT p.max_processing FROM queuectl_queues p WHERE p.queue = :queue),
           (SELECT p.rate_per_key FROM queuectl_queues p
             WHERE p.queue = :queue AND p.rate_count IS NOT NULL),
           DATE_FORMAT(NOW(6), '%Y-%m-%d %H:%i:%s.%f'), )" +
                                cols + R"(
      FROM job_queue j FORCE INDEX (ix_job_queue_claim)
     WHERE j.queue = :queue
       AND j.status = 0
       AND j.run_at <= NOW(6)
       AND NOT EXISTS (SELECT 1 FROM queuectl_queues p
                        WHERE p.queue = :queue AND p.paused_at IS NOT NULL))";
  // A claim of one job starts at the top (see claim_pick_then_mark) and leaves this out:
  // with it, bound to the top, MariaDB 10.11 still analyzed the OR's ranges at every pick,
  // and a one-job pick of a queue of 3,000 took 1.28 ms against 0.86 without (2 claimers).
  const std::string from_start = R"(
       AND (j.priority < :start_priority
            OR (j.priority = :start_priority_eq
                AND (j.run_at > :start_run_at
                     OR (j.run_at = :start_run_at_eq AND j.id >= :start_id)))))";
  const std::string pick_tail = R"(
     ORDER BY j.priority DESC, j.run_at, j.id
     LIMIT :limit
       FOR UPDATE SKIP LOCKED)";
  const std::string grouped =
      "\n       AND " + std::string(kGroupHead) + "\n       AND " + kKeyHasToken;
  s.pick = pick_head + from_start + grouped + pick_tail;
  s.pick_top = pick_head + grouped + pick_tail;
  // Planning the five sub-selects of the group and key checks took about 180 of the pick's
  // 480 microseconds (MariaDB 10.11, SHOW PROFILE: a one-job pick of an ungrouped queue).
  s.pick_ungrouped = pick_head + from_start + pick_tail;
  s.pick_ungrouped_top = pick_head + pick_tail;
  s.recheck = "SELECT j.id FROM job_queue j WHERE j.id IN ({ids}) AND " + std::string(kGroupHead);
  // Claimers of a limited queue take turns on its settings row; each counts the
  // processing jobs once it holds the lock (READ COMMITTED: a fresh read per statement,
  // which sees every claim committed before), through ix_job_queue_claim.
  s.limit_lock = "SELECT max_processing FROM queuectl_queues WHERE queue = :queue FOR UPDATE";
  s.limit_busy = "SELECT COUNT(*) FROM job_queue WHERE queue = :queue AND status = 1";
  // Left to right: lock_until and updated_at read the new locked_at, the pick's time.
  s.mark = R"(
    UPDATE job_queue
       SET status = 1,
           attempts = attempts + 1,
           progress = NULL, progress_note = NULL,
           locked_by = :worker,
           lock_token = :token,
           locked_at = CAST(:claimed_at AS DATETIME(6)),
           lock_until = locked_at + INTERVAL (:lease_ms * 1000) MICROSECOND,
           updated_at = locked_at
     WHERE id IN ({ids}))";
  // A rate limit without buckets per key, taken after the mark: the queue's row is locked
  // from here to the commit only, so that claimers of the queue take turns on the commit
  // alone, not on the mark too. The refill is tokens_at's (core/rate_limit). NOW() is the
  // statement's start, before any wait for the row: a claimer that waited does not move
  // the bucket's time back.
  s.rate_take = R"(
    UPDATE queuectl_queues
       SET rate_tokens = LEAST(CAST(rate_burst AS DOUBLE),
                               COALESCE(rate_tokens, rate_burst)
                               + GREATEST(0, )" QC_NOW_MS
                R"( - COALESCE(rate_refreshed_ms, )" QC_NOW_MS R"())
                                 * CAST(rate_count AS DOUBLE) / rate_period_ms) - :taken,
           rate_refreshed_ms = GREATEST(COALESCE(rate_refreshed_ms, 0), )" QC_NOW_MS R"()
     WHERE queue = :queue AND rate_count IS NOT NULL AND rate_per_key = 0
       AND LEAST(CAST(rate_burst AS DOUBLE),
                 COALESCE(rate_tokens, rate_burst)
                 + GREATEST(0, )" QC_NOW_MS R"( - COALESCE(rate_refreshed_ms, )" QC_NOW_MS R"())
                   * CAST(rate_count AS DOUBLE) / rate_period_ms) >= :taken_check)";
  // A rate limit (migration 11): the queue's row locked, then its bucket read; the jobs
  // without a bucket of their own are cut to its whole tokens before the mark, and the
  // buckets written after it.
  s.rate.read = R"(
    SELECT rate_count, rate_period_ms, rate_burst, rate_per_key, rate_tokens, rate_refreshed_ms,
           )" QC_NOW_MS R"(
      FROM queuectl_queues WHERE queue = :queue AND rate_count IS NOT NULL
       FOR UPDATE)";
  s.rate.spend = R"(
    UPDATE queuectl_queues SET rate_tokens = :tokens, rate_refreshed_ms = :now_ms
     WHERE queue = :queue AND rate_count IS NOT NULL)";
  // Left to right: tokens reads the old refreshed_ms.
  s.rate.spend_key = R"(
    INSERT INTO queuectl_rate_keys (queue, group_key, tokens, refreshed_ms)
    VALUES (:queue, :group_key, :fresh, :now_ms)
    ON DUPLICATE KEY UPDATE
       tokens = LEAST(VALUES(tokens) + 1,
                      tokens + GREATEST(0, VALUES(refreshed_ms) - refreshed_ms) * :per_ms) - 1,
       refreshed_ms = VALUES(refreshed_ms))";
  return s;
}

FinishStatements make_finish() {
  FinishStatements s;
  s.ack = R"(
    UPDATE job_queue
       SET status = 2, result = :result, lock_until = NULL,
           finished_at = NOW(6), updated_at = NOW(6)
     WHERE id = :id AND status = 1 AND lock_token = :token AND has_dependents = 0)";
  // No RETURNING on UPDATE: each guarded write first locks the rows its guard admits.
  s.ack_ids.pick = R"(
    SELECT id FROM job_queue
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token AND has_dependents = 0
       FOR UPDATE)";
  s.ack_ids.write = R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = NOW(6), updated_at = NOW(6)
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token AND has_dependents = 0)";
  s.ack_delete.pick = R"(
    SELECT id FROM job_queue
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token AND has_dependents = 0
       AND group_key IS NULL
       AND queue IN (SELECT queue FROM queuectl_queues WHERE keep_done = 0)
       FOR UPDATE)";
  s.ack_delete.write = R"(
    DELETE FROM job_queue
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token AND has_dependents = 0
       AND group_key IS NULL
       AND queue IN (SELECT queue FROM queuectl_queues WHERE keep_done = 0))";
  s.deleting_queues = "SELECT queue FROM queuectl_queues WHERE keep_done = 0";
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
       SET lock_until = )" QC_NOW_PLUS(":lease_ms") R"(, updated_at = NOW(6),
           progress = COALESCE(:progress, progress),
           progress_note = COALESCE(:note, progress_note),
           checkpoint = COALESCE(:checkpoint, checkpoint)
     WHERE id = :id AND status = 1 AND lock_token = :token AND lock_until > NOW(6))";
  s.release.write = R"(
    UPDATE job_queue
       SET status = 0, attempts = GREATEST(attempts - 1, 0), run_at = NOW(6),
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = NOW(6)
     WHERE id = :id AND status = 1 AND lock_token = :token)";
  return s;
}

}  // namespace queuectl::mysql_sql
