// SQLite: enqueue, the claim, and the lease holder's writes (ack, fail, extend, release). What the
// SQL may contain: sqlite_sql.hpp.

#include <string>

#include "db/dialects/sqlite_sql.hpp"

namespace queuectl::sqlite_sql {

namespace {

// A ready job `j` with a group key is its group's head and may run: no job of its group is
// processing, no older one is ready (waiting out a backoff, or not yet due), and, when the
// queue is in strict mode, no older one has failed. Each probe reads one entry of a
// partial index keyed (queue, group_key, id): job_queue_processing_groups (status = 1),
// job_queue_ready_groups (status = 0) and job_queue_failed_groups (status = 3), migration
// 8; jobs without a key pass at once. (SQLite uses a partial index only when the query
// repeats its WHERE terms: hence "k.group_key IS NOT NULL" beside the key's equality.)
constexpr const char* kGroupHead = R"((j.group_key IS NULL OR (
           NOT EXISTS (SELECT 1 FROM job_queue k INDEXED BY job_queue_processing_groups
                        WHERE k.queue = j.queue AND k.group_key = j.group_key AND k.status = 1)
       AND NOT EXISTS (SELECT 1 FROM job_queue k INDEXED BY job_queue_ready_groups
                        WHERE k.queue = j.queue AND k.group_key = j.group_key AND k.status = 0
                          AND k.group_key IS NOT NULL AND k.id < j.id)
       AND NOT (EXISTS (SELECT 1 FROM queuectl_queues p
                         WHERE p.queue = j.queue AND p.strict_groups = 1)
                AND EXISTS (SELECT 1 FROM job_queue k INDEXED BY job_queue_failed_groups
                             WHERE k.queue = j.queue AND k.group_key = j.group_key
                               AND k.status = 3 AND k.group_key IS NOT NULL
                               AND k.id < j.id)))))";

// A grouped job `j` of a queue whose group keys have buckets of their own (rate_per_key) may
// start only while its key's bucket holds a whole token, refilled to now; a key without a
// bucket has never started a job, and its bucket is full.
constexpr const char* kKeyHasToken = R"((j.group_key IS NULL OR NOT EXISTS (
           SELECT 1 FROM queuectl_rate_keys b
            WHERE b.queue = j.queue AND b.group_key = j.group_key
              AND b.tokens + max(0, )" QC_NOW_MS R"( - b.refreshed_ms)
                  * (SELECT CAST(p.rate_count AS REAL) / p.rate_period_ms FROM queuectl_queues p
                      WHERE p.queue = j.queue AND p.rate_per_key = 1 AND p.rate_count IS NOT NULL)
                  < 1)))";

}  // namespace

EnqueueStatements make_enqueue(const std::string& cols) {
  EnqueueStatements s;
  s.insert_job = R"(
    INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key,
                           trace_parent, trace_state)
    VALUES (:queue, :priority,
            strftime('%Y-%m-%d %H:%M:%f', COALESCE(:run_at, 'now'), (:delay_ms / 1000.0) || ' seconds'),
            :max_attempts, :payload, :dedupe_key, :group_key, :trace_parent, :trace_state)
    ON CONFLICT DO NOTHING)";
  s.values_rows.prefix =
      "INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, "
      "group_key, trace_parent, trace_state) VALUES ";
  s.values_rows.row =
      "(?, ?, strftime('%Y-%m-%d %H:%M:%f', COALESCE(?, 'now'), (? / 1000.0) || ' seconds'), "
      "?, ?, ?, ?, ?, ?)";
  s.values_rows.suffix = " ON CONFLICT DO NOTHING";
  s.last_insert_id = "SELECT last_insert_rowid()";
  // One writer at a time, and a new rowid is the largest so far plus one: a multi-row
  // INSERT's rows have consecutive ids, ending at last_insert_rowid().
  s.consecutive_ids = true;
  s.job_by_dedupe_key =
      "SELECT " + cols + " FROM job_queue WHERE queue = :queue AND dedupe_key = :dedupe_key";
  return s;
}

ClaimStatements make_claim(const std::string& cols) {
  ClaimReturning s;
  // BEGIN IMMEDIATE (in_transaction) serialises claimers: the heads read here
  // cannot change before the UPDATE marks them, nor the processing jobs a queue with a
  // concurrency limit (max_processing) counts to take no more than its free slots.
  //
  // A rate limit (migration 11): `rate.read` gives the queue's bucket first, and the claim
  // takes at most :grant jobs that use it (all jobs, or with rate_per_key, :keys_free = 1,
  // those without a group key: a grouped job needs a token of its key's bucket, which
  // kKeyHasToken checks). The repository then writes the buckets with `spend` and
  // `spend_key`, under the same write lock.
  s.claim = R"(
    UPDATE job_queue
       SET status = 1,
           attempts = attempts + 1,
           progress = NULL, progress_note = NULL,
           locked_by = :worker,
           lock_token = :token,
           locked_at = )" QC_NOW R"(,
           lock_until = )" QC_NOW_PLUS(":lease_ms") R"(,
           updated_at = )" QC_NOW R"(
     WHERE id IN (
             SELECT t.id
               FROM (SELECT c.id, c.keyless,
                            row_number() OVER (PARTITION BY c.keyless
                                               ORDER BY c.priority DESC, c.run_at, c.id) AS n
                       FROM (SELECT j.id, j.priority, j.run_at,
                                    (j.group_key IS NULL OR :keys_free = 0) AS keyless
                               FROM job_queue j
                              WHERE j.queue = :queue
                                AND j.status = 0
                                AND j.run_at <= )" QC_NOW R"(
                                AND NOT EXISTS (SELECT 1 FROM queuectl_queues p
                                                 WHERE p.queue = j.queue AND p.paused_at IS NOT NULL)
                                AND )" +
            std::string(kGroupHead) + R"(
                                AND )" +
            kKeyHasToken +
            R"(
                              ORDER BY j.priority DESC, j.run_at, j.id
                              LIMIT (SELECT CASE WHEN p.max_processing IS NULL THEN :limit
                                                 ELSE max(0, min(:limit, p.max_processing -
                                                        (SELECT count(*) FROM job_queue c
                                                          WHERE c.queue = :queue AND c.status = 1)))
                                            END
                                       FROM (SELECT 1) LEFT JOIN queuectl_queues p
                                            ON p.queue = :queue)) c) t
              WHERE t.keyless = 0 OR t.n <= :grant)
    RETURNING )" +
            cols;
  RateSteps rate;
  rate.read = R"(
    SELECT rate_count, rate_period_ms, rate_burst, rate_per_key, rate_tokens, rate_refreshed_ms,
           )" QC_NOW_MS R"(
      FROM queuectl_queues WHERE queue = :queue AND rate_count IS NOT NULL)";
  rate.spend = R"(
    UPDATE queuectl_queues SET rate_tokens = :tokens, rate_refreshed_ms = :now_ms
     WHERE queue = :queue AND rate_count IS NOT NULL)";
  rate.spend_key = R"(
    INSERT INTO queuectl_rate_keys (queue, group_key, tokens, refreshed_ms)
    VALUES (:queue, :group_key, :fresh, :now_ms)
    ON CONFLICT (queue, group_key) DO UPDATE
       SET tokens = min(excluded.tokens + 1,
                        tokens + max(0, excluded.refreshed_ms - refreshed_ms) * :per_ms) - 1,
           refreshed_ms = excluded.refreshed_ms)";
  s.rate = rate;
  return s;
}

FinishStatements make_finish(const std::string& cols) {
  FinishStatements s;
  s.ack = R"(
    UPDATE job_queue
       SET status = 2, result = :result, lock_until = NULL,
           finished_at = )" QC_NOW ", updated_at = " QC_NOW R"(
     WHERE id = :id AND status = 1 AND lock_token = :token AND has_dependents = 0)";
  s.ack_ids.write = returning(R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = )" QC_NOW ", updated_at = " QC_NOW R"(
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token AND has_dependents = 0)",
                              "id");
  s.ack_delete.write = returning(R"(
    DELETE FROM job_queue
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token AND has_dependents = 0
       AND group_key IS NULL
       AND queue IN (SELECT queue FROM queuectl_queues WHERE keep_done = 0))",
                                 "id");
  s.deleting_queues = "SELECT queue FROM queuectl_queues WHERE keep_done = 0";
  s.fail_retry.write = returning(R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE )" QC_RUN_AT_AFTER_BACKOFF R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN )" QC_NOW R"( END,
           last_error = :error, lock_token = NULL, lock_until = NULL,
           updated_at = )" QC_NOW R"(
     WHERE id = :id AND status = 1 AND lock_token = :token)",
                                 cols);
  s.fail_final.write = returning(R"(
    UPDATE job_queue
       SET status = 3, last_error = :error, lock_token = NULL, lock_until = NULL,
           finished_at = )" QC_NOW ", updated_at = " QC_NOW R"(
     WHERE id = :id AND status = 1 AND lock_token = :token)",
                                 cols);
  s.extend.write = returning(R"(
    UPDATE job_queue
       SET lock_until = )" QC_NOW_PLUS(":lease_ms") ", updated_at = " QC_NOW R"(,
           progress = COALESCE(:progress, progress),
           progress_note = COALESCE(:note, progress_note),
           checkpoint = COALESCE(:checkpoint, checkpoint)
     WHERE id = :id AND status = 1 AND lock_token = :token AND lock_until > )" QC_NOW,
                             cols);
  s.release.write = returning(R"(
    UPDATE job_queue
       SET status = 0, attempts = max(attempts - 1, 0), run_at = )" QC_NOW R"(,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = )" QC_NOW R"(
     WHERE id = :id AND status = 1 AND lock_token = :token)",
                              cols);
  return s;
}

}  // namespace queuectl::sqlite_sql
