// One connection: the session, its dialect, and the retry policy for contention.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <soci/soci.h>

#include "core/db_url.hpp"
#include "db/dialect.hpp"

namespace queuectl {

class Database {
 public:
  // Connects; throws TemporaryError naming the redacted URL when the server cannot be
  // reached. For SQLite files the parent folder is created on first use.
  explicit Database(const DbUrl& url);

  soci::session& session() { return session_; }
  const Dialect& dialect() const { return *dialect_; }
  const Statements& sql() const { return dialect_->sql(); }
  const DbUrl& url() const { return url_; }

  // Runs `work` in one write transaction, committing at the end. Contention
  // (deadlock, lock-wait timeout, serialization failure, SQLite BUSY) rolls back and
  // retries `work` a bounded number of times with jittered backoff, then throws
  // TemporaryError. Other database errors are translated by translate_error.
  void transaction(const std::function<void()>& work);

  // Runs a read or a single statement with the same retry policy, outside a transaction.
  void retrying(const std::function<void()>& work);

  // Turns a SOCI error into queuectl's error hierarchy (temporary, or a plain error).
  [[noreturn]] void translate_error(const soci::soci_error& e) const;

  int max_attempts = 8;

 private:
  DbUrl url_;
  std::unique_ptr<Dialect> dialect_;
  soci::session session_;
};

}  // namespace queuectl
