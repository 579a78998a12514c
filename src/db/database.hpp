// One connection: the session, its dialect, and the retry policy for contention.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <soci/soci.h>

#include "core/db_url.hpp"
#include "db/dialect.hpp"

namespace queuectl {

// Whether opening an SQLite URL may create the file. Only `migrate` (and test fixtures)
// create one: any other command on a mistyped path must not leave an empty file behind.
enum class CreateFile { no, yes };

// Whether a command writes: a command that writes refuses a read-only server (a PostgreSQL
// standby) at connect; a read-only one may run on a standby (which can lag the primary).
enum class Access { read, write };

// How named locks are held on this connection (NamedLocks::session, NamedLocks::row).
enum class NamedLockKind { session, row };

class Database {
 public:
  // Connects. Throws TemporaryError (exit 75) naming the redacted URL and the driver's
  // reason when the server cannot be reached or is busy; Error (exit 1) when waiting will
  // not help: credentials, an unknown database, a bad connection setting (sslmode=require
  // against a server without SSL), a session the server refuses to set up.
  // An SQLite file that does not exist is Error (exit 1: run `queuectl migrate`) unless
  // `create` is yes and the URL has no ?mode=; then its folder must exist (UsageError, exit
  // 2, naming it), except the embedded default's, which is created.
  // After connecting, the dialect's engine checks run (Dialect::check_engine): an engine
  // or version queuectl cannot run on safely, or a standby when `access` is write, is a
  // UsageError (exit 2).
  explicit Database(const DbUrl& url, CreateFile create = CreateFile::no,
                    Access access = Access::write);
  // Connects as above, but runs `statements` instead of the dialect's own: how `bench`
  // points queuectl's claim and ack at a scratch copy of the schema (src/bench/scratch.hpp).
  Database(const DbUrl& url, Statements statements);

  soci::session& session() { return session_; }
  const Dialect& dialect() const { return *dialect_; }
  const Statements& sql() const { return statements_ ? *statements_ : dialect_->sql(); }
  const DbUrl& url() const { return url_; }

  // A connection pooler (PgBouncer) stands between queuectl and the server, found at
  // connect (Dialect::configure_session). Its server session may change between
  // transactions, so nothing relies on session state: each write transaction sets its own
  // isolation level and lock wait, named locks are held inside a transaction, and a
  // worker polls instead of trusting LISTEN.
  bool pooled() const { return pooled_; }

  // How long a statement waits for another session's lock before it fails as contention
  // (Dialect::set_lock_wait); on a pooled connection, set again by each write transaction.
  void set_lock_wait(std::chrono::milliseconds wait);

  // The kind of named lock this connection takes: lock rows where the backend has no
  // session locks, where they do not hold cluster-wide (Galera, asked once), or when
  // QUEUECTL_NAMED_LOCKS=row forces them (to test that path on plain servers); session
  // locks otherwise. QUEUECTL_NAMED_LOCKS other than "row", "auto" or empty is a
  // UsageError.
  NamedLockKind named_lock_kind();
  // The statements of that kind.
  const NamedLockStatements& lock_sql();

  // Runs `work` in one write transaction, committing at the end. Contention
  // (deadlock, lock-wait timeout, serialization failure, SQLite BUSY) rolls back and
  // retries `work` a bounded number of times with jittered backoff, then throws
  // TemporaryError. Other database errors are translated by translate_error.
  void transaction(const std::function<void()>& work);

  // Runs the reads of `work` in one read-only transaction on one snapshot, with the same
  // retry policy: what several statements count adds up as of one instant.
  void snapshot(const std::function<void()>& work);

  // Runs a read or a single statement with the same retry policy, outside a transaction.
  void retrying(const std::function<void()>& work);

  // Turns a SOCI error into queuectl's error hierarchy (temporary, or a plain error).
  [[noreturn]] void translate_error(const soci::soci_error& e) const;

  // The database's reason for an error, for a one-line message: its first line (for a
  // PostgreSQL connect failure, libpq's line after SOCI's own), never the password.
  std::string error_text(const soci::soci_error& e) const;

  int max_attempts = 8;
  // Asked before each retry: true ends the retries at once (a worker told to stop now).
  std::function<bool()> give_up;

 private:
  // transaction() and snapshot(): `begin` opens the transaction.
  void in_transaction(const std::function<void()>& begin, const std::function<void()>& work);
  // What to check after a refused login, naming where the password came from.
  std::string access_hint() const;
  bool opened_read_only() const;  // an SQLite file opened with ?mode=ro

  DbUrl url_;
  std::unique_ptr<Dialect> dialect_;
  std::optional<Statements> statements_;  // set: used instead of dialect_->sql()
  std::optional<NamedLockKind> lock_kind_;
  bool pooled_ = false;
  std::chrono::milliseconds lock_wait_ = kLockWait;
  soci::session session_;
};

// The first line of a driver's error message, as shown to the user, without the words
// SOCI's PostgreSQL backend puts before the real reason: libpq's reason instead of the
// "Cannot establish connection to the database." line of a failed connect, and the
// server's "ERROR:  ..." without "Cannot execute query. Fatal error." before it.
std::string driver_reason(const std::string& message);

}  // namespace queuectl
