// Helpers for the contract suite: the backend under test, RFC 3339 arithmetic, short
// ways to enqueue and claim through JobRepository, and raw SQL for setting up states
// that the repository has no call for (a paused queue, a canceled job, a big table).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/job.hpp"
#include "db/job_repository.hpp"
#include "support/fixture.hpp"
#include "support/row_text.hpp"

namespace queuectl {

// doctest prints values of failed CHECK_EQ through operator<<.
inline std::ostream& operator<<(std::ostream& os, Status s) {
  return os << status_name(s);
}

}  // namespace queuectl

namespace queuectl::testing::contract {

using json = nlohmann::json;

inline bool is_sqlite() {
  return backend_under_test() == Backend::sqlite;
}
// QUEUECTL_NAMED_LOCKS=row: named locks are lock rows on every backend, as on Galera (the
// ctest entries *_lock_rows run the lock tests so on the plain test servers).
inline bool lock_rows_forced() {
  const char* v = std::getenv("QUEUECTL_NAMED_LOCKS");
  return v && std::string(v) == "row";
}
inline bool uses_lock_rows() {
  // Through PgBouncer the URL says ?pooling=transaction, which chooses lock rows.
  return is_sqlite() || lock_rows_forced() || through_pooler();
}
inline bool is_postgresql() {
  return backend_under_test() == Backend::postgresql;
}
inline bool is_mysql() {
  return backend_under_test() == Backend::mysql;
}

// The database clock as an SQL expression of the backend under test, for raw inserts.
inline std::string now_sql() {
  if (is_postgresql()) return "now()";
  if (is_mysql()) return "NOW(6)";
  return "strftime('%Y-%m-%d %H:%M:%f', 'now')";
}

// A FROM clause of 100,000 rows that every backend can read: a cross join of five
// tables of the ten digits (for raw inserts of many jobs by the database itself).
inline std::string hundred_thousand_rows() {
  const std::string digits =
      "(SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL "
      "SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 "
      "UNION ALL SELECT 9)";
  return digits + " a, " + digits + " b, " + digits + " c, " + digits + " d, " + digits + " e";
}

// PostgreSQL: a dialect statement as SQL's PREPARE takes it, to EXPLAIN its generic plan:
// `text` has each :name outside quoted text as $n, untyped as SOCI sends it (the server gives
// each the type its CAST names), and `args` the SQL literals of `values` in $n's order, for
// EXECUTE (which takes no bound values). Every name must have a value.
struct PositionalSql {
  std::string text, args;
};
inline PositionalSql positional(const std::string& sql,
                                const std::map<std::string, std::string>& values) {
  PositionalSql out;
  std::vector<std::string> names;
  bool quoted = false;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    if (c == '\'') quoted = !quoted;
    if (quoted || c != ':' || i + 1 >= sql.size() ||
        !std::isalpha(static_cast<unsigned char>(sql[i + 1]))) {
      out.text += c;
      continue;
    }
    std::size_t end = i + 1;
    while (end < sql.size() &&
           (std::isalnum(static_cast<unsigned char>(sql[end])) || sql[end] == '_'))
      ++end;
    const std::string name = sql.substr(i + 1, end - i - 1);
    auto at = std::find(names.begin(), names.end(), name);
    if (at == names.end()) at = names.insert(names.end(), name);
    out.text += "$" + std::to_string(at - names.begin() + 1);
    i = end - 1;
  }
  for (const std::string& name : names) {
    REQUIRE_MESSAGE(values.count(name), name);
    out.args += (out.args.empty() ? "" : ", ") + values.at(name);
  }
  return out;
}

// RFC 3339 UTC with microseconds, as DESIGN.md prints every time.
inline bool is_rfc3339_us(const std::string& s) {
  static const std::regex pattern(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$)");
  return std::regex_match(s, pattern);
}
inline bool is_rfc3339_us(const std::optional<std::string>& s) {
  return s && is_rfc3339_us(*s);
}

inline bool is_uuid(const std::string& s) {
  static const std::regex pattern(
      R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)");
  return std::regex_match(s, pattern);
}

// Microseconds since the epoch of an RFC 3339 time as the repository returns it.
inline std::int64_t epoch_us(const std::string& s) {
  REQUIRE_MESSAGE(is_rfc3339_us(s), "not an RFC 3339 time with microseconds: '" << s << "'");
  std::tm tm{};
  tm.tm_year = std::stoi(s.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(s.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(s.substr(8, 2));
  tm.tm_hour = std::stoi(s.substr(11, 2));
  tm.tm_min = std::stoi(s.substr(14, 2));
  tm.tm_sec = std::stoi(s.substr(17, 2));
  return static_cast<std::int64_t>(timegm(&tm)) * 1000000 + std::stoll(s.substr(20, 6));
}
inline std::int64_t epoch_us(const std::optional<std::string>& s) {
  REQUIRE_MESSAGE(s.has_value(), "time is NULL");
  return epoch_us(*s);
}

// Seconds from `a` to `b`.
template <typename A, typename B>
double seconds_between(const A& a, const B& b) {
  return static_cast<double>(epoch_us(b) - epoch_us(a)) / 1e6;
}

// JSON text compared by value (PostgreSQL's jsonb and MySQL reformat what they store).
inline bool same_json(const std::string& a, const std::string& b) {
  json x = json::parse(a, nullptr, false), y = json::parse(b, nullptr, false);
  return !x.is_discarded() && !y.is_discarded() && x == y;
}

// Every column of a job, for "nothing changed" checks.
inline std::string describe(const Job& j) {
  auto opt = [](const std::optional<std::string>& s) { return s ? "'" + *s + "'" : "NULL"; };
  return "id=" + std::to_string(j.id) + " queue=" + j.queue +
         " status=" + std::string(status_name(j.status)) +
         " priority=" + std::to_string(j.priority) + " run_at=" + j.run_at +
         " attempts=" + std::to_string(j.attempts) + "/" + std::to_string(j.max_attempts) +
         " payload=" + j.payload + " result=" + opt(j.result) + " last_error=" + opt(j.last_error) +
         " locked_by=" + opt(j.locked_by) + " lock_token=" + opt(j.lock_token) +
         " locked_at=" + opt(j.locked_at) + " lock_until=" + opt(j.lock_until) +
         " dedupe_key=" + opt(j.dedupe_key) + " group_key=" + opt(j.group_key) +
         " created_at=" + j.created_at + " updated_at=" + j.updated_at +
         " finished_at=" + opt(j.finished_at);
}

inline NewJob new_job(const std::string& queue, const std::string& payload = "{}",
                      int priority = 0) {
  NewJob j;
  j.queue = queue;
  j.payload = payload;
  j.priority = priority;
  return j;
}

// A job whose run_at lies in the past ("YYYY-MM-DD HH:MM:SS.ffffff" UTC).
inline NewJob job_at(const std::string& queue, const std::string& run_at, int priority = 0) {
  NewJob j = new_job(queue, "{}", priority);
  j.run_at = run_at;
  return j;
}

inline Job add(JobRepository& repo, const NewJob& job) {
  auto r = repo.enqueue(job);
  REQUIRE_FALSE(r.duplicate);
  return r.job;
}
inline Job add(JobRepository& repo, const std::string& queue, const std::string& payload = "{}",
               int priority = 0) {
  return add(repo, new_job(queue, payload, priority));
}

inline std::vector<Job> claim(JobRepository& repo, const std::string& queue, int limit = 1,
                              Duration lease = Duration::seconds(30),
                              const std::string& worker = "contract-worker") {
  ClaimRequest r;
  r.queue = queue;
  r.limit = limit;
  r.lease = lease;
  r.worker = worker;
  return repo.claim(r);
}

// Claims exactly one job; fails the test when none is due.
inline Job claim_one(JobRepository& repo, const std::string& queue,
                     Duration lease = Duration::seconds(30)) {
  auto jobs = claim(repo, queue, 1, lease);
  REQUIRE_EQ(jobs.size(), 1u);
  return jobs.front();
}

inline Duration millis(std::int64_t ms) {
  return Duration(std::chrono::milliseconds(ms));
}

inline void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

inline std::vector<std::int64_t> ids_of(const std::vector<Job>& jobs) {
  std::vector<std::int64_t> ids;
  for (const Job& j : jobs) ids.push_back(j.id);
  return ids;
}

// Runs one statement that returns nothing.
inline void exec(Database& db, const std::string& sql) {
  db.session() << sql;
}

inline void pause_queue(Database& db, const std::string& queue) {
  exec(db, "INSERT INTO queuectl_queues (queue, paused_at) VALUES ('" + queue +
               "', CURRENT_TIMESTAMP)");
}

inline long long count_rows(Database& db, const std::string& where = "") {
  return scalar(db, "SELECT COUNT(*) FROM job_queue" + (where.empty() ? "" : " WHERE " + where));
}

// Every value of every row `sql` returns, as text, one row a line.
inline std::string query_text(Database& db, const std::string& sql) {
  std::string out;
  for_each_row(db.session(), sql, [&](const soci::row& r) {
    for (std::size_t i = 0; i < r.size(); ++i) out += (i ? " | " : "") + cell_text(r, i);
    out += "\n";
  });
  return out;
}

// Fresh planner statistics for the queue's table (SQLite: for the whole database).
inline void analyze(Database& db) {
  if (is_postgresql()) exec(db, "ANALYZE job_queue");
  if (is_sqlite()) exec(db, "ANALYZE");
  if (is_mysql()) query_text(db, "ANALYZE TABLE job_queue");
}

}  // namespace queuectl::testing::contract
