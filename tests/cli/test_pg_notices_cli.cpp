// Fault-battery finding: during a PostgreSQL restart libpq printed the server's raw
// "FATAL:  terminating connection ..." on the worker's stderr, beside queuectl's own lines.
// Server notices now go through queuectl's log, one line each. PostgreSQL only.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/fault_helpers.hpp"
#include "db/dialects/pg_notices.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: work: PostgreSQL terminating the worker's connections prints no raw FATAL line" *
          doctest::skip(backend_under_test() != Backend::postgresql || through_pooler())) {
  FreshDatabase fixture;
  TempDir dir;
  Cleanup cleanup;
  // The worker's connections carry a name of their own, so that only they are terminated.
  const std::string app = "queuectl_notice_test";
  const std::string url = with_application_name(fixture.url(), app);
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string started = dir.path() + "/started", go = dir.path() + "/go",
                    out = dir.path() + "/out", err = dir.path() + "/err";
  const int worker = cleanup.child(spawn_queuectl_split(
      url,
      // --max-jobs, not --drain: a draining worker does not listen, and the listening
      // connection is the one that reads the server's FATAL while idle.
      {"work", "q", "--max-jobs", "1", "--", "sh", "-c",
       "touch '" + started + "'; " + wait_for_file(go)},
      out, err));
  REQUIRE_MESSAGE(wait_until([&] { return file_exists(started); }),
                  "the job never started: " << read_text(err));

  // What a server restart does to every session, done to the worker's alone.
  const long long terminated =
      scalar(fixture.db(),
             "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
             "WHERE application_name = '" +
                 app + "') AS t");
  REQUIRE(terminated > 0);
  // The connection that waits for wake-ups reads the server's FATAL while idle, which libpq
  // hands to its notice processor (by default: printed raw on stderr).
  CHECK_MESSAGE(wait_until([&] { return contains(read_text(err), "terminating connection"); }),
                "no word of the terminated connections: " << read_text(err));
  touch(go);
  const int code = wait_child(cleanup, worker);

  const std::string text = read_text(err);
  INFO("stderr:\n" << text);
  CHECK(code == 0);
  CHECK(status_of(fixture.url(), id) == "done");
  CHECK(contains(text, "queuectl: PostgreSQL server: FATAL: terminating connection"));
  for (const std::string& line : read_lines(err)) {
    CAPTURE(line);
    CHECK(line.rfind("queuectl: ", 0) == 0);
  }
}

TEST_CASE("cli: a PostgreSQL server's WARNING reaches queuectl's notice log as one line" *
          doctest::skip(backend_under_test() != Backend::postgresql)) {
  FreshDatabase fixture;
  std::vector<std::string> lines;
  set_server_notice_log([&lines](const std::string& line) { lines.push_back(line); });
  {
    std::unique_ptr<Database> db = fixture.connect();
    db->session() << "DO $$ BEGIN RAISE WARNING 'queuectl notice test'; END $$";
    db->session() << "DO $$ BEGIN RAISE WARNING E'two\\nlines'; END $$";
    // Below WARNING nothing, even where the session lets a NOTICE through (behind a pooler
    // in transaction mode client_min_messages cannot be set for the session).
    db->session() << "BEGIN";
    db->session() << "SET LOCAL client_min_messages = notice";
    db->session() << "DO $$ BEGIN RAISE NOTICE 'not shown'; RAISE INFO 'nor this'; END $$";
    db->session() << "COMMIT";
  }
  set_server_notice_log(nullptr);  // back to stderr
  CHECK(lines == std::vector<std::string>{"PostgreSQL server: WARNING: queuectl notice test",
                                          "PostgreSQL server: WARNING: two lines"});
}

TEST_CASE("cli: a server WARNING during a command is one queuectl line, and -q silences it" *
          doctest::skip(backend_under_test() != Backend::postgresql)) {
  FreshDatabase fixture;
  // A trigger of the application's that warns on every insert.
  fixture.db().session() << R"(
    CREATE FUNCTION queuectl_test_warn() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE WARNING 'inserted into %', NEW.queue; RETURN NEW; END $$)";
  fixture.db().session() << "CREATE TRIGGER queuectl_test_warn BEFORE INSERT ON job_queue "
                            "FOR EACH ROW EXECUTE FUNCTION queuectl_test_warn()";
  RunResult loud = ok(fixture.url(), {"enqueue", "warned", "{}"});
  CHECK(loud.err == "queuectl: PostgreSQL server: WARNING: inserted into warned\n");
  RunResult quiet = ok(fixture.url(), {"-q", "enqueue", "warned", "{}"});
  CHECK(quiet.err == "");
  fixture.db().session() << "DROP FUNCTION queuectl_test_warn() CASCADE";
}

}  // namespace queuectl::testing::cli
