// PostgreSQL 12+: times are TIMESTAMPTZ from the database clock (now(), the start of the
// current transaction), printed as RFC 3339 UTC text with microseconds; payload and
// result are JSONB; the claim is one statement (a CTE picking ids with FOR UPDATE SKIP
// LOCKED, then UPDATE ... RETURNING); named locks are session advisory locks.
//
// What SOCI's PostgreSQL backend asks of the SQL text:
//   - it rewrites every ":name" outside single-quoted literals to "$n", so a colon may
//     appear only inside a literal ('HH24:MI:SS') or as "::" (not used here: CAST reads
//     better and cannot be mistaken for a placeholder); no comments inside statements;
//   - every value arrives as an untyped text parameter, so each placeholder is CAST to
//     the type it stands for wherever inference could pick the wrong one;
//   - every column is read back as text (std::string, integers and doubles parse it).
// Each placeholder name appears once per statement. (SOCI 4.0.3 itself binds a repeated
// name to every occurrence and ignores a bound name the text lacks, but positional binds,
// as in enqueue_many, and the other backends need one placeholder per value.)

#include <soci/postgresql/soci-postgresql.h>

#include <cstdint>
#include <cstring>

#include "core/engine.hpp"
#include "core/errors.hpp"
#include "db/dialect.hpp"
#include "db/dialects/pg_notices.hpp"
#include "db/driver.hpp"

namespace queuectl {
namespace {

// A timestamp as RFC 3339 UTC text with microseconds (NULL stays NULL). The colons sit
// inside a literal, where SOCI leaves them alone.
#define QC_RFC3339 "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'"
#define QC_TS(col) "to_char((" col ") AT TIME ZONE 'UTC', " QC_RFC3339 ")"
// A bound millisecond count as an interval. Clamped to about 300 years, so that an absurd
// duration saturates instead of overflowing the interval or the timestamp.
#define QC_MS(param) "(LEAST(CAST(" param " AS bigint), 10000000000000) * INTERVAL '1 millisecond')"
// Backoff for the attempt just made: min(cap, base * 2^(attempts-1)) * jitter, in
// double precision so that a large base cannot overflow a bigint.
#define QC_BACKOFF_TIMES(jitter)                                                            \
  "(LEAST(CAST(:cap_ms AS double precision),"                                               \
  " CAST(:base_ms AS double precision)"                                                     \
  " * CAST(CAST(1 AS bigint) << LEAST(GREATEST(attempts - 1, 0), 40) AS double precision)," \
  " 10000000000000) * " jitter " * INTERVAL '1 millisecond')"
// fail: the jitter drawn by the client for its one job.
#define QC_BACKOFF QC_BACKOFF_TIMES("CAST(:jitter AS double precision)")
// reap: a jitter drawn per row, so that a dead host's jobs do not all come back at once.
#define QC_BACKOFF_ROW_JITTER QC_BACKOFF_TIMES("(0.5 + 0.5 * random())")

// A named lock's bigint key, from its name (:key): see the named locks below.
#define QC_LOCK_KEY "hashtextextended(CAST(:key AS text), 0)"

// Optional filters (:queue NULL for all, a status bit mask) read their arguments from a
// one-row subquery in FROM, "a": PostgreSQL flattens it into the query, so each
// placeholder is named once and the planner still sees the bound constants. With them,
// "a.arg_queue IS NULL OR queue = a.arg_queue" folds to nothing or to "queue = 'x'", and
// the mask folds to "status = ANY ('{NULL,NULL,2,3,4}')", which the statistics can
// estimate. (The COALESCE and shift forms estimated at 0.5 percent each, which sent
// purge batches to a sequential scan and sort of the whole table.)
#define QC_STATUS_IN_MASK(m)                          \
  "status = ANY (ARRAY[CASE WHEN " m                  \
  " & 1 <> 0 THEN 0 END, "                            \
  "CASE WHEN " m " & 2 <> 0 THEN 1 END, CASE WHEN " m \
  " & 4 <> 0 THEN 2 END, "                            \
  "CASE WHEN " m " & 8 <> 0 THEN 3 END, CASE WHEN " m " & 16 <> 0 THEN 4 END])"

// Job's columns, in Job's order, each qualified with `alias` (empty or "j.").
std::string job_columns(const std::string& a) {
  auto ts = [&](const char* col) {
    return "to_char(" + a + col + " AT TIME ZONE 'UTC', " QC_RFC3339 ")";
  };
  return a + "id, " + a + "queue, " + a + "status, " + a + "priority, " + ts("run_at") + ", " + a +
         "attempts, " + a + "max_attempts, " + a + "payload, " + a + "result, " + a +
         "last_error, " + a + "locked_by, " + a + "lock_token, " + ts("locked_at") + ", " +
         ts("lock_until") + ", " + a + "dedupe_key, " + a + "group_key, " + ts("created_at") +
         ", " + ts("updated_at") + ", " + ts("finished_at") + ", " + a + "dead_from";
}

// :queue, or NULL when the queue is paused (then no row matches). Evaluated once per
// statement, and names :queue once.
constexpr const char* kUnpausedQueue = R"((
         SELECT t.queue
           FROM (SELECT CAST(:queue AS text) AS queue) t
          WHERE NOT EXISTS (SELECT 1 FROM queuectl_queues p
                             WHERE p.queue = t.queue AND p.paused_at IS NOT NULL)))";

// A ready job `j` with a group key is its group's head and may run: no job of its group is
// processing, no older one is ready (waiting out a backoff, or not yet due), and, when the
// queue is in strict mode, no older one has failed. Each probe reads a few entries of one
// group: the first of job_queue_processing_groups (queue, group_key, id) over processing rows
// (migration 8; before it, the planner could answer it from an index of the queue alone
// and read every processing row of the queue for each candidate), the others of the
// partial index job_queue_groups (queue, group_key, status, id). Jobs without a key pass
// at once. The sub-selects read the statement's snapshot and lock nothing: a head that
// another claimer holds is skipped by SKIP LOCKED, and its followers stay blocked by it.
// (k.id <> j.id, true of any processing row, keeps the first probe a per-row index probe:
// without it the planner may hash every processing row of the table on each claim.)
//
// The last two probes are written so that job_queue_groups is the only index that can
// serve them, whatever the statistics say. Written plainly (status = 0, status = 3) they
// could also be served by job_queue_claim (WHERE status = 0) or job_queue_failed (WHERE
// status = 3), which hold every ready or failed row of the queue but no group key; when
// the statistics date from before a burst (ANALYZE saw no ready or failed rows), the
// planner takes each of them for empty, picks it for the probe, and each candidate then read
// every ready (or failed) row of its queue: 2.8 s for a claim of 1,000 among 30,000 ready
// grouped jobs, 5.4 s with 20,000 failed rows in a strict queue. "status IN (0, 1, 3)"
// proves job_queue_groups' predicate and neither of theirs, and "status < 1" /
// "status >= 1" bound the index range to the ready entries, or to the processing and
// failed ones, of the one group. The ready probe asks for the group's first ready job in
// index order, one entry; the failed probe also finds an older processing job, which
// blocks the group anyway.
constexpr const char* kGroupHead = R"((j.group_key IS NULL OR (
           NOT EXISTS (SELECT 1 FROM job_queue k
                        WHERE k.queue = j.queue AND k.group_key = j.group_key AND k.status = 1
                          AND k.id <> j.id)
       AND (SELECT k.id FROM job_queue k
             WHERE k.queue = j.queue AND k.group_key = j.group_key
               AND k.status IN (0, 1, 3) AND k.status < 1
             ORDER BY k.status, k.id
             LIMIT 1) = j.id
       AND NOT (EXISTS (SELECT 1 FROM queuectl_queues p
                         WHERE p.queue = j.queue AND p.strict_groups)
                AND EXISTS (SELECT 1 FROM job_queue k
                             WHERE k.queue = j.queue AND k.group_key = j.group_key
                               AND k.status IN (0, 1, 3) AND k.status >= 1
                               AND k.id < j.id)))))";

// The distinct queues of job_queue as the CTE `jq`, by a loose index scan (one probe of
// the dedupe index per queue), so that the cost follows the number of queues, not the
// number of jobs; the last row is NULL. Follows "WITH RECURSIVE".
constexpr const char* kQueuesOfJobs = R"(jq (queue) AS (
      (SELECT queue FROM job_queue ORDER BY queue LIMIT 1)
      UNION ALL
      SELECT (SELECT j.queue FROM job_queue j WHERE j.queue > jq.queue ORDER BY j.queue LIMIT 1)
        FROM jq
       WHERE jq.queue IS NOT NULL))";

// A guarded write that reports what it changed (see GuardedWrite).
std::string returning(const std::string& write, const std::string& what) {
  return write + "\n    RETURNING " + what;
}

Statements make_statements() {
  Statements s;
  const std::string cols = job_columns("");
  s.job_columns = cols;
  s.now = "SELECT " QC_TS("now()");

  s.insert_job = R"(
    INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key)
    VALUES (CAST(:queue AS text), CAST(:priority AS integer),
            COALESCE(CAST(:run_at AS timestamp) AT TIME ZONE 'UTC', now()) + )" QC_MS(
      ":delay_ms") R"(,
            CAST(:max_attempts AS integer), CAST(:payload AS jsonb),
            CAST(:dedupe_key AS text), CAST(:group_key AS text))
    ON CONFLICT (queue, dedupe_key) DO NOTHING)";
  // Many rows: the VALUES rows are bare placeholders (typed as text) and the SELECT casts
  // and computes once for all rows. With casts and the run_at expression in every row,
  // PostgreSQL spent about 50 ms parsing each 500-row statement.
  s.insert_many_prefix =
      "INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, "
      "group_key) SELECT v.q, CAST(v.p AS integer), "
      "COALESCE(CAST(v.r AS timestamp) AT TIME ZONE 'UTC', now()) + " QC_MS("v.d") ", "
      "CAST(v.m AS integer), CAST(v.j AS jsonb), v.k, v.g FROM (VALUES ";
  // Placeholders in bind order: queue, priority, run_at, delay, max_attempts, payload,
  // dedupe_key, group_key (the repository binds them by position).
  s.insert_values_row = "(:q{n}, :p{n}, :r{n}, :d{n}, :m{n}, :j{n}, :k{n}, :g{n})";
  s.insert_many_suffix =
      ") AS v (q, p, r, d, m, j, k, g) ON CONFLICT (queue, dedupe_key) DO NOTHING";
  // Many rows as eight array parameters: the statement's text is the same whatever the
  // number of rows, and PostgreSQL reads an array literal far faster than it parses a
  // statement with 8 placeholders a row (100,000 jobs went in about 2.5 times faster).
  // WITH ORDINALITY ... ORDER BY keeps the file's order for the ids, which ordered groups
  // rely on.
  s.insert_arrays = R"(
    INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key)
    SELECT v.q, v.p, COALESCE(CAST(v.r AS timestamp) AT TIME ZONE 'UTC', now()) + )" QC_MS(
      "v.d") R"(,
           v.m, v.j, v.k, v.g
      FROM unnest(CAST(:queues AS text[]), CAST(:priorities AS integer[]),
                  CAST(:run_ats AS text[]), CAST(:delays_ms AS bigint[]),
                  CAST(:max_attempts AS integer[]), CAST(:payloads AS jsonb[]),
                  CAST(:dedupe_keys AS text[]), CAST(:group_keys AS text[]))
           WITH ORDINALITY AS v (q, p, r, d, m, j, k, g, n)
     ORDER BY v.n
    ON CONFLICT (queue, dedupe_key) DO NOTHING)";
  s.last_insert_id = "SELECT lastval()";
  s.job_by_id = "SELECT " + cols + " FROM job_queue WHERE id = CAST(:id AS bigint)";
  s.job_by_dedupe_key = "SELECT " + cols +
                        " FROM job_queue WHERE queue = CAST(:queue AS text)"
                        " AND dedupe_key = CAST(:dedupe_key AS text)";

  // One statement: the CTE locks up to :limit due rows in claim order, skipping rows
  // other claimers hold, and the UPDATE marks exactly those rows and returns them.
  // The paused check is a one-time subquery on the queue name, not a per-row anti-join:
  // with the anti-join the planner misjudged its selectivity and chose a sequential scan
  // and sort over the whole table instead of the claim index. Grouped jobs must also be
  // their group's head (kGroupHead), so one claim takes at most one job of a group.
  //
  // The UPDATE reaches the rows `taken` holds by primary key, as an array (= ANY of an
  // ARRAY sub-select, computed once): no join the planner could turn around. Written as a
  // join (FROM taken WHERE j.id = taken.id AND j.status = 0), a planner whose statistics
  // predated a burst of new jobs took `taken` and the ready rows for one row each and chose a
  // nested loop over every ready row of every queue, each compared with every taken id:
  // 30,000 ready x 1,000 taken = 30 million comparisons, 7.4 s for a claim of 1,000 (issue
  // 33). It re-checks no status either, which would make job_queue_claim a candidate again:
  // every id in `taken` is a row that `picked` locked after re-checking its conditions on
  // the row's newest version (FOR UPDATE in READ COMMITTED), and no one can change it
  // until this statement's transaction ends.
  s.claim_in_transaction = false;  // one statement: atomic in autocommit
  // A queue with a concurrency limit (max_processing) takes at most as many jobs as it has
  // free slots: queuectl_claim_slots (migration 5) locks the queue's settings row and
  // counts its processing jobs once that lock is held. Queues without a limit never call
  // it (a NULL LIMIT is no limit). The queue is named once, in `arg`. The slots cut the
  // locked rows down in `taken`, not in `picked`'s own LIMIT: the planner takes a LIMIT it cannot
  // evaluate for a tenth of the table, and then hashed the whole table for the UPDATE's join and
  // JIT-compiled the plan (about 125 ms a claim on 100,000 ready jobs instead of 2 ms).
  // The LIMIT of `taken` runs its sub-select before `picked` is read, so the queue's
  // row is locked and its slots counted before any job row is locked, as before.
  s.claim = R"(
    WITH arg AS (SELECT CAST(:queue AS text) AS queue),
    picked AS (
      SELECT j.id, j.priority, j.run_at
        FROM job_queue j
       WHERE j.queue = (
               SELECT a.queue
                 FROM arg a
                WHERE NOT EXISTS (SELECT 1 FROM queuectl_queues p
                                   WHERE p.queue = a.queue AND p.paused_at IS NOT NULL))
         AND j.status = 0
         AND j.run_at <= now()
         AND )" +
            std::string(kGroupHead) + R"(
       ORDER BY j.priority DESC, j.run_at, j.id
       LIMIT CAST(:limit AS integer)
         FOR UPDATE OF j SKIP LOCKED),
    taken AS (
      SELECT t.id
        FROM picked t
       ORDER BY t.priority DESC, t.run_at, t.id
       LIMIT (SELECT CASE WHEN p.max_processing IS NOT NULL
                          THEN queuectl_claim_slots(a.queue, 2147483647) END
                FROM arg a LEFT JOIN queuectl_queues p ON p.queue = a.queue))
    UPDATE job_queue j
       SET status = 1,
           attempts = j.attempts + 1,
           locked_by = CAST(:worker AS text),
           lock_token = CAST(:token AS text),
           locked_at = now(),
           lock_until = now() + )" QC_MS(":lease_ms") R"(,
           updated_at = now()
     WHERE j.id = ANY (ARRAY(SELECT taken.id FROM taken))
    RETURNING )" +
            job_columns("j.");
  // The claim's locking read alone, in the two-step claim's first three columns
  // (update_returning: the claim itself never runs it; the contract tests hold a claim half
  // way with it).
  s.claim_pick = R"(
    SELECT j.id, CASE WHEN j.group_key IS NULL THEN 0 ELSE 1 END,
           (SELECT p.max_processing FROM queuectl_queues p WHERE p.queue = j.queue)
      FROM job_queue j
     WHERE j.queue = )" +
                 std::string(kUnpausedQueue) + R"(
       AND j.status = 0
       AND j.run_at <= now()
       AND )" + kGroupHead +
                 R"(
     ORDER BY j.priority DESC, j.run_at, j.id
     LIMIT CAST(:limit AS integer)
       FOR UPDATE OF j SKIP LOCKED)";

  s.ack = R"(
    UPDATE job_queue
       SET status = 2, result = CAST(:result AS jsonb), lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id = CAST(:id AS bigint) AND status = 1 AND lock_token = CAST(:token AS text))";
  // Many acks without a result under one token: one UPDATE returning the ids it changed.
  s.ack_ids.write = returning(R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id IN ({ids}) AND status = 1 AND lock_token = CAST(:token AS text))",
                              "id");
  s.ack_id_array = R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id = ANY (CAST(:ids AS bigint[])) AND status = 1 AND lock_token = CAST(:token AS text)
    RETURNING id)";
  s.fail_retry.write = returning(R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE now() + )" QC_BACKOFF R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
           last_error = CAST(:error AS text), lock_token = NULL, lock_until = NULL,
           updated_at = now()
     WHERE id = CAST(:id AS bigint) AND status = 1 AND lock_token = CAST(:token AS text))",
                                 cols);
  s.fail_final.write = returning(R"(
    UPDATE job_queue
       SET status = 3, last_error = CAST(:error AS text), lock_token = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id = CAST(:id AS bigint) AND status = 1 AND lock_token = CAST(:token AS text))",
                                 cols);
  s.extend.write = returning(R"(
    UPDATE job_queue
       SET lock_until = now() + )" QC_MS(":lease_ms") R"(, updated_at = now()
     WHERE id = CAST(:id AS bigint) AND status = 1 AND lock_token = CAST(:token AS text)
       AND lock_until > now())",
                             cols);
  s.release.write = returning(R"(
    UPDATE job_queue
       SET status = 0, attempts = GREATEST(attempts - 1, 0), run_at = now(),
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = now()
     WHERE id = CAST(:id AS bigint) AND status = 1 AND lock_token = CAST(:token AS text))",
                              cols);

  s.list_jobs = "SELECT " + cols + R"(
      FROM job_queue,
           (SELECT CAST(:queue AS text) AS arg_queue,
                   CAST(:status_mask AS integer) AS arg_mask) a
     WHERE (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND )" QC_STATUS_IN_MASK("a.arg_mask") R"(
       AND id > CAST(:after AS bigint)
     ORDER BY id
     LIMIT CAST(:limit AS integer))";
  s.list_jobs_newest = "SELECT " + cols + R"(
      FROM job_queue,
           (SELECT CAST(:queue AS text) AS arg_queue,
                   CAST(:status_mask AS integer) AS arg_mask) a
     WHERE (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND )" QC_STATUS_IN_MASK("a.arg_mask") R"(
       AND id < CAST(:before AS bigint)
     ORDER BY id DESC
     LIMIT CAST(:limit AS integer))";

  // Served by the claim index (status = 0), which an index-only scan can answer.
  s.stats_ready = R"(
    SELECT queue,
           COUNT(*) FILTER (WHERE run_at <= now()),
           COUNT(*) FILTER (WHERE run_at > now()),
           CAST(EXTRACT(EPOCH FROM now() - MIN(run_at) FILTER (WHERE run_at <= now()))
                AS double precision)
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

  // queuectl top. Failed rows are counted and listed from job_queue_failed (migration 7),
  // which holds failed rows only. Jobs done in the last minute are counted per queue, each
  // queue one range of job_queue_finished, the queues found by a loose scan of the dedupe
  // index (one probe per queue): no statement reads the done rows of the past.
  s.top_failed = R"(
    SELECT queue, COUNT(*)
      FROM job_queue
     WHERE status = 3
     GROUP BY queue)";
  s.top_done_recently = std::string(R"(
    WITH RECURSIVE )") + kQueuesOfJobs +
                        R"(
    SELECT jq.queue, d.done
      FROM jq,
           LATERAL (SELECT COUNT(*) AS done
                      FROM job_queue j
                     WHERE j.queue = jq.queue AND j.status = 2
                       AND j.finished_at > now() - INTERVAL '60 seconds') d
     WHERE jq.queue IS NOT NULL AND d.done > 0)";
  s.top_queue_settings = R"(
    SELECT queue, CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END,
           CASE WHEN strict_groups THEN 1 ELSE 0 END, max_processing
      FROM queuectl_queues
     WHERE paused_at IS NOT NULL OR strict_groups OR max_processing IS NOT NULL)";
  s.top_workers = R"(
    SELECT locked_by, COUNT(*), COUNT(*) FILTER (WHERE lock_until < now())
      FROM job_queue
     WHERE status = 1
     GROUP BY locked_by
     ORDER BY 2 DESC, 1
     LIMIT CAST(:limit AS integer))";
  s.top_failures = R"(
    SELECT id, queue, attempts, CAST(EXTRACT(EPOCH FROM now() - finished_at) AS double precision),
           substr(last_error, 1, 400)
      FROM job_queue
     WHERE status = 3 AND finished_at IS NOT NULL
     ORDER BY finished_at DESC
     LIMIT CAST(:limit AS integer))";

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
     WHERE id IN ({ids}) AND status = 1 AND lock_until < now())";
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
     WHERE id IN ({ids}) AND status = 1 AND lock_until IS NULL
       AND COALESCE(locked_at, updated_at) < now() - )" QC_MS(":older_ms");
  s.statuses_by_ids = "SELECT id, status FROM job_queue WHERE id IN ({ids}) ORDER BY id";
  s.reaped_by_ids =
      "SELECT id, status, queue, locked_by, attempts, dead_from FROM job_queue"
      " WHERE id IN ({ids}) ORDER BY id";

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
     WHERE id IN ({ids}) AND dead_from IS NOT NULL AND status IN (0, 3))",
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
       AND status >= 2
       AND (a.arg_queue IS NULL OR queue = a.arg_queue)
       AND )" QC_STATUS_IN_MASK("a.arg_mask") R"(
       AND finished_at < now() - )" QC_MS(":older_ms");
  s.pause_queue = R"(
    INSERT INTO queuectl_queues (queue, paused_at) VALUES (CAST(:queue AS text), now())
    ON CONFLICT (queue) DO UPDATE SET paused_at = excluded.paused_at)";
  s.resume_queue =
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
  s.queue_settings = R"(
    SELECT CASE WHEN paused_at IS NULL THEN 0 ELSE 1 END, CASE WHEN strict_groups THEN 1 ELSE 0 END,
           dead_letter, max_processing
      FROM queuectl_queues WHERE queue = CAST(:queue AS text))";
  s.queue_policies = R"(
    SELECT queue, CASE WHEN strict_groups THEN 1 ELSE 0 END, dead_letter, max_processing
      FROM queuectl_queues
     WHERE strict_groups OR dead_letter IS NOT NULL OR max_processing IS NOT NULL)";
  s.dead_letter_targets =
      "SELECT queue, dead_letter FROM queuectl_queues WHERE dead_letter IS NOT NULL";
  // Heads are read from job_queue_groups, which holds only ready, processing and failed
  // grouped rows: the cost follows the unfinished jobs of the queue, not the finished ones.
  s.list_groups = R"(
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
  // Distinct queues by a loose index scan (kQueuesOfJobs).
  s.queue_names = std::string(R"(
    WITH RECURSIVE )") +
                  kQueuesOfJobs + R"(
    SELECT queue FROM jq WHERE queue IS NOT NULL
    UNION
    SELECT queue FROM queuectl_queues
    ORDER BY 1)";
  s.named_queues = std::string(R"(
    WITH RECURSIVE )") +
                   kQueuesOfJobs + R"(,
    named (queue) AS (
      SELECT queue FROM jq WHERE queue IS NOT NULL
      UNION
      SELECT queue FROM queuectl_queues
       WHERE paused_at IS NOT NULL OR strict_groups OR dead_letter IS NOT NULL
          OR max_processing IS NOT NULL)
    SELECT n.queue, CASE WHEN s.paused_at IS NULL THEN 0 ELSE 1 END
      FROM named n
      LEFT JOIN queuectl_queues s ON s.queue = n.queue
     ORDER BY 1)";

  // Session advisory locks: released by lock_release or when the session ends, so nothing
  // to refresh. They bind :key only: the name, whose bigint key the server computes as
  // hashtextextended(name, 0), so that an application's SQL can take the same lock
  // (SELECT pg_try_advisory_lock(hashtextextended('nightly', 0))). The hash is the one
  // hash partitioning uses, the same on every platform and release.
  s.session_lock.acquire =
      "SELECT CASE WHEN pg_try_advisory_lock(" QC_LOCK_KEY ") THEN 1 ELSE 0 END";
  // The lock's connection holds this one advisory lock and nothing else.
  s.session_lock.check =
      "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
      " AND pid = pg_backend_pid()";
  s.session_lock.release = "SELECT CASE WHEN pg_advisory_unlock(" QC_LOCK_KEY ") THEN 1 ELSE 0 END";
  s.session_lock.shown_key = "SELECT CAST(" QC_LOCK_KEY " AS text)";
  // Lock rows (migration 6): taken when free or expired; a row written on the primary
  // survives a failover with it, and is what QUEUECTL_NAMED_LOCKS=row tests here.
  s.row_lock.acquire = R"(
    INSERT INTO queuectl_locks (name, token, expires_at)
    VALUES (CAST(:key AS text), CAST(:token AS text), now() + )" QC_MS(":ttl_ms") R"()
    ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
     WHERE queuectl_locks.expires_at < now())";
  s.row_lock.check = R"(
    SELECT COUNT(*) FROM queuectl_locks
     WHERE name = CAST(:key AS text) AND token = CAST(:token AS text))";
  s.row_lock.refresh = R"(
    UPDATE queuectl_locks SET expires_at = now() + )" QC_MS(":ttl_ms") R"(
     WHERE name = CAST(:key AS text) AND token = CAST(:token AS text))";
  s.row_lock.release =
      "DELETE FROM queuectl_locks WHERE name = CAST(:key AS text) AND token = CAST(:token AS text)";
  s.row_lock.shown_key = "SELECT CAST(:key AS text)";

  s.listen = "LISTEN queuectl_jobs";

  s.create_migrations_table = R"(
    CREATE TABLE IF NOT EXISTS queuectl_schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    ))";
  s.applied_migrations = "SELECT version, name, " QC_TS("applied_at") R"(
      FROM queuectl_schema_migrations ORDER BY version)";
  s.record_migration = R"(
    INSERT INTO queuectl_schema_migrations (version, name)
    VALUES (CAST(:version AS integer), CAST(:name AS text)))";
  s.migration_applied =
      "SELECT 1 FROM queuectl_schema_migrations WHERE version = CAST(:version AS integer)";
  // A session advisory lock: it outlives each migration's transaction, and its wait is
  // bounded by lock_timeout like any other lock wait.
  // (:wait_s is MySQL's; here lock_timeout bounds the wait.)
  s.migrate_lock =
      "SELECT 1 FROM pg_advisory_lock(" QC_LOCK_KEY ") WHERE CAST(:wait_s AS integer) >= 0";
  s.migrate_unlock = "SELECT CASE WHEN pg_advisory_unlock(" QC_LOCK_KEY ") THEN 1 ELSE 0 END";
  s.table_columns =
      "SELECT CAST(column_name AS text), CAST(data_type AS text) FROM information_schema.columns "
      "WHERE table_schema = current_schema() AND table_name = :name ORDER BY ordinal_position";
  return s;
}

bool starts_with(const std::string& text, const char* prefix) {
  return text.compare(0, std::strlen(prefix), prefix) == 0;
}

std::string sqlstate_of(const soci::soci_error& e) {
  return postgresql_driver().sqlstate(e);
}

class PostgresqlDialect final : public Dialect {
 public:
  Backend backend() const override { return Backend::postgresql; }
  const Statements& sql() const override { return statements_; }
  bool skip_locked() const override { return true; }
  bool update_returning() const override { return true; }
  bool session_locks() const override { return true; }
  bool listen_notify() const override { return true; }

  // From what the server reported at startup (no round trip on 14+, which reports
  // in_hot_standby): CockroachDB, a version before 12, and a standby for a command that
  // writes are refused. (A standby refuses writes anyway, statement by statement, with
  // "read-only transaction"; refusing at connect says why in one line, before anything ran.)
  void check_engine(soci::session& session, bool writes) const override {
    const PostgresqlDriver& pq = postgresql_driver();
    PGconn* conn = native(session);
    const std::string why = postgresql_engine_refusal(
        pq.server_version(conn), pq.parameter_status(conn, "crdb_version") != nullptr);
    if (!why.empty()) throw UsageError(why);
    if (!writes) return;
    const char* standby = pq.parameter_status(conn, "in_hot_standby");
    bool in_recovery = standby && std::strcmp(standby, "on") == 0;
    if (!standby) {
      std::string recovery;
      session << "SELECT CASE WHEN pg_is_in_recovery() THEN 'on' ELSE 'off' END",
          soci::into(recovery);
      in_recovery = recovery == "on";
    }
    if (in_recovery)
      throw UsageError(
          "the server is a standby (read-only) and this command writes: point the URL at the "
          "primary, e.g. with several hosts and ?target_session_attrs=read-write");
  }

  // The session's settings in one round trip (issue 13: every command pays for them), as
  // plain statements rather than startup options, which PgBouncer refuses:
  // - TimeZone UTC: times are read and written as UTC text;
  // - default_transaction_isolation READ COMMITTED: SKIP LOCKED claims and the guarded
  //   UPDATEs are written for it; a server whose default is stricter would turn every race
  //   into 40001;
  // - client_min_messages warning: keeps NOTICEs (CREATE TABLE IF NOT EXISTS ... skipping)
  //   off stderr, where libpq prints them;
  // - lock_timeout: see set_lock_wait.
  void configure_session(soci::session& session) const override {
    route_server_notices(native(session));  // not raw on stderr: see pg_notices.hpp
    std::string lock_wait = std::to_string(kLockWait.count()) + "ms";
    std::string ignored;
    session << "SELECT concat(set_config('TimeZone', 'UTC', false),"
               " set_config('default_transaction_isolation', 'read committed', false),"
               " set_config('client_min_messages', 'warning', false),"
               " set_config('lock_timeout', :lock_wait, false))",
        soci::use(lock_wait, "lock_wait"), soci::into(ignored);
  }
  // lock_timeout: a statement that waits longer for a lock fails with 55P03 (contention).
  void set_lock_wait(soci::session& session, std::chrono::milliseconds wait) const override {
    std::string value = std::to_string(wait.count()) + "ms";
    std::string ignored;
    session << "SELECT set_config('lock_timeout', :value, false)", soci::use(value, "value"),
        soci::into(ignored);
  }
  void begin(soci::session& session) const override { session.begin(); }
  // REPEATABLE READ: every statement of the transaction reads the snapshot its first took.
  void begin_snapshot(soci::session& session) const override {
    session << "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
  }

  bool is_contention(const soci::soci_error& e) const override {
    const std::string state = sqlstate_of(e);
    return state == "40001"      // serialization_failure
           || state == "40P01"   // deadlock_detected
           || state == "55P03";  // lock_not_available (lock_timeout, NOWAIT)
  }
  bool is_access_denied(const soci::soci_error& e) const override {
    const std::string state = sqlstate_of(e);
    if (state == "28P01" || state == "28000" || state == "3D000") return true;
    // At connect time libpq gives text only.
    const std::string msg = e.get_error_message();
    for (const char* needle : {"password authentication failed", "no password supplied",
                               "does not exist", "no pg_hba.conf entry", "authentication failed",
                               "is not permitted to log in", "permission denied for database"}) {
      if (msg.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  // libpq's own wording (queuectl never calls setlocale, so it is English) and the
  // server's FATAL for a parameter given with ?options=-c ... . Not "SSL SYSCALL error",
  // which is a connection cut mid-handshake.
  bool is_bad_connection_setting(const soci::soci_error& e) const override {
    const std::string msg = e.get_error_message();
    for (const char* needle :
         {"SSL was required", "SSL error:", "certificate", "private key", "invalid ",
          "channel binding", "GSSAPI", "authentication method",
          "unrecognized configuration "
          "parameter",
          "cannot be changed", "permission denied to set parameter",
          "unsupported frontend protocol", "could not parse network address",
          // ?service= naming no service in pg_service.conf; ?options=-c without a value
          "definition of service", "requires a value"}) {
      if (msg.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  bool is_missing_table(const soci::soci_error& e) const override {
    return sqlstate_of(e) == "42P01";  // undefined_table
  }
  std::vector<std::pair<std::string, std::string>> first_migration_columns() const override {
    const std::string ts = "timestamp with time zone";
    return {{"id", "bigint"},
            {"queue", "text"},
            {"status", "smallint"},
            {"priority", "integer"},
            {"run_at", ts},
            {"attempts", "integer"},
            {"max_attempts", "integer"},
            {"payload", "jsonb"},
            {"result", "jsonb"},
            {"last_error", "text"},
            {"locked_by", "text"},
            {"lock_token", "text"},
            {"locked_at", ts},
            {"lock_until", ts},
            {"dedupe_key", "text"},
            {"group_key", "text"},
            {"created_at", ts},
            {"updated_at", ts},
            {"finished_at", ts}};
  }
  bool is_connection_failure(const soci::soci_error& e) const override {
    const std::string state = sqlstate_of(e);
    if (starts_with(state, "08")) return true;  // connection_exception class
    if (state == "57P01" || state == "57P02" || state == "57P03") return true;  // shutdowns
    if (e.get_error_category() == soci::soci_error::connection_error) return true;
    const std::string msg = e.get_error_message();
    for (const char* needle :
         {"server closed the connection", "no connection to the server",
          "could not connect to server", "connection to server at", "Connection refused",
          "terminating connection", "SSL SYSCALL error", "Cannot establish connection"}) {
      if (msg.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  bool is_constraint_violation(const soci::soci_error& e) const override {
    return starts_with(sqlstate_of(e), "23") ||
           e.get_error_category() == soci::soci_error::constraint_violation;
  }
  // libpq's own connection under SOCI's session: notifications are read with libpq, since
  // SOCI has no call for them.
  static PGconn* native(soci::session& session) {
    return static_cast<soci::postgresql_session_backend*>(session.get_backend())->conn_;
  }
  int notification_socket(soci::session& session) const override {
    return postgresql_driver().socket(native(session));
  }
  std::vector<std::string> take_notifications(soci::session& session) const override {
    const PostgresqlDriver& pq = postgresql_driver();
    PGconn* conn = native(session);
    if (!pq.consume_input(conn) || pq.status(conn) != CONNECTION_OK) {
      std::string why = pq.error_message(conn);
      why = why.substr(0, why.find('\n'));  // libpq adds an indented explanation below
      throw TemporaryError("lost the connection that listens for new jobs" +
                           (why.empty() ? std::string() : ": " + why));
    }
    std::vector<std::string> out;
    while (PGnotify* n = pq.notifies(conn)) {
      out.emplace_back(n->extra ? n->extra : "");
      pq.freemem(n);
    }
    return out;
  }

 private:
  Statements statements_ = make_statements();
};

}  // namespace

std::unique_ptr<Dialect> make_postgresql_dialect() {
  return std::make_unique<PostgresqlDialect>();
}

}  // namespace queuectl
