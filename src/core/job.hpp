// The job as every layer sees it, and the names of its states.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace queuectl {

enum class Status : int { ready = 0, processing = 1, done = 2, failed = 3, canceled = 4 };

std::string_view status_name(Status s);
// Parses one status name; throws UsageError on an unknown one.
Status parse_status(std::string_view name);
// Parses "done,failed"; throws UsageError on an unknown or empty entry.
std::vector<Status> parse_status_list(std::string_view list);

// Times are RFC 3339 UTC text with microseconds, as the database formatted them.
struct Job {
  std::int64_t id = 0;
  std::string queue;
  Status status = Status::ready;
  int priority = 0;
  std::string run_at;
  int attempts = 0;
  int max_attempts = 25;
  std::string payload;  // JSON text
  std::optional<std::string> result;
  std::optional<std::string> last_error;
  std::optional<std::string> locked_by;
  std::optional<std::string> lock_token;
  std::optional<std::string> locked_at;
  std::optional<std::string> lock_until;
  std::optional<std::string> dedupe_key;
  std::optional<std::string> group_key;
  std::string created_at;
  std::string updated_at;
  std::optional<std::string> finished_at;
  // A dead letter: the queue it gave up in (see `queuectl queue --dead-letter`).
  std::optional<std::string> dead_from;
};

// The run_at of a job that waits for other jobs (enqueue --after), as the database prints
// it: far beyond any claim, until the last of them is done. 9999-12-31 on PostgreSQL and
// SQLite; the last microsecond of TIMESTAMP(6) on MySQL/MariaDB, which ends in 2038.
inline constexpr const char* kWaitingRunAtText = "9999-12-31T00:00:00";
inline constexpr const char* kWaitingRunAtTextMysql = "2038-01-19T03:14:07.999999";
// Whether `job` waits for other jobs: ready, with the waiting run_at.
bool is_waiting(const Job& job);
// A job's status as `list`, `show` and JSON name it: "waiting" for a waiting job, else
// status_name.
std::string_view job_status_text(const Job& job);

}  // namespace queuectl
