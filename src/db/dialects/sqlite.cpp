// SQLite: times are stored as UTC text 'YYYY-MM-DD HH:MM:SS.SSS' (what
// strftime('%Y-%m-%d %H:%M:%f') writes, so text order is time order); writes take
// the database lock up front with BEGIN IMMEDIATE; RETURNING needs SQLite 3.35.

#include <soci/sqlite3/soci-sqlite3.h>

#include <chrono>
#include <thread>

#include "db/dialect.hpp"
#include "db/driver.hpp"

namespace queuectl {
namespace {

#define QC_NOW "strftime('%Y-%m-%d %H:%M:%f', 'now')"
#define QC_NOW_PLUS(ms) "strftime('%Y-%m-%d %H:%M:%f', 'now', ((" ms ") / 1000.0) || ' seconds')"
#define QC_TS(col) "strftime('%Y-%m-%dT%H:%M:%f000Z', " col ")"
#define QC_AGE_NEG(col) "((julianday(" col ") - julianday('now')) * 86400.0)"
#define QC_AGE(col) "((julianday('now') - julianday(" col ")) * 86400.0)"
// now + backoff for the attempt just made: min(cap, base * 2^(attempts-1)) ms times jitter.
#define QC_RUN_AT_AFTER_BACKOFF_TIMES(jitter)                                                  \
  "strftime('%Y-%m-%d %H:%M:%f', 'now', (min(:cap_ms, :base_ms * (1 << min(max(attempts - 1, " \
  "0), 40))) * " jitter " / 1000.0) || ' seconds')"
// fail: the jitter drawn by the client for its one job.
#define QC_RUN_AT_AFTER_BACKOFF QC_RUN_AT_AFTER_BACKOFF_TIMES(":jitter")
// reap: a jitter drawn per row, so that a dead host's jobs do not all come back at once.
#define QC_RUN_AT_AFTER_BACKOFF_ROW_JITTER \
  QC_RUN_AT_AFTER_BACKOFF_TIMES("(0.5 + 0.5 * (abs(random() % 1000000) / 1000000.0))")

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

constexpr const char* kJobColumns =
    "id, queue, status, priority, " QC_TS("run_at") ", attempts, max_attempts, payload, "
    "result, last_error, locked_by, lock_token, " QC_TS("locked_at") ", " QC_TS("lock_until") ", "
    "dedupe_key, group_key, " QC_TS("created_at") ", " QC_TS("updated_at") ", "
    QC_TS("finished_at") ", dead_from";

// A guarded write that reports what it changed (see GuardedWrite).
std::string returning(const std::string& write, const std::string& what) {
  return write + "\n    RETURNING " + what;
}

Statements make_statements() {
  Statements s;
  const std::string cols = kJobColumns;
  s.job_columns = cols;
  s.now = "SELECT " QC_TS(QC_NOW);

  s.insert_job = R"(
    INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key)
    VALUES (:queue, :priority,
            strftime('%Y-%m-%d %H:%M:%f', COALESCE(:run_at, 'now'), (:delay_ms / 1000.0) || ' seconds'),
            :max_attempts, :payload, :dedupe_key, :group_key)
    ON CONFLICT DO NOTHING)";
  s.insert_many_prefix =
      "INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, "
      "group_key) VALUES ";
  s.insert_values_row =
      "(?, ?, strftime('%Y-%m-%d %H:%M:%f', COALESCE(?, 'now'), (? / 1000.0) || ' seconds'), "
      "?, ?, ?, ?)";
  s.insert_many_suffix = " ON CONFLICT DO NOTHING";
  s.last_insert_id = "SELECT last_insert_rowid()";
  s.job_by_id = "SELECT " + cols + " FROM job_queue WHERE id = :id";
  s.job_by_dedupe_key =
      "SELECT " + cols + " FROM job_queue WHERE queue = :queue AND dedupe_key = :dedupe_key";

  // BEGIN IMMEDIATE (claim_in_transaction) serialises claimers: the heads read here
  // cannot change before the UPDATE marks them, nor the processing jobs a queue with a
  // concurrency limit (max_processing) counts to take no more than its free slots.
  s.claim = R"(
    UPDATE job_queue
       SET status = 1,
           attempts = attempts + 1,
           locked_by = :worker,
           lock_token = :token,
           locked_at = )" QC_NOW R"(,
           lock_until = )" QC_NOW_PLUS(":lease_ms") R"(,
           updated_at = )" QC_NOW R"(
     WHERE id IN (
             SELECT j.id
               FROM job_queue j
              WHERE j.queue = :queue
                AND j.status = 0
                AND j.run_at <= )" QC_NOW R"(
                AND NOT EXISTS (SELECT 1 FROM queuectl_queues p
                                 WHERE p.queue = j.queue AND p.paused_at IS NOT NULL)
                AND )" +
            std::string(kGroupHead) + R"(
              ORDER BY j.priority DESC, j.run_at, j.id
              LIMIT (SELECT CASE WHEN p.max_processing IS NULL THEN :limit
                                 ELSE max(0, min(:limit, p.max_processing -
                                        (SELECT count(*) FROM job_queue c
                                          WHERE c.queue = :queue AND c.status = 1)))
                            END
                       FROM (SELECT 1) LEFT JOIN queuectl_queues p ON p.queue = :queue))
    RETURNING )" +
            cols;

  s.ack = R"(
    UPDATE job_queue
       SET status = 2, result = :result, lock_until = NULL,
           finished_at = )" QC_NOW ", updated_at = " QC_NOW R"(
     WHERE id = :id AND status = 1 AND lock_token = :token)";
  s.ack_ids.write = returning(R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = )" QC_NOW ", updated_at = " QC_NOW R"(
     WHERE id IN ({ids}) AND status = 1 AND lock_token = :token)",
                              "id");
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
       SET lock_until = )" QC_NOW_PLUS(":lease_ms") ", updated_at = " QC_NOW R"(
     WHERE id = :id AND status = 1 AND lock_token = :token AND lock_until > )" QC_NOW,
                             cols);
  s.release.write = returning(R"(
    UPDATE job_queue
       SET status = 0, attempts = max(attempts - 1, 0), run_at = )" QC_NOW R"(,
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = )" QC_NOW R"(
     WHERE id = :id AND status = 1 AND lock_token = :token)",
                              cols);

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

  s.stats_ready = R"(
    SELECT queue,
           SUM(CASE WHEN run_at <= )" QC_NOW R"( THEN 1 ELSE 0 END),
           SUM(CASE WHEN run_at > )" QC_NOW R"( THEN 1 ELSE 0 END),
           )" QC_AGE("MIN(CASE WHEN run_at <= " QC_NOW " THEN run_at END)") R"(
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

  // queuectl top. Failed rows are counted and listed from job_queue_failed (migration 7),
  // which holds failed rows only. Jobs done in the last minute are counted per queue, each
  // queue one range of job_queue_finished (its WHERE term repeated, as SQLite needs), the
  // queues found by a loose scan of the dedupe index (one MIN probe per queue): no
  // statement reads the done rows of the past.
  s.top_failed = R"(
    SELECT queue, COUNT(*)
      FROM job_queue INDEXED BY job_queue_failed
     WHERE status = 3
     GROUP BY queue)";
  s.top_done_recently = R"(
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
  s.top_queue_settings = R"(
    SELECT queue, CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END,
           CASE WHEN strict_groups = 1 THEN 1 ELSE 0 END, max_processing
      FROM queuectl_queues
     WHERE paused_at IS NOT NULL OR strict_groups = 1 OR max_processing IS NOT NULL)";
  s.top_workers = R"(
    SELECT locked_by, COUNT(*), SUM(CASE WHEN lock_until < )" QC_NOW R"( THEN 1 ELSE 0 END)
      FROM job_queue INDEXED BY job_queue_leases
     WHERE status = 1
     GROUP BY locked_by
     ORDER BY 2 DESC, 1
     LIMIT :limit)";
  s.top_failures = R"(
    SELECT id, queue, attempts, )" QC_AGE("finished_at") R"(, substr(last_error, 1, 400)
      FROM job_queue INDEXED BY job_queue_failed
     WHERE status = 3 AND finished_at IS NOT NULL
     ORDER BY finished_at DESC
     LIMIT :limit)";

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
  s.statuses_by_ids = "SELECT id, status FROM job_queue WHERE id IN ({ids}) ORDER BY id";
  s.reaped_by_ids =
      "SELECT id, status, queue, locked_by, attempts, dead_from FROM job_queue"
      " WHERE id IN ({ids}) ORDER BY id";

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
  s.pause_queue = R"(
    INSERT INTO queuectl_queues (queue, paused_at) VALUES (:queue, )" QC_NOW R"()
    ON CONFLICT (queue) DO UPDATE SET paused_at = excluded.paused_at)";
  s.resume_queue =
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
  // The candidate heads come from the three group indexes (processing, ready but not yet
  // due, and in strict mode failed); a candidate is its group's head when no older job of
  // its group is ready or processing (or, strict, failed): one probe of each index.
  s.list_groups = R"(
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

  s.row_lock.acquire = R"(
    INSERT INTO queuectl_locks (name, token, expires_at)
    VALUES (:key, :token, )" QC_NOW_PLUS(":ttl_ms") R"()
    ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
     WHERE queuectl_locks.expires_at < )" QC_NOW;
  s.row_lock.check = "SELECT COUNT(*) FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row_lock.refresh = R"(
    UPDATE queuectl_locks SET expires_at = )" QC_NOW_PLUS(":ttl_ms") R"(
     WHERE name = :key AND token = :token)";
  s.row_lock.release = "DELETE FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row_lock.shown_key = "SELECT CAST(:key AS TEXT)";

  s.create_migrations_table = R"(
    CREATE TABLE IF NOT EXISTS queuectl_schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TEXT NOT NULL DEFAULT ()" QC_NOW R"()
    ))";
  s.applied_migrations = "SELECT version, name, " QC_TS(
      "applied_at") " FROM queuectl_schema_migrations ORDER BY version";
  s.record_migration =
      "INSERT INTO queuectl_schema_migrations (version, name) VALUES (:version, :name)";
  s.migration_applied = "SELECT 1 FROM queuectl_schema_migrations WHERE version = :version";
  s.table_columns = "SELECT name, lower(type) FROM pragma_table_info(:name) ORDER BY cid";
  return s;
}

class SqliteDialect final : public Dialect {
 public:
  Backend backend() const override { return Backend::sqlite; }
  const Statements& sql() const override { return statements_; }
  // No row locks: BEGIN IMMEDIATE serializes writers, and named locks are lock rows.
  bool skip_locked() const override { return false; }
  bool update_returning() const override { return true; }
  bool session_locks() const override { return false; }

  // Switching a new file to WAL needs it to itself, and SQLite answers SQLITE_BUSY at once,
  // without its busy handler, when another connection holds it meanwhile: two processes
  // opening one new file together (two `migrate` runs of a deploy) failed so in 24 of 80
  // rounds. The switch is tried again, every 10 ms, for as long as the busy timeout.
  void configure_session(soci::session& session) const override {
    set_lock_wait(session, kLockWait);
    const auto deadline = std::chrono::steady_clock::now() + kLockWait;
    for (;;) {
      try {
        session << "PRAGMA journal_mode = WAL";
        break;
      } catch (const soci::soci_error& e) {
        if (!is_contention(e) || std::chrono::steady_clock::now() >= deadline) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    session << "PRAGMA synchronous = NORMAL";
    session << "PRAGMA foreign_keys = ON";
  }
  // The busy timeout: how long a writer waits for another's write lock before SQLITE_BUSY.
  void set_lock_wait(soci::session& session, std::chrono::milliseconds wait) const override {
    auto* backend = static_cast<soci::sqlite3_session_backend*>(session.get_backend());
    sqlite_driver().busy_timeout(backend->conn_, static_cast<int>(wait.count()));
  }
  void begin(soci::session& session) const override { session << "BEGIN IMMEDIATE"; }
  // A deferred transaction: in WAL mode its first read fixes the snapshot every later
  // read sees, and it takes no write lock.
  void begin_snapshot(soci::session& session) const override { session << "BEGIN"; }

  bool is_contention(const soci::soci_error& e) const override {
    if (const int result = sqlite_driver().result_code(e); result >= 0) {
      int code = result & 0xff;
      return code == SQLITE_BUSY || code == SQLITE_LOCKED;
    }
    std::string msg = e.get_error_message();
    return msg.find("database is locked") != std::string::npos;
  }
  bool is_connection_failure(const soci::soci_error& e) const override {
    const int result = sqlite_driver().result_code(e);
    return result >= 0 && (result & 0xff) == SQLITE_CANTOPEN;
  }
  // A file that cannot be opened (missing folder, permissions, not a database) stays so.
  bool is_access_denied(const soci::soci_error& e) const override { return !is_contention(e); }
  bool is_constraint_violation(const soci::soci_error& e) const override {
    const int result = sqlite_driver().result_code(e);
    return result >= 0 && (result & 0xff) == SQLITE_CONSTRAINT;
  }
  // SQLite has no code of its own for it: SQLITE_ERROR with this text.
  bool is_missing_table(const soci::soci_error& e) const override {
    return e.get_error_message().find("no such table") != std::string::npos;
  }
  std::vector<std::pair<std::string, std::string>> first_migration_columns() const override {
    return {{"id", "integer"},           {"queue", "text"},      {"status", "integer"},
            {"priority", "integer"},     {"run_at", "text"},     {"attempts", "integer"},
            {"max_attempts", "integer"}, {"payload", "text"},    {"result", "text"},
            {"last_error", "text"},      {"locked_by", "text"},  {"lock_token", "text"},
            {"locked_at", "text"},       {"lock_until", "text"}, {"dedupe_key", "text"},
            {"group_key", "text"},       {"created_at", "text"}, {"updated_at", "text"},
            {"finished_at", "text"}};
  }

 private:
  Statements statements_ = make_statements();
};

}  // namespace

std::unique_ptr<Dialect> make_sqlite_dialect() {
  return std::make_unique<SqliteDialect>();
}

}  // namespace queuectl
