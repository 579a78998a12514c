// Connection and permission errors on the real servers: a role that may not read
// queuectl_schema_migrations is told so (not to run `queuectl migrate`), a runtime role with
// only the documented grants runs every queue command, a failed connect carries the
// server's or libpq's reason with the right exit code (1 when waiting will not help, 75 when
// it may), a refused login names where the password came from, and a password file that
// would give an empty password is bad usage.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

const std::string kRolePassword = "Role-pw-9f3e";

// `base` (a server URL) with another user, password and database.
std::string url_with(const std::string& base, const std::string& user,
                     const std::optional<std::string>& password, const std::string& database = "") {
  DbUrl u = DbUrl::parse(base);
  std::string query;
  if (auto q = base.find('?'); q != std::string::npos) query = base.substr(q);
  std::string out = base.substr(0, base.find("://")) + "://" + user;
  if (password) out += ":" + *password;
  out += "@" + u.host + (u.port ? ":" + std::to_string(u.port) : "");
  return out + "/" + (database.empty() ? u.database : database) + query;
}

std::string with_param(const std::string& url, const std::string& param) {
  return url + (url.find('?') == std::string::npos ? '?' : '&') + param;
}

// A login role (PostgreSQL) or user (MariaDB, for 127.0.0.1 and localhost) with password
// kRolePassword and only `grants` ({table, privileges}; "SEQUENCE name" for PostgreSQL's
// sequences, skipped on MariaDB), dropped at the end of the test.
// On MariaDB the test account has no GRANT OPTION: root (no password, as
// scripts/test-servers.sh sets it up) grants, over the server's own socket.
class TestRole {
 public:
  TestRole(FreshDatabase& fixture, std::string name,
           const std::vector<std::pair<std::string, std::string>>& grants)
      : fixture_(fixture), name_(std::move(name)) {
    if (backend_under_test() == Backend::mysql) {
      std::string socket;
      fixture.db().session() << "SELECT @@socket", soci::into(socket);
      const std::string database = DbUrl::parse(fixture.url()).database;
      admin_ = std::make_unique<Database>(
          DbUrl::parse("mysql://root@localhost/" + database + "?socket=" + socket));
      drop();
      for (const char* host : {"127.0.0.1", "localhost"}) {
        const std::string account = "'" + name_ + "'@'" + host + "'";
        run("CREATE USER " + account + " IDENTIFIED BY '" + kRolePassword + "'");
        for (const auto& [table, privileges] : grants) {
          if (table.rfind("SEQUENCE ", 0) == 0) continue;  // PostgreSQL's, MySQL has none
          run("GRANT " + privileges + " ON `" + database + "`.`" + table + "` TO " + account);
        }
      }
    } else {
      drop();
      run("CREATE ROLE " + name_ + " LOGIN PASSWORD '" + kRolePassword + "'");
      for (const auto& [table, privileges] : grants)
        run("GRANT " + privileges + " ON " + table + " TO " + name_);
    }
  }
  ~TestRole() {
    try {
      drop();
    } catch (...) {
    }
  }
  TestRole(const TestRole&) = delete;
  TestRole& operator=(const TestRole&) = delete;

  std::string url() const { return url_with(fixture_.url(), name_, kRolePassword); }

 private:
  void run(const std::string& sql) { (admin_ ? *admin_ : fixture_.db()).session() << sql; }
  void drop() {
    if (admin_) {
      run("DROP USER IF EXISTS '" + name_ + "'@'127.0.0.1'");
      run("DROP USER IF EXISTS '" + name_ + "'@'localhost'");
    } else if (scalar(fixture_.db(),
                      "SELECT COUNT(*) FROM pg_roles WHERE rolname = '" + name_ + "'") > 0) {
      run("DROP OWNED BY " + name_);  // its grants in this database
      run("DROP ROLE " + name_);
    }
  }

  FreshDatabase& fixture_;
  std::string name_;
  std::unique_ptr<Database> admin_;
};

void check_no_migrate_advice(const RunResult& r) {
  INFO(dump(r));
  CHECK(r.err.find("queuectl migrate") == std::string::npos);
  CHECK(r.err.find("missing or out of date") == std::string::npos);
}

}  // namespace

TEST_CASE(
    "cli connection: a role that may not read queuectl_schema_migrations gets the "
    "database's reason, not `run queuectl migrate`" *
    doctest::skip(is_sqlite() ||
                  through_pooler())) {  // SQLite has no roles; PgBouncer admits its own users only
  FreshDatabase fixture;

  SUBCASE("DML on job_queue only") {
    TestRole role(fixture, "queuectl_t_dml_only",
                  {{"job_queue", "SELECT, INSERT, UPDATE, DELETE"}});
    for (std::vector<std::string> args : {std::vector<std::string>{"enqueue", "x", "{}"},
                                          {"stats"},
                                          {"claim", "x"},
                                          {"migrate", "--status"}}) {
      CAPTURE(args[0]);
      RunResult r = queuectl(role.url(), args);
      // PostgreSQL: "permission denied for table ..."; MariaDB: "SELECT command denied ...".
      check_error(r, 1, "denied");
      check_no_migrate_advice(r);
      CHECK(r.err.find("queuectl_schema_migrations") != std::string::npos);
      CHECK(r.err.find(kRolePassword) == std::string::npos);
      CHECK(r.out.find("pending") == std::string::npos);
    }
    CHECK(job_rows(fixture) == 0);
  }

  SUBCASE("no grants at all") {
    TestRole role(fixture, "queuectl_t_no_grants", {});
    for (std::vector<std::string> args :
         {std::vector<std::string>{"stats"}, {"migrate", "--status"}, {"enqueue", "x", "{}"}}) {
      CAPTURE(args[0]);
      // PostgreSQL: no privilege on the table; MariaDB: no access to the database at all.
      RunResult r = queuectl(role.url(), args);
      check_error(r, 1, "denied");
      check_no_migrate_advice(r);
      CHECK(r.err.find(kRolePassword) == std::string::npos);
    }
    CHECK(job_rows(fixture) == 0);
  }
}

// The grants README's "Connecting" section documents for an application's role.
TEST_CASE(
    "cli connection: a runtime role with SELECT on queuectl_schema_migrations and DML on "
    "the queue tables runs every queue command" *
    doctest::skip(is_sqlite() ||
                  through_pooler())) {  // SQLite has no roles; PgBouncer admits its own users only
  FreshDatabase fixture;
  const std::string dml = "SELECT, INSERT, UPDATE, DELETE";
  TestRole role(fixture, "queuectl_t_runtime",
                {{"queuectl_schema_migrations", "SELECT"},
                 {"job_queue", dml},
                 {"queuectl_queues", dml},
                 {"queuectl_schedules", dml},
                 {"queuectl_schedule_fires", dml},
                 {"queuectl_rate_keys", dml},
                 {"queuectl_job_deps", dml},
                 {"queuectl_job_waits", dml},
                 {"queuectl_batches", dml},
                 {"queuectl_batch_jobs", dml},
                 // PostgreSQL: job_queue.id is an identity column; INSERT draws from it.
                 {"SEQUENCE job_queue_id_seq", "USAGE"},
                 {"SEQUENCE queuectl_batches_id_seq", "USAGE"}});
  const std::string url = role.url();

  RunResult status = ok(url, {"migrate", "--status"});
  CHECK(status.out.find("pending") == std::string::npos);

  json a = enqueue(url, "q", "{\"n\":1}", {"--dedupe-key", "a"});
  ok(url, {"enqueue", "--from", "-"},
     "{\"queue\":\"q\",\"payload\":{\"n\":2}}\n{\"queue\":\"q\",\"payload\":{},\"dedupe_key\":"
     "\"a\"}\n");
  CHECK(job_rows(fixture) == 2);

  json claimed = claim_one(url, "q", {"--lease", "1m"});
  const std::string token = claimed["lock_token"].get<std::string>();
  ok(url, {"extend", id_text(claimed), "--token", token, "--lease", "2m"});
  ok(url, {"release", id_text(claimed), "--token", token});
  claimed = claim_one(url, "q");
  ok(url, {"fail", id_text(claimed), "--token", claimed["lock_token"].get<std::string>(),
           "--permanent", "--error", "boom"});
  ok(url, {"retry", id_text(claimed)});
  claimed = claim_one(url, "q");
  ok(url, {"ack", id_text(claimed), "--token", claimed["lock_token"].get<std::string>(), "--result",
           "{\"ok\":true}"});

  // A job after another, in a batch: the parent's ack releases it and counts the batch.
  std::string batch = ok(url, {"batch", "create", "--on-success", "cb", "{}"}).out;
  batch.erase(batch.find_last_not_of("\n") + 1);
  json parent = enqueue(url, "deps", "{}", {"--batch", batch});
  json child = enqueue(url, "deps", "{}", {"--after", id_text(parent), "--batch", batch});
  ok(url, {"batch", "close", batch});
  claimed = claim_one(url, "deps");
  ok(url, {"ack", id_text(claimed), "--token", claimed["lock_token"].get<std::string>()});
  claimed = claim_one(url, "deps");
  CHECK(claimed["id"] == child["id"]);
  ok(url, {"ack", id_text(claimed), "--token", claimed["lock_token"].get<std::string>()});
  CHECK(ok_json(url, {"batch", "show", batch})["state"] == "finished");

  ok(url, {"stats"});
  ok(url, {"-o", "prometheus", "stats"});
  ok(url, {"list", "q"});
  ok(url, {"show", id_text(a)});
  ok(url, {"leases"});
  ok(url, {"reap"});
  ok(url, {"pause", "q"});
  ok(url, {"resume", "q"});
  ok(url, {"lock", "queuectl-test-runtime-role", "--", "true"});
  ok(url, {"cron", "add", "runtime", "@hourly", "q"});
  ok(url, {"cron", "trigger", "runtime"});
  ok(url, {"cron", "tick"});
  ok(url, {"cron", "list"});

  json c = enqueue(url, "other");
  ok(url, {"cancel", id_text(c)});
  age_job(fixture, c, "finished_at");
  json purged = ok_json(url, {"purge", "other", "--older-than", "1h"});
  INFO(purged.dump());
  CHECK(queue_ids(fixture, "other").empty());

  enqueue(url, "w");
  ok(url, {"work", "w", "--drain", "--", "true"});
  CHECK(queue_ids(fixture, "w", "2").size() == 1);
}

TEST_CASE(
    "cli connection: a queuectl_schema_migrations that cannot be read is reported with "
    "the database's reason, not as an unmigrated schema") {
  FreshDatabase fixture;
  fixture.db().session() << "DROP TABLE queuectl_schema_migrations";
  fixture.db().session() << "CREATE TABLE queuectl_schema_migrations (other_column INTEGER)";
  std::string reason;
  switch (backend_under_test()) {
    case Backend::postgresql:
      reason = "column \"version\" does not exist";
      break;
    case Backend::mysql:
      reason = "Unknown column 'version'";
      break;
    case Backend::sqlite:
      reason = "no such column: version";
      break;
  }
  for (std::vector<std::string> args : {std::vector<std::string>{"enqueue", "x", "{}"},
                                        {"list"},
                                        {"migrate", "--status"},
                                        {"migrate"}}) {
    CAPTURE(args[0]);
    RunResult r = queuectl(fixture.url(), args);
    check_error(r, 1, reason);
    check_no_migrate_advice(r);
  }
  CHECK(job_rows(fixture) == 0);
}

// The migrations table is held under an exclusive lock by another session, so that every
// read of it waits until the URL's own timeout cancels it.
TEST_CASE(
    "cli connection: PostgreSQL timeouts from ?options= are reported as such: "
    "statement_timeout exit 1, lock_timeout (contention) exit 75" *
    doctest::skip(backend_under_test() != Backend::postgresql || through_pooler())) {
  FreshDatabase fixture;
  std::unique_ptr<Database> locker = fixture.connect();
  locker->session().begin();
  locker->session() << "LOCK TABLE queuectl_schema_migrations IN ACCESS EXCLUSIVE MODE";

  SUBCASE("statement_timeout=200") {
    // Exit 1 whether the timeout cancels the session set-up or the schema check (which waits
    // on the lock for as long as it is let). Not 1 ms: a timer that fires as one set-up
    // statement ends is taken by PostgreSQL 15 for a cancel of the next one, "canceling
    // statement due to user request" (seen once in CI under load).
    const std::string url = with_param(fixture.url(), "options=-c%20statement_timeout%3D200");
    for (std::vector<std::string> args :
         {std::vector<std::string>{"enqueue", "x", "{}"}, {"migrate", "--status"}}) {
      CAPTURE(args[0]);
      RunResult r = queuectl(url, args);
      check_error(r, 1, "canceling statement due to statement timeout");
      check_no_migrate_advice(r);
    }
  }
  SUBCASE("lock_timeout=1") {
    const std::string url = with_param(fixture.url(), "options=-c%20lock_timeout%3D1");
    RunResult r = queuectl(url, {"enqueue", "x", "{}"});
    check_error(r, 75, "canceling statement due to lock timeout");
    check_no_migrate_advice(r);
  }
  locker->session().rollback();
  CHECK(job_rows(fixture) == 0);
}

TEST_CASE(
    "cli connection: a failed connect carries the server's reason; a refused login or "
    "unknown database is exit 1, a server that is not listening exit 75" *
    doctest::skip(is_sqlite() || through_pooler())) {  // SQLite has no server
  const bool pg = backend_under_test() == Backend::postgresql;
  const std::string base = base_url();
  const std::string user = DbUrl::parse(base).user;

  SUBCASE("wrong password") {
    RunResult r = queuectl(url_with(base, user, std::string("hunter2-wrong")), {"stats"});
    check_error(r, 1, pg ? "password authentication failed" : "Access denied");
    CHECK(r.err.find("hunter2-wrong") == std::string::npos);
    CHECK(r.err.find("reachable") == std::string::npos);
  }
  SUBCASE("unknown database") {
    RunResult r = queuectl(url_with(base, user, DbUrl::parse(base).password, "queuectl_no_such_db"),
                           {"stats"});
    check_error(r, 1,
                pg ? "database \"queuectl_no_such_db\" does not exist"
                   : "Unknown database 'queuectl_no_such_db'");
  }
  SUBCASE("nothing listening on the port") {
    DbUrl u = DbUrl::parse(base);
    const std::string url = base.substr(0, base.find("://")) +
                            "://u:secret@127.0.0.1:" + std::to_string(closed_port()) + "/" +
                            u.database;
    RunResult r = queuectl(url, {"stats"});
    check_error(r, 75, pg ? "Connection refused" : "Can't connect");
    CHECK(r.err.find("secret") == std::string::npos);
  }
}

TEST_CASE(
    "cli connection: PostgreSQL settings that waiting will not fix are exit 1 with "
    "libpq's or the server's reason" *
    doctest::skip(backend_under_test() != Backend::postgresql || through_pooler())) {
  FreshDatabase fixture;

  SUBCASE("sslmode=require against a server without SSL") {
    std::string ssl;
    fixture.db().session() << "SHOW ssl", soci::into(ssl);
    REQUIRE_MESSAGE(ssl == "off", "the test server has SSL on: this case needs one without");
    RunResult r = queuectl(with_param(fixture.url(), "sslmode=require"), {"stats"});
    check_error(r, 1, "server does not support SSL, but SSL was required");
    CHECK(r.err.find("reachable") == std::string::npos);
  }
  SUBCASE("a server parameter the server does not know") {
    RunResult r = queuectl(with_param(fixture.url(), "options=-c%20queuectl_bogus%3D1"), {"stats"});
    check_error(r, 1, "unrecognized configuration parameter \"queuectl_bogus\"");
    CHECK(r.err.find("reachable") == std::string::npos);
  }
  SUBCASE("a -c in ?options= without its value") {
    RunResult r = queuectl(with_param(fixture.url(), "options=-c%20bogus"), {"stats"});
    check_error(r, 1, "requires a value");
    CHECK(r.err.find("reachable") == std::string::npos);
  }
  SUBCASE("a ?service= that pg_service.conf does not define") {
    RunResult r = queuectl(with_param(fixture.url(), "service=queuectl_nonexistent"), {"stats"});
    check_error(r, 1, "definition of service");
    CHECK(r.err.find("reachable") == std::string::npos);
  }
}

TEST_CASE("cli connection: a refused login names where the password came from" *
          doctest::skip(is_sqlite())) {  // SQLite has no login
  FreshDatabase fixture;
  const std::string base = fixture.url();
  const std::string user = DbUrl::parse(base).user;
  const std::string bare = url_with(base, user, std::nullopt);
  const std::string wrong = "hunter2-wrong";
  const std::map<std::string, std::string> no_env_password = {{"QUEUECTL_DB_PASSWORD", ""},
                                                              {"PGPASSWORD", ""}};
  TempDir dir;

  auto refused_login = [&](const RunResult& r) {
    check_error(r, 1, "cannot connect");
    CHECK(r.err.find(wrong) == std::string::npos);
    CHECK(r.err.find("reachable") == std::string::npos);
  };

  SUBCASE("from the URL") {
    RunResult r = queuectl(url_with(base, user, wrong), {"stats"}, "", no_env_password);
    refused_login(r);
    CHECK(r.err.find("password from the URL") != std::string::npos);
    CHECK(r.err.find("QUEUECTL_DB_PASSWORD") == std::string::npos);
  }
  SUBCASE("from QUEUECTL_DB_PASSWORD") {
    RunResult r = queuectl(bare, {"stats"}, "", {{"QUEUECTL_DB_PASSWORD", wrong}});
    refused_login(r);
    CHECK(r.err.find("password from QUEUECTL_DB_PASSWORD") != std::string::npos);
  }
  SUBCASE("from --db-password-file, which wins over a right QUEUECTL_DB_PASSWORD") {
    const std::string file = dir.write("pw", wrong + "\n");
    RunResult r = queuectl(bare, {"--db-password-file", file, "stats"}, "",
                           {{"QUEUECTL_DB_PASSWORD", *DbUrl::parse(base).password}});
    refused_login(r);
    CHECK(r.err.find("password from --db-password-file '" + file + "'") != std::string::npos);
    CHECK(r.err.find("QUEUECTL_DB_PASSWORD") == std::string::npos);
  }
  SUBCASE("none at all") {
    RunResult r = queuectl(bare, {"stats"}, "", no_env_password);
    refused_login(r);
    CHECK(r.err.find("no password was given") != std::string::npos);
  }
}

TEST_CASE(
    "cli connection: a password file that is a folder, empty or unreadable is bad usage "
    "naming it, before connecting") {
  FreshDatabase fixture;  // on a server its URL carries the right password
  TempDir dir;
  const std::string empty = dir.write("empty", "");
  const std::string newline = dir.write("newline", "\n");
  const std::string not_a_folder = dir.write("pw", "secret\n") + "/inside";

  rejects(fixture, {"--db-password-file", dir.path(), "enqueue", "q", "{}"}, dir.path());
  rejects(fixture, {"--db-password-file", dir.path(), "enqueue", "q", "{}"}, "folder");
  rejects(fixture, {"--db-password-file", empty, "enqueue", "q", "{}"},
          "password file '" + empty + "' (--db-password-file) is empty");
  rejects(fixture, {"--db-password-file", newline, "enqueue", "q", "{}"},
          "password file '" + newline + "' (--db-password-file) is empty");
  rejects(fixture, {"--db-password-file", not_a_folder, "enqueue", "q", "{}"}, not_a_folder);
  rejects(fixture, {"--db-password-file", empty, "migrate"}, "is empty");
  CHECK(job_rows(fixture) == 0);
}

// Fault-battery finding: values the driver cannot parse failed like a server that cannot be
// reached (SOCI's MySQL backend: "Malformed connection string."), exit 75, so that cron
// retried them forever. Runs on every backend: the port is closed, so a URL that got as far
// as connecting would be exit 75.
TEST_CASE(
    "cli connection: URL parameter values the driver cannot parse are exit 2 naming the "
    "parameter, before connecting") {
  const std::string port = std::to_string(closed_port());
  const std::map<std::string, std::vector<std::string>> cases = {
      {"mysql",
       {"connect_timeout=abc", "read_timeout=abc", "write_timeout=0",
        "connect_timeout=", "charset="}},
      {"postgresql",
       {"connect_timeout=abc", "keepalives_idle=1.5", "sslmode=bogus",
        "target_session_attrs=master", "hostaddr=notanip", "application_name="}}};
  for (const auto& [scheme, params] : cases) {
    for (const std::string& param : params) {
      const std::string url = scheme + "://u:secret@127.0.0.1:" + port + "/db?" + param;
      CAPTURE(url);
      RunResult r = queuectl(url, {"stats"});
      check_usage_error(r, "query parameter '" + param.substr(0, param.find('=')) + "'");
      CHECK(r.err.find("secret") == std::string::npos);
    }
    // A password both after the user name and in ?password=: which one would count is the
    // driver's accident (SOCI refuses the connection string, libpq takes the last).
    const std::string twice =
        scheme + "://u:secret@127.0.0.1:" + port + "/db?password=other-secret";
    RunResult r = queuectl(twice, {"stats"});
    check_usage_error(r, "password is given twice");
    CHECK(r.err.find("secret") == std::string::npos);
  }
}

TEST_CASE("cli connection: a bad URL parameter value on the server under test writes nothing" *
          doctest::skip(is_sqlite())) {  // a sqlite: URL has no parameters
  FreshDatabase fixture;
  const bool pg = backend_under_test() == Backend::postgresql;
  for (const std::string param :
       {std::string("connect_timeout=abc"), std::string(pg ? "sslmode=bogus" : "read_timeout=x")}) {
    CAPTURE(param);
    const std::string before = db_fingerprint(fixture);
    RunResult r = queuectl(with_param(fixture.url(), param), {"enqueue", "q", "{}"});
    check_usage_error(r, param.substr(0, param.find('=')));
    CHECK(db_fingerprint(fixture) == before);
  }
  CHECK(job_rows(fixture) == 0);
  ok(with_param(fixture.url(), "connect_timeout=5"), {"enqueue", "q", "{}"});
  CHECK(job_rows(fixture) == 1);
}

TEST_CASE(
    "cli connection: MySQL: a ?charset= the client library does not have is exit 1, not a "
    "server to wait for" *
    doctest::skip(backend_under_test() != Backend::mysql)) {
  FreshDatabase fixture;
  RunResult r = queuectl(with_param(fixture.url(), "charset=queuectl_bogus"), {"stats"});
  check_error(r, 1, "Can't initialize character set queuectl_bogus");
  CHECK(r.err.find("reachable") == std::string::npos);
}

TEST_CASE(
    "cli connection: a password from QUEUECTL_DB_PASSWORD or --db-password-file replaces the "
    "URL's ?password=" *
    doctest::skip(is_sqlite())) {  // SQLite has no login
  FreshDatabase fixture;
  const std::string base = fixture.url();
  const std::string user = DbUrl::parse(base).user;
  const std::string right = *DbUrl::parse(base).password;
  const std::string url = with_param(url_with(base, user, std::nullopt), "password=hunter2-wrong");
  TempDir dir;

  RunResult from_env = queuectl(url, {"enqueue", "q", "{}"}, "", {{"QUEUECTL_DB_PASSWORD", right}});
  INFO(dump(from_env));
  CHECK(from_env.exit_code == 0);
  RunResult from_file =
      queuectl(url, {"--db-password-file", dir.write("pw", right + "\n"), "enqueue", "q", "{}"}, "",
               {{"QUEUECTL_DB_PASSWORD", ""}});
  INFO(dump(from_file));
  CHECK(from_file.exit_code == 0);
  CHECK(job_rows(fixture) == 2);
}

}  // namespace queuectl::testing::cli
