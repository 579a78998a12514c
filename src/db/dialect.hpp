// What differs between backends, in one object per backend: whole SQL statements
// (Statements, in statements.hpp), how a claim is shaped, how a transaction starts, which
// errors are worth a retry, and how a named lock is taken. Chosen once from the URL;
// nothing else branches on the backend.
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
#include "db/statements.hpp"

namespace queuectl {

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
  // statement (ClaimReturning); without it they pick and lock the rows first
  // (GuardedWrite::pick, ClaimPickThenMark).
  virtual bool update_returning() const = 0;
  // Named locks held by the session (advisory locks, GET_LOCK): NamedLocks::session,
  // MigrationStatements::lock. Without them, named locks are lock rows.
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
  // kLockWait). Returns true when a connection pooler stands between queuectl and the
  // server (PgBouncer and its kin: the server process that answers is not the one the
  // connection was opened to). A pooler in transaction mode hands the server session to
  // other clients between transactions, so then no session state is relied on: see
  // begin_pooled, NamedLockStatements::in_transaction, and the worker's LISTEN.
  // `leave_no_state`: the user said the connection goes through a pooler in transaction
  // mode (?pooling=transaction): set nothing that would stay behind on the server session
  // for the pooler's next client.
  virtual bool configure_session(soci::session& session, bool leave_no_state) const = 0;
  // How long one statement of this session may wait for another session's lock (a row, a
  // table, SQLite's write lock) before it fails as contention, which Database retries a
  // bounded number of times: no command waits forever behind someone's open transaction.
  virtual void set_lock_wait(soci::session& session, std::chrono::milliseconds wait) const = 0;
  // Opens a write transaction (SQLite takes its write lock up front).
  virtual void begin(soci::session& session) const = 0;
  // begin() on a pooled connection: the session's settings that matter (the isolation
  // level, the lock wait) are set again for this transaction alone, since the server
  // session may not be the one configure_session set up.
  virtual void begin_pooled(soci::session& session, std::chrono::milliseconds lock_wait) const {
    (void)lock_wait;
    begin(session);
  }
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
