// The SQL of the MySQL/MariaDB dialect (mysql.cpp), in the files that write it by concern:
// mysql_jobs.cpp (enqueue, the claim, the lease holder's writes), mysql_inspect.cpp
// (list, stats, top, groups), mysql_admin.cpp (leases and the reaper, retry, cancel, move,
// purge, queue settings) and mysql.cpp (named locks, migrations); each make_* function fills
// one group of Statements (statements.hpp). What follows holds for all of them.
//
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
// values: the CASEs of these statements test only attempts and max_attempts, which they
// leave alone, and reap_mark reads lock_until into last_error before clearing it.
#pragma once

#include <string>

#include "db/statements.hpp"

#define QC_NOW "NOW(6)"
// The database's time now in whole milliseconds since 1970-01-01 UTC (rate limits; the
// session's time zone is UTC).
#define QC_NOW_MS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
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
// Kept within TIMESTAMP(6), which ends in 2038 (a retry that far out is as good as never),
// and short of its last microsecond, the run_at of a job waiting for others (enqueue --after).
#define QC_RUN_AT_AFTER_BACKOFF_TIMES(jitter) \
  "LEAST(NOW(6) + INTERVAL ROUND(" QC_BACKOFF_MS_TIMES(jitter) " * 1000) MICROSECOND, " \
  "TIMESTAMP'2038-01-19 03:14:07.999998')"
// fail: the jitter drawn by the client for its one job.
#define QC_RUN_AT_AFTER_BACKOFF QC_RUN_AT_AFTER_BACKOFF_TIMES(":jitter")
// reap: a jitter drawn per row, so that a dead host's jobs do not all come back at once.
#define QC_RUN_AT_AFTER_BACKOFF_ROW_JITTER QC_RUN_AT_AFTER_BACKOFF_TIMES("(0.5 + 0.5 * RAND())")

namespace queuectl::mysql_sql {

inline constexpr const char* kJobColumns =
    "id, queue, status, priority, " QC_TS("run_at") ", attempts, max_attempts, payload, "
    "result, last_error, locked_by, lock_token, " QC_TS("locked_at") ", " QC_TS("lock_until") ", "
    "dedupe_key, group_key, " QC_TS("created_at") ", " QC_TS("updated_at") ", "
    QC_TS("finished_at") ", dead_from, trace_parent, trace_state, progress, progress_note, "
    "checkpoint";

// The whole set, and each group of it (`cols`: the job columns, unqualified).
Statements make_statements();
EnqueueStatements make_enqueue(const std::string& cols);
ClaimStatements make_claim(const std::string& cols);
FinishStatements make_finish();
ListingStatements make_listing();
TopStatements make_top();
GroupStatements make_groups();
ScheduleStatements make_schedules();
LeaseStatements make_leases(const std::string& cols);
AdminStatements make_admin();
QueueStatements make_queues();
NamedLocks make_locks();
MigrationStatements make_migrations();

}  // namespace queuectl::mysql_sql
