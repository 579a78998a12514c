#include "db/dialects/pg_notices.hpp"

#include <unistd.h>

#include <string_view>
#include <utility>

#include "db/driver.hpp"

namespace queuectl {
namespace {

// One write(2) per line, so that lines from the worker's threads (each with its own
// connection) never interleave.
void write_to_stderr(const std::string& line) {
  const std::string text = "queuectl: " + line + "\n";
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;  // nowhere to report a broken stderr
    done += static_cast<std::size_t>(n);
  }
}

std::function<void(const std::string&)>& notice_log() {
  static std::function<void(const std::string&)> log = write_to_stderr;
  return log;
}

// libpq's notice receiver: the severity and the primary message, on one line.
// Below WARNING (NOTICE, INFO, LOG, DEBUGn) nothing is shown: what client_min_messages =
// warning keeps off the connection when it can be set for the session, which it cannot
// behind a pooler in transaction mode (CREATE TABLE IF NOT EXISTS ... skipping).
void receive_notice(void*, const PGresult* result) {
  const PostgresqlDriver& pq = postgresql_driver();
  if (const char* level = pq.result_error_field(result, PG_DIAG_SEVERITY_NONLOCALIZED)) {
    const std::string_view l = level;
    if (l == "NOTICE" || l == "INFO" || l == "LOG" || l.substr(0, 5) == "DEBUG") return;
  }
  const char* severity = pq.result_error_field(result, PG_DIAG_SEVERITY);
  const char* primary = pq.result_error_field(result, PG_DIAG_MESSAGE_PRIMARY);
  std::string message = primary ? primary : pq.result_error_message(result);
  for (char& c : message)
    if (c == '\n' || c == '\r') c = ' ';
  while (!message.empty() && message.back() == ' ') message.pop_back();
  std::string line = "PostgreSQL server: ";
  if (severity && primary) line += std::string(severity) + ": ";
  notice_log()(line + message);
}

}  // namespace

void route_server_notices(PGconn* conn) {
  if (conn) postgresql_driver().set_notice_receiver(conn, receive_notice, nullptr);
}

void set_server_notice_log(std::function<void(const std::string&)> log) {
  notice_log() = log ? std::move(log) : write_to_stderr;
}

}  // namespace queuectl
