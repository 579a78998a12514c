#include "db/database.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/backoff.hpp"
#include "core/errors.hpp"
#include "db/driver.hpp"

namespace queuectl {
namespace {

constexpr const char* kReadOnlyHint =
    "the URL opens the file read-only with ?mode=ro, and this command writes: drop ?mode=ro";

// Sleeps before retry `attempt` (1-based): 10ms doubling to 500ms, with full jitter.
void contention_pause(int attempt) {
  double ceiling_ms = std::min(500.0, 10.0 * (1 << std::min(attempt, 6)));
  auto ms = static_cast<long>(ceiling_ms * (0.5 + 0.5 * random_unit()));
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  std::string line = s.substr(0, nl);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

// SOCI's PostgreSQL backend puts this line before libpq's reason for a failed connect.
constexpr const char* kSociConnectPrefix = "Cannot establish connection to the database.";

// Before SQLite opens `url`'s file: SOCI 4.0's sqlite3 backend always opens with
// SQLITE_OPEN_CREATE (unless read-only), so a file that must not be created is checked for
// here. (Removed between this check and the open, it would be created empty: a race with
// someone deleting the database, not a typo.)
void check_sqlite_file(const DbUrl& url, CreateFile create) {
  if (url.database == ":memory:") return;
  namespace fs = std::filesystem;
  const fs::path file(url.database);
  std::error_code ec;
  if (fs::is_directory(file, ec) || (!url.database.empty() && url.database.back() == '/'))
    throw UsageError("the SQLite database " + url.redacted() +
                     " names a folder: give the path of a file in it, e.g. sqlite:" +
                     (fs::path(url.database) / "queue.db").lexically_normal().string());
  // (A path that cannot even be looked at, for want of permission, is SQLite's to report.)
  if (fs::exists(file, ec) || ec) return;
  if (create == CreateFile::no || url.sqlite_no_create())
    throw Error("no SQLite database at '" + url.database + "'" +
                (create == CreateFile::yes ? " (?mode=" + url.params.at("mode") +
                                                 " never creates it; drop it to create one)"
                                           : ": run `queuectl migrate` to create it") +
                ", or check the path");
  const fs::path parent = file.parent_path();
  if (parent.empty() || fs::is_directory(parent, ec)) return;
  if (url.embedded_default) {
    fs::create_directories(parent, ec);
    if (ec) throw Error("cannot create the folder '" + parent.string() + "': " + ec.message());
    return;
  }
  // As sqlite3 itself: a typo in the path must not become a tree of new folders.
  throw UsageError("the folder '" + parent.string() + "' of the SQLite database " + url.redacted() +
                   " does not exist; create it first (migrate creates only the file)");
}

}  // namespace

Database::Database(const DbUrl& url, CreateFile create, Access access)
    : url_(url), dialect_(make_dialect(url.backend)) {
  if (url.backend == Backend::sqlite) check_sqlite_file(url, create);
  // Loads the backend's driver first: one that cannot load is not a connection failure.
  const soci::backend_factory& factory = backend_factory(url.backend);
  bool opened = false;
  try {
    session_.open(factory, url.soci_connect_string());
    opened = true;
    dialect_->check_engine(session_, access == Access::write);
    const Pooling pooling = url.pooling();
    const bool detected = dialect_->configure_session(session_, pooling == Pooling::transaction);
    pooled_ = pooling == Pooling::automatic ? detected : pooling == Pooling::transaction;
  } catch (const UsageError& e) {
    throw UsageError("cannot use " + url.redacted() + ": " + e.what());
  } catch (const soci::soci_error& e) {
    const std::string what = "cannot connect to " + url.redacted() + ": " + error_text(e);
    if (dialect_->is_contention(e))
      throw TemporaryError(what + " (the database is busy; try again later)");
    // Waiting will not fix these: exit 1, so that cron does not retry them as temporary.
    if (dialect_->is_bad_connection_setting(e))
      throw Error(what +
                  " (retrying will not help: check the URL's parameters against the "
                  "server's settings)");
    if (dialect_->is_access_denied(e)) throw Error(what + " (" + access_hint() + ")");
    // The server answered, then refused to set up the session (e.g. a statement_timeout
    // from ?options= too short for the SET statements).
    if (opened && !dialect_->is_connection_failure(e)) throw Error(what);
    throw TemporaryError(what + " (is the server up and reachable? check the host and port)");
  }
}

Database::Database(const DbUrl& url, Statements statements) : Database(url) {
  statements_ = std::move(statements);
}

NamedLockKind Database::named_lock_kind() {
  if (lock_kind_) return *lock_kind_;
  const char* forced = std::getenv("QUEUECTL_NAMED_LOCKS");
  const std::string force = forced ? forced : "";
  if (!force.empty() && force != "row" && force != "auto")
    throw UsageError("QUEUECTL_NAMED_LOCKS must be row or auto, not '" + force + "'");
  NamedLockKind kind = NamedLockKind::row;
  // Told of a transaction pooler: lock rows, which hold no server connection for as long
  // as the lock is held (a small pool would lose one per running `lock`).
  const bool pooler_said = url_.pooling() == Pooling::transaction;
  if (dialect_->session_locks() && force != "row" && !pooler_said) {
    bool cluster_wide = true;
    retrying([&] { cluster_wide = dialect_->session_locks_cluster_wide(session_); });
    if (cluster_wide) kind = NamedLockKind::session;
  }
  lock_kind_ = kind;
  return kind;
}

const NamedLockStatements& Database::lock_sql() {
  if (named_lock_kind() == NamedLockKind::row) return sql().locks.row;
  // The session kind is chosen only where the dialect has session_locks(), and then its
  // statements have them (tests/unit/test_dialect_statements.cpp).
  if (!sql().locks.session) throw std::logic_error("no session lock statements");
  return *sql().locks.session;
}

// The driver says "attempt to write a readonly database"; with ?mode=ro the cause is the URL.
bool Database::opened_read_only() const {
  const auto mode = url_.params.find("mode");
  return url_.backend == Backend::sqlite && mode != url_.params.end() && mode->second == "ro";
}

std::string Database::access_hint() const {
  if (url_.backend == Backend::sqlite) {
    if (opened_read_only()) return kReadOnlyHint;
    return "check the file's path and permissions";
  }
  if (url_.password_origin.empty())
    return "check the user and the database name; no password was given: put it in the URL, "
           "QUEUECTL_DB_PASSWORD or --db-password-file";
  return "check the user, the password from " + url_.password_origin + ", and the database name";
}

std::string driver_reason(const std::string& message) {
  std::string text = message;
  if (text.rfind(kSociConnectPrefix, 0) == 0) {
    std::string reason = text.substr(std::string(kSociConnectPrefix).size());
    reason.erase(0, reason.find_first_not_of(" \t\r\n"));
    if (!reason.empty()) text = reason;
  }
  text = first_line(text);
  // SOCI also prefixes a failed PostgreSQL statement ("Cannot execute query. Fatal error.
  // ERROR:  ..."): the server's own words start at its severity.
  if (text.rfind("Cannot ", 0) == 0) {
    for (const char* severity : {"ERROR:  ", "FATAL:  "}) {
      if (auto at = text.find(severity); at != std::string::npos) return text.substr(at);
    }
    // A lost connection has no severity: libpq's words follow SOCI's sentences ("Cannot
    // execute query. Fatal error. Connection failed. server closed the connection
    // unexpectedly"). Only libpq's words are kept, when there are any.
    std::string rest = text;
    for (bool stripped = true; stripped;) {
      stripped = false;
      for (const char* soci_words :
           {"Cannot execute query.", "Cannot prepare statement.", "Cannot commit transaction.",
            "Cannot rollback transaction.", "Cannot begin transaction.", "Fatal error.",
            "Connection failed."}) {
        const std::string w = soci_words;
        if (rest.rfind(w, 0) == 0) {
          rest.erase(0, w.size());
          rest.erase(0, rest.find_first_not_of(' '));
          stripped = true;
        }
      }
    }
    if (!rest.empty()) return rest;
    // Nothing from libpq (a statement on a connection already known to be lost): say so
    // in our words, not SOCI's.
    if (text.find("Connection failed.") != std::string::npos) return "the connection is lost";
  }
  return text;
}

// libpq's reason for each host of a multi-host URL that it tried and passed over, on one
// line ("...port 5432 failed: Connection refused; ...port 5433 failed: session is
// read-only"); empty when it names fewer than two.
static std::string each_host_reason(const std::string& message) {
  std::string hosts;
  int count = 0;
  for (std::size_t at = 0; at < message.size();) {
    const std::size_t nl = std::min(message.find('\n', at), message.size());
    const std::string line = first_line(message.substr(at, nl - at));
    if (line.rfind("connection to server", 0) == 0) {
      hosts += (count++ ? "; " : "") + line;
    }
    at = nl + 1;
  }
  return count > 1 ? hosts : std::string();
}

std::string Database::error_text(const soci::soci_error& e) const {
  std::string text = driver_reason(e.get_error_message());
  if (url_.hosts.size() > 1) {
    if (std::string each = each_host_reason(e.get_error_message()); !each.empty()) text = each;
  }
  // No driver is known to echo a password, but never risk it. (A password equal to the
  // user name is shown anyway, as the user, in every redacted URL.)
  if (url_.password && !url_.password->empty() && *url_.password != url_.user) {
    for (auto at = text.find(*url_.password); at != std::string::npos;
         at = text.find(*url_.password, at + 3))
      text.replace(at, url_.password->size(), "***");
  }
  return text;
}

void Database::translate_error(const soci::soci_error& e) const {
  std::string msg = error_text(e);
  if (dialect_->is_connection_failure(e))
    throw ConnectionLost("lost the connection to " + url_.redacted() + ": " + msg);
  if (dialect_->is_contention(e))
    throw TemporaryError("database contention on " + url_.redacted() + " persisted after " +
                         std::to_string(max_attempts) + " tries: " + msg +
                         " (another session holds what this needs: try again later)");
  if (opened_read_only() && msg.find("readonly database") != std::string::npos)
    msg += std::string(" (") + kReadOnlyHint + ")";
  throw Error("database error on " + url_.redacted() + ": " + msg);
}

void Database::transaction(const std::function<void()>& work) {
  in_transaction(
      [this] {
        if (pooled_)
          dialect_->begin_pooled(session_, lock_wait_);
        else
          dialect_->begin(session_);
      },
      work);
}

void Database::set_lock_wait(std::chrono::milliseconds wait) {
  lock_wait_ = wait;
  // A session setting on a pooled connection would stay on a server session that other
  // clients get next; there each write transaction sets it for itself (begin_pooled).
  if (!pooled_) dialect_->set_lock_wait(session_, wait);
}

void Database::snapshot(const std::function<void()>& work) {
  in_transaction([this] { dialect_->begin_snapshot(session_); }, work);
}

void Database::in_transaction(const std::function<void()>& begin,
                              const std::function<void()>& work) {
  for (int attempt = 1;; ++attempt) {
    try {
      begin();
      try {
        work();
        session_.commit();
        return;
      } catch (...) {
        try {
          session_.rollback();
        } catch (...) {
        }
        throw;
      }
    } catch (const soci::soci_error& e) {
      if (attempt < max_attempts && dialect_->is_contention(e) && !(give_up && give_up())) {
        contention_pause(attempt);
        continue;
      }
      translate_error(e);
    }
  }
}

void Database::retrying(const std::function<void()>& work) {
  for (int attempt = 1;; ++attempt) {
    try {
      work();
      return;
    } catch (const soci::soci_error& e) {
      if (attempt < max_attempts && dialect_->is_contention(e) && !(give_up && give_up())) {
        contention_pause(attempt);
        continue;
      }
      translate_error(e);
    }
  }
}

std::unique_ptr<Dialect> make_dialect(Backend backend) {
  switch (backend) {
    case Backend::postgresql:
      return make_postgresql_dialect();
    case Backend::mysql:
      return make_mysql_dialect();
    case Backend::sqlite:
      break;
  }
  return make_sqlite_dialect();
}

}  // namespace queuectl

namespace queuectl {

std::uint64_t stable_hash64(const std::string& text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace queuectl
