// Helpers for the CLI tests: run queuectl against the fixture's database, parse what it
// printed, and assert the shape of errors (exit code, one line on stderr, no data).
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/row_reader.hpp"
#include "support/fixture.hpp"
#include "support/process.hpp"

namespace queuectl::testing::cli {

using json = nlohmann::json;

inline bool is_sqlite() {
  return backend_under_test() == Backend::sqlite;
}
inline bool is_postgresql() {
  return backend_under_test() == Backend::postgresql;
}
inline bool is_mysql() {
  return backend_under_test() == Backend::mysql;
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

// RFC 3339 UTC with microseconds, as DESIGN.md prints every time.
inline bool is_rfc3339_us(const json& v) {
  static const std::regex pattern(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$)");
  return v.is_string() && std::regex_match(v.get<std::string>(), pattern);
}

inline bool is_uuid(const json& v) {
  static const std::regex pattern(
      R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)");
  return v.is_string() && std::regex_match(v.get<std::string>(), pattern);
}

// Microseconds since the epoch of an RFC 3339 time as queuectl prints it.
inline std::int64_t epoch_us(const json& v) {
  REQUIRE_MESSAGE(is_rfc3339_us(v), "not an RFC 3339 time: " << v.dump());
  std::string s = v.get<std::string>();
  std::tm tm{};
  tm.tm_year = std::stoi(s.substr(0, 4)) - 1900;
  tm.tm_mon = std::stoi(s.substr(5, 2)) - 1;
  tm.tm_mday = std::stoi(s.substr(8, 2));
  tm.tm_hour = std::stoi(s.substr(11, 2));
  tm.tm_min = std::stoi(s.substr(14, 2));
  tm.tm_sec = std::stoi(s.substr(17, 2));
  return static_cast<std::int64_t>(timegm(&tm)) * 1000000 + std::stoll(s.substr(20, 6));
}

// Seconds from `a` to `b`.
inline double seconds_between(const json& a, const json& b) {
  return static_cast<double>(epoch_us(b) - epoch_us(a)) / 1e6;
}

inline json parse(const std::string& text) {
  json doc = json::parse(text, nullptr, false);
  REQUIRE_MESSAGE(!doc.is_discarded(), "not JSON: " << text);
  return doc;
}

// Each non-empty line of NDJSON output, parsed.
inline std::vector<json> parse_lines(const std::string& text) {
  std::vector<json> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    REQUIRE_MESSAGE(nl != std::string::npos, "NDJSON without a final newline: " << text);
    out.push_back(parse(text.substr(start, nl - start)));
    start = nl + 1;
  }
  return out;
}

inline std::size_t count_lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

inline long long job_rows(FreshDatabase& fixture) {
  return scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue");
}

// Every row of `table` as text, one line a row, in `order_by` order: each column is cast to
// text by the database (so a changed time, token or JSON value shows), NULL as "NULL".
inline std::string table_text(FreshDatabase& fixture, const std::string& table,
                              const std::vector<std::string>& columns,
                              const std::string& order_by) {
  // CAST AS TEXT is PostgreSQL's and SQLite's; MySQL/MariaDB only know CAST AS CHAR.
  const std::string as = backend_under_test() == Backend::mysql ? " AS CHAR)" : " AS TEXT)";
  std::string sql;
  for (const auto& c : columns) sql += (sql.empty() ? "SELECT " : ", ") + ("CAST(" + c + as);
  sql += " FROM " + table + " ORDER BY " + order_by;
  std::vector<std::string> values(columns.size());
  std::vector<soci::indicator> nulls(columns.size());
  soci::statement st(fixture.db().session());
  for (std::size_t i = 0; i < columns.size(); ++i) st.exchange(soci::into(values[i], nulls[i]));
  // Unnamed: through PgBouncer a statement prepared by name may stay on a server session
  // that another client then gets ("prepared statement st_N already exists").
  prepare_once(st, sql);
  std::string out;
  for (bool got = st.execute(true); got; got = st.fetch()) {
    for (std::size_t i = 0; i < columns.size(); ++i)
      out += (i ? " | " : "") + (nulls[i] == soci::i_null ? std::string("NULL") : values[i]);
    out += "\n";
  }
  return out;
}

// The whole state a queuectl command could change, as text: every column of every job
// row, the queues' settings and (SQLite) the named-lock rows. Equal fingerprints before
// and after a command mean it wrote nothing at all, not only that no row was added.
inline std::string db_fingerprint(FreshDatabase& fixture) {
  static const std::vector<std::string> job_columns = {"id",
                                                       "queue",
                                                       "status",
                                                       "priority",
                                                       "run_at",
                                                       "attempts",
                                                       "max_attempts",
                                                       "payload",
                                                       "result",
                                                       "last_error",
                                                       "locked_by",
                                                       "lock_token",
                                                       "locked_at",
                                                       "lock_until",
                                                       "dedupe_key",
                                                       "group_key",
                                                       "created_at",
                                                       "updated_at",
                                                       "finished_at",
                                                       "dead_from",
                                                       "has_dependents",
                                                       "trace_parent",
                                                       "trace_state",
                                                       "progress",
                                                       "progress_note",
                                                       "checkpoint"};
  std::string text = "job_queue:\n" + table_text(fixture, "job_queue", job_columns, "id");
  text += "queuectl_queues:\n" +
          table_text(fixture, "queuectl_queues",
                     {"queue", "paused_at", "strict_groups", "dead_letter", "max_processing",
                      "retain_ms", "rate_count", "rate_period_ms", "rate_burst", "rate_per_key",
                      "rate_tokens", "rate_refreshed_ms", "keep_done"},
                     "queue");
  text += "queuectl_rate_keys:\n" + table_text(fixture, "queuectl_rate_keys",
                                               {"queue", "group_key", "tokens", "refreshed_ms"},
                                               "queue, group_key");
  text += "queuectl_job_deps:\n" + table_text(fixture, "queuectl_job_deps",
                                              {"parent_id", "child_id", "state"},
                                              "parent_id, child_id");
  text += "queuectl_job_waits:\n" + table_text(fixture, "queuectl_job_waits",
                                               {"child_id", "pending", "on_parent_failure"},
                                               "child_id");
  // Only SQLite keeps named locks in a table; the servers use advisory locks.
  if (backend_under_test() == Backend::sqlite)
    text += "queuectl_locks:\n" +
            table_text(fixture, "queuectl_locks", {"name", "token", "expires_at"}, "name");
  return text;
}

// What a run printed, for failure messages.
inline std::string dump(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\n--- stdout:\n" + r.out + "--- stderr:\n" +
         r.err;
}

// Runs queuectl and requires exit 0.
inline RunResult ok(const std::string& url, const std::vector<std::string>& args,
                    const std::string& input = "",
                    const std::map<std::string, std::string>& env = {}) {
  RunResult r = queuectl(url, args, input, env);
  INFO(dump(r));
  REQUIRE(r.exit_code == 0);
  return r;
}

// Runs queuectl with -o json and requires exit 0; returns the document.
inline json ok_json(const std::string& url, std::vector<std::string> args,
                    const std::string& input = "") {
  args.insert(args.begin(), {"-o", "json"});
  return parse(ok(url, args, input).out);
}

// Enqueues one job; returns it as JSON.
inline json enqueue(const std::string& url, const std::string& queue,
                    const std::string& payload = "{}", std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"enqueue", queue, payload};
  args.insert(args.end(), extra.begin(), extra.end());
  return ok_json(url, args);
}

// Claims from a queue; returns the array of claimed jobs.
inline json claim(const std::string& url, const std::string& queue,
                  std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"claim", queue};
  args.insert(args.end(), extra.begin(), extra.end());
  json jobs = ok_json(url, args);
  REQUIRE(jobs.is_array());
  return jobs;
}

// Claims exactly one job; returns it.
inline json claim_one(const std::string& url, const std::string& queue,
                      std::vector<std::string> extra = {}) {
  json jobs = claim(url, queue, extra);
  REQUIRE(jobs.size() == 1);
  return jobs[0];
}

inline json show(const std::string& url, std::int64_t id) {
  return ok_json(url, {"show", std::to_string(id)});
}

inline std::string id_text(const json& job) {
  return std::to_string(job["id"].get<long long>());
}

// Requires the shape of every error: `code`, nothing on stdout, exactly one line on
// stderr that starts with "queuectl: error:" and contains `needle` (case-insensitive).
inline void check_error(const RunResult& r, int code, const std::string& needle) {
  INFO(dump(r));
  CHECK(r.exit_code == code);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("queuectl: error:", 0) == 0);
  CHECK(count_lines(r.err) == 1);
  if (!r.err.empty()) CHECK(r.err.back() == '\n');
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  CHECK_MESSAGE(lower(r.err).find(lower(needle)) != std::string::npos,
                "stderr should name '" << needle << "'");
}

// Bad usage or bad input: exit 2, one error line naming `needle`, no data.
inline void check_usage_error(const RunResult& r, const std::string& needle) {
  check_error(r, 2, needle);
}

// Runs queuectl, requires a usage error naming `needle` (exit 2, one line on stderr, nothing
// on stdout), and that nothing at all was written: the database fingerprint is unchanged.
inline void rejects(FreshDatabase& fixture, const std::vector<std::string>& args,
                    const std::string& needle, const std::string& input = "") {
  std::string shown;
  for (const auto& a : args) shown += " '" + a.substr(0, 80) + "'";
  INFO("queuectl" << shown);
  const std::string before = db_fingerprint(fixture);
  check_usage_error(queuectl(fixture.url(), args, input), needle);
  const std::string after = db_fingerprint(fixture);
  CHECK_MESSAGE(after == before, "the database changed\n--- before:\n"
                                     << before << "--- after:\n"
                                     << after);
}

// Runs a command that must fail with `code` and one error line naming `needle`, and change
// nothing at all in the database.
inline RunResult refused(FreshDatabase& fixture, const std::vector<std::string>& args, int code,
                         const std::string& needle) {
  const std::string before = db_fingerprint(fixture);
  RunResult r = queuectl(fixture.url(), args);
  INFO(dump(r));
  CHECK(r.exit_code == code);
  CHECK(count_lines(r.err) == 1);
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK(db_fingerprint(fixture) == before);
  return r;
}

// The database clock `hours` ago, as an SQL expression of the backend under test.
inline std::string hours_ago_sql(int hours) {
  const std::string h = std::to_string(hours);
  switch (backend_under_test()) {
    case Backend::postgresql:
      return "now() - interval '" + h + " hours'";
    case Backend::mysql:
      return "NOW(6) - INTERVAL " + h + " HOUR";
    default:
      return "strftime('%Y-%m-%d %H:%M:%f', 'now', '-" + h + " hours')";
  }
}

// Moves a time column of one job two hours back, so that cutoffs are tested without waiting.
inline void age_job(FreshDatabase& fixture, const json& job, const std::string& column) {
  long long id = job["id"].get<long long>();
  fixture.db().session() << "UPDATE job_queue SET " + column + " = " + hours_ago_sql(2) +
                                " WHERE id = :id",
      soci::use(id, "id");
}

// Ids of a JSON array of jobs, in order.
inline std::vector<std::int64_t> ids_in(const json& jobs) {
  std::vector<std::int64_t> out;
  for (const json& j : jobs) out.push_back(j["id"].get<std::int64_t>());
  return out;
}

// The ids of one queue's jobs, read with SQL (not through the CLI), in id order.
inline std::vector<std::int64_t> queue_ids(FreshDatabase& fixture, const std::string& queue,
                                           const std::string& status_in = "0,1,2,3,4") {
  std::vector<std::int64_t> out;
  long long id = 0;
  std::string q = queue;
  soci::statement st = statement_once(
      fixture.db().session(),
      "SELECT id FROM job_queue WHERE queue = :q AND status IN (" + status_in + ") ORDER BY id",
      soci::use(q, "q"), soci::into(id));
  for (bool got = st.execute(true); got; got = st.fetch()) out.push_back(id);
  return out;
}

// A folder that is removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/queuectl-cli-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `content` to a file in the folder; returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  std::string path_;
};

// The database's clock, `seconds` from now, as SQL of the backend under test (for rows
// written the way an application would, past queuectl).
inline std::string now_plus(int seconds) {
  const std::string n = std::to_string(seconds);
  switch (backend_under_test()) {
    case Backend::mysql:
      return "NOW(6) + INTERVAL " + n + " SECOND";
    case Backend::postgresql:
      return "now() + interval '" + n + " seconds'";
    default:
      return "strftime('%Y-%m-%d %H:%M:%f', 'now', '" + (seconds < 0 ? n : "+" + n) + " seconds')";
  }
}
inline std::string now_sql() {
  return now_plus(0);
}

// Drops the queue tables so that the fixture's database looks never migrated.
inline void drop_schema(FreshDatabase& fixture) {
  for (const char* table : {"job_queue", "queuectl_queues", "queuectl_locks", "queuectl_rate_keys",
                            "queuectl_job_deps", "queuectl_job_waits", "queuectl_batches",
                            "queuectl_batch_jobs", "queuectl_schema_migrations"})
    fixture.db().session() << (std::string("DROP TABLE IF EXISTS ") + table);
}

// A loopback port nobody listens on: bound, read, closed.
inline int closed_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
            getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  REQUIRE(ok);
  return ntohs(addr.sin_port);
}

// The table as migrated before version 9, which took any queue name: rows written then by
// other code may hold control characters, and every view must still escape them. Drops
// migration 9's rule (PostgreSQL and MySQL/MariaDB: its CHECK; SQLite: its triggers).
inline void allow_any_queue_name(FreshDatabase& fixture) {
  soci::session& s = fixture.db().session();
  switch (backend_under_test()) {
    case Backend::postgresql:
    case Backend::mysql:
      s << "ALTER TABLE job_queue DROP CONSTRAINT job_queue_queue_name";
      break;
    case Backend::sqlite:
      s << "DROP TRIGGER job_queue_queue_name";
      s << "DROP TRIGGER job_queue_queue_rename";
      break;
  }
}

}  // namespace queuectl::testing::cli
