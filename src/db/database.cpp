#include "db/database.hpp"

#include <chrono>
#include <filesystem>
#include <thread>

#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include "core/backoff.hpp"
#include "core/errors.hpp"

namespace queuectl {
namespace {

const soci::backend_factory& factory_for(Backend b) {
  switch (b) {
    case Backend::postgresql:
      return soci::postgresql;
    case Backend::mysql:
      return soci::mysql;
    case Backend::sqlite:
      break;
  }
  return soci::sqlite3;
}

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

}  // namespace

Database::Database(const DbUrl& url) : url_(url), dialect_(make_dialect(url.backend)) {
  if (url.backend == Backend::sqlite && url.database != ":memory:") {
    std::filesystem::path parent = std::filesystem::path(url.database).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) throw Error("cannot create the folder for " + url.redacted() + ": " + ec.message());
  }
  try {
    session_.open(factory_for(url.backend), url.soci_connect_string());
    dialect_->configure_session(session_);
  } catch (const soci::soci_error& e) {
    const std::string what =
        "cannot connect to " + url.redacted() + ": " + first_line(e.get_error_message());
    // Wrong credentials or database: exit 1, so that cron does not retry it as temporary.
    if (dialect_->is_access_denied(e))
      throw Error(what + " (check the user, QUEUECTL_DB_PASSWORD and the database name)");
    throw TemporaryError(what + " (is the server up and reachable? check the host and port)");
  }
}

void Database::translate_error(const soci::soci_error& e) const {
  std::string msg = first_line(e.get_error_message());
  if (dialect_->is_connection_failure(e))
    throw TemporaryError("lost the connection to " + url_.redacted() + ": " + msg);
  if (dialect_->is_contention(e))
    throw TemporaryError("database contention on " + url_.redacted() + " persisted after " +
                         std::to_string(max_attempts) + " tries: " + msg);
  throw Error("database error on " + url_.redacted() + ": " + msg);
}

void Database::transaction(const std::function<void()>& work) {
  for (int attempt = 1;; ++attempt) {
    try {
      dialect_->begin(session_);
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
      if (attempt < max_attempts && dialect_->is_contention(e)) {
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
      if (attempt < max_attempts && dialect_->is_contention(e)) {
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
