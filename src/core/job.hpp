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
// Parses one status name; throws UsageError on an unknown one, and on "waiting" (a ready job
// held by --after: the callers that take it read it first). `taken` says which statuses the
// command takes, for the message ("retry takes --status failed or canceled"); empty: all.
Status parse_status(std::string_view name, std::string_view taken = {});
// Parses "done,failed"; throws UsageError on an unknown or empty entry.
std::vector<Status> parse_status_list(std::string_view list, std::string_view taken = {});

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
  // The W3C trace context of whoever enqueued it (TRACEPARENT, TRACESTATE at enqueue).
  std::optional<std::string> trace_parent;
  std::optional<std::string> trace_state;
  // What the lease holder last reported (extend --progress/--note/--checkpoint, or a
  // command under `work` on its report descriptor): 0-100, a line of text, a JSON document.
  // Each claim clears progress and note (they are the current attempt's); the checkpoint is
  // kept across retries and reaps, for the next attempt to resume from.
  std::optional<int> progress;
  std::optional<std::string> progress_note;
  std::optional<std::string> checkpoint;  // JSON text
};

// What a lease holder reports with its heartbeat (extend --progress/--note/--checkpoint):
// each part that is set replaces the stored one; the others are kept.
struct JobReport {
  std::optional<int> progress;            // 0-100
  std::optional<std::string> note;        // valid UTF-8, one line
  std::optional<std::string> checkpoint;  // validated, compact JSON
  bool empty() const { return !progress && !note && !checkpoint; }
  // `more`'s parts over this one's.
  void merge(const JobReport& more) {
    if (more.progress) progress = more.progress;
    if (more.note) note = more.note;
    if (more.checkpoint) checkpoint = more.checkpoint;
  }
};

// The run_at of a job that waits for other jobs (enqueue --after), as the database prints
// it: far beyond any claim, until the last of them is done. 9999-12-31 on PostgreSQL and
// SQLite; the last microsecond of TIMESTAMP(6) on MySQL/MariaDB, which ends in 2038.
inline constexpr const char* kWaitingRunAtText = "9999-12-31T00:00:00";
inline constexpr const char* kWaitingRunAtTextMysql = "2038-01-19T03:14:07.999999";
// Whether a ready job's run_at (as the database prints it) is the waiting stand-in.
bool is_waiting_run_at(std::string_view run_at);
// Whether `job` waits for other jobs: ready, with the waiting run_at.
bool is_waiting(const Job& job);
// A job's status as `list`, `show` and JSON name it: "waiting" for a waiting job, else
// status_name.
std::string_view job_status_text(const Job& job);

}  // namespace queuectl
