// One error hierarchy: each error carries the exit code DESIGN.md gives it, and main
// catches once to print `queuectl: error: ...`.
#pragma once

#include <stdexcept>
#include <string>

namespace queuectl {

enum class ExitCode : int {
  ok = 0,
  error = 1,
  usage = 2,
  lease_lost = 3,
  not_found = 4,
  lock_busy = 5,
  temporary = 75,
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ExitCode code = ExitCode::error)
      : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad usage or bad input: nothing was written (exit 2).
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& message) : Error(message, ExitCode::usage) {}
};

// Token wrong, lease expired or job not processing (exit 3).
class LeaseLost : public Error {
 public:
  explicit LeaseLost(const std::string& message) : Error(message, ExitCode::lease_lost) {}
};

// Job or queue not found (exit 4).
class NotFound : public Error {
 public:
  explicit NotFound(const std::string& message) : Error(message, ExitCode::not_found) {}
};

// Named lock held by someone else (exit 5).
class LockBusy : public Error {
 public:
  explicit LockBusy(const std::string& message) : Error(message, ExitCode::lock_busy) {}
};

// Database unreachable, or contention still failing after retries (exit 75).
class TemporaryError : public Error {
 public:
  explicit TemporaryError(const std::string& message) : Error(message, ExitCode::temporary) {}
};

// The connection to the database is gone (exit 75 like any temporary error); callers that
// keep a connection open drop it and connect again.
class ConnectionLost : public TemporaryError {
 public:
  explicit ConnectionLost(const std::string& message) : TemporaryError(message) {}
};

// Not an error: leaves main with a child command's exit code, printing nothing.
class CommandExit : public std::exception {
 public:
  explicit CommandExit(int code) : code_(code) {}
  int code() const { return code_; }
  const char* what() const noexcept override { return "command exit"; }

 private:
  int code_;
};

}  // namespace queuectl
