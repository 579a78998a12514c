// The MySQL/MariaDB dialect: its capabilities, sessions and errors, and its statements,
// which mysql_sql.hpp's make_statements() assembles from the files beside this one.

#include <soci/mysql/soci-mysql.h>

#include <fcntl.h>

#include <algorithm>
#include <cstdio>

#include "core/engine.hpp"
#include "core/errors.hpp"
#include "db/dialect.hpp"
#include "db/dialects/mysql_sql.hpp"
#include "db/driver.hpp"

namespace queuectl {
namespace mysql_sql {

Statements make_statements() {
  Statements s;
  const std::string cols = kJobColumns;
  s.job_columns = cols;
  s.now = "SELECT " QC_TS(QC_NOW);
  s.job_by_id = "SELECT " + cols + " FROM job_queue WHERE id = :id";

  s.enqueue = make_enqueue(cols);
  s.claim = make_claim(cols);
  s.finish = make_finish();
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
  NamedLockStatements session;
  // GET_LOCK is held by the session until RELEASE_LOCK or disconnect: nothing to refresh,
  // only a check that the session still holds it (which also keeps wait_timeout away).
  // All use :key only; acquire returns 1 when taken, 0 when held elsewhere.
  session.acquire = "SELECT GET_LOCK(:key, 0)";
  session.check = "SELECT CASE WHEN IS_USED_LOCK(:key) = CONNECTION_ID() THEN 1 ELSE 0 END";
  session.release = "SELECT RELEASE_LOCK(:key)";
  // IS_FREE_LOCK checks the name as GET_LOCK does (an error when the server refuses it)
  // without taking it.
  session.shown_key =
      "SELECT CASE WHEN IS_FREE_LOCK(k) IS NULL THEN NULL ELSE k END FROM (SELECT :key AS k) t";
  s.session = session;
  // Lock rows (migration 6), for Galera, where GET_LOCK holds on one node only: the row is
  // replicated and certified like any write, so two nodes cannot both take it (the loser's
  // COMMIT fails with 1213, retried, and then finds the row taken). The upsert takes over
  // an expired row only; each assignment reads the row's old expires_at (the token's is
  // made first and leaves expires_at alone).
  s.row.acquire = R"(
    INSERT INTO queuectl_locks (name, token, expires_at)
    VALUES (:key, :token, )" QC_NOW_PLUS(":ttl_ms") R"()
    ON DUPLICATE KEY UPDATE
       token = IF(expires_at < NOW(6), VALUES(token), token),
       expires_at = IF(expires_at < NOW(6), VALUES(expires_at), expires_at))";
  s.row.check = "SELECT COUNT(*) FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row.refresh = R"(
    UPDATE queuectl_locks SET expires_at = )" QC_NOW_PLUS(":ttl_ms") R"(
     WHERE name = :key AND token = :token)";
  s.row.release = "DELETE FROM queuectl_locks WHERE name = :key AND token = :token";
  s.row.shown_key = "SELECT :key";
  return s;
}

MigrationStatements make_migrations() {
  MigrationStatements s;
  s.create_table = R"(
    CREATE TABLE IF NOT EXISTS queuectl_schema_migrations (
      version    INT          NOT NULL,
      name       VARCHAR(255) NOT NULL,
      applied_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
      PRIMARY KEY (version)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin)";
  s.applied = "SELECT version, name, " QC_TS(
      "applied_at") " FROM queuectl_schema_migrations ORDER BY version";
  s.record = "INSERT INTO queuectl_schema_migrations (version, name) VALUES (:version, :name)";
  s.is_applied = "SELECT 1 FROM queuectl_schema_migrations WHERE version = :version";
  MigrateLock lock;
  // GET_LOCK is held by the session, across the implicit commits of DDL. It waits up to
  // :wait_s seconds (migrate --lock-wait) and returns 0 when that ran out, NULL on an error.
  lock.acquire = "SELECT COALESCE(GET_LOCK(:key, :wait_s), 0)";
  lock.release = "SELECT COALESCE(RELEASE_LOCK(:key), 0)";
  s.lock = lock;
  // MySQL 8 names JSON's type json, MariaDB longtext (its JSON is an alias): one name.
  s.table_columns =
      "SELECT column_name, CASE LOWER(data_type) WHEN 'json' THEN 'longtext' "
      "ELSE LOWER(data_type) END FROM information_schema.columns "
      "WHERE table_schema = DATABASE() AND table_name = :name ORDER BY ordinal_position";
  return s;
}

}  // namespace mysql_sql

namespace {

// Error numbers (server: mysqld_error.h / MariaDB's; client: errmsg.h).
constexpr unsigned kLockWaitTimeout = 1205;  // ER_LOCK_WAIT_TIMEOUT
constexpr unsigned kDeadlock = 1213;         // ER_LOCK_DEADLOCK
// Galera: a write set that could not be replicated (e.g. "Error while appending streaming
// replication fragment (provider status: Not connected to Primary Component)", seen on a
// node leaving or rejoining the cluster): the transaction is gone, as after a deadlock.
constexpr unsigned kErrorDuringCommit = 1180;  // ER_ERROR_DURING_COMMIT
// Galera: "WSREP has not yet prepared node for application use": a node outside the
// Primary Component, not ready for queries; another node (or later) will be.
constexpr unsigned kNodeNotReady = 1047;       // ER_UNKNOWN_COM_ERROR
constexpr unsigned kServerShutdown = 1053;     // ER_SERVER_SHUTDOWN
constexpr unsigned kConnectionKilled = 1927;   // ER_CONNECTION_KILLED (MariaDB)
constexpr unsigned kClientTimeout = 4031;      // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+)
constexpr unsigned kConnectionError = 2002;    // CR_CONNECTION_ERROR (socket)
constexpr unsigned kConnHostError = 2003;      // CR_CONN_HOST_ERROR (TCP)
constexpr unsigned kServerGone = 2006;         // CR_SERVER_GONE_ERROR
constexpr unsigned kServerLost = 2013;         // CR_SERVER_LOST
constexpr unsigned kDuplicateKey = 1062;       // ER_DUP_ENTRY
constexpr unsigned kNoSuchTable = 1146;        // ER_NO_SUCH_TABLE
constexpr unsigned kForeignKey = 1452;         // ER_NO_REFERENCED_ROW_2
constexpr unsigned kCheckMysql = 3819;         // ER_CHECK_CONSTRAINT_VIOLATED (MySQL 8.0.16+)
constexpr unsigned kCheckMariadb = 4025;       // ER_CONSTRAINT_FAILED (MariaDB)
constexpr unsigned kInvalidJsonMysql = 3140;   // ER_INVALID_JSON_TEXT: MariaDB's is a CHECK
constexpr unsigned kTooLongIdent = 1059;       // ER_TOO_LONG_IDENT: MariaDB's lock names
constexpr unsigned kUserLockWrongName = 3057;  // ER_USER_LOCK_WRONG_NAME: MySQL 8's

const soci::mysql_soci_error* mysql_error(const soci::soci_error& e) {
  return mysql_driver().as_error(e);
}

class MysqlDialect final : public Dialect {
 public:
  Backend backend() const override { return Backend::mysql; }
  const Statements& sql() const override { return statements_; }
  bool skip_locked() const override { return true; }
  bool update_returning() const override { return false; }
  bool session_locks() const override { return true; }
  // Galera (wsrep_on): GET_LOCK is local to a node (or refused), so named locks are rows.
  bool session_locks_cluster_wide(soci::session& session) const override {
    std::string name, value;
    soci::statement st =
        (session.prepare << "SHOW VARIABLES LIKE 'wsrep_on'", soci::into(name), soci::into(value));
    const bool got = st.execute(true);
    return !(got && (value == "ON" || value == "1"));
  }
  // From the version the server announced in its handshake: no round trip.
  void check_engine(soci::session& session, bool writes) const override {
    (void)writes;
    MYSQL* conn = static_cast<soci::mysql_session_backend*>(session.get_backend())->conn_;
    const char* version = mysql_driver().get_server_info(conn);
    const std::string why = mysql_engine_refusal(version ? version : "");
    if (!why.empty()) throw UsageError(why);
  }

  // (ProxySQL, MySQL's common pooler, notices session state and keeps such a connection to
  // one server session by itself: nothing to detect here.)
  bool configure_session(soci::session& session, bool leave_no_state) const override {
    (void)leave_no_state;  // ?pooling= is PostgreSQL's only
    // The client library leaves its socket inheritable: a command run by `lock` or `work`
    // would keep queuectl's connection (and a named lock on it) open after queuectl exits.
    MYSQL* conn = static_cast<soci::mysql_session_backend*>(session.get_backend())->conn_;
    const int fd = static_cast<int>(mysql_driver().get_socket(conn));
    if (fd >= 0) fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
    // One round trip for the settings every command needs (issue 13), then the isolation
    // level, whose SET form cannot share a statement:
    // - utf8mb4 whatever the client library's default; UTC for NOW(6) and TIMESTAMP;
    // - a known sql_mode, whatever the server's (strict, and no ANSI_QUOTES,
    //   PIPES_AS_CONCAT or NO_BACKSLASH_ESCAPES to change how this SQL reads);
    // - every skipped row of a 500-row INSERT IGNORE must stay visible to SHOW WARNINGS;
    // - the lock waits of set_lock_wait.
    long long wait = lock_wait_seconds(kLockWait), again = wait;
    session << "SET NAMES utf8mb4, time_zone = '+00:00',"
               " sql_mode = 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,"
               "NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',"
               " SESSION max_error_count = 65535,"
               " SESSION innodb_lock_wait_timeout = :s, SESSION lock_wait_timeout = :t",
        soci::use(wait, "s"), soci::use(again, "t");
    // The claim's locking read must lock only the rows it returns (no gap locks), and
    // each statement must see rows committed since the transaction began.
    session << "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED";
    return false;
  }
  // Row locks (innodb_lock_wait_timeout, 50 s by default) and metadata locks
  // (lock_wait_timeout, a year by default, met behind an ALTER TABLE) both end in error 1205,
  // which is contention. Whole seconds, at least 1.
  static long long lock_wait_seconds(std::chrono::milliseconds wait) {
    return std::max<long long>(1, (wait.count() + 999) / 1000);
  }
  void set_lock_wait(soci::session& session, std::chrono::milliseconds wait) const override {
    long long seconds = lock_wait_seconds(wait);
    long long again = seconds;
    session << "SET SESSION innodb_lock_wait_timeout = :s, SESSION lock_wait_timeout = :t",
        soci::use(seconds, "s"), soci::use(again, "t");
  }

  // INSERT IGNORE skips duplicates (warning 1062) but also rows that break a CHECK or
  // would be truncated: only duplicates may pass.
  void check_skipped_rows(soci::session& session) const override {
    std::string level, message;
    int code = 0;
    soci::statement st = (session.prepare << "SHOW WARNINGS", soci::into(level), soci::into(code),
                          soci::into(message));
    for (bool got = st.execute(true); got; got = st.fetch()) {
      if (code != 1062)
        throw Error("the database rejected a job: " + message + " (MySQL warning " +
                    std::to_string(code) + ")");
    }
  }
  void begin(soci::session& session) const override { session.begin(); }
  // The session reads at READ COMMITTED (see configure_session); a consistent snapshot
  // needs REPEATABLE READ, set for the next transaction only.
  void begin_snapshot(soci::session& session) const override {
    session << "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ";
    session << "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY";
  }

  bool is_contention(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    return err && (err->err_num_ == kDeadlock || err->err_num_ == kLockWaitTimeout ||
                   err->err_num_ == kErrorDuringCommit);
  }
  bool is_connection_failure(const soci::soci_error& e) const override {
    if (e.get_error_category() == soci::soci_error::connection_error) return true;
    auto* err = mysql_error(e);
    if (!err) return false;
    switch (err->err_num_) {
      case kConnectionError:
      case kConnHostError:
      case kServerGone:
      case kServerLost:
      case kServerShutdown:
      case kConnectionKilled:
      case kClientTimeout:
      case kNodeNotReady:
        return true;
      default:
        return false;
    }
  }
  bool is_access_denied(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    if (err) switch (err->err_num_) {
        case 1044:  // ER_DBACCESS_DENIED_ERROR
        case 1045:  // ER_ACCESS_DENIED_ERROR: bad user or password
        case 1049:  // ER_BAD_DB_ERROR: unknown database
        case 1130:  // ER_HOST_NOT_PRIVILEGED: the user may not connect from this host
        case 1698:  // ER_ACCESS_DENIED_NO_PASSWORD_ERROR: no plugin for this user
        case 3118:  // ER_ACCOUNT_HAS_BEEN_LOCKED (MySQL)
        case 4151:  // ER_ACCOUNT_HAS_BEEN_LOCKED (MariaDB)
          return true;
        default:
          return false;
      }
    const std::string msg = e.get_error_message();
    return msg.find("Access denied") != std::string::npos ||
           msg.find("Unknown database") != std::string::npos;
  }
  bool is_bad_connection_setting(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    if (!err) return false;
    switch (err->err_num_) {
      case 1129:  // ER_HOST_IS_BLOCKED: needs FLUSH HOSTS
      case 1251:  // ER_NOT_SUPPORTED_AUTH_MODE
      case 2019:  // CR_CANT_READ_CHARSET: ?charset= names one the client library lacks
      case 2026:  // CR_SSL_CONNECTION_ERROR: SSL asked for and not possible
      case 2059:  // CR_AUTH_PLUGIN_CANNOT_LOAD
        return true;
      default:
        return false;
    }
  }
  bool is_missing_table(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    return err && err->err_num_ == kNoSuchTable;
  }
  std::vector<std::pair<std::string, std::string>> first_migration_columns() const override {
    return {{"id", "bigint"},           {"queue", "varchar"},       {"status", "tinyint"},
            {"priority", "int"},        {"run_at", "datetime"},     {"attempts", "int"},
            {"max_attempts", "int"},    {"payload", "longtext"},    {"result", "longtext"},
            {"last_error", "text"},     {"locked_by", "varchar"},   {"lock_token", "char"},
            {"locked_at", "datetime"},  {"lock_until", "datetime"}, {"dedupe_key", "varbinary"},
            {"group_key", "varbinary"}, {"created_at", "datetime"}, {"updated_at", "datetime"},
            {"finished_at", "datetime"}};
  }
  bool resumes_first_migration() const override { return true; }
  // TIMESTAMP(6) (migration 4) ends here on MariaDB before 11.5 and on MySQL 8.
  std::string latest_time() const override { return "2038-01-19 03:14:07"; }
  bool is_constraint_violation(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    if (!err) return false;
    switch (err->err_num_) {
      case kDuplicateKey:
      case kForeignKey:
      case kCheckMysql:
      case kCheckMariadb:
      case kInvalidJsonMysql:
        return true;
      default:
        return false;
    }
  }

  // GET_LOCK takes every name the server accepts as it is (lock_key): MariaDB up to 192
  // bytes (checked on 10.11), MySQL 8 up to 64 characters. A name it refuses (MariaDB: 1059
  // ER_TOO_LONG_IDENT; MySQL: 3057 ER_USER_LOCK_WRONG_NAME) can be locked by no
  // application, so queuectl locks its leading ASCII characters (at most 40), ':' and 16
  // hex digits of FNV-1a 64 of the whole name instead: at most 57 ASCII characters, which
  // every server takes (`queuectl lock --print-key NAME` shows it).
  bool refuses_lock_name(const soci::soci_error& e) const override {
    auto* err = mysql_error(e);
    return err && (err->err_num_ == kTooLongIdent || err->err_num_ == kUserLockWrongName);
  }
  std::string lock_key_for_refused(const std::string& name) const override {
    std::size_t cut = 0;
    while (cut < kKeptPrefix && cut < name.size() && static_cast<unsigned char>(name[cut]) < 0x80)
      ++cut;
    char hash[17];
    std::snprintf(hash, sizeof hash, "%016llx",
                  static_cast<unsigned long long>(stable_hash64(name)));
    return name.substr(0, cut) + ":" + hash;
  }

 private:
  static constexpr std::size_t kKeptPrefix = 40;
  Statements statements_ = mysql_sql::make_statements();
};

}  // namespace

std::unique_ptr<Dialect> make_mysql_dialect() {
  return std::make_unique<MysqlDialect>();
}

}  // namespace queuectl
