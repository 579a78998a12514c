// Bad input through the real binary: exit 2, one line on stderr naming the problem,
// nothing on stdout, and nothing written. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

// The proof of "nothing written" can fail: the fingerprint sees a lease pushed forward, a
// pause and a resume, and a change to a single column.
TEST_CASE("cli: the database fingerprint sees every kind of write") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  json held = claim_one(url, "q");
  std::string last = db_fingerprint(fixture);
  auto changed = [&] {
    std::string now = db_fingerprint(fixture);
    bool differs = now != last;
    last = now;
    return differs;
  };
  ok(url,
     {"extend", id_text(held), "--token", held["lock_token"].get<std::string>(), "--lease", "1h"});
  CHECK(changed());
  ok(url, {"pause", "q"});
  CHECK(changed());
  ok(url, {"resume", "q"});
  CHECK(changed());
  for (const char* set : {"last_error = 'x'", "locked_by = 'someone else'", "group_key = 'g'",
                          "max_attempts = 7", "lock_until = created_at"}) {
    CAPTURE(set);
    fixture.db().session() << std::string("UPDATE job_queue SET ") + set;
    CHECK(changed());
  }
  CHECK_FALSE(changed());
}

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
    // Valid JSON, but a NUL character no backend may store (PostgreSQL's jsonb cannot).
    rejects(fixture, {"enqueue", "q", R"({"a":"x\u0000y"})"}, "NUL");
    rejects(fixture, {"enqueue", "--from", "-"}, "line 2",
            "{\"queue\":\"q\"}\n{\"queue\":\"q\",\"payload\":[\"\\u0000\"]}\n");
    // Nesting: 31 levels are stored on every backend (MariaDB refuses 32); deeper is bad
    // input, however deep (200,000 levels once crashed the recursive printer).
    auto nested = [](std::size_t n) { return std::string(n, '[') + std::string(n, ']'); };
    rejects(fixture, {"enqueue", "q", nested(32)}, "nested deeper than 31");
    rejects(fixture, {"enqueue", "q", "-"}, "nested deeper than 31", nested(200000));
    rejects(fixture, {"enqueue", "--from", "-"}, "line 2",
            "{\"queue\":\"q\"}\n{\"queue\":\"q\",\"payload\":" + nested(200000) + "}\n");
    rejects(fixture, {"enqueue", "--from", "-"}, "nested deeper than 31",
            "{\"queue\":\"q\",\"payload\":" + nested(32) + "}\n");
    const std::int64_t deep = enqueue(url, "q", nested(31))["id"].get<std::int64_t>();
    CHECK(show(url, deep)["payload"].dump() == nested(31));
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
    rejects(fixture, {"enqueue", "q", "{}", "--run-at", "9999-12-31T23:00:00-05:00"}, "9999");
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
    // A folder is not an empty file: exit 2 naming it (it was "0 job(s)" and exit 0).
    rejects(fixture, {"enqueue", "--from", dir.path()}, dir.path() + "': it is a folder");
    rejects(fixture, {"ack", "--from", dir.path()}, dir.path() + "': it is a folder");
  }

  SUBCASE("usage errors") {
    rejects(fixture, {"enqueue", "q", "{}", "--bogus"}, "--bogus");
    rejects(fixture, {"frobnicate"}, "frobnicate");
    rejects(fixture, {}, "no command given");
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

// A database with a job in every state, a paused queue and an expired lease, so that any
// bad command that slipped through would change something the fingerprint sees.
struct OperatedDatabase {
  FreshDatabase fixture;
  std::string url = fixture.url();
  std::string ready, held, token, failed, done, expired;
  OperatedDatabase() {
    enqueue(url, "q", "{}", {"--max-attempts", "1"});
    expired = id_text(claim_one(url, "q", {"--lease", "1s"}));
    failed = id_text(enqueue(url, "q"));
    json c = claim_one(url, "q");
    ok(url, {"fail", failed, "--token", c["lock_token"].get<std::string>(), "--permanent"});
    done = id_text(enqueue(url, "q"));
    c = claim_one(url, "q");
    ok(url, {"ack", done, "--token", c["lock_token"].get<std::string>()});
    held = id_text(enqueue(url, "q"));
    token = claim_one(url, "q", {"--lease", "1h"})["lock_token"];
    ready = id_text(enqueue(url, "q"));
    ok(url, {"pause", "paused"});
    // Wait until the short lease has lapsed, so that a wrongly accepted reap would act.
    bool lapsed = false;
    for (int i = 0; i < 400 && !lapsed; ++i) {
      lapsed = !ok_json(url, {"leases", "--expired"}).empty();
      if (!lapsed) usleep(50000);
    }
    REQUIRE_MESSAGE(lapsed, "the 1s lease never expired");
  }
};

TEST_CASE("cli: bad input to retry, cancel, purge, pause and resume writes nothing") {
  OperatedDatabase d;
  FreshDatabase& f = d.fixture;

  SUBCASE("retry") {
    rejects(f, {"retry"}, "job ids");
    rejects(f, {"retry", "emails", d.failed}, "'emails' is not a job id");
    rejects(f, {"retry", d.failed, "--queue", "q"}, "not both");
    for (const char* bad : {"abc", "0", "1.5", "1e3", "99999999999999999999"})
      rejects(f, {"retry", d.failed, bad}, "job id");
    rejects(f, {"retry", "0"}, "job id");
    rejects(f, {"retry", "--queue", "bad name"}, "queue name");
    rejects(f, {"retry", "--queue", "x'; DROP TABLE job_queue;--"}, "queue name");
    rejects(f, {"retry", "--queue", std::string(65, 'q')}, "queue name");
    rejects(f, {"retry", "--queue", "q", "--status", "bogus"}, "bogus");
    rejects(f, {"retry", "--queue", "q", "--status", "failed,bogus"}, "bogus");
    for (const char* not_finished : {"ready", "processing", "done"})
      rejects(f, {"retry", "--queue", "q", "--status", not_finished}, not_finished);
    for (const char* bad : {"soon", "5x", "-1h", "1h-"})
      rejects(f, {"retry", "--queue", "q", "--older-than", bad}, "--older-than");
    rejects(f, {"retry", d.failed, "--status", "failed"}, "--status");
    rejects(f, {"retry", d.failed, "--older-than", "1h"}, "--older-than");
    rejects(f, {"retry", d.failed, "--bogus"}, "--bogus");
    rejects(f, {"-o", "prometheus", "retry", d.failed}, "-o prometheus");
    rejects(f, {"-o", "prometheus", "retry", "--queue", "q"}, "-o prometheus");
  }

  SUBCASE("cancel") {
    rejects(f, {"cancel"}, "cancel needs job ids, or --queue QUEUE");
    rejects(f, {"cancel", "--queue", "bad queue!"}, "queue");
    for (const char* bad : {"abc", "0", "-5", "1; DROP TABLE job_queue", "2.0"})
      rejects(f, {"cancel", d.ready, bad}, "job id");
    rejects(f, {"cancel", d.ready, "--bogus"}, "--bogus");
    rejects(f, {"-o", "prometheus", "cancel", d.ready}, "-o prometheus");
    rejects(f, {"-o", "prometheus", "cancel", "--force", d.held}, "-o prometheus");
  }

  SUBCASE("purge") {
    rejects(f, {"purge"}, "--older-than");
    rejects(f, {"purge", "q", "--status", "failed"}, "--older-than");
    for (const char* bad : {"soon", "5x", "-1d", "", "1.5.2h"})
      rejects(f, {"purge", "--older-than", bad}, "--older-than");
    rejects(f, {"purge", "--older-than", "0s", "--status", "bogus"}, "bogus");
    rejects(f, {"purge", "--older-than", "0s", "--status", "done,"}, "status");
    for (const char* unfinished : {"ready", "processing"})
      rejects(f, {"purge", "--older-than", "0s", "--status", unfinished}, unfinished);
    for (const char* bad : {"0", "-1", "abc", "10001"})
      rejects(f, {"purge", "--older-than", "0s", "--batch", bad}, "--batch");
    rejects(f, {"purge", "bad name", "--older-than", "0s"}, "queue name");
    rejects(f, {"purge", "x'; DELETE FROM job_queue;--", "--older-than", "0s"}, "queue name");
    rejects(f, {"-o", "prometheus", "purge", "--older-than", "0s"}, "-o prometheus");
  }

  SUBCASE("pause and resume") {
    for (const char* cmd : {"pause", "resume"}) {
      CAPTURE(cmd);
      rejects(f, {cmd}, "queue");
      rejects(f, {cmd, "bad name"}, "queue name");
      rejects(f, {cmd, "x'; DROP TABLE queuectl_queues;--"}, "queue name");
      rejects(f, {cmd, std::string(65, 'p')}, "queue name");
      rejects(f, {cmd, ""}, "queue");
      rejects(f, {cmd, "q", "extra"}, "extra");
    }
    rejects(f, {"-o", "prometheus", "pause", "q"}, "-o prometheus");
    rejects(f, {"-o", "prometheus", "resume", "paused"}, "-o prometheus");
  }
}

TEST_CASE("cli: bad input to leases, reap, work, lock and the job commands writes nothing") {
  OperatedDatabase d;
  FreshDatabase& f = d.fixture;
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  const std::vector<std::string> cmd = {"--", "sh", "-c", "touch '" + marker + "'"};
  auto with_cmd = [&](std::vector<std::string> args) {
    args.insert(args.end(), cmd.begin(), cmd.end());
    return args;
  };

  SUBCASE("leases") {
    rejects(f, {"leases", "bad name"}, "queue name");
    for (const char* bad : {"soon", "5x", "-1s"}) {
      rejects(f, {"leases", "--expiring-within", bad}, "--expiring-within");
      rejects(f, {"leases", "--older-than", bad}, "--older-than");
    }
    rejects(f, {"leases", "--expired", "--expiring-within", "1m"}, "--expired");
    for (const char* bad : {"0", "-1", "abc"}) rejects(f, {"leases", "--limit", bad}, "--limit");
    rejects(f, {"leases", "--worker", std::string(129, 'w')}, "worker");
    rejects(f, {"leases", "--worker", "w\n1"}, "worker");
    rejects(f, {"-o", "prometheus", "leases"}, "-o prometheus");
  }

  SUBCASE("reap") {
    rejects(f, {"reap", "bad name"}, "queue name");
    for (const char* bad : {"0", "-1", "abc", "10001"})
      rejects(f, {"reap", "--batch", bad}, "--batch");
    rejects(f, {"reap", "--bogus"}, "--bogus");
    rejects(f, {"-o", "prometheus", "reap"}, "-o prometheus");
    rejects(f, {"-o", "bogus", "reap"}, "bogus");
  }

  SUBCASE("work") {
    // --drain everywhere: a bad run that slipped through would not run forever.
    rejects(f, {"work", "q", "--drain"}, "command");
    rejects(f, with_cmd({"work", "bad name", "--drain"}), "queue name");
    for (const char* bad : {"0", "-1", "257", "abc"})
      rejects(f, with_cmd({"work", "q", "--drain", "--concurrency", bad}), "--concurrency");
    for (const char* bad : {"soon", "100ms", "0s", "-1s"})
      rejects(f, with_cmd({"work", "q", "--drain", "--lease", bad}), "--lease");
    for (const char* bad : {"soon", "0s", "-1s"})
      rejects(f, with_cmd({"work", "q", "--drain", "--timeout", bad}), "--timeout");
    rejects(f, with_cmd({"work", "q", "--drain", "--grace", "-1s"}), "--grace");
    rejects(f, with_cmd({"work", "q", "--drain", "--max-jobs", "-1"}), "--max-jobs");
    rejects(f, with_cmd({"work", "q", "--drain", "--batch", "-1"}), "--batch");
    rejects(f, with_cmd({"work", "q", "--drain", "--worker", std::string(129, 'w')}), "worker");
    rejects(f, with_cmd({"-o", "prometheus", "work", "q", "--drain"}), "-o prometheus");
    CHECK_FALSE(std::filesystem::exists(marker));
  }

  SUBCASE("lock") {
    rejects(f, {"lock"}, "name");
    rejects(f, {"lock", "nightly"}, "command");
    rejects(f, with_cmd({"lock", ""}), "lock name");
    rejects(f, with_cmd({"lock", std::string(256, 'n')}), "lock name");
    for (const char* bad : {"soon", "5x", "-1s"})
      rejects(f, with_cmd({"lock", "nightly", "--wait", bad}), "--wait");
    rejects(f, with_cmd({"-o", "prometheus", "lock", "nightly"}), "-o prometheus");
    CHECK_FALSE(std::filesystem::exists(marker));
  }

  SUBCASE("list, show and stats") {
    // (--after 0 is the first page.)
    for (const char* bad : {"-5", "1.5", "00x"}) rejects(f, {"list", "--after", bad}, "job id");
    rejects(f, {"list", "--limit", "100001"}, "--limit");
    rejects(f, {"list", "q", "other"}, "other");
    rejects(f, {"-o", "prometheus", "list"}, "-o prometheus");
    rejects(f, {"-o", "prometheus", "show", d.ready}, "-o prometheus");
    rejects(f, {"show", d.ready, d.done}, d.done);
    rejects(f, {"stats", "q", "bad name"}, "queue name");
    rejects(f, {"stats", "x'; DROP TABLE job_queue;--"}, "queue name");
    rejects(f, {"-o", "bogus", "stats"}, "bogus");
  }

  SUBCASE("ack, fail, extend and release with a live token") {
    const std::string& t = d.token;
    for (const char* bad : {"0s", "-5s", "soon"})
      rejects(f, {"extend", d.held, "--token", t, "--lease", bad}, "--lease");
    rejects(f, {"fail", d.held, "--token", t, "--retry-in", "-1s"}, "--retry-in");
    rejects(f, {"fail", d.held, "--token", t, "--error", "bad \xff utf-8"}, "UTF-8");
    for (const char* c : {"ack", "fail", "extend", "release"}) {
      CAPTURE(c);
      rejects(f, {"-o", "prometheus", c, d.held, "--token", t}, "-o prometheus");
      rejects(f, {c, d.held, "--token", t, "--bogus"}, "--bogus");
    }
    rejects(f, {"release", d.held, "--token", t, "--lease", "1m"}, "--lease");
    CHECK(show(d.url, std::stoll(d.held))["lock_token"] == t);
  }
}

// Options that cannot mean anything together, or for this command, are refused before it
// runs: --field names fields of jobs, and `stats` prints none (it printed blank lines, exit 0);
// -q and -v together.
TEST_CASE("cli: bad input: --field on a command that prints no jobs, and -q with -v") {
  FreshDatabase fixture;
  enqueue(fixture.url(), "q");
  rejects(fixture, {"stats", "--field", "id"}, "`stats` prints no jobs");
  rejects(fixture, {"groups", "q", "--field", "id"}, "`groups` prints no jobs");
  rejects(fixture, {"-q", "-v", "stats"}, "exclude each other");
  rejects(fixture, {"--verbose", "--quiet", "enqueue", "q"}, "exclude each other");
  // dead_from is a job's field like the others (show prints it; completions offer it).
  RunResult r = ok(fixture.url(), {"list", "q", "--field", "id,dead_from"});
  CHECK(r.out == "1\t\n");
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// Typos meet a suggestion, not silence: commands and options get "did you mean", a queue
// nobody has used gets one line on stderr with the nearest known name, and `queuectl
// version` works as kubectl users type it.
TEST_CASE("cli: bad input: typos get 'did you mean', and `version` works") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "email");
  rejects(fixture, {"stat"}, "unknown command 'stat'; did you mean 'stats'?");
  rejects(fixture, {"enqueue", "email", "--priorty", "5"}, "did you mean --priority?");
  rejects(fixture, {"list", "--stauts", "failed"}, "did you mean --status?");
  rejects(fixture, {"frobnicate"}, "unknown command 'frobnicate' (see");

  RunResult v = run_process({QUEUECTL_BINARY, "version"});
  RunResult flag = run_process({QUEUECTL_BINARY, "--version"});
  CHECK(v.exit_code == 0);
  CHECK(v.out == flag.out);
  CHECK(v.out.rfind("queuectl ", 0) == 0);
  // ack's --token cannot be marked required (ack --from takes none), so its help says when.
  CHECK(run_process({QUEUECTL_BINARY, "help", "ack"}).out.find("(required with ID;") !=
        std::string::npos);

  RunResult claim = queuectl(url, {"claim", "emial"});
  INFO(dump(claim));
  CHECK(claim.exit_code == 0);
  CHECK(claim.err.find("queue emial has never had a job or a setting in ") != std::string::npos);
  CHECK(claim.err.find("; did you mean email?") != std::string::npos);
  // Once, in work too (here --drain, which ends when nothing is due).
  RunResult work = queuectl(url, {"work", "emial", "--drain", "--", "true"});
  INFO(dump(work));
  CHECK(work.exit_code == 0);
  const std::string note = "queue emial has never had a job or a setting";
  const auto first = work.err.find(note);
  CHECK(first != std::string::npos);
  CHECK(work.err.find(note, first + 1) == std::string::npos);
  // A queue that exists says nothing of the kind.
  ok(url, {"pause", "paused-q"});
  RunResult settings_only = queuectl(url, {"claim", "paused-q"});
  CHECK(settings_only.err.find("never had") == std::string::npos);
}

}  // namespace queuectl::testing::cli
