// The SQLite dialect: its capabilities, sessions and errors, and its statements,
// which sqlite_sql.hpp's make_statements() assembles from the files beside this one.

#include <soci/sqlite3/soci-sqlite3.h>

#include <chrono>
#include <thread>

#include "db/dialect.hpp"
#include "db/dialects/sqlite_sql.hpp"
#include "db/driver.hpp"

namespace queuectl {
namespace sqlite_sql {

Statements make_statements() {
  Statements s;
  const std::string cols = kJobColumns;
  s.job_columns = cols;
  s.now = "SELECT " QC_TS(QC_NOW);
  s.job_by_id = "SELECT " + cols + " FROM job_queue WHERE id = :id";

  s.enqueue = make_enqueue(cols);
  s.claim = make_claim(cols);
  s.finish = make_finish(cols);
  s.listing = make_listing();
  s.top = make_top();
  s.leases = make_leases(cols);
  s.admin = make_admin();
  s.queues = make_queues();
  s.groups = make_groups();
  s.schedules = make_schedules();
  s.locks = make_locks();
  s.migrations = make_migrations();
  return s;
}

NamedLocks make_locks() {
  NamedLocks s;
  s.row.acquire = R"(
    INSERT INTO queuectl_locks (name, token, expires_at)
    VALUES (:key, :token, )" QC_NOW_PLUS(":ttl_ms") R"()
    ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
     WHERE queuectl_locks.expires_at < )" QC_NOW;
  s.row.check = "SELECT COUNT(*) FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row.refresh = R"(
    UPDATE queuectl_locks SET expires_at = )" QC_NOW_PLUS(":ttl_ms") R"(
     WHERE name = :key AND token = :token)";
  s.row.release = "DELETE FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row.shown_key = "SELECT CAST(:key AS TEXT)";
  return s;
}

MigrationStatements make_migrations() {
  MigrationStatements s;
  s.create_table = R"(
    CREATE TABLE IF NOT EXISTS queuectl_schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TEXT NOT NULL DEFAULT ()" QC_NOW R"()
    ))";
  s.applied = "SELECT version, name, " QC_TS(
      "applied_at") " FROM queuectl_schema_migrations ORDER BY version";
  s.record = "INSERT INTO queuectl_schema_migrations (version, name) VALUES (:version, :name)";
  s.is_applied = "SELECT 1 FROM queuectl_schema_migrations WHERE version = :version";
  s.table_columns = "SELECT name, lower(type) FROM pragma_table_info(:name) ORDER BY cid";
  return s;
}

}  // namespace sqlite_sql

namespace {

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
  bool configure_session(soci::session& session, bool leave_no_state) const override {
    (void)leave_no_state;  // ?pooling= is PostgreSQL's only
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
    return false;
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
  Statements statements_ = sqlite_sql::make_statements();
};

}  // namespace

std::unique_ptr<Dialect> make_sqlite_dialect() {
  return std::make_unique<SqliteDialect>();
}

}  // namespace queuectl
