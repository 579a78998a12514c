// Inspecting through the real binary: list paging and filters, stats counts, and the
// json / ndjson / table formats. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

std::vector<long long> ids_of(const json& jobs) {
  std::vector<long long> out;
  for (const json& j : jobs) out.push_back(j["id"].get<long long>());
  return out;
}

}  // namespace

TEST_CASE("cli: list filters by queue and status and pages by id") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::vector<long long> ids;
  for (int i = 0; i < 5; ++i)
    ids.push_back(enqueue(url, "a", "{\"i\":" + std::to_string(i) + "}")["id"]);
  long long in_b = enqueue(url, "b")["id"];
  json claimed = claim_one(url, "a");  // the oldest of a
  CHECK(claimed["id"] == ids[0]);

  {  // all, in id order
    json all = ok_json(url, {"list"});
    std::vector<long long> expected = ids;
    expected.push_back(in_b);
    CHECK(ids_of(all) == expected);
    CHECK(ids_of(ok_json(url, {"list", "a"})) == ids);
    CHECK(ids_of(ok_json(url, {"list", "b"})) == std::vector<long long>{in_b});
    CHECK(ok_json(url, {"list", "nosuchqueue"}) == json::array());
  }

  {  // --status
    json processing = ok_json(url, {"list", "--status", "processing"});
    CHECK(ids_of(processing) == std::vector<long long>{ids[0]});
    CHECK(processing[0]["status"] == "processing");
    json ready = ok_json(url, {"list", "a", "--status", "ready"});
    CHECK(ids_of(ready) == std::vector<long long>(ids.begin() + 1, ids.end()));
    for (const json& j : ready) CHECK(j["status"] == "ready");
    CHECK(ok_json(url, {"list", "--status", "ready,processing"}).size() == 6);
    CHECK(ok_json(url, {"list", "--status", "done"}) == json::array());
  }

  {  // --limit and --after page through, with a hint on stderr
    RunResult first = ok(url, {"-o", "json", "list", "a", "--limit", "2"});
    CHECK(ids_of(parse(first.out)) == std::vector<long long>{ids[0], ids[1]});
    CHECK(first.err.find("--after " + std::to_string(ids[1])) != std::string::npos);
    json second = ok_json(url, {"list", "a", "--limit", "2", "--after", std::to_string(ids[1])});
    CHECK(ids_of(second) == std::vector<long long>{ids[2], ids[3]});
    json third = ok_json(url, {"list", "a", "--limit", "2", "--after", std::to_string(ids[3])});
    CHECK(ids_of(third) == std::vector<long long>{ids[4]});
    CHECK(ok_json(url, {"list", "a", "--limit", "2", "--after", std::to_string(ids[4])}) ==
          json::array());
    json filtered = ok_json(
        url, {"list", "--status", "ready", "--limit", "1", "--after", std::to_string(ids[0])});
    CHECK(ids_of(filtered) == std::vector<long long>{ids[1]});
  }

  {  // -o ndjson: one job object a line
    RunResult r = ok(url, {"-o", "ndjson", "list", "a"});
    CHECK(count_lines(r.out) == 5);
    std::vector<json> lines = parse_lines(r.out);
    REQUIRE(lines.size() == 5);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      CHECK(lines[i].is_object());
      CHECK(lines[i]["id"] == ids[i]);
      CHECK(lines[i]["payload"] == json{{"i", i}});
      CHECK(is_rfc3339_us(lines[i]["created_at"]));
    }
    RunResult empty = ok(url, {"-o", "ndjson", "list", "nosuchqueue"});
    CHECK(empty.out.empty());
  }

  {  // table: a header and a row a job
    RunResult r = ok(url, {"list", "a"});
    CHECK(r.out.rfind("ID", 0) == 0);
    CHECK(r.out.find("STATUS") != std::string::npos);
    CHECK(count_lines(r.out) == 6);
    CHECK(r.out.find("processing") != std::string::npos);
  }
}

TEST_CASE("cli: claim -o ndjson prints one job a line") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "q");
  RunResult r = ok(url, {"-o", "ndjson", "claim", "q", "--limit", "5"});
  std::vector<json> jobs = parse_lines(r.out);
  REQUIRE(jobs.size() == 3);
  for (const json& j : jobs) {
    CHECK(j["status"] == "processing");
    CHECK(is_uuid(j["lock_token"]));
  }
  // One claim issues one token for all its jobs or one each; never reuses an old one.
  CHECK(claim(url, "q") == json::array());
}

TEST_CASE("cli: stats counts jobs per queue and status") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 4; ++i) enqueue(url, "mail");
  enqueue(url, "mail", "{}", {"--delay", "1h"});
  enqueue(url, "other");
  json jobs = claim(url, "mail", {"--limit", "3"});
  REQUIRE(jobs.size() == 3);
  ok(url, {"ack", id_text(jobs[0]), "--token", jobs[0]["lock_token"].get<std::string>()});
  ok(url, {"fail", id_text(jobs[1]), "--token", jobs[1]["lock_token"].get<std::string>(),
           "--permanent"});

  json stats = ok_json(url, {"stats"});
  INFO(stats.dump());
  REQUIRE(stats.is_array());
  REQUIRE(stats.size() == 2);
  json mail, other;
  for (const json& s : stats) (s["queue"] == "mail" ? mail : other) = s;
  CHECK(mail["queue"] == "mail");
  CHECK(mail["ready"] == 1);
  CHECK(mail["scheduled"] == 1);
  CHECK(mail["processing"] == 1);
  CHECK(mail["expired_leases"] == 0);
  CHECK(mail["done"] == 1);
  CHECK(mail["failed"] == 1);
  CHECK(mail["canceled"] == 0);
  CHECK(mail["paused"] == false);
  CHECK(mail["oldest_ready_age_seconds"].is_number());
  CHECK(other["queue"] == "other");
  CHECK(other["ready"] == 1);
  CHECK(other["processing"] == 0);

  json only = ok_json(url, {"stats", "other"});
  REQUIRE(only.size() == 1);
  CHECK(only[0]["queue"] == "other");

  RunResult table = ok(url, {"stats"});
  CHECK(table.out.find("QUEUE") != std::string::npos);
  CHECK(table.out.find("mail") != std::string::npos);
  CHECK(count_lines(table.out) == 3);

  RunResult ndjson = ok(url, {"-o", "ndjson", "stats"});
  CHECK(parse_lines(ndjson.out).size() == 2);

  RunResult prom = ok(url, {"-o", "prometheus", "stats"});
  CHECK(prom.out.find("queuectl_jobs{queue=\"mail\",status=\"ready\"} 1\n") != std::string::npos);
  CHECK(prom.out.find("queuectl_jobs{queue=\"mail\",status=\"done\"} 1\n") != std::string::npos);
}

TEST_CASE("cli: -q keeps data and drops diagnostics") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q", "{}", {"--dedupe-key", "k"});
  RunResult loud = ok(url, {"-o", "json", "enqueue", "q", "{}", "--dedupe-key", "k"});
  CHECK_FALSE(loud.err.empty());
  RunResult quiet = ok(url, {"-q", "-o", "json", "enqueue", "q", "{}", "--dedupe-key", "k"});
  CHECK(quiet.err.empty());
  CHECK(parse(quiet.out)["deduplicated"] == true);
  // Errors still reach stderr under -q.
  check_error(queuectl(url, {"-q", "show", "424242"}), 4, "424242");
}

}  // namespace queuectl::testing::cli
