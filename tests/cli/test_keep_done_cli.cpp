// `queue QUEUE --keep-done off` through the real binary: an ack deletes its job (one by id,
// a batch from a pipe, a worker's), the same ack repeated finds no job, a lost lease is still
// lost, and what is kept: jobs of other queues, grouped jobs, jobs others wait for, failed
// jobs. Every backend.
#include <doctest/doctest.h>

#include <sstream>
#include <vector>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

long long rows_of(FreshDatabase& fixture, const std::string& queue) {
  return scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE queue = '" + queue + "'");
}

std::string status_of(const std::string& url, const json& job) {
  return show(url, job["id"].get<long long>())["status"].get<std::string>();
}

std::string ack_line(const json& job) {
  return json{{"id", job["id"]}, {"lock_token", job["lock_token"]}}.dump() + "\n";
}

}  // namespace

TEST_CASE("cli: keep-done off: an ack deletes its job; other queues and `on` keep theirs") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult set = ok(url, {"queue", "thumbs", "--keep-done", "off"});
  CHECK(set.out == "queue thumbs: keep done jobs off (an ack deletes its job)\n");
  CHECK(ok_json(url, {"queue", "thumbs"})["keep_done"] == false);
  CHECK(ok_json(url, {"queue", "other"})["keep_done"] == true);
  for (int i = 0; i < 4; ++i) enqueue(url, "thumbs");
  enqueue(url, "other");

  // One by id: done, and gone.
  json one = claim_one(url, "thumbs");
  const std::string token = one["lock_token"].get<std::string>();
  json acked = ok_json(url, {"ack", id_text(one), "--token", token});
  CHECK(acked["status"] == "done");
  check_error(queuectl(url, {"show", id_text(one)}), 4, "not found");
  CHECK(rows_of(fixture, "thumbs") == 3);
  // The same ack again names no job (exit 4): nothing is left to say it was done.
  check_error(queuectl(url, {"ack", id_text(one), "--token", token}), 4, "not found");

  // A batch through a pipe: every one deleted.
  json two = claim(url, "thumbs", {"--limit", "2"});
  REQUIRE(two.size() == 2);
  json report = ok_json(url, {"ack", "--from", "-"}, ack_line(two[0]) + ack_line(two[1]));
  CHECK(report["acked"] == 2);
  CHECK(rows_of(fixture, "thumbs") == 1);

  // A lost lease is still lost: a wrong token deletes nothing.
  json last = claim_one(url, "thumbs");
  RunResult lost = queuectl(url, {"ack", id_text(last), "--token", "not-the-token"});
  CHECK(lost.exit_code == 3);
  CHECK(status_of(url, last) == "processing");
  CHECK(rows_of(fixture, "thumbs") == 1);

  // Another queue keeps its done jobs.
  json kept = claim_one(url, "other");
  ok(url, {"ack", id_text(kept), "--token", kept["lock_token"].get<std::string>()});
  CHECK(status_of(url, kept) == "done");

  // Back on: the ack keeps the job done.
  RunResult on = ok(url, {"queue", "thumbs", "--keep-done", "on"});
  CHECK(on.out == "queue thumbs: keep done jobs on\n");
  ok(url, {"ack", id_text(last), "--token", last["lock_token"].get<std::string>()});
  CHECK(status_of(url, last) == "done");
}

TEST_CASE("cli: stats shows which queues delete their done jobs, and their retention") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "thumbs", "--keep-done", "off"});
  ok(url, {"queue", "logs", "--retain", "14d"});
  enqueue(url, "plain");
  std::map<std::string, json> by_queue;
  for (const json& q : ok_json(url, {"stats"})) by_queue[q["queue"].get<std::string>()] = q;
  REQUIRE(by_queue.count("thumbs") == 1);
  REQUIRE(by_queue.count("logs") == 1);
  REQUIRE(by_queue.count("plain") == 1);
  CHECK(by_queue["thumbs"]["keep_done"] == false);
  CHECK(by_queue["thumbs"]["retain"].is_null());
  CHECK(by_queue["logs"]["keep_done"] == true);
  CHECK(by_queue["logs"]["retain"] == "14d");
  CHECK(by_queue["plain"]["keep_done"] == true);
  CHECK(by_queue["plain"]["retain"].is_null());
  const std::string table = ok(url, {"stats", "-o", "table"}).out;
  CHECK(table.find("keep-done=off") != std::string::npos);
  CHECK(table.find("retain=14d") != std::string::npos);
  // -o wide: the last three columns are RETAIN, KEEP_DONE and OLDEST_READY.
  auto wide_tail = [&](const std::string& queue) {
    std::istringstream lines(ok(url, {"stats", queue, "-o", "wide"}).out);
    std::string header, row, word;
    std::getline(lines, header);
    std::getline(lines, row);
    std::vector<std::string> h, r;
    for (std::istringstream in(header); in >> word;) h.push_back(word);
    for (std::istringstream in(row); in >> word;) r.push_back(word);
    REQUIRE(h.size() >= 3);
    REQUIRE(r.size() == h.size());
    CHECK(h[h.size() - 3] == "RETAIN");
    CHECK(h[h.size() - 2] == "KEEP_DONE");
    return r[r.size() - 3] + " " + r[r.size() - 2];
  };
  CHECK(wide_tail("thumbs") == "- no");
  CHECK(wide_tail("logs") == "14d yes");
  // Back to the defaults: the queue has nothing left to show.
  ok(url, {"queue", "thumbs", "--keep-done", "on"});
  CHECK(ok_json(url, {"stats", "thumbs"})[0]["keep_done"] == true);
  CHECK(ok(url, {"stats", "-o", "table"}).out.find("keep-done") == std::string::npos);
}

TEST_CASE("cli: keep-done off: grouped jobs, jobs others wait for, and failed jobs are kept") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "q", "--keep-done", "off"});
  // A grouped job is marked done (its group's next job is woken as for any group).
  json grouped = enqueue(url, "q", "{}", {"--group-key", "g"});
  json g = claim_one(url, "q");
  REQUIRE(g["id"] == grouped["id"]);
  ok(url, {"ack", id_text(g), "--token", g["lock_token"].get<std::string>()});
  CHECK(status_of(url, g) == "done");

  // A parent is marked done and releases its child; the child, acked, is deleted.
  json parent = enqueue(url, "q");
  json child = enqueue(url, "q", "{}", {"--after", id_text(parent)});
  json p = claim_one(url, "q");
  REQUIRE(p["id"] == parent["id"]);
  ok(url, {"ack", id_text(p), "--token", p["lock_token"].get<std::string>()});
  CHECK(status_of(url, p) == "done");
  json c = claim_one(url, "q");
  REQUIRE(c["id"] == child["id"]);
  ok(url, {"ack", id_text(c), "--token", c["lock_token"].get<std::string>()});
  check_error(queuectl(url, {"show", id_text(c)}), 4, "not found");

  // A job that fails for good stays failed.
  json doomed = enqueue(url, "q", "{}", {"--max-attempts", "1"});
  json d = claim_one(url, "q");
  REQUIRE(d["id"] == doomed["id"]);
  ok(url, {"fail", id_text(d), "--token", d["lock_token"].get<std::string>(), "--error", "x"});
  CHECK(status_of(url, d) == "failed");
  CHECK(rows_of(fixture, "q") == 3);
}

TEST_CASE("cli: keep-done off: a worker's acks delete their jobs, its failures stay") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "w", "--keep-done", "off"});
  for (int i = 0; i < 30; ++i) enqueue(url, "w", "{\"n\":" + std::to_string(i) + "}");
  enqueue(url, "w", "{\"fail\":true}", {"--max-attempts", "1"});
  RunResult r = queuectl(url, {"-o", "json", "work", "w", "--drain", "--concurrency", "4", "--",
                               "sh", "-c", "if grep -q fail; then exit 1; fi"});
  INFO(dump(r));
  CHECK(r.exit_code == 1);  // one job failed while draining
  json summary = parse(r.out);
  CHECK(summary["done"] == 30);
  CHECK(summary["failed"] == 1);
  CHECK(rows_of(fixture, "w") == 1);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE queue = 'w' AND status = 3") ==
        1);
}

TEST_CASE("cli: keep-done off: an ack line's queue is a hint that only ever keeps a job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "thumbs", "--keep-done", "off"});
  enqueue(url, "thumbs");
  enqueue(url, "thumbs");
  enqueue(url, "kept");
  // A line naming a queue that keeps its done jobs tries no delete: the job is marked done.
  json named_other = claim_one(url, "thumbs");
  json line = {
      {"id", named_other["id"]}, {"lock_token", named_other["lock_token"]}, {"queue", "kept"}};
  ok(url, {"ack", "--from", "-"}, line.dump() + "\n");
  CHECK(status_of(url, named_other) == "done");
  // claim's own lines name the job's queue: deleted.
  RunResult lines = ok(url, {"claim", "thumbs", "-o", "ndjson"});
  ok(url, {"ack", "--from", "-"}, lines.out);
  CHECK(rows_of(fixture, "thumbs") == 1);
  // A worker of a queue that keeps its done jobs keeps them while another queue keeps none.
  RunResult w = ok(url, {"work", "kept", "--drain", "--", "true"});
  CHECK(rows_of(fixture, "kept") == 1);
  CHECK(scalar(fixture.db(),
               "SELECT COUNT(*) FROM job_queue WHERE queue = 'kept' AND status = 2") == 1);
}

TEST_CASE("cli: keep-done: a bad value is exit 2 and changes nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "q", "--max-processing", "2"});
  rejects(fixture, {"queue", "q", "--keep-done", "maybe"}, "--keep-done");
  rejects(fixture, {"queue", "q", "--keep-done", "off", "--max-processing", "-1"},
          "--max-processing");
  CHECK(ok_json(url, {"queue", "q"})["keep_done"] == true);
}

}  // namespace queuectl::testing::cli
