// The PostgreSQL dialect: its capabilities, sessions and errors, and its statements,
// which postgresql_sql.hpp's make_statements() assembles from the files beside this one.

#include <soci/postgresql/soci-postgresql.h>

#include <cstdint>
#include <cstring>

#include "core/engine.hpp"
#include "core/errors.hpp"
#include "db/dialect.hpp"
#include "db/dialects/pg_notices.hpp"
#include "db/dialects/postgresql_sql.hpp"
#include "db/driver.hpp"

namespace queuectl {
namespace postgresql_sql {

Statements make_statements() {
  Statements s;
  const std::string cols = job_columns("");
  s.job_columns = cols;
  s.now = "SELECT " QC_TS("now()");
  s.job_by_id = "SELECT " + cols + " FROM job_queue WHERE id = CAST(:id AS bigint)";

  s.enqueue = make_enqueue(cols);
  s.claim = make_claim();
  s.finish = make_finish(cols);
  s.listing = make_listing();
  s.top = make_top();
  s.leases = make_leases(cols);
  s.admin = make_admin();
  s.queues = make_queues();
  s.groups = make_groups();
  s.schedules = make_schedules();
  s.locks = make_locks();
  s.listen = "LISTEN queuectl_jobs";
  s.migrations = make_migrations();
  return s;
}

NamedLocks make_locks() {
  NamedLocks s;
  NamedLockStatements session;
  // Advisory locks held by a transaction kept open while the lock is held (begin): ended
  // by release or when the connection ends, so nothing to refresh. A session-level lock
  // would stay behind on a server session that PgBouncer in transaction mode hands to the
  // next client, which would then "take" it again (issue 35). A transaction's and a
  // session's advisory lock on one key exclude each other, so an application's own
  // pg_try_advisory_lock still meets queuectl's. They bind :key only: the name, whose
  // bigint key the server computes as hashtextextended(name, 0), so that an application's
  // SQL can take the same lock (SELECT pg_try_advisory_lock(hashtextextended('nightly',
  // 0))). The hash is the one hash partitioning uses, the same on every platform and release.
  session.begin = "BEGIN ISOLATION LEVEL READ COMMITTED";
  session.acquire = "SELECT CASE WHEN pg_try_advisory_xact_lock(" QC_LOCK_KEY ") THEN 1 ELSE 0 END";
  // The lock's connection holds this one advisory lock and nothing else; inside the
  // transaction, the server session is the one that took it.
  session.check =
      "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
      " AND pid = pg_backend_pid()";
  session.release = "ROLLBACK";
  session.shown_key = "SELECT CAST(" QC_LOCK_KEY " AS text)";
  s.session = session;
  // Lock rows (migration 6): taken when free or expired; a row written on the primary
  // survives a failover with it, and is what QUEUECTL_NAMED_LOCKS=row tests here.
  s.row.acquire = R"(
    INSERT INTO queuectl_locks (name, token, expires_at)
    VALUES (CAST(:key AS text), CAST(:token AS text), now() + )" QC_MS(":ttl_ms") R"()
    ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
     WHERE queuectl_locks.expires_at < now())";
  s.row.check = R"(
    SELECT COUNT(*) FROM queuectl_locks
     WHERE name = CAST(:key AS text) AND token = CAST(:token AS text))";
  s.row.refresh = R"(
    UPDATE queuectl_locks SET expires_at = now() + )" QC_MS(":ttl_ms") R"(
     WHERE name = CAST(:key AS text) AND token = CAST(:token AS text))";
  s.row.release =
      "DELETE FROM queuectl_locks WHERE name = CAST(:key AS text) AND token = CAST(:token AS text)";
  s.row.shown_key = "SELECT CAST(:key AS text)";
  return s;
}

MigrationStatements make_migrations() {
  MigrationStatements s;
  s.create_table = R"(
    CREATE TABLE IF NOT EXISTS queuectl_schema_migrations (
      version    INTEGER PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    ))";
  s.applied = "SELECT version, name, " QC_TS("applied_at") R"(
      FROM queuectl_schema_migrations ORDER BY version)";
  s.record = R"(
    INSERT INTO queuectl_schema_migrations (version, name)
    VALUES (CAST(:version AS integer), CAST(:name AS text)))";
  s.is_applied =
      "SELECT 1 FROM queuectl_schema_migrations WHERE version = CAST(:version AS integer)";
  MigrateLock lock;
  // A transaction's advisory lock on a connection of its own, held across every
  // migration's transaction (in_transaction), tried until the run's lock wait ends.
  // (:wait_s is MySQL's.)
  lock.acquire = "SELECT CASE WHEN pg_try_advisory_xact_lock(" QC_LOCK_KEY
                 ") THEN 1 ELSE 0 END WHERE CAST(:wait_s AS integer) >= 0";
  lock.release = "ROLLBACK";
  lock.in_transaction = true;
  s.lock = lock;
  s.table_columns =
      "SELECT CAST(column_name AS text), CAST(data_type AS text) FROM information_schema.columns "
      "WHERE table_schema = current_schema() AND table_name = :name ORDER BY ordinal_position";
  return s;
}

}  // namespace postgresql_sql

namespace {

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
  // - TimeZone UTC and DateStyle ISO: times are read and written as UTC text (a job's times
  //   come as PostgreSQL's own text of them: job_columns);
  // - default_transaction_isolation READ COMMITTED: SKIP LOCKED claims and the guarded
  //   UPDATEs are written for it; a server whose default is stricter would turn every race
  //   into 40001;
  // - client_min_messages warning: keeps NOTICEs (CREATE TABLE IF NOT EXISTS ... skipping)
  //   off stderr, where libpq prints them;
  // - lock_timeout: see set_lock_wait.
  //
  // The same round trip reads the server process's id. libpq was told another at connect
  // (BackendKeyData) when a pooler answered in the server's place: PgBouncer, Odyssey and
  // PgCat make up their own. Then the connection is pooled.
  //
  // Told of a pooler in transaction mode (leave_no_state), only TimeZone and DateStyle are
  // set, which PgBouncer keeps per client and sets again on each server session it hands
  // over; the rest is set by each write transaction for itself (begin_pooled), and
  // statements outside a transaction run with the server's defaults for the role.
  bool configure_session(soci::session& session, bool leave_no_state) const override {
    route_server_notices(native(session));  // not raw on stderr: see pg_notices.hpp
    if (leave_no_state) {
      std::string ignored;
      long long server_pid = 0;
      session << "SELECT concat(set_config('TimeZone', 'UTC', false),"
                 " set_config('DateStyle', 'ISO', false)), pg_backend_pid()",
          soci::into(ignored), soci::into(server_pid);
      return true;
    }
    std::string lock_wait = std::to_string(kLockWait.count()) + "ms";
    std::string ignored;
    long long server_pid = 0;
    session << "SELECT concat(set_config('TimeZone', 'UTC', false),"
               " set_config('DateStyle', 'ISO', false),"
               " set_config('default_transaction_isolation', 'read committed', false),"
               " set_config('client_min_messages', 'warning', false),"
               " set_config('lock_timeout', :lock_wait, false)), pg_backend_pid()",
        soci::use(lock_wait, "lock_wait"), soci::into(ignored), soci::into(server_pid);
    return postgresql_driver().backend_pid(native(session)) != server_pid;
  }
  // TimeZone and DateStyle need nothing here: PgBouncer keeps them per client (they are among
  // the settings the server reports), and sets them on the server session it hands over.
  void begin_pooled(soci::session& session, std::chrono::milliseconds lock_wait) const override {
    session << "BEGIN ISOLATION LEVEL READ COMMITTED";
    std::string value = std::to_string(lock_wait.count()) + "ms";
    std::string ignored;
    try {
      session << "SELECT concat(set_config('lock_timeout', :value, true),"
                 " set_config('client_min_messages', 'warning', true))",
          soci::use(value, "value"), soci::into(ignored);
    } catch (...) {
      // Not left open: the caller's rollback covers only what follows begin.
      try {
        session.rollback();
      } catch (...) {
      }
      throw;
    }
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
  Statements statements_ = postgresql_sql::make_statements();
};

}  // namespace

std::unique_ptr<Dialect> make_postgresql_dialect() {
  return std::make_unique<PostgresqlDialect>();
}

}  // namespace queuectl
