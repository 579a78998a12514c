// What differs between backends, in one object per backend: whole SQL statements,
// how a claim is shaped, how a transaction starts, which errors are worth a retry,
// and how a named lock is taken. Chosen once from the URL; nothing else branches on
// the backend.
//
// Every statement binds by name; the names a statement uses are listed beside it.
// "{ids}" in a statement stands for a list of :id0, :id1, ... placeholders that the
// repository expands for the number of ids it binds.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <soci/soci.h>

#include "core/db_url.hpp"

namespace queuectl {

// A write guarded by a condition (the token still holds the lease, the status allows the
// change) that reports what it changed from the write itself, never from a read before or
// after, which would see other sessions' changes as its own. Where the dialect has
// update_returning(), `write` returns the changed rows (UPDATE ... RETURNING: PostgreSQL,
// SQLite) and `pick` is not used. Otherwise (MySQL, MariaDB) `pick` locks and returns the
// ids of the rows the guard admits (SELECT ... FOR UPDATE, binding what `write` binds for
// its guard), and `write` then changes exactly those, in the same transaction: the locks
// keep every other session off them in between.
struct GuardedWrite {
  std::string write;
  std::string pick;
};

// The statements of one kind of named lock (see Statements::session_lock and row_lock).
struct NamedLockStatements {
  std::string acquire;
  std::string refresh;
  std::string check;
  std::string release;
  std::string shown_key;
};

struct Statements {
  // Selected columns of a job, in Job's order, each readable as text.
  std::string job_columns;

  std::string now;                 // -> now as RFC 3339 text
  std::string insert_job;          // :queue :priority :run_at :delay_ms :max_attempts
                                   // :payload :dedupe_key :group_key; skips duplicates
  std::string insert_values_row;   // one "(...)" row of insert_job, with {n} for the row index
  std::string insert_many_prefix;  // "INSERT INTO ... VALUES" before the rows
  std::string insert_many_suffix;  // after the rows: skip duplicates
  std::string insert_arrays;       // many rows as one array per column: :queues :priorities
                                   // :run_ats :delays_ms :max_attempts :payloads
                                   // :dedupe_keys :group_keys (array literals); skips
                                   // duplicates. Empty where the dialect has no arrays: the
                                   // VALUES rows above are used instead.
  std::string last_insert_id;      // -> id of the row insert_job just wrote
  std::string job_by_id;           // :id
  std::string job_by_dedupe_key;   // :queue :dedupe_key

  // Claim. Where the dialect has update_returning(), `claim` is one statement returning the
  // claimed jobs (:worker :token :lease_ms :queue :limit). Otherwise `claim_pick` locks and returns
  // (id, 1 when the job has a group key, the queue's max_processing or NULL, the time now
  // as "YYYY-MM-DD HH:MM:SS.ffffff" UTC, then the job columns) rows (:queue :limit) inside a
  // transaction; when any is grouped, `claim_recheck` ({ids}) returns those still their
  // group's head, read afresh after the locks were taken; when the queue has a limit,
  // `claim_limit_lock` (:queue -> max_processing) locks its settings row and
  // `claim_limit_busy` (:queue -> count) counts its processing jobs, and only the free
  // slots are kept; `claim_mark` marks them ({ids} :worker :token :claimed_at :lease_ms),
  // locked_at and updated_at being the pick's time, and the jobs are what the pick read with
  // those changes, not read again. (PostgreSQL's claim_pick, never run by its claim, returns
  // the first three columns only.) Either way a grouped job is claimed only as its group's
  // head (no job of its group processing, no older one ready, no older one failed in a
  // strict queue), so a claim takes at most one job of a group, and a queue never has
  // more than max_processing jobs processing.
  std::string claim;
  // Where not empty, run before claim_pick in its transaction (for a claim of more than
  // one job; a claim of one binds ClaimStart's default): a plain (non-locking) read
  // of the first due ready job of :queue in claim order -> (priority, run_at as
  // "YYYY-MM-DD HH:MM:SS.ffffff" UTC, id), no row when there is none (nothing to claim).
  // claim_pick then starts its scan there (:start_priority, :start_priority_eq,
  // :start_run_at, :start_run_at_eq, :start_id), past the index entries of jobs claimed
  // before, which its locking read would otherwise visit one by one (MySQL/MariaDB: see
  // mysql.cpp).
  std::string claim_start;
  std::string claim_pick;
  std::string claim_recheck;
  std::string claim_limit_lock;
  std::string claim_limit_busy;
  std::string claim_mark;

  // An ack keeps the job's lock_token (every other write that ends a lease clears it): a
  // done job then shows which claim finished it, and an ack repeated with that token is
  // known for "already done by you" (exit 0), not a lost lease. The token grants nothing
  // on a done job: every guarded write requires status = processing.
  std::string ack;  // :result :id :token
  // Acks without a result, many at once ({ids} :token) -> the ids it acked.
  GuardedWrite ack_ids;
  // The same with the ids as one array literal (:ids "{1,2,3}" :token) -> the ids it acked,
  // where the dialect has arrays (PostgreSQL): one statement text whatever the count, one
  // parameter instead of one per id, up to 5,000 ids a statement. Empty elsewhere.
  std::string ack_id_array;
  // The single-statement claim needs no explicit transaction (PostgreSQL); SQLite still
  // takes its write lock up front with BEGIN IMMEDIATE.
  bool claim_in_transaction = true;
  // Writes by the holder of a lease, each guarded by :id :token (the pick binds only those)
  // -> the job's columns as the write left them.
  GuardedWrite fail_retry;  // :error :base_ms :cap_ms :jitter :id :token
  GuardedWrite fail_final;  // :error :id :token
  GuardedWrite extend;      // :lease_ms :id :token (refuses an expired lease)
  GuardedWrite release;     // :id :token

  // Listing: :queue (NULL for all) :status_mask (bit per status) :after :limit.
  std::string list_jobs;
  // The same, newest first: id < :before (instead of :after), in descending id order.
  std::string list_jobs_newest;

  // Stats, grouped by queue.
  std::string stats_ready;  // -> queue, ready_now, scheduled, oldest_ready_age_seconds
  // -> queue, processing, expired (lock_until < now), unleased (lock_until NULL: a row set to
  // processing by other code without a lease, which no reaper ever returns)
  std::string stats_processing;
  std::string stats_finished;  // -> queue, status, count
  std::string paused_queues;   // -> queue

  // queuectl top: read in one snapshot beside stats_ready and stats_processing, each
  // through an index that holds no done row, or only those done in the last minute.
  std::string top_failed;  // -> queue, failed jobs; queues with none left out
  // -> queue, jobs done (status 2) in the last 60 seconds (a queue with none may be left
  // out, or come with 0)
  std::string top_done_recently;
  // Queues with a setting that is not the default -> queue, paused (0/1), strict (0/1), the
  // concurrency limit (NULL: none).
  std::string top_queue_settings;
  // :limit -> locked_by (NULL: none named), leases, expired leases; most leases first.
  std::string top_workers;
  // :limit -> id, queue, attempts, seconds since it failed, the first 400 characters of
  // last_error; newest first.
  std::string top_failures;

  // Leases: processing jobs, those without a lease (lock_until NULL) first, then soonest
  // expiry first. Job columns then seconds_left (NULL without a lease). :queue and :worker
  // are NULL for all; rows with a lease when :leased is 1 and lock_until < now + :within_ms
  // (0 = expired only, huge = all); rows without one when :unleased is 1; in processing
  // since (locked_at, else updated_at) at least :older_ms; :limit.
  std::string list_leases;
  // Every row list_leases matches (the same binds but :limit), per worker: -> locked_by
  // (NULL for rows without one), leases, expired, without a lease, least seconds_left.
  std::string lease_summary;

  // Reaper, one batch in one transaction: reap_pick locks up to :batch expired ids
  // (:queue NULL for all; SKIP LOCKED where the backend has it); reap_mark ({ids}
  // :base_ms :cap_ms) re-checks status = 1 AND lock_until < now and moves each to ready
  // with backoff (jittered per row, by the database), or failed when out of attempts, with
  // last_error naming the worker.
  std::string reap_pick;
  std::string reap_mark;
  // The same for processing rows without a lease (lock_until NULL, written by other code),
  // in processing since (locked_at, else updated_at) more than :older_ms: the pick
  // (:queue :older_ms :batch), and the mark ({ids} :base_ms :cap_ms :older_ms), which
  // re-checks all of that in its own WHERE.
  std::string reap_unleased_pick;
  std::string reap_unleased_mark;
  std::string statuses_by_ids;  // {ids} -> id, status
  std::string reaped_by_ids;    // {ids} -> id, status, queue, locked_by (the former holder)

  // Operating, each ({ids}) -> the ids it changed. retry_ids: failed/canceled -> ready,
  // attempts reset. cancel_ids: ready/failed -> canceled; cancel_ids_force also processing.
  GuardedWrite retry_ids;
  GuardedWrite cancel_ids;
  GuardedWrite cancel_ids_force;
  // Finished jobs by primary key, a batch at a time: :queue (NULL all) :status_mask
  // :older_ms (finished_at < now - older) :after :batch -> id.
  std::string finished_pick;
  // How many finished jobs the same filter matches (:queue :status_mask :older_ms) -> n:
  // the total of purge's progress line, counted only when that line is shown.
  std::string finished_count;
  // Deletes the picked ids ({ids} :queue :status_mask :older_ms), checking the filter again
  // in the same statement: a job retried and finished again since the pick is kept.
  std::string delete_ids;
  std::string pause_queue;   // :queue
  std::string resume_queue;  // :queue
  // Dead letters (dead_from set, ready or failed) back to a queue: :to, or each job's
  // dead_from when NULL; ready now, attempts from 0, dead_from cleared ({ids} :to).
  GuardedWrite move_ids;
  // Dead letters by primary key, a batch at a time: :queue (NULL all) :after :batch -> id.
  std::string dead_letters_pick;
  // Strict groups (:queue :strict 0/1): inserts the queue's settings row when missing.
  std::string set_strict_groups;
  // Dead-letter queue (:queue :target, NULL for none) and concurrency limit (:queue :max,
  // NULL for none): each inserts the queue's settings row when missing.
  std::string set_dead_letter;
  std::string set_max_processing;
  // Settings of one queue (:queue) -> paused (0/1), strict_groups (0/1), dead_letter
  // (NULL: none), max_processing (NULL: no limit); no row: defaults.
  std::string queue_settings;
  // Every queue with a policy that is not the default -> queue, strict_groups (0/1),
  // dead_letter, max_processing (stats).
  std::string queue_policies;
  // -> queue, dead_letter: every queue that names a dead-letter queue (to refuse a cycle).
  std::string dead_letter_targets;

  // Ordered groups of one queue (:queue :blocked_only 0/1 :limit): one row per group whose
  // head is processing, waiting (ready, not yet due) or, in a strict queue, failed; or due
  // (ready and claimable). -> group_key, head id, head status, attempts, age of the head in
  // seconds (since it was enqueued), run_at (RFC 3339), jobs waiting behind the head,
  // last_error of the head. Busiest first: processing, waiting, failed; then by head id.
  std::string list_groups;
  std::string queue_names;  // -> queue, every queue with jobs or settings
  // For completions: every queue with jobs or with a setting that is not the default
  // (paused, strict, a dead-letter queue or a limit; a row left at the defaults by
  // pause + resume does not count)
  // -> queue, paused (0/1).
  std::string named_queues;

  // Named locks, under the key Dialect::lock_key gives, which is what an application's own
  // SQL uses for the same lock (README: "Sharing the table with your own SQL"), in one of
  // two kinds (Database::named_lock_kind chooses):
  // - session_lock, where the dialect has session_locks(): held by the session (advisory
  //   lock, GET_LOCK) until released or disconnected. acquire (:key) returns 1 when taken;
  //   check (:key) returns 1 while this session still holds it: the holder runs it every
  //   few seconds, which also keeps an idle connection alive. refresh is not used.
  // - row_lock: a row in queuectl_locks that expires unless refresh (:key :token :ttl_ms)
  //   keeps it alive (its affected rows: 1 while ours). acquire (:key :token :ttl_ms)
  //   inserts it, or takes it over once expired; check (:key :token) then returns 1 when
  //   the row is ours. On every backend: the only kind SQLite has, the one Galera needs
  //   (GET_LOCK holds on one node only), and what QUEUECTL_NAMED_LOCKS=row forces.
  // release (:key, and :token for rows) gives it back. shown_key (:key) -> what the server
  // locks, as text (PostgreSQL: the bigint; MySQL: the name, checked by the server without
  // taking it; rows: the name), for `lock --print-key`.
  NamedLockStatements session_lock;
  NamedLockStatements row_lock;

  // Wake-ups for idle workers, where the dialect has listen_notify() (PostgreSQL: LISTEN on
  // the channel the 002_notify triggers NOTIFY, with the queue name as payload). Elsewhere
  // workers only poll.
  std::string listen;

  std::string create_migrations_table;
  std::string applied_migrations;  // -> version, name, applied_at
  std::string record_migration;    // :version :name
  std::string migration_applied;   // :version -> 1 when recorded (0 rows otherwise)
  // Two `migrate` runs at once take turns, where the dialect has session_locks():
  // migrate_lock (:key, :wait_s) waits for the database's named lock (at most :wait_s
  // seconds, or the session's lock wait) and returns 1 once held; migrate_unlock (:key) gives it
  // back. (On SQLite each migration's BEGIN IMMEDIATE already serializes them and
  // migration_applied, read inside it, skips one applied meanwhile.)
  std::string migrate_lock;
  std::string migrate_unlock;
  // The columns of a table (:name) -> column name, its type as the catalog names it (lower
  // case), in table order. No rows: no such table.
  std::string table_columns;
};

// The lock wait of every session: short, so that 8 tries end well within 30 s.
inline constexpr std::chrono::milliseconds kLockWait{2000};
// What a `migrate` run may spend, in all, waiting for locks (another migrate's, or the
// table locks its DDL needs behind running transactions) unless --lock-wait says otherwise:
// longer than a command's, still well within 30 s.
inline constexpr std::chrono::milliseconds kMigrationLockWait{15000};

class Dialect {
 public:
  virtual ~Dialect() = default;

  virtual Backend backend() const = 0;
  virtual const Statements& sql() const = 0;

  // Capabilities: what the backend can do, asked by name. A new backend or engine profile
  // is a dialect file that answers these, and one line in make_dialect.
  //
  // SELECT ... FOR UPDATE SKIP LOCKED: claimers pass over each other's rows. (SQLite has no
  // row locks: its write lock serializes claims.)
  virtual bool skip_locked() const = 0;
  // UPDATE ... RETURNING: a guarded write and the claim report what they changed in one
  // statement; without it they pick and lock the rows first (GuardedWrite::pick).
  virtual bool update_returning() const = 0;
  // Named locks held by the session (advisory locks, GET_LOCK): Statements::session_lock,
  // migrate_lock. Without them, named locks are lock rows.
  virtual bool session_locks() const = 0;
  // The server pushes notifications (LISTEN/NOTIFY): Statements::listen.
  virtual bool listen_notify() const { return false; }
  // Whether the session locks of this server hold across its whole cluster; asked once per
  // connection that takes a named lock. MariaDB Galera: no (GET_LOCK holds on one node, or
  // is refused), so named locks use lock rows there.
  virtual bool session_locks_cluster_wide(soci::session& session) const {
    (void)session;
    return true;
  }
  // Engine checks, run once after connecting: throws UsageError (exit 2, one line) for a
  // server queuectl cannot run on safely (an engine without the semantics it needs, a
  // version too old), and for a read-only server (a PostgreSQL standby) when `writes`.
  virtual void check_engine(soci::session& session, bool writes) const {
    (void)session;
    (void)writes;
  }

  // Run once after connecting (time zone, isolation level, pragmas, and the lock wait of
  // kLockWait).
  virtual void configure_session(soci::session& session) const = 0;
  // How long one statement of this session may wait for another session's lock (a row, a
  // table, SQLite's write lock) before it fails as contention, which Database retries a
  // bounded number of times: no command waits forever behind someone's open transaction.
  virtual void set_lock_wait(soci::session& session, std::chrono::milliseconds wait) const = 0;
  // Opens a write transaction (SQLite takes its write lock up front).
  virtual void begin(soci::session& session) const = 0;
  // Opens a read-only transaction whose statements all see one snapshot, so that counts
  // read by several statements add up (stats).
  virtual void begin_snapshot(soci::session& session) const = 0;
  // A deadlock, lock-wait timeout, serialization failure or busy database: worth a retry.
  virtual bool is_contention(const soci::soci_error& e) const = 0;
  // The connection is gone or cannot be made.
  virtual bool is_connection_failure(const soci::soci_error& e) const = 0;
  // Connecting failed for a reason that waiting will not fix: wrong user or password, no
  // such database, or a file that cannot be opened.
  virtual bool is_access_denied(const soci::soci_error& e) const = 0;
  // Connecting failed because of a setting that waiting will not fix either: SSL required
  // by the URL but not offered by the server, an untrusted certificate, a server parameter
  // in the URL the server rejects. (Any other connect failure is temporary: exit 75.)
  virtual bool is_bad_connection_setting(const soci::soci_error& e) const {
    (void)e;
    return false;
  }
  // The statement named a table that does not exist (PostgreSQL 42P01, MySQL/MariaDB 1146,
  // SQLite "no such table"). Only this means "not migrated yet": a table the role may not
  // read is a permission error, reported as such.
  virtual bool is_missing_table(const soci::soci_error& e) const = 0;
  // A unique or check constraint rejected the write.
  virtual bool is_constraint_violation(const soci::soci_error& e) const = 0;
  // Called after an insert that skips duplicates: throws Error when the backend skipped a
  // row for any other reason (MySQL's INSERT IGNORE turns every error into a warning).
  virtual void check_skipped_rows(soci::session& session) const { (void)session; }
  // Wake-ups, after sql().listen ran on `session`: the socket to wait on for them (-1:
  // none), and the payloads (queue names) that arrived since the last call. Throws
  // TemporaryError when the connection is gone.
  virtual int notification_socket(soci::session& session) const {
    (void)session;
    return -1;
  }
  virtual std::vector<std::string> take_notifications(soci::session& session) const {
    (void)session;
    return {};
  }
  // The key a named lock is taken under: the name itself on every backend, as the server's
  // own lock function takes it (PostgreSQL's statements hash it, hashtextextended(name, 0);
  // MySQL/MariaDB's GET_LOCK takes it as it is; SQLite's lock row is keyed by it).
  virtual std::string lock_key(const std::string& name) const { return name; }
  // The server refused a lock name in its lock function (MySQL 8: over 64 characters;
  // MariaDB: over 192 bytes). No application can lock such a name, so queuectl takes
  // lock_key_for_refused(name) instead.
  virtual bool refuses_lock_name(const soci::soci_error& e) const {
    (void)e;
    return false;
  }
  virtual std::string lock_key_for_refused(const std::string& name) const { return name; }

  // job_queue as migration 1 creates it: each column's name and the type table_columns
  // reports for it. `migrate` compares a job_queue it has no record of against this.
  virtual std::vector<std::pair<std::string, std::string>> first_migration_columns() const = 0;
  // Migration 1 may run again over a job_queue that a failed run left behind (MySQL
  // commits each CREATE TABLE, so a run can stop half way; elsewhere it is one transaction).
  virtual bool resumes_first_migration() const { return false; }
  // The latest time the job columns can hold, "YYYY-MM-DD HH:MM:SS" UTC (MySQL's TIMESTAMP
  // ends in 2038); empty when no duration queuectl accepts can reach it.
  virtual std::string latest_time() const { return {}; }
};

// The dialect for a backend.
std::unique_ptr<Dialect> make_dialect(Backend backend);

// FNV-1a, 64 bits: stable across builds and hosts, for lock keys.
std::uint64_t stable_hash64(const std::string& text);

std::unique_ptr<Dialect> make_sqlite_dialect();
std::unique_ptr<Dialect> make_postgresql_dialect();
std::unique_ptr<Dialect> make_mysql_dialect();

}  // namespace queuectl
