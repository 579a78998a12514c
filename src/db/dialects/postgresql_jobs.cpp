// PostgreSQL: enqueue, the claim, and the lease holder's writes (ack, fail, extend, release). What
// the SQL may contain: postgresql_sql.hpp.

#include <string>

#include "db/dialects/postgresql_sql.hpp"

namespace queuectl::postgresql_sql {

namespace {

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

// A grouped job `j` of a queue whose group keys have buckets of their own (rate_per_key) may
// start only while its key's bucket holds a whole token, refilled to now
// (queuectl_rate_key_ready, migration 14, reads in the statement's snapshot, without a lock:
// a group runs one job at a time, and a key's bucket is written in the statement that claims
// the key's job, so a snapshot in which the next job of the key is its group's head also
// holds the bucket that claim wrote).
constexpr const char* kKeyHasToken =
    "(j.group_key IS NULL OR queuectl_rate_key_ready(j.queue, j.group_key))";

// How many of the picked jobs a queue's concurrency limit leaves to a claim: its free
// slots (queuectl_claim_slots, migration 5, locks the queue's row and counts), or no limit.
constexpr const char* kSlotsLimit = R"(LIMIT (SELECT CASE WHEN p.max_processing IS NOT NULL
                          THEN queuectl_claim_slots(a.queue, 2147483647) END
                FROM arg a LEFT JOIN queuectl_queues p ON p.queue = a.queue))";

// `arg` and `picked`, the start of `claim`, `claim_ungrouped` and `claim_rated_simple`: the
// claim's locking read of up to `limit` (the SQL of the LIMIT's value) due jobs of the queue (a
// grouped job only as its group's head, `head` below; `claim_ungrouped` checks nothing and reads
// the group key), none when the queue's settings row matches `skip` (paused, or a queue the other
// statement takes).
std::string arg_and_picked(const char* limit, const char* skip, const char* head = kGroupHead) {
  const bool checked = head != nullptr;
  return std::string(R"(
    WITH arg AS (SELECT CAST(:queue AS text) AS queue),
    picked AS (
      SELECT j.id, j.ctid AS tid, j.priority, j.run_at)") +
         (checked ? "" : ", j.group_key") + R"(
        FROM job_queue j
       WHERE j.queue = (
               SELECT a.queue
                 FROM arg a
                WHERE NOT EXISTS (SELECT 1 FROM queuectl_queues p
                                   WHERE p.queue = a.queue
                                     AND ()" +
         std::string(skip) + R"()))
         AND j.status = 0
         AND j.run_at <= now())" +
         (checked ? std::string("\n         AND ") + head : std::string()) + R"(
       ORDER BY j.priority DESC, j.run_at, j.id
       LIMIT )" +
         std::string(limit) + R"(
         FOR UPDATE OF j SKIP LOCKED),)";
}

// The claim's UPDATE of the jobs in `taken`, returning them.
std::string mark_taken() {
  return R"(
    UPDATE job_queue j
       SET status = 1,
           attempts = j.attempts + 1,
           progress = NULL, progress_note = NULL,
           locked_by = CAST(:worker AS text),
           lock_token = CAST(:token AS text),
           locked_at = now(),
           lock_until = now() + )" QC_MS(":lease_ms") R"(,
           updated_at = now()
     WHERE j.ctid = ANY (ARRAY(SELECT taken.tid FROM taken))
    RETURNING )" +
         job_columns("j.");
}

}  // namespace

EnqueueStatements make_enqueue(const std::string& cols) {
  EnqueueStatements s;
  // Duplicates of a dedupe key are skipped; rows without a key take the keyless statements
  // (EnqueueStatements::Keyless), which are these without this clause.
  const std::string skip_duplicates =
      "\n    ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING";
  EnqueueStatements::Keyless keyless;
  keyless.insert_job = R"(
    INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key,
                           trace_parent, trace_state)
    VALUES (CAST(:queue AS text), CAST(:priority AS integer),
            COALESCE(CAST(:run_at AS timestamp) AT TIME ZONE 'UTC', now()) + )" QC_MS(
      ":delay_ms") R"(,
            CAST(:max_attempts AS integer), CAST(:payload AS jsonb),
            CAST(:dedupe_key AS text), CAST(:group_key AS text),
            CAST(:trace_parent AS text), CAST(:trace_state AS text)))";
  s.insert_job = keyless.insert_job + skip_duplicates;
  // Many rows: the VALUES rows are bare placeholders (typed as text) and the SELECT casts
  // and computes once for all rows. With casts and the run_at expression in every row,
  // PostgreSQL spent about 50 ms parsing each 500-row statement.
  s.values_rows.prefix =
      "INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, "
      "group_key, trace_parent, trace_state) SELECT v.q, CAST(v.p AS integer), "
      "COALESCE(CAST(v.r AS timestamp) AT TIME ZONE 'UTC', now()) + " QC_MS("v.d") ", "
      "CAST(v.m AS integer), CAST(v.j AS jsonb), v.k, v.g, v.t, v.s FROM (VALUES ";
  // Placeholders in bind order: queue, priority, run_at, delay, max_attempts, payload,
  // dedupe_key, group_key, trace_parent, trace_state (the repository binds them by position).
  s.values_rows.row = "(:q{n}, :p{n}, :r{n}, :d{n}, :m{n}, :j{n}, :k{n}, :g{n}, :t{n}, :s{n})";
  s.values_rows.suffix =
      ") AS v (q, p, r, d, m, j, k, g, t, s) ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS "
      "NOT NULL DO NOTHING";
  // Many rows as eight array parameters: the statement's text is the same whatever the
  // number of rows, and PostgreSQL reads an array literal far faster than it parses a
  // statement with 8 placeholders a row (100,000 jobs went in about 2.5 times faster).
  // WITH ORDINALITY ... ORDER BY keeps the file's order for the ids, which ordered groups
  // rely on.
  keyless.insert_arrays = R"(
    INSERT INTO job_queue (queue, priority, run_at, max_attempts, payload, dedupe_key, group_key,
                           trace_parent, trace_state)
    SELECT v.q, v.p, COALESCE(CAST(v.r AS timestamp) AT TIME ZONE 'UTC', now()) + )" QC_MS(
      "v.d") R"(,
           v.m, v.j, v.k, v.g, v.t, v.s
      FROM unnest(CAST(:queues AS text[]), CAST(:priorities AS integer[]),
                  CAST(:run_ats AS text[]), CAST(:delays_ms AS bigint[]),
                  CAST(:max_attempts AS integer[]), CAST(:payloads AS jsonb[]),
                  CAST(:dedupe_keys AS text[]), CAST(:group_keys AS text[]),
                  CAST(:trace_parents AS text[]), CAST(:trace_states AS text[]))
           WITH ORDINALITY AS v (q, p, r, d, m, j, k, g, t, s, n)
     ORDER BY v.n)";
  // The ids come from the sequence as the rows go in, in the ORDER BY's order, so sorted
  // they are the rows' ids in order.
  s.insert_arrays = keyless.insert_arrays + skip_duplicates;
  s.insert_arrays_ids = *s.insert_arrays + "\n    RETURNING id";
  keyless.insert_arrays_ids = keyless.insert_arrays + "\n    RETURNING id";
  s.keyless = std::move(keyless);
  s.last_insert_id = "SELECT lastval()";
  s.job_by_dedupe_key = "SELECT " + cols +
                        " FROM job_queue WHERE queue = CAST(:queue AS text)"
                        " AND dedupe_key = CAST(:dedupe_key AS text)";
  return s;
}

namespace {

// The claim statements with `limit` as the SQL of their LIMIT's value (make_claim below).
ClaimReturning claim_chain(const char* limit) {
  ClaimReturning s;
  // One statement: the CTE locks up to :limit due rows in claim order, skipping rows
  // other claimers hold, and the UPDATE marks exactly those rows and returns them.
  // The paused check is a one-time subquery on the queue name, not a per-row anti-join:
  // with the anti-join the planner misjudged its selectivity and chose a sequential scan
  // and sort over the whole table instead of the claim index. Grouped jobs must also be
  // their group's head (kGroupHead), so one claim takes at most one job of a group.
  //
  // The UPDATE reaches the rows `taken` holds by their tuple ids (the ctid `picked` read from
  // the version it locked), as an array (= ANY of an ARRAY sub-select, computed once): a Tid
  // Scan, no join the planner could turn around, and no second descent of the primary key
  // for each row (by id, a claim of 1,000 ran about 11% longer on the server: EXPLAIN
  // ANALYZE, alternately, medians 10.6 against 9.4 ms). A locked row cannot move, so the
  // ctid still names it when the UPDATE runs in the same statement. Written as a
  // join (FROM taken WHERE j.id = taken.id AND j.status = 0), a planner whose statistics
  // predated a burst of new jobs took `taken` and the ready rows for one row each and chose a
  // nested loop over every ready row of every queue, each compared with every taken id:
  // 30,000 ready x 1,000 taken = 30 million comparisons, 7.4 s for a claim of 1,000 (issue
  // 33). It re-checks no status either, which would make job_queue_claim a candidate again:
  // every id in `taken` is a row that `picked` locked after re-checking its conditions on
  // the row's newest version (FOR UPDATE in READ COMMITTED), and no one can change it
  // until this statement's transaction ends.
  s.in_transaction = false;  // one statement: atomic in autocommit
  // A queue with a concurrency limit (max_processing) takes at most as many jobs as it has
  // free slots: queuectl_claim_slots (migration 5) locks the queue's settings row and
  // counts its processing jobs once that lock is held. Queues without a limit never call
  // it (a NULL LIMIT is no limit). The queue is named once, in `arg`. The slots cut the
  // locked rows down in `taken`, not in `picked`'s own LIMIT: the planner takes a LIMIT it cannot
  // evaluate for a tenth of the table, and then hashed the whole table for the UPDATE's join and
  // JIT-compiled the plan (about 125 ms a claim on 100,000 ready jobs instead of 2 ms).
  // The LIMIT of `taken` runs its sub-select before `picked` is read, so the queue's
  // row is locked and its slots counted before any job row is locked, as before.
  s.claim = arg_and_picked(limit, "p.paused_at IS NOT NULL OR p.rate_count IS NOT NULL") + R"(
    taken AS (
      SELECT t.tid
        FROM picked t
       ORDER BY t.priority DESC, t.run_at, t.id
       )" + std::string(kSlotsLimit) +
            R"()
    )" + mark_taken();
  // The same claim without the group checks, tried first (the repository's chain): a queue
  // that has never had a grouped job is claimed without them. They were most of the time
  // PostgreSQL spent planning a one-job claim (0.28 ms with them, 0.14 ms without, by
  // EXPLAIN (ANALYZE, SUMMARY), warm). It claims nothing when any job it picked has a group
  // key (the locks are let go at once); `claim` then follows, and the repository makes that
  // queue's next claims with `claim` from the start. Only jobs without a group key are ever
  // taken here, and those have no order to keep.
  s.claim_ungrouped = arg_and_picked(limit, "p.paused_at IS NOT NULL OR p.rate_count IS NOT NULL",
                                     nullptr) +
                      R"(
    taken AS (
      SELECT t.tid
        FROM picked t
       WHERE NOT EXISTS (SELECT 1 FROM picked g WHERE g.group_key IS NOT NULL)
       ORDER BY t.priority DESC, t.run_at, t.id
       )" + std::string(kSlotsLimit) +
                      R"()
    )" + mark_taken();
  // A queue with a rate limit: `claim` above takes nothing from it (the check shares the
  // paused one's probe), and the repository runs `claim_rated` instead, the same claim with
  // the rate limit taken in it. Two statements, not one: the rate limit's writes and its
  // numbering cost the one-job claim of every other queue about 40% when they were in the
  // one statement (pgbench, claim of 1 + ack).
  //
  // `counted` numbers the picked jobs that take a token of the queue's bucket: all of them,
  // or with rate_per_key only those without a group key (a grouped job needs a token of its
  // key's bucket, which kKeyHasToken checked in `picked`). `slotted` keeps what the queue's
  // concurrency limit allows. `grant_n` calls queuectl_rate_take (migration 14) once, which
  // takes up to as many tokens from the queue's bucket as `slotted` has jobs that need one,
  // under the queue row's lock until commit (claimers of a limited queue take turns), and
  // one token from the bucket of each group key in `slotted`; `taken` keeps the jobs the
  // tokens cover, and `claimed` marks every one of them. Run on a queue without a rate (its
  // rate removed since), the grant is 2147483647: no call, no lock. (The bucket writes are a
  // function because as this statement's own UPDATE and INSERT, after a locking read, they
  // made a one-job claim about 1.7x as slow, mostly in planning.)
  s.claim_rated = R"(
    WITH arg AS (SELECT CAST(:queue AS text) AS queue),
    picked AS (
      SELECT j.id, j.ctid AS tid, j.priority, j.run_at, j.group_key
        FROM job_queue j
       WHERE j.queue = (
               SELECT a.queue
                 FROM arg a
                WHERE NOT EXISTS (SELECT 1 FROM queuectl_queues p
                                   WHERE p.queue = a.queue AND p.paused_at IS NOT NULL))
         AND j.status = 0
         AND j.run_at <= now()
         AND )" + std::string(kGroupHead) +
                  R"(
         AND )" + kKeyHasToken +
                  R"(
       ORDER BY j.priority DESC, j.run_at, j.id
       LIMIT )" + std::string(limit) +
                  R"(
         FOR UPDATE OF j SKIP LOCKED),
    counted AS (
      SELECT t.id, t.tid, t.priority, t.run_at, t.group_key, t.keyless,
             row_number() OVER (PARTITION BY t.keyless
                                ORDER BY t.priority DESC, t.run_at, t.id) AS n
        FROM (SELECT t.id, t.tid, t.priority, t.run_at, t.group_key,
                     t.group_key IS NULL
                     OR NOT (SELECT COALESCE(bool_or(p.rate_per_key), false)
                               FROM arg a JOIN queuectl_queues p ON p.queue = a.queue) AS keyless
                FROM picked t) t),
    slotted AS (
      SELECT t.*
        FROM counted t
       ORDER BY t.priority DESC, t.run_at, t.id
       )" + kSlotsLimit +
                  R"(),
    grant_n AS (
      SELECT CASE WHEN p.rate_count IS NOT NULL
                  THEN queuectl_rate_take(
                         a.queue, (SELECT CAST(count(*) AS integer) FROM slotted t WHERE t.keyless),
                         ARRAY(SELECT t.group_key FROM slotted t WHERE NOT t.keyless))
                  ELSE 2147483647 END AS n
        FROM arg a LEFT JOIN queuectl_queues p ON p.queue = a.queue),
    taken AS (
      SELECT t.tid
        FROM slotted t CROSS JOIN grant_n g
       WHERE NOT t.keyless OR t.n <= g.n),
    claimed AS ()" +
                  mark_taken() + R"()
    SELECT * FROM claimed)";
  // A queue with a rate and no buckets per group key (most): the usual claim without the group
  // checks (as `claim_ungrouped`), whose cut to the free slots also takes the tokens,
  // queuectl_rate_take (migration 14) granting up to as many as the picked jobs within the
  // slots. It takes nothing, and no token, when a job it picked has a group key: `claim_rated`,
  // which checks groups, then follows, and serves that queue from then on. Its probe skips a
  // queue with rate_per_key, which `claim_rated` takes. Planned in about the time of
  // `claim_ungrouped`; with the group checks it took 0.14 ms more of a one-job claim, and
  // `claim_rated`'s numbering and cuts about 0.15 ms more again. A queue with a concurrency
  // limit has its slots counted (LEAST's first argument, in a LATERAL sub-select that
  // queuectl_claim_slots, VOLATILE, keeps apart) under the queue row's lock before any job
  // row is locked, as in `claim`; a queue with only a rate has its job rows locked first and
  // the queue's row then, as `claim_rated` does.
  s.claim_rated_simple =
      arg_and_picked(limit, "p.paused_at IS NOT NULL OR p.rate_per_key", nullptr) + R"(
    taken AS (
      SELECT t.tid
        FROM picked t
       WHERE NOT EXISTS (SELECT 1 FROM picked g WHERE g.group_key IS NOT NULL)
       ORDER BY t.priority DESC, t.run_at, t.id
       LIMIT (SELECT CASE WHEN p.rate_count IS NULL THEN s.free
                          ELSE queuectl_rate_take(
                                 a.queue,
                                 LEAST(s.free,
                                       (SELECT CASE WHEN bool_or(g.group_key IS NOT NULL) THEN 0
                                                    ELSE CAST(count(*) AS integer) END
                                          FROM picked g)),
                                 NULL) END
                FROM arg a LEFT JOIN queuectl_queues p ON p.queue = a.queue
                CROSS JOIN LATERAL (
                  SELECT CASE WHEN p.max_processing IS NOT NULL
                              THEN queuectl_claim_slots(a.queue, 2147483647) END AS free) s))
    )" +
      mark_taken();
  // The claim's locking read alone, in the two-step claim's first three columns
  // (update_returning: the claim itself never runs it; the contract tests hold a claim half
  // way with it).
  s.locking_pick = R"(
    SELECT j.id, CASE WHEN j.group_key IS NULL THEN 0 ELSE 1 END,
           (SELECT p.max_processing FROM queuectl_queues p WHERE p.queue = j.queue)
      FROM job_queue j
     WHERE j.queue = )" +
                   std::string(kUnpausedQueue) + R"(
       AND j.status = 0
       AND j.run_at <= now()
       AND )" + kGroupHead +
                   R"(
       AND )" + kKeyHasToken +
                   R"(
     ORDER BY j.priority DESC, j.run_at, j.id
     LIMIT CAST(:limit AS integer)
       FOR UPDATE OF j SKIP LOCKED)";
  return s;
}

}  // namespace

ClaimStatements make_claim() {
  ClaimReturning s = claim_chain("CAST(:limit AS integer)");
  // A claim of n jobs (up to kWrittenLimitMax): the same statements with LIMIT n written in.
  // Prepared (the repository's PreparedClaim), PostgreSQL plans a statement whose LIMIT is a
  // parameter again at every run with its values (a custom plan) while its generic plan,
  // which cannot see the LIMIT and expects a tenth of the queue, costs more; it plans one
  // with the LIMIT written in once, for every value, from the sixth run (the generic plan
  // costs what the custom plans cost). Planning was about half of a one-job claim's time on
  // the server: EXPLAIN (ANALYZE, SUMMARY) of the prepared statement, 0.25 ms planning and
  // 0.20 running with the parameter; 0.01 and 0.20 with LIMIT 1. Under `work --concurrency 8
  // -- true` on a fresh table, 2,000 jobs in 301 claims spent 66 ms planning and 67 running
  // (pg_stat_statements with track_planning); with the LIMIT written in, 6 ms planning. n is
  // the claim's own count, a whole number from 1 to kWrittenLimitMax printed by this code:
  // one of a fixed set of statements, none built from any input's text.
  s.with_limit = [](int n) {
    ClaimReturning written = claim_chain(std::to_string(n).c_str());
    written.binds_limit = false;
    return written;
  };
  return s;
}

FinishStatements make_finish(const std::string& cols) {
  FinishStatements s;
  s.ack = R"(
    UPDATE job_queue
       SET status = 2, result = CAST(:result AS jsonb), lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id = CAST(:id AS bigint) AND CAST(status AS integer) = 1 AND lock_token = CAST(:token AS text) AND has_dependents = 0)";
  // Many acks without a result under one token: one UPDATE returning the ids it changed.
  s.ack_ids.write = returning(R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id IN ({ids}) AND CAST(status AS integer) = 1 AND lock_token = CAST(:token AS text) AND has_dependents = 0)",
                              "id");
  // The status is tested as CAST(status AS integer) = 1, as in every statement here that finds
  // jobs by id (postgresql_sql.hpp): only the primary key can find the rows, one descent an id.
  // With `status = 1` and statistics that predated the jobs processing now, the ack of one job
  // read all 10,000 processing rows through job_queue_processing_groups or job_queue_leases
  // instead of one. With fresh statistics that scan was a little quicker for a batch about as
  // large as everything processing: an ack of 1,000 ids with 2,000 processing, 10.4-10.6 ms
  // against 11.4-12.2 by the primary key (EXPLAIN ANALYZE).
  s.ack_id_array = R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id = ANY (CAST(:ids AS bigint[])) AND CAST(status AS integer) = 1
       AND lock_token = CAST(:token AS text) AND has_dependents = 0
    RETURNING id)";
  s.ack_id_one = R"(
    UPDATE job_queue
       SET status = 2, result = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id = CAST(:id AS bigint) AND CAST(status AS integer) = 1
       AND lock_token = CAST(:token AS text) AND has_dependents = 0
    RETURNING id)";
  s.ack_delete.write = returning(R"(
    DELETE FROM job_queue
     WHERE id IN ({ids}) AND CAST(status AS integer) = 1 AND lock_token = CAST(:token AS text)
       AND has_dependents = 0 AND group_key IS NULL
       AND queue IN (SELECT queue FROM queuectl_queues WHERE NOT keep_done))",
                                 "id");
  s.ack_delete_array = R"(
    DELETE FROM job_queue
     WHERE id = ANY (CAST(:ids AS bigint[])) AND CAST(status AS integer) = 1
       AND lock_token = CAST(:token AS text) AND has_dependents = 0 AND group_key IS NULL
       AND queue IN (SELECT queue FROM queuectl_queues WHERE NOT keep_done)
    RETURNING id)";
  s.ack_delete_one = R"(
    DELETE FROM job_queue
     WHERE id = CAST(:id AS bigint) AND CAST(status AS integer) = 1
       AND lock_token = CAST(:token AS text) AND has_dependents = 0 AND group_key IS NULL
       AND queue IN (SELECT queue FROM queuectl_queues WHERE NOT keep_done)
    RETURNING id)";
  s.deleting_queues = "SELECT queue FROM queuectl_queues WHERE NOT keep_done";
  s.fail_retry.write = returning(R"(
    UPDATE job_queue
       SET status = CASE WHEN attempts >= max_attempts THEN 3 ELSE 0 END,
           run_at = CASE WHEN attempts >= max_attempts THEN run_at
                         ELSE now() + )" QC_BACKOFF R"( END,
           finished_at = CASE WHEN attempts >= max_attempts THEN now() END,
           last_error = CAST(:error AS text), lock_token = NULL, lock_until = NULL,
           updated_at = now()
     WHERE id = CAST(:id AS bigint) AND CAST(status AS integer) = 1 AND lock_token = CAST(:token AS text))",
                                 cols);
  s.fail_final.write = returning(R"(
    UPDATE job_queue
       SET status = 3, last_error = CAST(:error AS text), lock_token = NULL, lock_until = NULL,
           finished_at = now(), updated_at = now()
     WHERE id = CAST(:id AS bigint) AND CAST(status AS integer) = 1 AND lock_token = CAST(:token AS text))",
                                 cols);
  s.extend.write = returning(R"(
    UPDATE job_queue
       SET lock_until = now() + )" QC_MS(":lease_ms") R"(, updated_at = now(),
           progress = COALESCE(CAST(:progress AS smallint), progress),
           progress_note = COALESCE(CAST(:note AS text), progress_note),
           checkpoint = COALESCE(CAST(:checkpoint AS jsonb), checkpoint)
     WHERE id = CAST(:id AS bigint) AND CAST(status AS integer) = 1 AND lock_token = CAST(:token AS text)
       AND lock_until > now())",
                             cols);
  s.release.write = returning(R"(
    UPDATE job_queue
       SET status = 0, attempts = GREATEST(attempts - 1, 0), run_at = now(),
           locked_by = NULL, lock_token = NULL, locked_at = NULL, lock_until = NULL,
           updated_at = now()
     WHERE id = CAST(:id AS bigint) AND CAST(status AS integer) = 1 AND lock_token = CAST(:token AS text))",
                              cols);
  return s;
}

}  // namespace queuectl::postgresql_sql
