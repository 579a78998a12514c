// The faster paths keep behaviour (issue 13): `claim -o ndjson | ack --from -` acks lines
// carrying "result":null many to a statement, and still reports each lost lease per job.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: claim -o ndjson | ack --from -: \"result\":null acks with no result") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 5; ++i) enqueue(url, "pipe");
  RunResult claimed = ok(url, {"claim", "pipe", "--limit", "5", "-o", "ndjson"});
  REQUIRE(count_lines(claimed.out) == 5);
  for (const json& line : parse_lines(claimed.out)) REQUIRE(line["result"].is_null());
  RunResult acked = ok(url, {"ack", "--from", "-", "-o", "json"}, claimed.out);
  CHECK(parse(acked.out)["acked"] == 5);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 5);
  // SQL NULL, as an ack without a result leaves it; not a JSON null literal.
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE result IS NULL") == 5);
  for (const json& line : parse_lines(claimed.out))
    CHECK(show(url, line["id"].get<std::int64_t>())["result"].is_null());
}

TEST_CASE("cli: ack --from in one batch reports each lost lease and acks the rest") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 4; ++i) enqueue(url, "pipe");
  std::vector<json> jobs =
      parse_lines(ok(url, {"claim", "pipe", "--limit", "4", "-o", "ndjson"}).out);
  REQUIRE(jobs.size() == 4);
  // Two of them lose their lease: one is released, one is canceled by force.
  const std::int64_t released = jobs[1]["id"], canceled = jobs[3]["id"];
  ok(url, {"release", std::to_string(released), "--token", jobs[1]["lock_token"]});
  ok(url, {"cancel", std::to_string(canceled), "--force"});
  std::string input;
  for (const json& j : jobs) input += j.dump() + "\n";
  RunResult r = queuectl(url, {"ack", "--from", "-", "-o", "json"}, input);
  CHECK_MESSAGE(r.exit_code == 3, dump(r));
  json report = parse(r.out);
  CHECK(report["acked"] == 2);
  CHECK(report["lost"] == 2);
  CHECK(report["lost_ids"] == json::array({released, canceled}));
  CHECK(report["acked_ids"].size() == 2);
  CHECK(r.err.find("lease lost on job " + std::to_string(released)) != std::string::npos);
  CHECK(r.err.find("lease lost on job " + std::to_string(canceled)) != std::string::npos);
  CHECK(show(url, jobs[0]["id"].get<std::int64_t>())["status"] == "done");
  CHECK(show(url, jobs[2]["id"].get<std::int64_t>())["status"] == "done");
  CHECK(show(url, released)["status"] == "ready");
  CHECK(show(url, canceled)["status"] == "canceled");
}

// enqueue --from reads a long input in slices side by side: the jobs keep the input's
// order, blank lines are skipped anywhere, and a bad line is reported as the first one.
TEST_CASE("cli: enqueue --from of 9,000 lines keeps their order and reports the first bad line") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::string input;
  for (int i = 0; i < 9000; ++i) {
    input += R"({"queue":"bulk","payload":{"n":)" + std::to_string(i) + "}}\n";
    if (i % 2500 == 0) input += "  \n";  // blank lines in several slices
  }
  // A bad line is refused with its number and nothing is written; of two bad lines, in
  // different slices, the first is named. (Line numbers count the blank lines: "n":5997
  // is line 6001, "n":2999 line 3002.)
  auto spoil = [](std::string text, int n, const std::string& with) {
    const std::string line = R"({"queue":"bulk","payload":{"n":)" + std::to_string(n) + "}}";
    const std::size_t at = text.find(line + "\n");
    REQUIRE(at != std::string::npos);
    return text.replace(at, line.size(), with);
  };
  const std::string late = spoil(input, 5997, R"({"queue":"bulk","payload":{"n":})");
  RunResult refused = queuectl(url, {"enqueue", "--from", "-"}, late);
  CHECK_MESSAGE(refused.exit_code == 2, dump(refused));
  CHECK_MESSAGE(refused.err.find("line 6001:") != std::string::npos, dump(refused));
  const std::string both = spoil(late, 2999, R"({"queue":"","payload":{}})");
  refused = queuectl(url, {"enqueue", "--from", "-"}, both);
  CHECK_MESSAGE(refused.exit_code == 2, dump(refused));
  CHECK_MESSAGE(refused.err.find("line 3002:") != std::string::npos, dump(refused));
  CHECK_MESSAGE(refused.err.find("line 6001") == std::string::npos, dump(refused));
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue") == 0);

  RunResult r = ok(url, {"enqueue", "--from", "-", "-o", "json"}, input);
  CHECK(parse(r.out)["enqueued"] == 9000);
  // In id order, the payloads count up: the slices went in in the input's order.
  const Backend b = backend_under_test();
  const std::string n_of = b == Backend::postgresql ? "CAST(x.payload->>'n' AS integer)"
                           : b == Backend::mysql    ? "JSON_EXTRACT(x.payload, '$.n')"
                                                    : "json_extract(x.payload, '$.n')";
  auto n = [&](const std::string& alias) {
    std::string e = n_of;
    e.replace(e.find("x."), 2, alias + ".");
    return e;
  };
  CHECK(scalar(fixture.db(),
               "SELECT COUNT(*) FROM job_queue a JOIN job_queue b ON b.id = a.id + 1"
               " WHERE " +
                   n("b") + " <> " + n("a") + " + 1") == 0);
  CHECK(scalar(fixture.db(),
               "SELECT COUNT(*) FROM job_queue a JOIN job_queue b ON b.id = a.id + 1") == 8999);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// `claim ... | ack --from -`: ack opens its connection while claim is still running and its
// input has not come, so that the connection's round trips overlap claim's work. What it
// writes still waits for the whole input, and bad input still writes nothing. (PostgreSQL:
// the server lists the waiting connection under the application_name of the URL.)
TEST_CASE("cli: ack --from connects while its input is still coming (PostgreSQL)" *
          doctest::skip(backend_under_test() != Backend::postgresql || through_pooler())) {
  FreshDatabase fixture;
  TempDir dir;
  Cleanup cleanup;
  const std::string name = "qc-ack-early-" + std::to_string(getpid());
  const std::string url = with_application_name(fixture.url(), name);
  for (int i = 0; i < 3; ++i) enqueue(url, "pipe");
  const std::string claimed = ok(url, {"claim", "pipe", "--limit", "3", "-o", "ndjson"}).out;
  REQUIRE(count_lines(claimed) == 3);
  auto connected = [&] {
    return scalar(fixture.db(), "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = '" +
                                    name + "'") == 1;
  };
  for (const bool valid : {false, true}) {
    INFO((valid ? "valid input" : "a bad line"));
    const std::string fifo = dir.path() + (valid ? "/good" : "/bad");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const int ack =
        cleanup.child(spawn_queuectl(url, {"ack", "--from", fifo}, dir.path() + "/ack.log"));
    // Connected before a byte of input was written (nobody has opened the FIFO yet).
    CHECK_MESSAGE(wait_until(connected, 20000), "ack did not connect before its input came");
    CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 1") == 3);
    {
      std::ofstream in(fifo);
      in << (valid ? claimed : claimed + "{\"id\": \"not a number\"}\n");
    }
    const int code = wait_child(cleanup, ack);
    INFO(read_text(dir.path() + "/ack.log"));
    if (!valid) {
      CHECK(code == 2);
      CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 1") == 3);
    } else {
      CHECK(code == 0);
      CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 3);
    }
  }
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// ack --from reads a long input in slices side by side too (from 250 lines a slice): of two
// bad lines in different slices the first is named and nothing is acked; a line repeated in
// another slice is one ack; blank lines anywhere are skipped.
TEST_CASE("cli: ack --from of 1200 lines in slices: the first bad line, repeats, blank lines") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue_many(url, "pipe", 1200);
  std::vector<std::string> lines;
  {
    std::istringstream out(ok(url, {"claim", "pipe", "--limit", "1200", "-o", "ndjson"}).out);
    for (std::string line; std::getline(out, line);) lines.push_back(line);
  }
  REQUIRE(lines.size() == 1200);
  auto join = [](const std::vector<std::string>& v) {
    std::string text;
    for (const std::string& l : v) text += l + "\n";
    return text;
  };
  std::vector<std::string> bad = lines;
  bad[1000] = R"({"id":"x","token":"t"})";  // line 1001, in the last slice
  bad[400] = R"({"id":1})";                 // line 401, in the second
  RunResult refused = queuectl(url, {"ack", "--from", "-"}, join(bad));
  CHECK_MESSAGE(refused.exit_code == 2, dump(refused));
  CHECK_MESSAGE(refused.err.find("line 401:") != std::string::npos, dump(refused));
  CHECK_MESSAGE(refused.err.find("line 1001") == std::string::npos, dump(refused));
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 0);

  std::vector<std::string> input = lines;
  input.push_back(lines[3]);  // again, in another slice
  input.insert(input.begin() + 700, "   ");
  RunResult r = ok(url, {"ack", "--from", "-", "-o", "json"}, join(input));
  CHECK(parse(r.out)["acked"] == 1200);
  CHECK(parse(r.out)["lost"] == 0);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 1200);
}

}  // namespace queuectl::testing::cli
