// Edges of the bulk and operating commands through the real binary: empty NDJSON input,
// ack --from telling missing ids from lost leases, enqueue --from with one-job arguments,
// resume/pause of queues in an unexpected state, reap -o json while the lock is held, and
// stats with a queue named twice. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// The report of ack --from: each outcome's count, and its ids beside it.
json ack_report(const json& acked, const json& lost, const json& not_found) {
  return json{{"acked", acked.size()},
              {"acked_ids", acked},
              {"already_done", 0},
              {"already_done_ids", json::array()},
              {"lost", lost.size()},
              {"lost_ids", lost},
              {"not_found", not_found.size()},
              {"not_found_ids", not_found}};
}

}  // namespace

namespace {

// A `{"id","token"}` ack line.
std::string ack_line(const json& id, const std::string& token) {
  return json{{"id", id}, {"token", token}}.dump() + "\n";
}

// Runs queuectl and requires `code`; returns the run.
RunResult exits(const std::string& url, const std::vector<std::string>& args, int code,
                const std::string& input = "") {
  RunResult r = queuectl(url, args, input);
  INFO(dump(r));
  REQUIRE(r.exit_code == code);
  return r;
}

// The series part (name and labels) of every sample line of Prometheus text.
std::vector<std::string> prometheus_series(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.push_back(line.substr(0, line.rfind(' ')));
  return out;
}

}  // namespace

TEST_CASE("cli: edge: ack --from and enqueue --from with empty input do nothing, exit 0") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  enqueue(url, "busy");
  json held = claim_one(url, "busy");
  const std::string before = db_fingerprint(fixture);

  // The pipeline of the audit: an idle queue's claim prints nothing; ack gets nothing.
  RunResult idle = ok(url, {"-o", "ndjson", "claim", "idle", "--limit", "100"});
  REQUIRE(idle.out.empty());
  RunResult piped = ok(url, {"ack", "--from", "-"}, idle.out);
  CHECK(piped.out == "acked 0 job(s)\n");
  CHECK(piped.err.empty());

  const std::string empty_file = dir.write("empty.ndjson", "");
  const std::string blank_file = dir.write("blank.ndjson", "\n  \n\t\r\n");
  for (const std::string& input : {std::string(), std::string("\n\n"), std::string(" \t\n\n")}) {
    CAPTURE(json(input).dump());
    CHECK(ok(url, {"ack", "--from", "-"}, input).out == "acked 0 job(s)\n");
    CHECK(ok_json(url, {"ack", "--from", "-"}, input) ==
          ack_report(json::array(), json::array(), json::array()));
    CHECK(ok(url, {"enqueue", "--from", "-"}, input).out == "enqueued 0 job(s)\n");
    CHECK(ok_json(url, {"enqueue", "--from", "-"}, input) ==
          json{{"enqueued", 0}, {"duplicates", 0}});
    // -o ndjson: the same document, one line.
    CHECK(parse_lines(ok(url, {"-o", "ndjson", "enqueue", "--from", "-"}, input).out) ==
          std::vector<json>{json{{"enqueued", 0}, {"duplicates", 0}}});
  }
  for (const std::string& file : {empty_file, blank_file}) {
    CAPTURE(file);
    CHECK(ok_json(url, {"ack", "--from", file})["acked"] == 0);
    CHECK(ok_json(url, {"enqueue", "--from", file})["enqueued"] == 0);
    // QUEUE as the lines' default changes nothing either.
    CHECK(ok_json(url, {"enqueue", "q", "--from", file})["enqueued"] == 0);
  }
  CHECK(db_fingerprint(fixture) == before);
  CHECK(status_of(url, id_of(held)) == "processing");

  // Bad input is still bad: a blank line does not hide a broken one.
  rejects(fixture, {"ack", "--from", "-"}, "line 2", "\n{oops\n");
  rejects(fixture, {"enqueue", "--from", "-"}, "line 3", "\n \n{\"queue\":\"bad name\"}\n");
}

TEST_CASE("cli: edge: ack --from reports missing ids as not found (4); a lost lease wins (3)") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "q");
  json jobs = claim(url, "q", {"--limit", "3"});
  REQUIRE(jobs.size() == 3);
  const json a = jobs[0], b = jobs[1], c = jobs[2];

  // The single ack and the bulk ack agree: an id that does not exist is exit 4.
  check_error(queuectl(url, {"ack", "999999", "--token", "x"}), 4, "999999");
  RunResult missing = exits(url, {"ack", "--from", "-"}, 4, ack_line(999999, "x"));
  CHECK(missing.out == "acked 0 job(s)\n");
  CHECK(contains(missing.err, "job 999999 not found"));
  CHECK_FALSE(contains(missing.err, "lease lost"));
  // Also through the one-statement-per-line path of acks with a result.
  RunResult with_result =
      exits(url, {"-o", "json", "ack", "--from", "-"}, 4,
            json{{"id", 999998}, {"token", "x"}, {"result", {{"ok", true}}}}.dump() + "\n");
  CHECK(parse(with_result.out) == ack_report(json::array(), json::array(), json::array({999998})));

  // A good ack and a missing id: the good one is done, exit 4.
  RunResult mixed = exits(url, {"-o", "json", "ack", "--from", "-"}, 4,
                          ack_line(a["id"], a["lock_token"]) + ack_line(999999, "x"));
  CHECK(parse(mixed.out) ==
        ack_report(json::array({a["id"]}), json::array(), json::array({999999})));
  CHECK(status_of(url, id_of(a)) == "done");

  // A lost lease (b, wrong token) and a missing id: 3 wins; c is acked all the same.
  RunResult both = exits(url, {"-o", "json", "ack", "--from", "-"}, 3,
                         ack_line(b["id"], "wrong-token") + ack_line(999999, "x") +
                             ack_line(c["id"], c["lock_token"]));
  INFO(dump(both));
  CHECK(parse(both.out) ==
        ack_report(json::array({c["id"]}), json::array({b["id"]}), json::array({999999})));
  CHECK(contains(both.err, "lease lost on job " + id_text(b)));
  CHECK(contains(both.err, "job 999999 not found"));
  CHECK(status_of(url, id_of(b)) == "processing");
  CHECK(status_of(url, id_of(c)) == "done");

  // Only lost leases: 3, and a finished job's id under another token is a lost lease, not a
  // missing job (under the token that finished it, it is already done: see below).
  RunResult lost = exits(url, {"-o", "json", "ack", "--from", "-"}, 3,
                         ack_line(a["id"], "wrong-token") + ack_line(b["id"], "wrong-token"));
  json lost_doc = parse(lost.out);
  CHECK(lost_doc["acked"] == 0);
  CHECK(id_set(lost_doc["lost_ids"]) == std::set<std::int64_t>{id_of(a), id_of(b)});
  CHECK(lost_doc["lost"] == 2);
  CHECK(lost_doc["not_found"] == 0);
  CHECK(lost_doc["not_found_ids"] == json::array());
  CHECK(status_of(url, id_of(b)) == "processing");

  // --help states the rule.
  RunResult help = run_process({QUEUECTL_BINARY, "ack", "--help"});
  CHECK(contains(help.out, "3 wins over 4"));

  // --result belongs on the lines with --from: refused, nothing acked.
  rejects(fixture, {"ack", "--from", "-", "--result", "{}"}, "--result",
          ack_line(b["id"], b["lock_token"]));
  CHECK(status_of(url, id_of(b)) == "processing");
}

TEST_CASE(
    "cli: edge: enqueue --from refuses PAYLOAD and --dedupe-key; other options are defaults") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "existing");
  const std::string line = "{\"payload\":{\"n\":1}}\n";

  rejects(fixture, {"enqueue", "qa", "{}", "--from", "-"}, "PAYLOAD", line);
  rejects(fixture, {"enqueue", "qa", "--from", "-", "{\"x\":1}"}, "PAYLOAD", line);
  rejects(fixture, {"enqueue", "qa", "-", "--from", "-"}, "PAYLOAD", line);
  rejects(fixture, {"enqueue", "qa", "--dedupe-key", "k", "--from", "-"}, "--dedupe-key", line);
  // Defaults are checked before any line, and the error names the option.
  rejects(fixture, {"enqueue", "qa", "--delay", "soon", "--from", "-"}, "--delay", line);
  rejects(fixture, {"enqueue", "qa", "--run-at", "yesterday", "--from", "-"}, "--run-at", line);
  rejects(fixture,
          {"enqueue", "qa", "--delay", "1m", "--run-at", "2030-01-01T00:00:00Z", "--from", "-"},
          "--run-at", line);
  rejects(fixture, {"enqueue", "qa", "--max-attempts", "0", "--from", "-"}, "--max-attempts", line);
  rejects(fixture, {"enqueue", "bad name", "--from", "-"}, "queue name", line);
  // A line that sets both delay and run_at is still refused.
  rejects(fixture, {"enqueue", "qa", "--from", "-"}, "line 1",
          "{\"delay\":\"1m\",\"run_at\":\"2030-01-01T00:00:00Z\"}\n");

  SUBCASE("QUEUE, --priority, --max-attempts, --group-key and --delay fill in what lines omit") {
    const std::string lines =
        "{\"payload\":{\"n\":1}}\n"
        "{\"queue\":\"other\",\"payload\":{\"n\":2},\"priority\":1,\"max_attempts\":9,"
        "\"group_key\":\"h\",\"delay\":0}\n"
        "{\"payload\":{\"n\":3},\"run_at\":\"2030-01-01T00:00:00Z\"}\n";
    json r = ok_json(url,
                     {"enqueue", "dq", "--priority", "7", "--max-attempts", "3", "--group-key", "g",
                      "--delay", "1h", "--from", "-"},
                     lines);
    CHECK(r == json{{"enqueued", 3}, {"duplicates", 0}});
    std::map<int, json> by_n;
    for (const json& j : ok_json(url, {"list", "--limit", "100"}))
      if (j["payload"].contains("n")) by_n[j["payload"]["n"].get<int>()] = j;
    REQUIRE(by_n.size() == 3);
    const json& one = by_n[1];
    CHECK(one["queue"] == "dq");
    CHECK(one["priority"] == 7);
    CHECK(one["max_attempts"] == 3);
    CHECK(one["group_key"] == "g");
    CHECK(seconds_between(one["created_at"], one["run_at"]) > 3000);
    const json& two = by_n[2];
    CHECK(two["queue"] == "other");
    CHECK(two["priority"] == 1);
    CHECK(two["max_attempts"] == 9);
    CHECK(two["group_key"] == "h");
    CHECK(seconds_between(two["created_at"], two["run_at"]) < 3000);  // the line's delay 0
    const json& three = by_n[3];
    CHECK(three["queue"] == "dq");
    CHECK(three["run_at"] == "2030-01-01T00:00:00.000000Z");  // not 2030 + 1h
    CHECK(three["priority"] == 7);
  }

  SUBCASE("--run-at is the default; a line's delay replaces it") {
    json r = ok_json(url, {"enqueue", "rq", "--run-at", "2030-01-01T00:00:00Z", "--from", "-"},
                     "{\"payload\":{\"n\":1}}\n{\"payload\":{\"n\":2},\"delay\":\"1h\"}\n");
    CHECK(r["enqueued"] == 2);
    json listed = ok_json(url, {"list", "rq"});
    REQUIRE(listed.size() == 2);
    CHECK(listed[0]["run_at"] == "2030-01-01T00:00:00.000000Z");
    const double delay = seconds_between(listed[1]["created_at"], listed[1]["run_at"]);
    CHECK(delay > 3000);
    CHECK(delay < 4000);  // now + 1h, not 2030
  }
}

TEST_CASE("cli: edge: resume of an unpaused queue says only that; pausing a new queue warns") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "pq");

  RunResult not_paused = ok(url, {"resume", "pq"});
  CHECK(not_paused.out.empty());
  CHECK(not_paused.err == "queue pq was not paused\n");
  CHECK(ok_json(url, {"resume", "pq"}) ==
        json{{"queue", "pq"}, {"paused", false}, {"changed", false}});

  // A queue with jobs: paused without a warning; resumed says so, once.
  RunResult paused = ok(url, {"pause", "pq"});
  CHECK(paused.out == "queue pq paused\n");
  CHECK(paused.err.empty());
  RunResult resumed = ok(url, {"resume", "pq"});
  CHECK(resumed.out == "queue pq resumed\n");
  CHECK(resumed.err.empty());

  // A name nobody used: paused all the same, with a warning on stderr.
  RunResult typo = ok(url, {"pause", "emials"});
  CHECK(typo.out == "queue emials paused\n");
  CHECK(contains(typo.err, "queue emials has no jobs yet; paused anyway (check the name"));
  CHECK(count_lines(typo.err) == 1);
  enqueue(url, "emials");
  CHECK(claim(url, "emials") == json::array());
  CHECK(ok_json(url, {"stats", "emials"})[0]["paused"] == true);
  // Known now (it has jobs and a setting): no warning; paused already, which it says.
  CHECK(ok(url, {"pause", "emials"}).err == "queue emials was already paused\n");

  // -q silences the warning; -o json keeps the document as it was.
  RunResult quiet = ok(url, {"-q", "pause", "fresh1"});
  CHECK(quiet.err.empty());
  RunResult as_json = ok(url, {"-o", "json", "pause", "fresh2"});
  CHECK(parse(as_json.out) == json{{"queue", "fresh2"}, {"paused", true}, {"changed", true}});
  CHECK(contains(as_json.err, "queue fresh2 has no jobs yet"));
  // A queue that only has a setting (paused, then resumed) is known.
  ok(url, {"resume", "fresh2"});
  CHECK(ok(url, {"pause", "fresh2"}).err.empty());
  json stats = ok_json(url, {"stats", "fresh1", "fresh2"});
  REQUIRE(stats.size() == 2);
  CHECK(stats[0]["paused"] == true);
  CHECK(stats[1]["paused"] == true);
}

TEST_CASE("cli: edge: reap -o json while another reaper holds the lock prints a skipped report") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  json job = enqueue(url, "q");
  claim_one(url, "q", {"--lease", "300ms", "--worker", "w-dead"});

  const std::string go = dir.path() + "/go";
  int holder = hold_lock(url, "queuectl:reap", dir.path(), go, cleanup);
  wait_expired(url, 1);

  const json skipped = {{"dry_run", false},
                        {"unleased", false},
                        {"requeued", 0},
                        {"failed", 0},
                        {"requeued_ids", json::array()},
                        {"failed_ids", json::array()},
                        {"dead_lettered", 0},
                        {"dead_lettered_ids", json::array()},
                        {"counts", json::array()},
                        {"batches", 0},
                        {"lock", "queuectl:reap"},
                        {"skipped", true}};
  RunResult as_json = ok(url, {"-o", "json", "reap"});
  CHECK(parse(as_json.out) == skipped);
  CHECK(contains(as_json.err, "another reaper holds the lock queuectl:reap"));
  RunResult as_ndjson = ok(url, {"-o", "ndjson", "reap"});
  CHECK(parse_lines(as_ndjson.out) == std::vector<json>{skipped});
  // -q silences stderr, not the data.
  RunResult quiet = ok(url, {"-q", "-o", "json", "reap"});
  CHECK(parse(quiet.out) == skipped);
  CHECK(quiet.err.empty());
  // Table output is unchanged: nothing on stdout, the message on stderr.
  RunResult table = ok(url, {"reap"});
  CHECK(table.out.empty());
  CHECK(contains(table.err, "another reaper holds the lock"));
  CHECK(status_of(url, id_of(job)) == "processing");

  // --no-lock works and says it took no lock.
  json forced = ok_json(url, {"reap", "--no-lock"});
  CHECK(forced["requeued_ids"] == json::array({job["id"]}));
  CHECK(forced["skipped"] == false);
  CHECK(forced["lock"].is_null());

  touch(go);
  CHECK(wait_child(cleanup, holder) == 0);
  json normal = ok_json(url, {"reap"});
  CHECK(normal["skipped"] == false);
  CHECK(normal["lock"] == "queuectl:reap");
  CHECK(ok_json(url, {"reap", "q"})["lock"] == "queuectl:reap:q");
}

TEST_CASE("cli: edge: stats reports a queue named twice once, in every output format") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "pq");
  enqueue(url, "pq");
  enqueue(url, "other");

  const std::string prom = ok(url, {"-o", "prometheus", "stats", "pq", "pq", "other", "pq"}).out;
  INFO(prom);
  std::vector<std::string> series = prometheus_series(prom);
  CHECK(std::set<std::string>(series.begin(), series.end()).size() == series.size());
  CHECK(std::count(series.begin(), series.end(), "queuectl_jobs{queue=\"pq\",status=\"ready\"}") ==
        1);
  CHECK(std::count(series.begin(), series.end(), "queuectl_queue_paused{queue=\"other\"}") == 1);
  CHECK(contains(prom, "queuectl_jobs{queue=\"pq\",status=\"ready\"} 2\n"));

  json doc = ok_json(url, {"stats", "pq", "other", "pq"});
  REQUIRE(doc.size() == 2);
  CHECK(doc[0]["queue"] == "pq");
  CHECK(doc[0]["ready"] == 2);
  CHECK(doc[1]["queue"] == "other");
  CHECK(parse_lines(ok(url, {"-o", "ndjson", "stats", "pq", "pq"}).out).size() == 1);
  std::istringstream table(ok(url, {"stats", "pq", "pq"}).out);
  int rows = 0;
  for (std::string l; std::getline(table, l);) rows += l.rfind("pq ", 0) == 0;
  CHECK(rows == 1);

  // The --help example writes the .prom file atomically: a temporary file, then mv.
  RunResult help = run_process({QUEUECTL_BINARY, "stats", "--help"});
  CHECK(contains(help.out, "queuectl.prom.$$"));
  CHECK(contains(help.out,
                 "&& mv /var/lib/node_exporter/textfile/queuectl.prom.$$ "
                 "/var/lib/node_exporter/textfile/queuectl.prom"));
}

// A line repeated (a retrying pipe, `tee` twice) is the same ack, not a lost lease.
TEST_CASE("cli: edge: ack --from with the same id and token twice acks once, exit 0") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  enqueue(url, "q");
  RunResult claimed = ok(url, {"-o", "ndjson", "claim", "q", "--limit", "2"});
  REQUIRE(count_lines(claimed.out) == 2);
  RunResult r = queuectl(url, {"-o", "json", "ack", "--from", "-"}, claimed.out + claimed.out);
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  json report = parse(r.out);
  CHECK(report["acked"] == 2);
  CHECK(report["lost"] == 0);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 2);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// An ack repeated with the token that finished the job (a CI step retried after a timeout)
// is done, exit 0, and says so; another token on that done job is still a lost lease (3).
TEST_CASE("cli: edges: an ack repeated with the same token is already done, exit 0") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  json job = claim_one(url, "q");
  const std::string id = id_text(job), token = job["lock_token"].get<std::string>();
  ok(url, {"ack", id, "--token", token});
  RunResult again = ok(url, {"ack", id, "--token", token});
  CHECK(again.out == "job " + id + " already done (acked before with this token)\n");
  json doc = ok_json(url, {"ack", id, "--token", token});
  CHECK(doc["already_done"] == true);
  CHECK(doc["status"] == "done");
  refused(fixture, {"ack", id, "--token", "00000000-0000-4000-8000-000000000000"}, 3, "lease");
  // ack --from: the repeated line counts as already done, not lost.
  enqueue(url, "q");
  json other = claim_one(url, "q");
  const std::string lines = R"({"id":)" + id + R"(,"token":")" + token + "\"}\n" + R"({"id":)" +
                            id_text(other) + R"(,"token":")" +
                            other["lock_token"].get<std::string>() + "\"}\n";
  RunResult from = queuectl(url, {"-o", "json", "ack", "--from", "-"}, lines);
  INFO(dump(from));
  CHECK(from.exit_code == 0);
  json report = parse(from.out);
  CHECK(report["acked"] == 1);
  CHECK(report["already_done"] == 1);
  CHECK(report["already_done_ids"] == json::array({std::stoll(id)}));
  CHECK(report["lost"] == 0);
  CHECK(show(url, std::stoll(id))["lock_token"] == token);  // the claim that finished it
}

}  // namespace queuectl::testing::cli
