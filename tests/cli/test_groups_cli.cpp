// Ordered groups through the real binary: enqueue --group-key (and group_key in --from),
// claim, `queue --strict-groups`, `groups`, stats, cancel of a blocked head, and `work
// --concurrency 8` keeping each group in order. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <sstream>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: groups: the README's example claims one job of the group, not two") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json first = enqueue(url, "fifo", R"({"step":1})", {"--group-key", "order-42"});
  enqueue(url, "fifo", R"({"step":2})", {"--group-key", "order-42"});
  CHECK(first["group_key"] == "order-42");
  RunResult r = ok(url, {"-o", "ndjson", "claim", "fifo", "--limit", "2"});
  auto jobs = parse_lines(r.out);
  REQUIRE(jobs.size() == 1);
  CHECK(jobs[0]["id"] == first["id"]);
  CHECK(jobs[0]["status"] == "processing");
  // The group is busy: nothing more until step 1 is acked.
  CHECK(claim(url, "fifo", {"--limit", "5"}).empty());
  ok(url, {"ack", id_text(jobs[0]), "--token", jobs[0]["lock_token"].get<std::string>()});
  json second = claim_one(url, "fifo");
  CHECK(second["payload"] == json{{"step", 2}});
}

TEST_CASE("cli: groups: group_key lines of enqueue --from, and --group-key as their default") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string lines = R"({"payload":{"n":1}})"
                            "\n"
                            R"({"payload":{"n":2},"group_key":"b"})"
                            "\n"
                            R"({"payload":{"n":3}})"
                            "\n";
  json r = ok_json(url, {"enqueue", "q", "--group-key", "a", "--from", "-"}, lines);
  CHECK(r["enqueued"] == 3);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE group_key = 'a'") == 2);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE group_key = 'b'") == 1);
  // Two groups: two jobs, n=1 (head of a) and n=2 (head of b).
  json jobs = claim(url, "q", {"--limit", "10"});
  REQUIRE(jobs.size() == 2);
  std::set<int> ns;
  for (const json& j : jobs) ns.insert(j["payload"]["n"].get<int>());
  CHECK(ns == std::set<int>{1, 2});
}

TEST_CASE("cli: groups: an empty, over-long or control-character group key is exit 2") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"migrate"});
  const std::string before = db_fingerprint(fixture);
  const std::vector<std::string> bad = {"", std::string(256, 'k'), "a\tb", "line\nbreak",
                                        std::string("nul") + '\x01'};
  for (const std::string& key : bad) {
    INFO("key: '" << key << "'");
    check_usage_error(queuectl(url, {"enqueue", "q", "{}", "--group-key", key}), "--group-key");
    // The same key in an NDJSON line names the line; --group-key as a default names itself.
    json line = {{"payload", json::object()}, {"group_key", key}};
    check_usage_error(queuectl(url, {"enqueue", "q", "--from", "-"}, line.dump() + "\n"), "line 1");
    check_usage_error(queuectl(url, {"enqueue", "q", "--group-key", key, "--from", "-"}, "{}\n"),
                      "--group-key");
  }
  check_usage_error(queuectl(url, {"enqueue", "q", "--from", "-"},
                             R"({"group_key":7})"
                             "\n"),
                    "group_key");
  CHECK(db_fingerprint(fixture) == before);
  // 255 characters are fine.
  json job = enqueue(url, "q", "{}", {"--group-key", std::string(255, 'k')});
  CHECK(job["group_key"].get<std::string>().size() == 255);
}

TEST_CASE("cli: groups: queue --strict-groups, stats, groups --blocked, cancel unblocks") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json settings = ok_json(url, {"queue", "orders"});
  CHECK(settings == json{{"queue", "orders"},
                         {"paused", false},
                         {"strict_groups", false},
                         {"dead_letter", nullptr},
                         {"max_processing", nullptr},
                         {"retain", nullptr},
                         {"rate", nullptr},
                         {"burst", nullptr},
                         {"rate_per_key", false},
                         {"keep_done", true}});
  RunResult on = ok(url, {"queue", "orders", "--strict-groups", "on"});
  CHECK(on.out == "queue orders: strict groups on\n");
  CHECK(ok_json(url, {"queue", "orders"})["strict_groups"] == true);

  json head = enqueue(url, "orders", "{}", {"--group-key", "o-1"});
  enqueue(url, "orders", "{}", {"--group-key", "o-1"});
  enqueue(url, "orders", "{}", {"--group-key", "o-1"});
  json claimed = claim_one(url, "orders");
  REQUIRE(claimed["id"] == head["id"]);
  ok(url, {"fail", id_text(claimed), "--token", claimed["lock_token"].get<std::string>(), "--error",
           "card declined\nretry later", "--permanent"});
  CHECK(claim(url, "orders", {"--limit", "5"}).empty());

  json stats = ok_json(url, {"stats", "orders"});
  REQUIRE(stats.size() == 1);
  CHECK(stats[0]["strict_groups"] == true);
  RunResult table = ok(url, {"stats", "orders"});
  CHECK(contains(table.out, "FLAGS"));
  CHECK(contains(table.out, " strict\n"));
  RunResult prom = ok(url, {"stats", "-o", "prometheus"});
  CHECK(contains(prom.out, "queuectl_queue_strict_groups{queue=\"orders\"} 1\n"));

  json blocked = ok_json(url, {"groups", "orders", "--blocked"});
  REQUIRE(blocked.size() == 1);
  CHECK(blocked[0]["group_key"] == "o-1");
  CHECK(blocked[0]["state"] == "blocked");
  CHECK(blocked[0]["head_id"] == head["id"]);
  CHECK(blocked[0]["head_status"] == "failed");
  CHECK(blocked[0]["attempts"] == 1);
  CHECK(blocked[0]["waiting"] == 2);
  CHECK(blocked[0]["last_error"] == "card declined\nretry later");
  RunResult groups_table = ok(url, {"groups", "orders"});
  INFO(groups_table.out);
  CHECK(contains(groups_table.out, "GROUP"));
  CHECK(contains(groups_table.out, "blocked"));
  CHECK(contains(groups_table.out, "card declined"));
  CHECK_FALSE(contains(groups_table.out, "retry later"));  // the first line only
  auto nd = parse_lines(ok(url, {"-o", "ndjson", "groups", "orders"}).out);
  REQUIRE(nd.size() == 1);
  CHECK(nd[0]["head_id"] == head["id"]);

  // Canceling the failed head lets the group go on.
  RunResult cancel = ok(url, {"cancel", id_text(head)});
  CHECK(contains(cancel.out, "canceled 1 job(s)"));
  CHECK(ok_json(url, {"groups", "orders", "--blocked"}).empty());
  json next = claim_one(url, "orders");
  CHECK(next["id"].get<long long>() > head["id"].get<long long>());

  // Turning strict mode off keeps the pause flag and says so.
  ok(url, {"pause", "orders"});
  ok(url, {"queue", "orders", "--strict-groups", "off"});
  CHECK(ok_json(url, {"queue", "orders"}) == json{{"queue", "orders"},
                                                  {"paused", true},
                                                  {"strict_groups", false},
                                                  {"dead_letter", nullptr},
                                                  {"max_processing", nullptr},
                                                  {"retain", nullptr},
                                                  {"rate", nullptr},
                                                  {"burst", nullptr},
                                                  {"rate_per_key", false},
                                                  {"keep_done", true}});
}

TEST_CASE("cli: groups: --blocked on a queue without strict mode says how to turn it on") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q", "{}", {"--group-key", "g"});
  RunResult r = ok(url, {"groups", "q", "--blocked"});
  CHECK(contains(r.err, "not in strict mode"));
  CHECK(contains(r.err, "--strict-groups on"));
  CHECK(ok_json(url, {"-q", "groups", "q"}).empty());  // an idle group is not busy
}

TEST_CASE("cli: groups: bad input to queue and groups is exit 2 and writes nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"migrate"});
  const std::string before = db_fingerprint(fixture);
  check_usage_error(queuectl(url, {"queue", "q", "--strict-groups", "yes"}), "--strict-groups");
  check_usage_error(queuectl(url, {"queue", "bad name", "--strict-groups", "on"}), "queue");
  check_usage_error(queuectl(url, {"groups", "bad name"}), "queue");
  check_usage_error(queuectl(url, {"groups", "q", "--limit", "0"}), "--limit");
  check_usage_error(queuectl(url, {"groups"}), "queue");
  CHECK(db_fingerprint(fixture) == before);
}

TEST_CASE("cli: groups: work --concurrency 8 runs each group one job at a time, in order") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string log = dir.path() + "/log";
  // 4 groups of 6 jobs, enqueued round robin, plus 4 ungrouped jobs.
  std::string lines;
  for (int i = 0; i < 24; ++i)
    lines +=
        json{{"payload", {{"n", i}}}, {"group_key", "g" + std::to_string(i % 4)}}.dump() + "\n";
  for (int i = 0; i < 4; ++i) lines += json{{"payload", {{"n", 100 + i}}}}.dump() + "\n";
  ok(url, {"enqueue", "w", "--from", "-"}, lines);
  // Each job logs its start and end around a short sleep, with its QUEUECTL_GROUP_KEY.
  const std::string script = "g=${QUEUECTL_GROUP_KEY:--}; echo \"S $g $QUEUECTL_JOB_ID\" >> '" +
                             log + "'; sleep 0.05; echo \"E $g $QUEUECTL_JOB_ID\" >> '" + log + "'";
  json summary =
      ok_json(url, {"work", "w", "--concurrency", "8", "--drain", "--", "sh", "-c", script});
  INFO(summary.dump());
  CHECK(summary["done"] == 28);
  std::vector<std::string> events = read_lines(log);
  INFO(read_text(log));
  REQUIRE(events.size() == 56);
  std::map<std::string, long long> running, last;
  int max_parallel = 0, now_running = 0;
  for (const std::string& e : events) {
    std::istringstream f(e);
    char kind = 0;
    std::string g;
    long long id = 0;
    f >> kind >> g >> id;
    if (kind == 'S') {
      max_parallel = std::max(max_parallel, ++now_running);
      if (g == "-") continue;
      CHECK_MESSAGE(running.count(g) == 0,
                    "job " << id << " started while " << running[g] << " of group " << g << " ran");
      CHECK_MESSAGE(id > last[g],
                    "job " << id << " of group " << g << " started after " << last[g]);
      running[g] = id;
      last[g] = id;
    } else {
      --now_running;
      if (g != "-") running.erase(g);
    }
  }
  // Groups run beside each other (and beside the ungrouped jobs), just not with themselves.
  CHECK(max_parallel >= 2);
}

}  // namespace queuectl::testing::cli
