// Queue policies through the real binary: `queue QUEUE --dead-letter/--max-processing`,
// dead letters from fail and reap, `move`, the limit under `work --concurrency 8`, what
// stats shows, and bad input. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <sstream>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: policies: queue sets, shows and clears a dead-letter queue and a limit") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult set =
      ok(url, {"queue", "orders", "--dead-letter", "orders-dead", "--max-processing", "5"});
  CHECK(set.out == "queue orders: dead-letter queue orders-dead, max processing 5\n");
  json s = ok_json(url, {"queue", "orders"});
  CHECK(s == json{{"queue", "orders"},
                  {"paused", false},
                  {"strict_groups", false},
                  {"dead_letter", "orders-dead"},
                  {"max_processing", 5},
                  {"retain", nullptr},
                  {"rate", nullptr},
                  {"burst", nullptr},
                  {"rate_per_key", false},
                  {"keep_done", true}});
  // stats: the flags column, the wide columns, JSON and Prometheus.
  enqueue(url, "orders");
  RunResult table = ok(url, {"stats", "orders"});
  CHECK(table.out.find("max=5,dlq=orders-dead") != std::string::npos);
  RunResult wide = ok(url, {"-o", "wide", "stats", "orders"});
  CHECK(wide.out.find("MAX_PROCESSING") != std::string::npos);
  CHECK(wide.out.find("DEAD_LETTER") != std::string::npos);
  json stats = ok_json(url, {"stats", "orders"});
  REQUIRE(stats.size() == 1);
  CHECK(stats[0]["max_processing"] == 5);
  CHECK(stats[0]["dead_letter"] == "orders-dead");
  RunResult prom = ok(url, {"-o", "prometheus", "stats", "orders"});
  CHECK(prom.out.find("queuectl_queue_max_processing{queue=\"orders\"} 5\n") != std::string::npos);
  // Cleared: none and 0.
  ok(url, {"queue", "orders", "--dead-letter", "none", "--max-processing", "0"});
  s = ok_json(url, {"queue", "orders"});
  CHECK(s["dead_letter"].is_null());
  CHECK(s["max_processing"].is_null());
  stats = ok_json(url, {"stats", "orders"});
  CHECK(stats[0]["max_processing"].is_null());
  CHECK(ok(url, {"stats", "orders"}).out.find("dlq=") == std::string::npos);
}

TEST_CASE("cli: policies: bad settings are exit 2 and change nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "a", "--dead-letter", "b"});
  ok(url, {"queue", "b", "--max-processing", "2"});
  rejects(fixture, {"queue", "a", "--max-processing", "-1"}, "--max-processing");
  rejects(fixture, {"queue", "a", "--max-processing", "many"}, "--max-processing");
  rejects(fixture, {"queue", "a", "--max-processing", "1000001"}, "--max-processing");
  rejects(fixture, {"queue", "a", "--max-processing", "2.5"}, "--max-processing");
  rejects(fixture, {"queue", "a", "--dead-letter", "a"}, "another queue");
  rejects(fixture, {"queue", "a", "--dead-letter", "no spaces"}, "invalid queue name");
  // b -> a would close the loop a -> b -> a; with a valid limit in the same command, the
  // limit is not written either.
  rejects(fixture, {"queue", "b", "--dead-letter", "a", "--max-processing", "9"}, "loop");
  rejects(fixture, {"move"}, "--from");
  rejects(fixture, {"move", "1", "--all"}, "one of");
  rejects(fixture, {"move", "--from", "a", "--all"}, "one of");
  rejects(fixture, {"move", "7", "--dry-run"}, "--dry-run");
  rejects(fixture, {"move", "x7"}, "job id");
  rejects(fixture, {"move", "--from", "bad queue"}, "invalid queue name");
  rejects(fixture, {"move", "--all", "--to", "bad queue"}, "invalid queue name");
  rejects(fixture, {"move", "--all", "--batch", "0"}, "--batch");
}

TEST_CASE(
    "cli: policies: a job that gives up moves to the dead-letter queue, and move brings it back") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "mail", "--dead-letter", "mail-dead"});
  json job = enqueue(url, "mail", R"({"to":"a@example.com"})", {"--max-attempts", "1"});
  json held = claim_one(url, "mail");
  RunResult failed = queuectl(url, {"-o", "json", "fail", id_text(held), "--token",
                                    held["lock_token"].get<std::string>(), "--error", "smtp 550"});
  INFO(dump(failed));
  REQUIRE(failed.exit_code == 0);
  json moved = parse(failed.out);
  CHECK(moved["id"] == job["id"]);
  CHECK(moved["queue"] == "mail-dead");
  CHECK(moved["status"] == "ready");
  CHECK(moved["attempts"] == 0);
  CHECK(moved["last_error"] == "smtp 550");
  CHECK(moved["dead_from"] == "mail");
  CHECK(failed.err.find("moved to its dead-letter queue mail-dead") != std::string::npos);
  CHECK(ok(url, {"show", id_text(job)}).out.find("dead_from:     mail") != std::string::npos);

  // Through the reaper: the lease of a job on its last attempt runs out.
  json second = enqueue(url, "mail", "{}", {"--max-attempts", "1"});
  claim_one(url, "mail", {"--lease", "100ms"});
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  json reaped = ok_json(url, {"reap", "mail"});
  CHECK(reaped["failed"] == 1);
  CHECK(reaped["dead_lettered"] == 1);
  CHECK(reaped["dead_lettered_ids"] == json::array({second["id"]}));
  CHECK(show(url, second["id"].get<long long>())["queue"] == "mail-dead");

  // An ordinary job of the dead-letter queue is not a dead letter: move by id says so.
  json plain = enqueue(url, "mail-dead");
  RunResult not_dead = queuectl(url, {"move", id_text(plain)});
  CHECK(not_dead.exit_code == 1);
  CHECK(not_dead.err.find("only dead letters") != std::string::npos);
  CHECK(show(url, plain["id"].get<long long>())["queue"] == "mail-dead");

  json dry = ok_json(url, {"move", "--from", "mail-dead", "--dry-run"});
  CHECK(dry["would_move"] == 2);
  CHECK(show(url, job["id"].get<long long>())["queue"] == "mail-dead");
  json done = ok_json(url, {"move", "--from", "mail-dead"});
  CHECK(done["moved"] == 2);
  CHECK(done["moved_ids"] == json::array({job["id"], second["id"]}));
  // Back in their queue, ready, and they run.
  json again = claim(url, "mail", {"--limit", "5"});
  REQUIRE(again.size() == 2);
  for (const json& j : again) {
    CHECK(j["dead_from"].is_null());
    CHECK(j["attempts"] == 1);
    ok(url, {"ack", id_text(j), "--token", j["lock_token"].get<std::string>()});
  }
  json stats = ok_json(url, {"stats", "mail", "mail-dead"});
  CHECK(stats[0]["done"] == 2);
  CHECK(stats[1]["ready"] == 1);  // the ordinary job stayed
}

TEST_CASE("cli: policies: work --concurrency 8 never runs more than --max-processing at once") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string log = dir.path() + "/log";
  std::string lines;
  for (int i = 0; i < 16; ++i) lines += json{{"payload", {{"n", i}}}}.dump() + "\n";
  ok(url, {"enqueue", "api", "--from", "-"}, lines);
  ok(url, {"queue", "api", "--max-processing", "2"});
  const std::string script = "echo \"S $QUEUECTL_JOB_ID\" >> '" + log +
                             "'; sleep 0.1; echo \"E $QUEUECTL_JOB_ID\" >> '" + log + "'";
  json summary = ok_json(url, {"work", "api", "--concurrency", "8", "--poll-interval", "50ms",
                               "--drain", "--", "sh", "-c", script});
  INFO(summary.dump());
  CHECK(summary["done"] == 16);
  std::vector<std::string> events = read_lines(log);
  INFO(read_text(log));
  REQUIRE(events.size() == 32);
  int running = 0, most = 0;
  for (const std::string& e : events) {
    running += e[0] == 'S' ? 1 : -1;
    most = std::max(most, running);
  }
  CHECK(most == 2);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// The worker's line for a job that gave up says where it went: its dead-letter queue, not
// "retry at" (it is ready there now) nor "failed for good".
TEST_CASE("cli: policies: work says a job that gave up went to the dead-letter queue") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "orders", "--dead-letter", "orders-dead"});
  const std::string id = id_text(enqueue(url, "orders", "{}", {"--max-attempts", "1"}));
  RunResult r = queuectl(url, {"work", "orders", "--max-jobs", "1", "--", "false"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.err, "queuectl: job " + id + " attempt 1/1: failed with exit 1"));
  CHECK(contains(r.err, ", gave up; moved to dead-letter queue orders-dead as job " + id + "\n"));
  CHECK(!contains(r.err, "retry at"));
  CHECK(!contains(r.err, "failed for good"));
  json moved = show(url, std::stoll(id));
  CHECK(moved["queue"] == "orders-dead");
  CHECK(moved["status"] == "ready");
  CHECK(moved["dead_from"] == "orders");
}

}  // namespace queuectl::testing::cli
