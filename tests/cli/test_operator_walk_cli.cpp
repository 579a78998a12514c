// What a third walkthrough found in the less walked parts (the web view, groups, enqueue
// --from with parents and batches, top, batch create): each case runs the real binary on
// every backend and failed on the binary before its fix.
#include <doctest/doctest.h>

#include <httplib.h>

#include "cli/cli_helpers.hpp"
#include "cli/serve_helpers.hpp"

namespace queuectl::testing::cli {

// A head that waits for another job (enqueue --after) was shown as a retry backoff: its
// head_status `ready`, and its run_at the stand-in 9999-12-31 ("in 7978y" in the table).
TEST_CASE("cli: groups shows a head waiting for other jobs as waiting, without a run_at") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const json parent = enqueue(url, "parent");
  const json head =
      enqueue(url, "gq", R"({"a":1})", {"--group-key", "k", "--after", id_text(parent)});
  enqueue(url, "gq", R"({"a":2})", {"--group-key", "k"});
  const json groups = ok_json(url, {"groups", "gq"});
  REQUIRE(groups.size() == 1);
  CHECK(groups[0]["head_id"] == head["id"]);
  CHECK(groups[0]["state"] == "waiting");
  CHECK(groups[0]["head_status"] == "waiting");
  CHECK(groups[0]["run_at"].is_null());
  CHECK(groups[0]["waiting"] == 1);
  for (const char* format : {"table", "wide"}) {
    CAPTURE(format);
    const std::string text = ok(url, {"groups", "gq", "-o", format}).out;
    CHECK(text.find("9999") == std::string::npos);
    CHECK(text.find("2038") == std::string::npos);
    CHECK(text.find("y  ") == std::string::npos);  // "in 7978y"
    CHECK(contains(text, "waiting"));
  }
  // A head held back by a delay still shows when it is due.
  enqueue(url, "gq2", "{}", {"--group-key", "d", "--delay", "1h"});
  enqueue(url, "gq2", "{}", {"--group-key", "d"});
  const json delayed = ok_json(url, {"groups", "gq2"});
  REQUIRE(delayed.size() == 1);
  CHECK(delayed[0]["head_status"] == "ready");
  CHECK(is_rfc3339_us(delayed[0]["run_at"]));
}

// A parent with no job, or a closed batch, refused `enqueue --from` without saying which line
// (and named the options --after and --batch, which the user never typed).
TEST_CASE("cli: enqueue --from names the line of a missing parent or a closed batch") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const json parent = enqueue(url, "p");
  const std::string p = id_text(parent);
  // Locked all at once (no dedupe key, no batch): the first line naming a missing job.
  const std::string lines = "{\"queue\":\"t\"}\n\n{\"queue\":\"t\",\"after\":[" + p +
                            "]}\n{\"queue\":\"t\",\"after\":[" + p + ",98765]}\n";
  rejects(fixture, {"enqueue", "--from", "-"}, "line 4: \"after\": job 98765 does not exist",
          lines);
  CHECK(queuectl(url, {"enqueue", "--from", "-"}, lines).err.find("--after") == std::string::npos);
  // One line at a time (a dedupe key among them).
  rejects(fixture, {"enqueue", "--from", "-"}, "line 2: \"after\": job 98765 does not exist",
          "{\"queue\":\"t\",\"dedupe_key\":\"a\"}\n{\"queue\":\"t\",\"after\":98765}\n");
  const std::string batch = ok(url, {"batch", "create", "--on-success", "cb", "{}"}).out;
  const std::string b = batch.substr(0, batch.find('\n'));
  ok(url, {"batch", "close", b});
  rejects(fixture, {"enqueue", "--from", "-"}, "line 2: \"batch\": batch " + b + " is closed",
          "{\"queue\":\"t\"}\n{\"queue\":\"t\",\"batch\":" + b + "}\n");
  // A single enqueue still names its option.
  rejects(fixture, {"enqueue", "t", "{}", "--after", "98765"}, "--after: job 98765 does not exist");
}

// `top --failures 5` (the default's value) started the live view, where --failures does
// nothing; every other value was refused.
TEST_CASE("cli: top --failures without --once is refused whatever its value") {
  FreshDatabase fixture;
  for (const char* n : {"5", "6"}) {
    CAPTURE(n);
    rejects(fixture, {"top", "--failures", n}, "--failures is for `top --once`");
  }
  CHECK(ok_json(fixture.url(), {"top", "--once", "--failures", "5"}).is_object());
}

// batch create --on-success given twice said only "takes 2 values, not 4"; --auth-file's
// error gave no reason, and an unreadable --tls-cert was exit 1.
TEST_CASE("cli: serve's files and batch create's values say what is wrong, exit 2") {
  FreshDatabase fixture;
  rejects(fixture, {"batch", "create", "--on-success", "q", "{}", "--on-success", "r", "{}"},
          "--on-success takes 2 values, not 4 (given more than once");
  TempDir dir;
  const std::string missing = dir.path() + "/no-such-file";
  rejects(fixture, {"serve", "--auth-file", missing},
          "cannot read --auth-file " + missing + ": No such file or directory");
  rejects(fixture, {"serve", "--tls-cert", missing, "--tls-key", missing},
          "cannot read --tls-cert " + missing + ": No such file or directory");
  for (const char* refresh : {"100ms", "2h"}) {
    CAPTURE(refresh);
    rejects(fixture, {"serve", "--refresh", refresh}, "is not between 200ms and 1h");
  }
}

// /api/jobs/ID took "2%00junk" for job 2: the decoded NUL ended the id in argv.
TEST_CASE("serve: a job id with a control character is 400; --refresh's value reaches the page") {
  FreshDatabase fixture;
  const json job = enqueue(fixture.url(), "q");
  ServeProcess server(fixture.url(), {"--refresh", "200ms"});
  httplib::Client http(server.url());
  auto ok_answer = http.Get("/api/jobs/" + id_text(job));
  REQUIRE(ok_answer);
  CHECK(ok_answer->status == 200);
  auto bad = http.Get("/api/jobs/" + id_text(job) + "%00junk");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  CHECK(contains(bad->body, "control character"));
  auto session = http.Get("/api/session");
  REQUIRE(session);
  CHECK(parse(session->body)["refresh_ms"] == 200);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// A row the claim cannot read (a run_at stored as a number, from before migration 19) made
// `work --drain` say "database trouble; retrying" for ever: a CI step that drains a queue
// never ended. A claim error that is no outage ends the drain with exit 1 and the error.
TEST_CASE("cli: work --drain ends with exit 1 on a claim error a retry cannot mend" *
          doctest::skip(!is_sqlite())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  fixture.db().session() << "DROP TRIGGER job_queue_run_at_text";
  fixture.db().session() << "INSERT INTO job_queue (queue, payload, run_at) "
                            "VALUES ('epoch', '{}', unixepoch('now'))";
  enqueue(url, "epoch");
  const auto started = std::chrono::steady_clock::now();
  // Under timeout(1), so that a drain that never ends fails the test (exit 124) instead of
  // hanging it.
  RunResult r = run_process(
      {"timeout", "60", QUEUECTL_BINARY, "--db", url, "work", "epoch", "--drain", "--", "true"},
      "");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(dump(r));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "--drain stops"));
  CHECK(contains(r.err, "queuectl: error: --drain stopped: the claim failed: "));
  CHECK(seconds < 30);  // it ended by itself (before, it never did)
  // A worker that serves goes on retrying (someone may mend the row): SIGTERM ends it, 0.
  TempDir dir;
  Cleanup cleanup;
  const int pid = cleanup.child(
      spawn_queuectl(url, {"work", "epoch", "--", "true"}, dir.path() + "/serve.log"));
  CHECK(wait_until(
      [&] { return contains(read_text(dir.path() + "/serve.log"), "database trouble"); }, 20000));
  kill(pid, SIGTERM);
  CHECK(wait_child(cleanup, pid) == 0);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// `reap emials` (a typo) said "returned 0 expired job(s)" and nothing else, where claim,
// work and pause name a queue nobody has used.
TEST_CASE("cli: reap QUEUE names a queue that never had a job, with the nearest name") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "emails");
  RunResult typo = ok(url, {"reap", "emials"});
  CHECK(contains(typo.err, "queue emials has never had a job or a setting"));
  CHECK(contains(typo.err, "did you mean emails?"));
  CHECK(ok(url, {"reap", "emails"}).err.find("never had a job") == std::string::npos);
  RunResult quiet = ok(url, {"-q", "reap", "emials"});
  CHECK(quiet.err.empty());
  CHECK(quiet.out.empty());
}

}  // namespace queuectl::testing::cli
