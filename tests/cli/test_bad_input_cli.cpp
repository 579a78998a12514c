// Bad input through the real binary: exit 2, one line on stderr naming the problem,
// nothing on stdout, and nothing written. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// Runs queuectl, requires a usage error naming `needle`, and that no job row was
// added or removed.
void rejects(FreshDatabase& fixture, const std::vector<std::string>& args,
             const std::string& needle, const std::string& input = "") {
  std::string shown;
  for (const auto& a : args) shown += " '" + a.substr(0, 80) + "'";
  INFO("queuectl" << shown);
  long long before = job_rows(fixture);
  check_usage_error(queuectl(fixture.url(), args, input), needle);
  CHECK(job_rows(fixture) == before);
}

}  // namespace

TEST_CASE("cli: bad input to enqueue writes nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "existing");
  REQUIRE(job_rows(fixture) == 1);

  SUBCASE("malformed JSON payload") {
    rejects(fixture, {"enqueue", "q", R"({"a":)"}, "not valid JSON");
    rejects(fixture, {"enqueue", "q", "not json"}, "not valid JSON");
    rejects(fixture, {"enqueue", "q", R"({"a":1} trailing)"}, "not valid JSON");
    rejects(fixture, {"enqueue", "q", "-"}, "not valid JSON", "{\"a\":\n");
  }

  SUBCASE("queue names outside [A-Za-z0-9._:-]{1,64}") {
    rejects(fixture, {"enqueue", "bad name", "{}"}, "queue name");
    rejects(fixture, {"enqueue", "x'; DROP TABLE job_queue;--", "{}"}, "queue name");
    rejects(fixture, {"enqueue", std::string(65, 'q'), "{}"}, "queue name");
    rejects(fixture, {"enqueue", "caf\xc3\xa9", "{}"}, "queue name");
    rejects(fixture, {"enqueue", "", "{}"}, "queue");
    // 64 characters and every allowed punctuation mark are fine.
    enqueue(url, std::string(64, 'q'));
    enqueue(url, "A-z_0.9:x");
    CHECK(job_rows(fixture) == 3);
  }

  SUBCASE("bad durations and times") {
    rejects(fixture, {"enqueue", "q", "{}", "--delay", "soon"}, "--delay");
    rejects(fixture, {"enqueue", "q", "{}", "--delay", "5x"}, "--delay");
    rejects(fixture, {"enqueue", "q", "{}", "--delay", "-5s"}, "--delay");
    rejects(fixture, {"enqueue", "q", "{}", "--run-at", "tomorrow"}, "tomorrow");
    rejects(fixture, {"enqueue", "q", "{}", "--run-at", "2026-02-30T00:00:00Z"}, "2026-02-30");
    rejects(fixture, {"enqueue", "q", "{}", "--delay", "5m", "--run-at", "2001-01-01T00:00:00Z"},
            "--run-at");
  }

  SUBCASE("bad numbers") {
    rejects(fixture, {"enqueue", "q", "{}", "--max-attempts", "0"}, "--max-attempts");
    rejects(fixture, {"enqueue", "q", "{}", "--max-attempts", "-1"}, "--max-attempts");
    rejects(fixture, {"enqueue", "q", "{}", "--priority", "abc"}, "--priority");
    rejects(fixture, {"enqueue", "q", "{}", "--priority", "99999999999"}, "--priority");
    rejects(fixture, {"--max-payload", "abc", "enqueue", "q", "{}"}, "--max-payload");
    // A negative cap must not wrap around to "no limit".
    rejects(fixture, {"--max-payload", "-1", "enqueue", "q", "{}"}, "--max-payload");
  }

  SUBCASE("payload over --max-payload") {
    std::string payload = "\"" + std::string(198, 'x') + "\"";  // 200 bytes
    rejects(fixture, {"--max-payload", "100", "enqueue", "q", payload}, "100");
    std::string fits = "\"" + std::string(98, 'x') + "\"";  // 100 bytes
    ok(url, {"--max-payload", "100", "enqueue", "q", fits});
    CHECK(job_rows(fixture) == 2);
  }

  SUBCASE("payload over the 1 MiB default, through stdin") {
    const std::size_t mib = 1024 * 1024;
    std::string over = "\"" + std::string(mib - 1, 'x') + "\"";  // 1 MiB + 1
    REQUIRE(over.size() == mib + 1);
    rejects(fixture, {"enqueue", "q", "-"}, "1048576", over);
    std::string at_limit = "\"" + std::string(mib - 2, 'x') + "\"";  // exactly 1 MiB
    ok(url, {"-q", "enqueue", "q", "-"}, at_limit);
    CHECK(job_rows(fixture) == 2);
  }

  SUBCASE("--from with a bad line 2 of 3 writes none of them") {
    TempDir dir;
    std::string file = dir.write("jobs.ndjson",
                                 "{\"queue\":\"bulk\",\"payload\":{\"n\":1}}\n"
                                 "{\"queue\":\"bulk\",\"payload\":{\"n\":2\n"
                                 "{\"queue\":\"bulk\",\"payload\":{\"n\":3}}\n");
    rejects(fixture, {"enqueue", "--from", file}, "line 2");
    std::string bad_queue = dir.write("queue.ndjson",
                                      "{\"queue\":\"bulk\"}\n"
                                      "{\"queue\":\"bad name\"}\n"
                                      "{\"queue\":\"bulk\"}\n");
    rejects(fixture, {"enqueue", "--from", bad_queue}, "line 2");
    rejects(
        fixture, {"enqueue", "--from", "-"}, "line 2",
        "{\"queue\":\"bulk\"}\n{\"queue\":\"bulk\",\"delay\":\"soon\"}\n{\"queue\":\"bulk\"}\n");
    rejects(fixture, {"enqueue", "--from", dir.path() + "/missing.ndjson"}, "missing.ndjson");
  }

  SUBCASE("usage errors") {
    rejects(fixture, {"enqueue", "q", "{}", "--bogus"}, "--bogus");
    rejects(fixture, {"frobnicate"}, "frobnicate");
    rejects(fixture, {}, "subcommand");
  }
}

TEST_CASE("cli: bad input to claim and list") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "q");

  SUBCASE("claim") {
    for (const char* limit : {"0", "-1", "abc", "1.5"})
      rejects(fixture, {"claim", "q", "--limit", limit}, "--limit");
    rejects(fixture, {"claim", "q", "--lease", "5x"}, "--lease");
    rejects(fixture, {"claim", "q", "--lease", "0s"}, "--lease");
    rejects(fixture, {"claim", "bad name"}, "queue name");
    rejects(fixture, {"claim", "x'; DROP TABLE job_queue;--"}, "queue name");
    rejects(fixture, {"claim"}, "queue");
    // Nothing was claimed by any of them.
    CHECK(show(url, job["id"])["status"] == "ready");
    CHECK(show(url, job["id"])["attempts"] == 0);
  }

  SUBCASE("list") {
    for (const char* limit : {"0", "-1", "abc"})
      rejects(fixture, {"list", "--limit", limit}, "--limit");
    rejects(fixture, {"list", "--status", "bogus"}, "bogus");
    rejects(fixture, {"list", "--status", "ready,bogus"}, "bogus");
    rejects(fixture, {"list", "--after", "abc"}, "abc");
    rejects(fixture, {"list", "bad name"}, "queue name");
  }

  SUBCASE("stats") {
    rejects(fixture, {"stats", "bad name"}, "queue name");
  }
}

TEST_CASE("cli: bad job ids and tokens change nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  json claimed = claim_one(url, "q");
  const std::string id = id_text(claimed);
  const std::string token = claimed["lock_token"];
  json before = show(url, claimed["id"]);

  for (const char* bad :
       {"abc", "1; DROP TABLE job_queue", "-5", "0", "1e3", " 1", "1.0", "99999999999999999999"})
    rejects(fixture, {"show", bad}, "job id");
  for (const char* bad : {"abc", "1; DROP TABLE job_queue", "-5", "0"}) {
    CAPTURE(bad);
    rejects(fixture, {"ack", bad, "--token", token}, "job id");
    rejects(fixture, {"fail", bad, "--token", token}, "job id");
    rejects(fixture, {"extend", bad, "--token", token}, "job id");
    rejects(fixture, {"release", bad, "--token", token}, "job id");
  }
  rejects(fixture, {"show"}, "id");
  rejects(fixture, {"ack"}, "id");
  rejects(fixture, {"ack", id}, "--token");
  rejects(fixture, {"fail", id}, "--token");
  rejects(fixture, {"extend", id}, "--token");
  rejects(fixture, {"release", id}, "--token");
  rejects(fixture, {"ack", id, "--token", token, "--result", "{oops"}, "--result");
  rejects(fixture, {"fail", id, "--token", token, "--retry-in", "later"}, "--retry-in");
  rejects(fixture, {"fail", id, "--token", token, "--retry-in", "1s", "--permanent"},
          "--permanent");
  rejects(fixture, {"extend", id, "--token", token, "--lease", "5x"}, "--lease");
  CHECK(show(url, claimed["id"]) == before);
}

TEST_CASE("cli: ack --from with a bad line acks none") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  enqueue(url, "q");
  json jobs = claim(url, "q", {"--limit", "2"});
  REQUIRE(jobs.size() == 2);
  std::string good = json{{"id", jobs[0]["id"]}, {"token", jobs[0]["lock_token"]}}.dump();
  std::string other = json{{"id", jobs[1]["id"]}, {"token", jobs[1]["lock_token"]}}.dump();

  rejects(fixture, {"ack", "--from", "-"}, "line 2", good + "\n{not json\n" + other + "\n");
  rejects(fixture, {"ack", "--from", "-"}, "line 2", good + "\n{\"id\":\"abc\",\"token\":\"t\"}\n");
  rejects(fixture, {"ack", "--from", "-"}, "line 2", good + "\n{\"id\":5}\n");
  rejects(fixture, {"ack", "--from", "-"}, "line 3",
          good + "\n" + other + "\n{\"id\":1,\"token\":\"t\",\"result\":{oops}}\n");
  for (const json& j : jobs) CHECK(show(url, j["id"])["status"] == "processing");
}

TEST_CASE("cli: bad database URLs are rejected and never show the password") {
  FreshDatabase fixture;
  enqueue(fixture.url(), "q");

  for (const char* url :
       {"nosuch://x", "postgresql://u:s3cret@host:notaport/db", "mysql://u:s3cret@host:99999/db",
        "mysql://u:s3cret@/db", "postgresql://u:s3cret@host/db?sslmode", "sqlite:"}) {
    CAPTURE(url);
    RunResult r = queuectl(url, {"enqueue", "q", "{}"});
    check_usage_error(r, "URL");
    CHECK(r.err.find("s3cret") == std::string::npos);
  }
  RunResult env_url =
      run_process({QUEUECTL_BINARY, "enqueue", "q", "{}"}, "", {{"QUEUECTL_DB", "nosuch://x"}});
  check_usage_error(env_url, "URL");
  CHECK(job_rows(fixture) == 1);
}

TEST_CASE("cli: -o bogus is rejected before anything is written") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "q");

  SUBCASE("enqueue") {
    rejects(fixture, {"-o", "bogus", "enqueue", "q", "{}"}, "bogus");
  }

  SUBCASE("claim") {
    rejects(fixture, {"-o", "bogus", "claim", "q"}, "bogus");
    json after = show(url, job["id"]);
    CHECK(after["status"] == "ready");
    CHECK(after["attempts"] == 0);
  }

  SUBCASE("ack") {
    json claimed = claim_one(url, "q");
    rejects(fixture,
            {"-o", "bogus", "ack", id_text(claimed), "--token",
             claimed["lock_token"].get<std::string>()},
            "bogus");
    CHECK(show(url, job["id"])["status"] == "processing");
  }

  SUBCASE("read-only commands") {
    rejects(fixture, {"-o", "bogus", "list"}, "bogus");
    rejects(fixture, {"-o", "bogus", "show", id_text(job)}, "bogus");
  }
}

}  // namespace queuectl::testing::cli
