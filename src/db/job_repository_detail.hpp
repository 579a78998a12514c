// What the files of JobRepository share: job_repository.cpp (enqueue, claim),
// job_repository_finish.cpp (ack, fail, extend, release) and job_repository_reads.cpp
// (find, list, stats), and dependencies.cpp (enqueue --after). Not for use elsewhere.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/duration.hpp"
#include "db/dialect.hpp"
#include "db/job_repository.hpp"

namespace queuectl::job_repository_detail {

inline constexpr std::size_t kBulkRows = 500;               // rows per multi-row INSERT
inline constexpr std::size_t kBulkBytes = 4 * 1024 * 1024;  // and bytes of values
inline constexpr std::size_t kArrayRows = 5000;             // rows per INSERT of arrays

// Array literals for insert_arrays (one per column) and ack_id_array: "{" elements "}". Text goes
// in double quotes with " and \ escaped, so that any value (commas, braces, quotes, spaces, the
// word NULL) comes back as written; a missing value is NULL, unquoted.
struct ArrayLiteral {
  std::string text = "{";
  void add(const std::string& value) {
    if (text.size() > 1) text += ',';
    text += '"';
    for (char c : value) {
      if (c == '"' || c == '\\') text += '\\';
      text += c;
    }
    text += '"';
  }
  void add(const std::optional<std::string>& value) {
    if (value)
      add(*value);
    else
      text += text.size() > 1 ? ",NULL" : "NULL";
  }
  void add(long long value) {
    if (text.size() > 1) text += ',';
    text += std::to_string(value);
  }
  std::string& done() { return text += '}'; }
};

// A time the job columns cannot hold (MySQL's TIMESTAMP ends in 2038) is bad input,
// refused before anything is written, not the server's "Incorrect datetime value" after a
// batch was half sent. `at` (UTC text) or now, plus `after`.
void check_storable(const Dialect& dialect, const std::optional<std::string>& at, Duration after,
                    const std::string& what);

// Inserts `job` in the caller's transaction and reads it back, or returns the job that
// already holds its dedupe key (duplicate). What JobRepository::enqueue runs, and
// Dependencies::enqueue for each job.
EnqueueResult enqueue_one(Database& db, const NewJob& job);

}  // namespace queuectl::job_repository_detail

namespace queuectl {

// An ack prepared once on the server and run again with new values, as a claim is
// (PreparedClaim): parsing, analyzing and planning the UPDATE (a table of ten indexes and six
// triggers) took longer than running it for one job. pgbench, one client, an ack of one id
// that matches no processing row: 0.24 ms a run as a one-time statement, 0.10 prepared.
// queue_bench --claim, 4 workers, batch 1, alternated pairs: 2,429 -> 3,507 jobs/s
// (medians of 4), the ack 0.74-0.84 -> 0.45-0.58 ms. The ack of one job is a statement of its own
// (ack_id_one), which PostgreSQL plans once for all values (a generic plan) from its sixth
// run; the array's generic plan, for a count of ids it cannot see, is costed dearer than a
// plan for one id, so the array one stays planned at each run. Either leaves the planner
// only the primary key to find the rows by (see ack_id_array in postgresql_jobs.cpp), so a
// generic plan is the one it would make for any ids. The values are bound by reference, so
// they live here. (A first run, not kept, uses one too, prepared once.)
// (Defined here, where ~JobRepository in job_repository_claim.cpp sees it.)
struct JobRepository::PreparedAck {
  explicit PreparedAck(soci::session& session) : st(session) {}
  soci::statement st;
  long long acked = 0;  // into
  long long id = 0;     // ack_id_one's :id
  std::string ids;      // ack_id_array's :ids
  std::string token;
};

}  // namespace queuectl
