// One table, many writers: hand-written SQL in the articles' style (seeds/002: the claim,
// fail and reaper of a MySQL job_queue; not queuectl's statements) runs beside queuectl on
// the same table. Its sessions keep their own time zone, count attempts where the article
// does, and may have created job_queue before queuectl ever ran.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"
#include "db/migrations.hpp"

namespace queuectl::testing::cli {

namespace {

// A connection of the application's, with its session in `zone` (an offset such as
// "+09:00"; servers only: SQLite has no session time zone).
std::unique_ptr<Database> app_session(FreshDatabase& fixture, const std::string& zone = "") {
  auto app = fixture.connect();
  if (zone.empty()) return app;
  if (is_mysql()) {
    app->session() << "SET time_zone = :zone", soci::use(zone, "zone");
  } else {
    // PostgreSQL reads a bare offset as POSIX (sign reversed): name it as an interval.
    app->session() << "SET TIME ZONE INTERVAL '" + zone + "' HOUR TO MINUTE";
  }
  return app;
}

// The article's claim, by id (the test picks which job), with a token of the
// application's: status, worker, token and lease; attempts untouched.
void app_claim(Database& app, std::int64_t id, const std::string& token, int lease_seconds) {
  long long bound = id;
  std::string tok = token;
  app.session() << "UPDATE job_queue SET status = 1, locked_by = 'app', lock_token = :token, "
                   "locked_at = " +
                       now_sql() + ", lock_until = " + now_plus(lease_seconds) +
                       " WHERE id = :id AND status = 0",
      soci::use(tok, "token"), soci::use(bound, "id");
}

// The article's fail: counts the attempt itself, and gives up once attempts + 1 reaches
// max_attempts.
void app_fail(Database& app, std::int64_t id, const std::string& token) {
  long long bound = id;
  std::string tok = token;
  app.session() << "UPDATE job_queue SET attempts = attempts + 1, last_error = 'app failed', "
                   "run_at = " +
                       now_sql() +
                       ", status = CASE WHEN attempts + 1 < max_attempts THEN 0 ELSE 3 END, "
                       "locked_by = NULL, lock_token = NULL, locked_at = NULL, "
                       "lock_until = NULL, finished_at = CASE WHEN attempts + 1 < "
                       "max_attempts THEN NULL ELSE " +
                       now_sql() + " END WHERE id = :id AND status = 1 AND lock_token = :token",
      soci::use(bound, "id"), soci::use(tok, "token");
}

// The article's reaper: every expired lease back to ready.
long long app_reap(Database& app) {
  soci::statement st = statement_once(
      app.session(),
      "UPDATE job_queue SET status = 0, locked_by = NULL, lock_token = NULL, locked_at = NULL, "
      "lock_until = NULL WHERE status = 1 AND lock_until < " +
          now_sql());
  st.execute(true);
  return st.get_affected_rows();
}

long long attempts_of(FreshDatabase& fixture, std::int64_t id) {
  return scalar(fixture.db(), "SELECT attempts FROM job_queue WHERE id = " + std::to_string(id));
}
long long status_of(FreshDatabase& fixture, std::int64_t id) {
  return scalar(fixture.db(), "SELECT status FROM job_queue WHERE id = " + std::to_string(id));
}

// Moves a job's run_at to now, so the next round need not wait out its backoff.
void due_now(FreshDatabase& fixture, std::int64_t id) {
  fixture.db().session() << "UPDATE job_queue SET run_at = " + now_plus(-1) +
                                " WHERE id = " + std::to_string(id);
}

}  // namespace

TEST_CASE("an application's session in another time zone writes jobs that are due on time" *
          doctest::skip(is_sqlite())) {
  FreshDatabase fixture;
  for (const std::string zone : {"+09:00", "-05:00"}) {
    CAPTURE(zone);
    auto app = app_session(fixture, zone);
    // The outbox INSERT, every time left to its default.
    app->session() << "INSERT INTO job_queue (queue, payload) VALUES ('tz', '{}')";
    json jobs = claim(fixture.url(), "tz");
    REQUIRE(jobs.size() == 1);
    // Its run_at is the database's now, in UTC, whatever the writer's zone.
    const double age = seconds_between(jobs[0]["run_at"], jobs[0]["locked_at"]);
    CHECK(age >= 0);
    CHECK(age < 60);
    ok(fixture.url(),
       {"ack", id_text(jobs[0]), "--token", jobs[0]["lock_token"].get<std::string>()});
  }
}

TEST_CASE("an application's reaper in another time zone leaves queuectl's live leases alone" *
          doctest::skip(is_sqlite())) {
  FreshDatabase fixture;
  enqueue(fixture.url(), "tz", "{}");
  json job = claim_one(fixture.url(), "tz", {"--lease", "5m"});
  for (const std::string zone : {"+09:00", "-05:00", "+00:00"}) {
    CAPTURE(zone);
    auto app = app_session(fixture, zone);
    CHECK(app_reap(*app) == 0);
  }
  ok(fixture.url(), {"ack", id_text(job), "--token", job["lock_token"].get<std::string>()});
}

TEST_CASE("queuectl's reaper leaves the leases an application took in another time zone" *
          doctest::skip(is_sqlite())) {
  FreshDatabase fixture;
  json job = enqueue(fixture.url(), "tz", "{}");
  const std::int64_t id = job["id"];
  for (const std::string zone : {"-05:00", "+09:00"}) {
    CAPTURE(zone);
    auto app = app_session(fixture, zone);
    app_claim(*app, id, "app-token", 300);
    REQUIRE(status_of(fixture, id) == 1);
    json reaped = ok_json(fixture.url(), {"reap"});
    CHECK(reaped["requeued_ids"].empty());
    // queuectl sees the lease the application meant: about five minutes.
    json leases = ok_json(fixture.url(), {"leases", "tz"});
    REQUIRE(leases.size() == 1);
    const double left = seconds_between(leases[0]["locked_at"], leases[0]["lock_until"]);
    CHECK(left == doctest::Approx(300).epsilon(0.01));
    app->session() << "UPDATE job_queue SET status = 0, lock_token = NULL, lock_until = NULL, "
                      "locked_at = NULL, locked_by = NULL WHERE id = " +
                          std::to_string(id);
  }
}

TEST_CASE("a time past the server's TIMESTAMP range is bad input, nothing written" *
          doctest::skip(!is_mysql())) {
  FreshDatabase fixture;
  rejects(fixture, {"enqueue", "late", "{}", "--run-at", "2040-01-01T00:00:00Z"}, "2038-01-19");
  rejects(fixture, {"enqueue", "late", "{}", "--delay", "6000d"}, "2038-01-19");
  rejects(fixture, {"enqueue", "late", "--from", "-"}, "2038-01-19",
          "{\"payload\":{}}\n{\"payload\":{},\"run_at\":\"2039-01-01T00:00:00Z\"}\n");
  enqueue(fixture.url(), "late", "{}");
  const std::string before = db_fingerprint(fixture);
  RunResult r = queuectl(fixture.url(), {"claim", "late", "--lease", "6000d"});
  check_usage_error(r, "2038-01-19");
  CHECK(db_fingerprint(fixture) == before);
}

// Attempts: queuectl counts one when a job enters processing, the article counts one in its
// fail. max_attempts 2 in each mix: the job must fail at its second attempt, never sooner,
// never loop.
TEST_CASE("a mixed fleet ends a poison job at max_attempts") {
  FreshDatabase fixture;
  auto app = app_session(fixture);

  SUBCASE("the application claims, queuectl fails") {
    json job = enqueue(fixture.url(), "mix", "{}", {"--max-attempts", "2"});
    const std::int64_t id = job["id"];
    for (int round = 1; round <= 2; ++round) {
      CAPTURE(round);
      app_claim(*app, id, "app-" + std::to_string(round), 60);
      CHECK(attempts_of(fixture, id) == round);
      ok(fixture.url(), {"fail", std::to_string(id), "--token", "app-" + std::to_string(round),
                         "--error", "boom"});
      due_now(fixture, id);
    }
    CHECK(status_of(fixture, id) == 3);
    CHECK(attempts_of(fixture, id) == 2);
  }
  SUBCASE("the application claims, its worker dies, queuectl reaps") {
    json job = enqueue(fixture.url(), "mix", "{}", {"--max-attempts", "2"});
    const std::int64_t id = job["id"];
    for (int round = 1; round <= 2; ++round) {
      CAPTURE(round);
      app_claim(*app, id, "app-" + std::to_string(round), -1);  // a lease already over
      ok(fixture.url(), {"reap"});
      CHECK(attempts_of(fixture, id) == round);
      due_now(fixture, id);
    }
    CHECK(status_of(fixture, id) == 3);
  }
  SUBCASE("queuectl claims, the application fails") {
    enqueue(fixture.url(), "mix", "{}", {"--max-attempts", "2"});
    for (int round = 1; round <= 2; ++round) {
      CAPTURE(round);
      json job = claim_one(fixture.url(), "mix");
      const std::int64_t id = job["id"];
      app_fail(*app, id, job["lock_token"].get<std::string>());
      CHECK(attempts_of(fixture, id) == round);
      // Not given up after the first of two attempts.
      CHECK(status_of(fixture, id) == (round == 1 ? 0 : 3));
      due_now(fixture, id);
    }
  }
  SUBCASE("the application claims and fails, as the article wrote it") {
    json job = enqueue(fixture.url(), "mix", "{}", {"--max-attempts", "2"});
    const std::int64_t id = job["id"];
    for (int round = 1; round <= 2; ++round) {
      CAPTURE(round);
      app_claim(*app, id, "app", 60);
      app_fail(*app, id, "app");
      CHECK(attempts_of(fixture, id) == round);
      CHECK(status_of(fixture, id) == (round == 1 ? 0 : 3));
    }
  }
  SUBCASE("queuectl's own claim, release and fail count as before") {
    enqueue(fixture.url(), "mix", "{}", {"--max-attempts", "2"});
    json job = claim_one(fixture.url(), "mix");
    ok(fixture.url(), {"release", id_text(job), "--token", job["lock_token"].get<std::string>()});
    CHECK(attempts_of(fixture, job["id"].get<std::int64_t>()) == 0);
    job = claim_one(fixture.url(), "mix");
    CHECK(attempts_of(fixture, job["id"].get<std::int64_t>()) == 1);
    ok(fixture.url(),
       {"fail", id_text(job), "--token", job["lock_token"].get<std::string>(), "--permanent"});
    CHECK(status_of(fixture, job["id"].get<std::int64_t>()) == 3);
    CHECK(attempts_of(fixture, job["id"].get<std::int64_t>()) == 1);
  }
}

namespace {

// Drops queuectl's tables, as on a database it never ran on.
void unmigrate(FreshDatabase& fixture) {
  for (const char* table :
       {"job_queue", "queuectl_queues", "queuectl_schema_migrations", "queuectl_locks"})
    fixture.db().session() << std::string("DROP TABLE IF EXISTS ") + table;
}

// seeds/002's job_queue, each type as close as the backend has it.
std::string article_table() {
  if (is_mysql())
    return "CREATE TABLE job_queue (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, queue "
           "VARCHAR(64) NOT NULL, status TINYINT NOT NULL, priority INT NOT NULL DEFAULT 0, "
           "run_at DATETIME(6) NOT NULL, attempts INT NOT NULL DEFAULT 0, max_attempts INT NOT "
           "NULL DEFAULT 25, payload JSON NOT NULL, result JSON NULL, last_error TEXT NULL, "
           "locked_by VARCHAR(128) NULL, lock_token BINARY(16) NULL, locked_at DATETIME(6) "
           "NULL, lock_until DATETIME(6) NULL, dedupe_key VARBINARY(64) NULL, created_at "
           "DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), updated_at DATETIME(6) NOT NULL "
           "DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), finished_at "
           "DATETIME(6) NULL, PRIMARY KEY (id), UNIQUE KEY uq_queue_dedupe (queue, dedupe_key), "
           "KEY ix_pick (queue, status, run_at, priority, id)) ENGINE=InnoDB";
  const std::string ts = is_postgresql() ? "TIMESTAMPTZ" : "TEXT";
  return "CREATE TABLE job_queue (id BIGINT PRIMARY KEY, queue VARCHAR(64) NOT NULL, status "
         "SMALLINT NOT NULL, priority INT NOT NULL DEFAULT 0, run_at " +
         ts +
         " NOT NULL, attempts INT NOT NULL DEFAULT 0, max_attempts INT NOT NULL DEFAULT 25, "
         "payload TEXT NOT NULL, result TEXT, last_error TEXT, locked_by VARCHAR(128), "
         "lock_token BYTEA, locked_at " +
         ts + ", lock_until " + ts + ", dedupe_key TEXT, created_at " + ts + ", updated_at " + ts +
         ", finished_at " + ts + ")";
}

}  // namespace

TEST_CASE("migrate over a job_queue it did not create refuses and records nothing") {
  FreshDatabase fixture;
  unmigrate(fixture);
  fixture.db().session() << article_table();
  fixture.db().session() << "INSERT INTO job_queue (id, queue, status, run_at, payload) VALUES "
                            "(1, 'theirs', 0, " +
                                now_sql() + ", '{}')";
  RunResult r = queuectl(fixture.url(), {"migrate"});
  check_error(r, 1, "table job_queue already exists");
  CHECK(r.err.find("no column group_key") != std::string::npos);
  CHECK(r.err.find("Adopting an existing job_queue") != std::string::npos);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_schema_migrations") == 0);
  // Their table and row are as they were.
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE queue = 'theirs'") == 1);
  // Every other command still says what to do, instead of failing on a missing column.
  check_error(queuectl(fixture.url(), {"claim", "theirs"}), 1, "run `queuectl migrate` first");
  // A second run says the same, and still records nothing.
  check_error(queuectl(fixture.url(), {"migrate"}), 1, "table job_queue already exists");
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_schema_migrations") == 0);
}

TEST_CASE("on MySQL, migrate finishes the table a failed first run left" *
          doctest::skip(!is_mysql())) {
  FreshDatabase fixture;
  unmigrate(fixture);
  // Migration 1's first statement only: its CREATE TABLE committed, the run then stopped.
  std::string first;
  for (const Migration& m : migrations_for(Backend::mysql))
    if (m.version == 1) first = split_statements(m.sql).front();
  REQUIRE(first.find("CREATE TABLE IF NOT EXISTS job_queue") != std::string::npos);
  fixture.db().session() << first;
  RunResult r = ok(fixture.url(), {"migrate"});
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_schema_migrations WHERE version = 1") ==
        1);
  json job = enqueue(fixture.url(), "after", "{}");
  CHECK(job["status"] == "ready");
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// A queue name that no command accepts (a control character, a space, too long) is refused
// by the table itself, so an application's own INSERT cannot store jobs that the command
// line can neither list nor work; an UPDATE that renames a queue is held to the same rule.
// Before, all three backends stored "evil\x1b[2J" and `list --queue` refused to name it.
TEST_CASE("the table refuses a queue name the command line cannot name") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto app = fixture.connect();
  // The refusal names the rule: the trigger's message, or PostgreSQL's constraint name.
  auto names_rule = [](const soci::soci_error& e) {
    const std::string what = e.what();
    return what.find("queue name") != std::string::npos ||
           what.find("job_queue_queue_name") != std::string::npos;
  };
  auto insert = [&](const std::string& queue) {
    try {
      app->session() << "INSERT INTO job_queue (queue, payload) VALUES (:q, '{}')",
          soci::use(queue, "q");
      return true;
    } catch (const soci::soci_error& e) {
      // An empty or too long name may meet the column's own limits first.
      if (!queue.empty() && queue.size() <= 64) CHECK_MESSAGE(names_rule(e), e.what());
      return false;
    }
  };
  for (const std::string bad :
       {std::string("evil\x1b[2J"), std::string("two words"), std::string("tab\there"),
        std::string("line\n"), std::string(""), std::string(65, 'a'), std::string("caf\xc3\xa9")}) {
    CAPTURE(bad);
    CHECK_FALSE(insert(bad));
  }
  CHECK(ok_json(url, {"stats"}).empty());  // nothing was stored
  CHECK(insert("Mail.v2:eu-1_x"));
  CHECK(insert(std::string(64, 'q')));
  // Renaming: to a good name works, to a bad one is refused and changes nothing.
  const std::string renamed = "renamed";
  app->session() << "UPDATE job_queue SET queue = :q WHERE queue = 'Mail.v2:eu-1_x'",
      soci::use(renamed, "q");
  const std::string evil = "evil\x1b[2J";
  bool refused = false;
  try {
    app->session() << "UPDATE job_queue SET queue = :q WHERE queue = 'renamed'",
        soci::use(evil, "q");
  } catch (const soci::soci_error& e) {
    refused = names_rule(e);
    CHECK_MESSAGE(refused, e.what());
  }
  CHECK(refused);
  CHECK(ok_json(url, {"list", "renamed"}).size() == 1);
  // queuectl's own way to another queue, a dead letter, moves the job as before.
  ok(url, {"queue", "renamed", "--dead-letter", "renamed.dead"});
  json job = claim_one(url, "renamed");
  ok(url, {"fail", id_text(job), "--token", job["lock_token"].get<std::string>(), "--permanent"});
  CHECK(show(url, job["id"])["queue"] == "renamed.dead");
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// SQLite has no timestamp type and the claim compares run_at as text: an application's
// ISO 8601 'T...Z' looked due in `list` but was not claimed before the next UTC day, and a
// number sorted before every job, could not be read back and held up its whole queue. The
// table (migration 19) now takes queuectl's form only.
TEST_CASE("SQLite: the table refuses a run_at that is not queuectl's time text" *
          doctest::skip(!is_sqlite())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto app = fixture.connect();
  auto insert = [&](const std::string& run_at_sql) {
    try {
      app->session() << "INSERT INTO job_queue (queue, payload, run_at) VALUES ('app', '{}', " +
                            run_at_sql + ")";
      return true;
    } catch (const soci::soci_error& e) {
      CHECK_MESSAGE(std::string(e.what()).find("job_queue.run_at: write a UTC time as text") !=
                        std::string::npos,
                    e.what());
      return false;
    }
  };
  for (const char* bad :
       {"strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 hour')", "unixepoch('now')", "julianday('now')",
        "'2026-13-01 00:00:00'", "'2026-11-30 10:00'", "'2026-11-30 10:00:00.'",
        "'2026-11-30 10:00:00.1234567'", "'2026-11-30 10:00:00+09:00'", "NULL"}) {
    CAPTURE(bad);
    CHECK_FALSE(insert(bad));
  }
  CHECK(ok_json(url, {"stats"}).empty());  // nothing was stored
  for (const char* good :
       {"strftime('%Y-%m-%d %H:%M:%f', 'now', '-1 hour')",
        "strftime('%Y-%m-%d %H:%M:%S', 'now', '-1 hour')", "'2000-01-01 00:00:00.123456'"}) {
    CAPTURE(good);
    CHECK(insert(good));
  }
  CHECK(claim(url, "app", {"--limit", "10"}).size() == 3);
  // An UPDATE that sets run_at is held to the same rule.
  const std::int64_t id = enqueue(url, "later", "{}", {"--delay", "1h"})["id"].get<std::int64_t>();
  CHECK_THROWS_AS(app->session() << "UPDATE job_queue SET run_at = unixepoch('now') WHERE id = " +
                                        std::to_string(id),
                  soci::soci_error);
  app->session()
      << "UPDATE job_queue SET run_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE id = " +
             std::to_string(id);
  CHECK(claim_one(url, "later")["id"] == id);
}

}  // namespace queuectl::testing::cli
