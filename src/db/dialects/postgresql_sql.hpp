// The SQL of the PostgreSQL dialect (postgresql.cpp), in the files that write it by concern:
// postgresql_jobs.cpp (enqueue, the claim, the lease holder's writes), postgresql_inspect.cpp
// (list, stats, top, groups), postgresql_admin.cpp (leases and the reaper, retry, cancel, move,
// purge, queue settings) and postgresql.cpp (named locks, migrations); each make_* function fills
// one group of Statements (statements.hpp). What follows holds for all of them.
//
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
//
// A statement that finds jobs by id (`id = :id`, `id IN (...)`, `id = ANY (...)`) tests
// their status as `CAST(status AS integer) = 1`, not `status = 1`. The partial indexes
// (job_queue_claim WHERE status = 0, job_queue_leases and job_queue_processing_groups WHERE
// status = 1, ...) are candidates only when the WHERE proves their predicate, and none is
// proved from the cast, so only the primary key can find the rows: work bounded by the ids.
// With `status = 1`, a planner whose statistics predate the jobs in such an index (ANALYZE
// saw it empty, then a burst was claimed) reads the whole index for one id, the id tested
// inside the index scan: with 10,000 jobs processing, an extend, a fail or an ack with a
// result read 50-110 buffers instead of 5-10, growing with the jobs processing
// (tests/contract/test_stale_statistics.cpp). The same holds for status 0 (a waiting
// child's release), for purge's `status >= 2` (job_queue_finished, read whole for each
// batch of ids), and for a dead letter's `dead_from IS NOT NULL` (job_queue_dead_letters),
// written `num_nonnulls(dead_from) = 1`. The cast means the same on the smallint column.
#pragma once

#include <string>

#include "db/statements.hpp"

// A timestamp as RFC 3339 UTC text with microseconds (NULL stays NULL). The colons sit
// inside a literal, where SOCI leaves them alone.
#define QC_RFC3339 "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'"
// Whole milliseconds since 1970-01-01 UTC: at the start of the transaction (QC_NOW_MS), and
// at the moment it is evaluated (QC_CLOCK_MS), for rate limits.
#define QC_NOW_MS "CAST(floor(extract(epoch FROM now()) * 1000) AS bigint)"
#define QC_CLOCK_MS "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS bigint)"
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

// A named lock's bigint key, from its name (:key): see make_locks in postgresql.cpp.
#define QC_LOCK_KEY "hashtextextended(CAST(:key AS text), 0)"

// Optional filters (:queue NULL for all, a status bit mask) read their arguments from a
// one-row subquery in FROM, "a": PostgreSQL flattens it into the query, so each
// placeholder is named once and the planner still sees the bound constants. With them,
// "a.arg_queue IS NULL OR queue = a.arg_queue" folds to nothing or to "queue = 'x'", and
// the mask folds to "status = ANY ('{NULL,NULL,2,3,4}')", which the statistics can
// estimate. (The COALESCE and shift forms estimated at 0.5 percent each, which sent
// purge batches to a sequential scan and sort of the whole table.)
#define QC_COLUMN_IN_MASK(column, m)                         \
  column " = ANY (ARRAY[CASE WHEN " m                        \
         " & 1 <> 0 THEN 0 END, "                            \
         "CASE WHEN " m " & 2 <> 0 THEN 1 END, CASE WHEN " m \
         " & 4 <> 0 THEN 2 END, "                            \
         "CASE WHEN " m " & 8 <> 0 THEN 3 END, CASE WHEN " m " & 16 <> 0 THEN 4 END])"
#define QC_STATUS_IN_MASK(m) QC_COLUMN_IN_MASK("status", m)
// The same for jobs found by id: on CAST(status AS integer), which proves no partial index's
// predicate (see "A statement that finds jobs by id" above).
#define QC_STATUS_BY_ID_IN_MASK(m) QC_COLUMN_IN_MASK("CAST(status AS integer)", m)

namespace queuectl::postgresql_sql {

// Job's columns, in Job's order, each qualified with `alias` (empty or "j.").
// The times as PostgreSQL's own text ("2026-11-22 10:00:00.1234+00" in the session's
// TimeZone UTC and DateStyle ISO, which configure_session sets), made RFC 3339 by the
// client (JobRowReader): a third of the server's time to_char takes (EXPLAIN ANALYZE of six
// times of 100,000 rows: 49 ms against 150-170), and every claim returns them.
inline std::string job_columns(const std::string& a) {
  auto ts = [&](const char* col) { return "CAST(" + a + col + " AS text)"; };
  return a + "id, " + a + "queue, " + a + "status, " + a + "priority, " + ts("run_at") + ", " + a +
         "attempts, " + a + "max_attempts, " + a + "payload, " + a + "result, " + a +
         "last_error, " + a + "locked_by, " + a + "lock_token, " + ts("locked_at") + ", " +
         ts("lock_until") + ", " + a + "dedupe_key, " + a + "group_key, " + ts("created_at") +
         ", " + ts("updated_at") + ", " + ts("finished_at") + ", " + a + "dead_from, " + a +
         "trace_parent, " + a + "trace_state, " + a + "progress, " + a + "progress_note, " + a +
         "checkpoint";
}

// The distinct queues of job_queue as the CTE `jq`, by loose index scans (one probe per
// queue of each of the claim, processing and finished indexes, whose partial predicates
// together hold every status), so that the cost follows the number of queues, not the number
// of jobs; NULL rows may appear. Follows "WITH RECURSIVE".
inline std::string queues_of_jobs() {
  // The queues of the jobs whose status meets `status` (an index's own predicate), as `name`.
  const auto skip_through = [](const std::string& name, const std::string& status) {
    const std::string first =
        "(SELECT queue FROM job_queue WHERE " + status + " ORDER BY queue LIMIT 1)";
    const std::string next = "SELECT (SELECT j.queue FROM job_queue j WHERE j." + status +
                             " AND j.queue > " + name + ".queue ORDER BY j.queue LIMIT 1)";
    return name + " (queue) AS (\n      " + first + "\n      UNION ALL\n      " + next +
           "\n        FROM " + name + "\n       WHERE " + name + ".queue IS NOT NULL)";
  };
  return skip_through("jq0", "status = 0") + ",\n    " + skip_through("jq1", "status = 1") +
         ",\n    " + skip_through("jq2", "status >= 2") +
         ",\n    jq (queue) AS (\n      SELECT queue FROM jq0 UNION SELECT queue FROM jq1"
         " UNION SELECT queue FROM jq2)";
}

// A guarded write that reports what it changed (see GuardedWrite).
inline std::string returning(const std::string& write, const std::string& what) {
  return write + "\n    RETURNING " + what;
}

// The whole set, and each group of it (`cols`: the job columns, unqualified).
Statements make_statements();
EnqueueStatements make_enqueue(const std::string& cols);
ClaimStatements make_claim();
FinishStatements make_finish(const std::string& cols);
ListingStatements make_listing();
TopStatements make_top();
GroupStatements make_groups();
ScheduleStatements make_schedules();
LeaseStatements make_leases(const std::string& cols);
AdminStatements make_admin();
QueueStatements make_queues();
NamedLocks make_locks();
MigrationStatements make_migrations();

}  // namespace queuectl::postgresql_sql
