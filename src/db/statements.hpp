// Every SQL statement queuectl runs, grouped by what it is for, as one backend writes it
// (src/db/dialects/<backend>*.cpp fill these in; Dialect::sql() hands them out).
//
// Every statement binds by name; the names a statement uses are listed beside it.
// "{ids}" in a statement stands for a list of :id0, :id1, ... placeholders that the
// repository expands for the number of ids it binds.
//
// What a backend does not have is not an empty string: where backends do one thing in
// different shapes, the shapes are alternatives (ClaimStatements, a std::variant), and
// what only some backends have is a std::optional. Both agree with the dialect's
// capabilities (Dialect::update_returning(), session_locks(), ...), which
// tests/unit/test_dialect_statements.cpp checks for every backend.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>

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

// Many rows in one INSERT as VALUES rows: prefix, then one `row` per job joined by ", ",
// then suffix. Every backend has it.
struct InsertValuesRows {
  std::string prefix;  // "INSERT INTO ... VALUES" before the rows
  std::string row;     // one "(...)" row of insert_job, with {n} for the row index
  std::string suffix;  // after the rows: skip duplicates
};

struct EnqueueStatements {
  std::string insert_job;         // :queue :priority :run_at :delay_ms :max_attempts
                                  // :payload :dedupe_key :group_key; skips duplicates
  std::string last_insert_id;     // -> id of the row insert_job just wrote
  std::string job_by_dedupe_key;  // :queue :dedupe_key
  InsertValuesRows values_rows;
  // Many rows as one array per column: :queues :priorities :run_ats :delays_ms
  // :max_attempts :payloads :dedupe_keys :group_keys (array literals); skips duplicates.
  // Where the dialect has arrays (PostgreSQL), used instead of values_rows.
  std::optional<std::string> insert_arrays;
  // How a multi-row INSERT tells the ids of its rows (insert_job_rows), in the rows' order:
  // insert_arrays_ids (insert_arrays, -> each row's id, ascending in the rows' order), or
  // consecutive_ids (values_rows's ids are consecutive and last_insert_id reads the last:
  // one writer at a time, SQLite), or id_step (MySQL: -> the step between the ids of one
  // values_rows INSERT, whose last_insert_id is the first; 0 when the server may interleave
  // concurrent inserts' ids, innodb_autoinc_lock_mode 2, MySQL 8's default and a Galera
  // node's: then one insert_job per row).
  std::optional<std::string> insert_arrays_ids;
  // PostgreSQL: insert_job, insert_arrays and insert_arrays_ids without their ON CONFLICT, for
  // rows none of which has a dedupe key, which nothing could conflict with (migration 16).
  // With ON CONFLICT each row is inserted speculatively and then confirmed: a WAL record of
  // 48 bytes a row, and about an eighth of a batched job's WAL from enqueue to ack.
  struct Keyless {
    std::string insert_job, insert_arrays, insert_arrays_ids;
  };
  std::optional<Keyless> keyless;
  bool consecutive_ids = false;
  std::optional<std::string> id_step;
};

// Either way a claim takes up to :limit due ready jobs of an unpaused :queue, a grouped job
// only as its group's head (no job of its group processing, no older one ready, no older
// one failed in a strict queue), so a claim takes at most one job of a group, and a queue
// never has more than max_processing jobs processing. Which shape a dialect has agrees with
// Dialect::update_returning().
//
// A queue's rate limit, where the claim statement does not take its tokens itself (SQLite,
// MySQL and MariaDB; PostgreSQL's claim does it in the statement, with queuectl_rate_take
// of migration 14). Run in the claim's transaction:
//   read        (:queue) -> rate_count, rate_period_ms, rate_burst, rate_per_key (0/1),
//               rate_tokens (NULL: full), rate_refreshed_ms, the database's time now in
//               epoch milliseconds; no row when the queue has no rate. Locks the queue's
//               row where rows are locked (MySQL), so claimers of a limited queue take turns.
//   spend       (:tokens :now_ms :queue): the queue's bucket after the claim.
//   spend_key   (:queue :group_key :fresh :now_ms :per_ms): a group key's bucket after the
//               claim took one of its tokens (:fresh, the tokens of a new bucket: burst - 1).
struct RateSteps {
  std::string read;
  std::string spend;
  std::string spend_key;
};

// A claim in one statement, UPDATE ... RETURNING (PostgreSQL, SQLite).
struct ClaimReturning {
  // :worker :token :lease_ms :queue :limit -> the claimed jobs' columns.
  std::string claim;
  // Whether the claim runs inside a transaction: SQLite takes its write lock up front with
  // BEGIN IMMEDIATE; PostgreSQL's single statement is atomic in autocommit.
  bool in_transaction = true;
  // The claim's locking read alone, never run by the claim: (id, 1 when the job has a group
  // key, the queue's max_processing or NULL) rows (:queue :limit), FOR UPDATE SKIP LOCKED.
  // The contract tests hold a claim half way with it. Where the claim locks rows
  // (PostgreSQL); SQLite's write lock serializes claims instead.
  std::optional<std::string> locking_pick;
  // With a rate limit (SQLite): `rate.read` runs first, and the claim also binds :grant
  // (the jobs without a bucket of their own it may take: 2147483647 for no limit) and
  // :keys_free (1 when each group key has its own bucket, whose tokens the claim checks
  // itself); `spend` and `spend_key` run after it. Without (PostgreSQL): the claim statement
  // takes the tokens.
  std::optional<RateSteps> rate;
  // (PostgreSQL) `claim` without the group checks, much cheaper to plan: it claims nothing
  // when a job it picked has a group key. Tried before `claim`, until a claim of the queue
  // comes from a later statement.
  std::optional<std::string> claim_ungrouped;
  // Or (PostgreSQL): `claim` takes nothing from a queue with a rate limit, and this claim,
  // with the same binds, takes the rate limit's tokens in the statement. Tried after `claim`
  // found nothing, and first for a queue whose last claim it served.
  std::optional<std::string> claim_rated;
  // The same for a queue whose group keys have no buckets of their own (no rate_per_key),
  // in a statement much cheaper to plan, without the group checks: it takes nothing from a
  // queue with rate_per_key, nor when a job it picked has a group key. Tried between `claim`
  // and `claim_rated`.
  std::optional<std::string> claim_rated_simple;
  // Whether the statements bind :limit. (PostgreSQL) `with_limit(n)` makes the same
  // statements with LIMIT n written in, which bind no :limit, for a claim of n jobs (1 to
  // kWrittenLimitMax): prepared, they are planned once rather than at every run
  // (postgresql_jobs.cpp, make_claim; JobRepository::claim_statements picks them).
  bool binds_limit = true;
  ClaimReturning (*with_limit)(int n) = nullptr;
  static constexpr int kWrittenLimitMax = 1000;
};

// A claim in one short transaction of several statements (MySQL, MariaDB). For a claim of
// more than one job, `start` runs first (a claim of one binds ClaimStart's default): a plain
// (non-locking) read of the first due ready job of :queue in claim order -> (priority,
// run_at as "YYYY-MM-DD HH:MM:SS.ffffff" UTC, id), no row when there is none (nothing to
// claim). `pick` then starts its scan there (:start_priority, :start_priority_eq,
// :start_run_at, :start_run_at_eq, :start_id), past the index entries of jobs claimed
// before, which its locking read would otherwise visit one by one (see mysql_jobs.cpp).
// `pick` locks and returns (id, 1 when the job has a group key, the queue's max_processing
// or NULL, its rate_count or NULL, the time now as "YYYY-MM-DD HH:MM:SS.ffffff" UTC, then the job
// columns) rows
// (:queue :limit); when any is grouped, `recheck` ({ids}) returns those still their group's
// head, read afresh after the locks were taken; when the queue has a limit, `limit_lock`
// (:queue -> max_processing) locks its settings row and `limit_busy` (:queue -> count)
// counts its processing jobs, and only the free slots are kept; `mark` marks them ({ids}
// :worker :token :claimed_at :lease_ms), locked_at and updated_at being the pick's time,
// and the jobs are what the pick read with those changes, not read again.
struct ClaimPickThenMark {
  std::string start;
  std::string pick;
  std::string recheck;
  std::string limit_lock;
  std::string limit_busy;
  std::string mark;
  // `pick` returns the queue's rate_per_key after max_processing (NULL: no rate). With a
  // rate and no buckets per key, `rate_take` runs after the mark: it takes :taken tokens
  // (twin :taken_check) from :queue's bucket when the bucket holds that many, and changes
  // no row otherwise (nor when the queue has buckets per key or no rate), and the claim is
  // then made again the careful way. That way, and always with buckets per key:
  // `rate.read` locks the queue's row and reads its bucket before the mark, and the jobs
  // without a bucket of their own are cut to its whole tokens; `spend` and `spend_key` run
  // after the mark.
  std::string rate_take;
  RateSteps rate;
  // `pick` without the checks that only a job with a group key needs (its group's head, its
  // key's bucket): the same columns, for a queue none of whose picked jobs has a key. When
  // it picks one, the claim is made again with `pick`, and so are the worker's next claims
  // of the queue (their planning is most of a one-job claim's time on MariaDB).
  std::string pick_ungrouped;
  // `pick` and `pick_ungrouped` from the top, without the start's terms and binds: a claim of
  // one job's (it reads no `start`).
  std::string pick_top;
  std::string pick_ungrouped_top;
};

using ClaimStatements = std::variant<ClaimReturning, ClaimPickThenMark>;

// Writes by the holder of a lease, each guarded by :id :token.
struct FinishStatements {
  // An ack keeps the job's lock_token (every other write that ends a lease clears it): a
  // done job then shows which claim finished it, and an ack repeated with that token is
  // known for "already done by you" (exit 0), not a lost lease. The token grants nothing
  // on a done job: every guarded write requires status = processing.
  std::string ack;  // :result :id :token
  // Acks without a result, many at once ({ids} :token) -> the ids it acked.
  GuardedWrite ack_ids;
  // The same with the ids as one array literal (:ids "{1,2,3}" :token) -> the ids it acked,
  // where the dialect has arrays (PostgreSQL): one statement text whatever the count, one
  // parameter instead of one per id, up to 5,000 ids a statement. Used instead of ack_ids.
  std::optional<std::string> ack_id_array;
  // The same for one id (:id :token) -> the id, if it acked it; where ack_id_array is. A
  // prepared ack_id_array stays planned at every run (its generic plan, for ids unseen, is
  // costed dearer than a plan for one id); this one is planned once (PreparedAck).
  std::optional<std::string> ack_id_one;
  // Acks that delete the job instead of keeping it done, for a queue that keeps no done job
  // (`queue QUEUE --keep-done off`): ack_ids' guard, and the job's queue among those with
  // keep_done false, and no group key (a grouped job is marked done, as a group's end wakes
  // idle workers on PostgreSQL; a retention or `purge` deletes it later). A result is not
  // kept: the job is gone. ({ids} :token) -> the ids it deleted.
  GuardedWrite ack_delete;
  // ack_delete with the ids as one array, and for one id, where ack_id_array is.
  std::optional<std::string> ack_delete_array;  // :ids :token
  std::optional<std::string> ack_delete_one;    // :id :token
  // -> queue, each queue that keeps no done job (keep_done false): where ack_delete applies.
  std::string deleting_queues;
  // The pick binds only :id :token -> the job's columns as the write left them.
  GuardedWrite fail_retry;  // :error :base_ms :cap_ms :jitter :id :token
  GuardedWrite fail_final;  // :error :id :token
  // :lease_ms :id :token (refuses an expired lease); :progress :note :checkpoint, each
  // kept as stored when NULL
  GuardedWrite extend;
  GuardedWrite release;  // :id :token
};

// `stats` (the listings of `list` are built by db/dialects/list_sql.hpp).
struct ListingStatements {
  // Stats, grouped by queue.
  // -> queue, ready_now, scheduled, oldest_ready_age_seconds, waiting (for parents)
  std::string stats_ready;
  // -> queue, processing, expired (lock_until < now), unleased (lock_until NULL: a row set to
  // processing by other code without a lease, which no reaper ever returns)
  std::string stats_processing;
  std::string stats_finished;  // -> queue, status, count
  std::string paused_queues;   // -> queue
  // Every queue with a policy that is not the default -> queue, strict_groups (0/1),
  // dead_letter, max_processing, rate_count, rate_period_ms, rate_burst, rate_per_key (0/1),
  // retain_ms, keep_done (0/1) (stats; NULL rate_count: no rate limit; NULL retain_ms: keep).
  std::string queue_policies;
};

// queuectl top: read in one snapshot beside stats_ready and stats_processing, each
// through an index that holds no done row, or only those done in the last minute.
struct TopStatements {
  std::string failed;  // -> queue, failed jobs; queues with none left out
  // -> queue, jobs done (status 2) in the last 60 seconds (a queue with none may be left
  // out, or come with 0)
  std::string done_recently;
  // Queues with a setting that is not the default -> queue, paused (0/1), strict (0/1), the
  // concurrency limit (NULL: none), rate_count and rate_period_ms (NULL: no rate limit).
  std::string queue_settings;
  // :limit -> locked_by (NULL: none named), leases, expired leases; most leases first.
  std::string workers;
  // :limit -> id, queue, attempts, seconds since it failed, the first 400 characters of
  // last_error; newest first.
  std::string failures;
  // :limit -> id, queue, locked_by, progress, progress_note of processing jobs that
  // reported either; the latest written (updated_at) first.
  std::string progress;
};

// `leases` and the reaper.
struct LeaseStatements {
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
  std::string reaped_by_ids;  // {ids} -> id, status, queue, locked_by (the former holder)
};

// Operating on jobs by id: retry, cancel, move, purge.
struct AdminStatements {
  std::string statuses_by_ids;  // {ids} -> id, status
  // Each ({ids}) -> the ids it changed. retry_ids: failed/canceled -> ready, attempts
  // reset. cancel_ids: ready/failed -> canceled; cancel_ids_force also processing.
  GuardedWrite retry_ids;
  GuardedWrite cancel_ids;
  GuardedWrite cancel_ids_force;
  // Dead letters (dead_from set, ready or failed) back to a queue: :to, or each job's
  // dead_from when NULL; ready now, attempts from 0, dead_from cleared ({ids} :to).
  GuardedWrite move_ids;
  // Dead letters by primary key, a batch at a time: :queue (NULL all) :after :batch -> id.
  std::string dead_letters_pick;
  // Finished jobs by primary key, a batch at a time: :queue (NULL all) :status_mask
  // :older_ms (finished_at < now - older) :after :batch -> id.
  std::string finished_pick;
  // How many finished jobs the same filter matches (:queue :status_mask :older_ms) -> n:
  // the total of purge's progress line, counted only when that line is shown.
  std::string finished_count;
  // Deletes the picked ids ({ids} :queue :status_mask :older_ms), checking the filter again
  // in the same statement: a job retried and finished again since the pick is kept.
  std::string delete_ids;
};

// Queues: pausing, their settings, their names.
struct QueueStatements {
  std::string pause;   // :queue
  std::string resume;  // :queue
  // Strict groups (:queue :strict 0/1): inserts the queue's settings row when missing.
  std::string set_strict_groups;
  // Dead-letter queue (:queue :target, NULL for none) and concurrency limit (:queue :max,
  // NULL for none): each inserts the queue's settings row when missing.
  std::string set_dead_letter;
  std::string set_max_processing;
  // Retention of finished jobs (:queue :retain_ms, NULL keeps them); inserts the row too.
  std::string set_retain;
  // Whether an ack keeps its job done (:queue :keep 0/1; 0: the ack deletes it); inserts the
  // row too.
  std::string set_keep_done;
  // Rate limit (:queue :count :period_ms :burst :per_key 0/1; all NULL but per_key: none),
  // with a full bucket; inserts the row too. `clear_rate_keys` (:queue) forgets the buckets
  // of its group keys, which a new rate starts full.
  std::string set_rate;
  std::string clear_rate_keys;
  // A rate-limited queue's bucket (:queue) -> rate_count, rate_period_ms, rate_burst,
  // rate_per_key (0/1), rate_tokens (NULL: full), rate_refreshed_ms, now in epoch ms, 1
  // when the queue has a job due to start (0 otherwise); no row when it has no rate. What a
  // worker whose claim came back empty reads, to sleep until the next token.
  std::string rate_state;
  // Settings of one queue (:queue) -> paused (0/1), strict_groups (0/1), dead_letter
  // (NULL: none), max_processing (NULL: no limit), retain_ms (NULL: keep), rate_count
  // (NULL: no rate limit), rate_period_ms, rate_burst, rate_per_key (0/1), keep_done (0/1);
  // no row: defaults.
  std::string settings;
  // -> queue, dead_letter: every queue that names a dead-letter queue (to refuse a cycle).
  std::string dead_letter_targets;
  std::string names;  // -> queue, every queue with jobs or settings
  // For completions: every queue with jobs or with a setting that is not the default
  // (paused, strict, a dead-letter queue or a limit; a row left at the defaults by
  // pause + resume does not count)
  // -> queue, paused (0/1).
  std::string named;
};

// Ordered groups.
struct GroupStatements {
  // Ordered groups of one queue (:queue :blocked_only 0/1 :limit): one row per group whose
  // head is processing, waiting (ready, not yet due) or, in a strict queue, failed; or due
  // (ready and claimable). -> group_key, head id, head status, attempts, age of the head in
  // seconds (since it was enqueued), run_at (RFC 3339), jobs waiting behind the head,
  // last_error of the head. Busiest first: processing, waiting, failed; then by head id.
  std::string list;
};

// Recurring schedules (`cron`): queuectl_schedules and queuectl_schedule_fires. Times of a
// schedule are whole seconds since 1970-01-01 UTC, from the database clock.
//
// A schedule's columns, in this order (ScheduleRepository reads each as text): name, queue,
// payload, priority, max_attempts, group_key, schedule, time_zone, misfire, misfire_limit,
// misfire_after, overlap, paused (0/1), next_fire, last_fire, last_job_id, fired, missed,
// skipped, seq.
struct ScheduleStatements {
  std::string now;    // -> the database's now, whole seconds
  std::string get;    // :name -> the columns
  std::string lock;   // :name -> the columns, the row locked for this transaction
  std::string list;   // -> the columns, then the status of the last job (NULL: none)
  std::string names;  // -> name, in order
  // :name :queue :payload :priority :max_attempts :group_key :schedule :time_zone :misfire
  // :misfire_limit :misfire_after :overlap :next_fire
  std::string insert;
  std::string redefine;      // the same binds: replaces the definition, keeps state and counts
  std::string remove;        // :name
  std::string remove_fires;  // :name
  std::string set_paused;    // :name :paused (0/1) :next_fire
  // Firing. any_due (:queue NULL for all) -> a row when a schedule is due now, read without
  // a lock. due_pick (:queue :now :batch :skip) -> the columns of due unpaused schedules,
  // soonest first, past the first :skip of them (those found unable to fire), locked (SKIP
  // LOCKED where rows lock; SQLite's write lock otherwise).
  std::string any_due;
  std::string due_pick;
  std::string job_status;  // :id -> status (no row: no such job)
  // The compare-and-swap that makes a tick one job: :next_fire :last_fire :last_job_id (both
  // NULL: unchanged) :fired :missed :skipped :fires (added to the counters and seq) :name
  // :old_next; changes the row only while next_fire = :old_next and it is not paused.
  std::string advance;
  // A fire by hand (cron trigger): :name :last_job_id :last_fire (now); seq grows by one.
  std::string triggered;
  // Fires of the history, many in one INSERT; a row has :n{n} :s{n} :t{n} :j{n} :m{n}: name,
  // seq, tick (NULL: by hand), job_id, missed, bound by position in that order.
  InsertValuesRows record_fires;
  std::string prune_fires;  // :name :below (deletes seq <= :below)
  // :name :limit -> seq, tick, job_id, missed, the job's status (NULL: gone), fired_at
  // (RFC 3339); newest first.
  std::string recent_fires;
  // `top`: schedules not paused whose next tick is older than their misfire window (nothing
  // fires them) -> name, queue, seconds since that tick; most overdue first, :limit.
  std::string late;
};

// The statements of one kind of named lock (see NamedLocks).
struct NamedLockStatements {
  std::string acquire;
  std::string refresh;
  std::string check;
  std::string release;
  std::string shown_key;
  // Set: the lock is held by a transaction that this opens before acquire and keeps open
  // while the lock is held; release (no result) ends it. A connection pooler never hands a
  // connection to anyone else in the middle of a transaction, so such a lock holds behind
  // PgBouncer in transaction mode too, where a session's lock would stay on a server
  // session that other clients then use.
  std::optional<std::string> begin;
};

// Named locks, under the key Dialect::lock_key gives, which is what an application's own
// SQL uses for the same lock (README: "Sharing the table with your own SQL"), in one of
// two kinds (Database::named_lock_kind chooses):
// - session, where the dialect has session_locks(): held by the session (advisory
//   lock, GET_LOCK) until released or disconnected. acquire (:key) returns 1 when taken;
//   check (:key) returns 1 while this session still holds it: the holder runs it every
//   few seconds, which also keeps an idle connection alive. refresh is not used.
// - row: a row in queuectl_locks that expires unless refresh (:key :token :ttl_ms)
//   keeps it alive (its affected rows: 1 while ours). acquire (:key :token :ttl_ms)
//   inserts it, or takes it over once expired; check (:key :token) then returns 1 when
//   the row is ours. On every backend: the only kind SQLite has, the one Galera needs
//   (GET_LOCK holds on one node only), and what QUEUECTL_NAMED_LOCKS=row forces.
// release (:key, and :token for rows) gives it back. shown_key (:key) -> what the server
// locks, as text (PostgreSQL: the bigint; MySQL: the name, checked by the server without
// taking it; rows: the name), for `lock --print-key`.
struct NamedLocks {
  std::optional<NamedLockStatements> session;
  NamedLockStatements row;
};

// Two `migrate` runs at once take turns, where the dialect has session_locks():
// acquire (:key, :wait_s) waits for the database's named lock (at most :wait_s seconds, or
// the session's lock wait) and returns 1 once held; release (:key) gives it back. (On
// SQLite each migration's BEGIN IMMEDIATE already serializes them and is_applied, read
// inside it, skips one applied meanwhile.)
struct MigrateLock {
  std::string acquire;
  std::string release;
  // The lock is a transaction's (PostgreSQL's pg_advisory_xact_lock, for the reason in
  // NamedLockStatements::begin): taken on a connection of its own in a transaction kept
  // open for the whole run (whose lock wait bounds acquire's); release is then not run,
  // the transaction is rolled back.
  bool in_transaction = false;
};

struct MigrationStatements {
  std::string create_table;
  std::string applied;     // -> version, name, applied_at
  std::string record;      // :version :name
  std::string is_applied;  // :version -> 1 when recorded (0 rows otherwise)
  std::optional<MigrateLock> lock;
  // The columns of a table (:name) -> column name, its type as the catalog names it (lower
  // case), in table order. No rows: no such table.
  std::string table_columns;
};

struct Statements {
  // Selected columns of a job, in Job's order, each readable as text.
  std::string job_columns;
  std::string now;        // -> now as RFC 3339 text
  std::string job_by_id;  // :id

  EnqueueStatements enqueue;
  ClaimStatements claim;
  FinishStatements finish;
  ListingStatements listing;
  TopStatements top;
  LeaseStatements leases;
  AdminStatements admin;
  QueueStatements queues;
  GroupStatements groups;
  ScheduleStatements schedules;
  NamedLocks locks;
  // Wake-ups for idle workers, where the dialect has listen_notify() (PostgreSQL: LISTEN on
  // the channel the 002_notify triggers NOTIFY, with the queue name as payload). Elsewhere
  // workers only poll, and it is empty.
  std::string listen;
  MigrationStatements migrations;
};

}  // namespace queuectl
