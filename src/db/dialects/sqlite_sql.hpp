// The SQL of the SQLite dialect (sqlite.cpp), in the files that write it by concern:
// sqlite_jobs.cpp (enqueue, the claim, the lease holder's writes), sqlite_inspect.cpp
// (list, stats, top, groups), sqlite_admin.cpp (leases and the reaper, retry, cancel, move,
// purge, queue settings) and sqlite.cpp (named locks, migrations); each make_* function fills
// one group of Statements (statements.hpp). What follows holds for all of them.
//
// SQLite: times are stored as UTC text 'YYYY-MM-DD HH:MM:SS.SSS' (what
// strftime('%Y-%m-%d %H:%M:%f') writes, so text order is time order); writes take
// the database lock up front with BEGIN IMMEDIATE; RETURNING needs SQLite 3.35.
#pragma once

#include <string>

#include "db/statements.hpp"

#define QC_NOW "strftime('%Y-%m-%d %H:%M:%f', 'now')"
// The database's time now in whole milliseconds since 1970-01-01 UTC (rate limits).
#define QC_NOW_MS "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
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

namespace queuectl::sqlite_sql {

inline constexpr const char* kJobColumns =
    "id, queue, status, priority, " QC_TS("run_at") ", attempts, max_attempts, payload, "
    "result, last_error, locked_by, lock_token, " QC_TS("locked_at") ", " QC_TS("lock_until") ", "
    "dedupe_key, group_key, " QC_TS("created_at") ", " QC_TS("updated_at") ", "
    QC_TS("finished_at") ", dead_from, trace_parent, trace_state, progress, progress_note, "
    "checkpoint";

// A guarded write that reports what it changed (see GuardedWrite).
inline std::string returning(const std::string& write, const std::string& what) {
  return write + "\n    RETURNING " + what;
}

// The whole set, and each group of it (`cols`: the job columns, unqualified).
Statements make_statements();
EnqueueStatements make_enqueue(const std::string& cols);
ClaimStatements make_claim(const std::string& cols);
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

}  // namespace queuectl::sqlite_sql
