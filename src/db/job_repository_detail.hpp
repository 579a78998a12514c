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
