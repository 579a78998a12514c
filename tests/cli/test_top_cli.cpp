// queuectl top: --once prints one frame whose rows carry each queue's numbers, within 80
// columns, with text from the table escaped; without a terminal it prints a plain frame
// every interval until a signal; it never writes and never migrates. (The full-screen view
// is driven under a real terminal by tests/top/test_top_tty.sh.)
#include <signal.h>

#include <chrono>
#include <map>
#include <sstream>
#include <thread>

#include "cli/cli_helpers.hpp"
#include "core/display_text.hpp"

namespace queuectl::testing::cli {
namespace {

// $COLUMNS unset: output to a pipe is fitted to 80 columns.
const std::map<std::string, std::string> kNoColumns = {{"COLUMNS", ""}};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The cells of the queue row named `queue` (the name first), empty when there is none.
std::vector<std::string> queue_row(const std::string& frame, const std::string& queue) {
  for (const std::string& line : lines_of(frame)) {
    auto words = words_of(line);
    if (words.size() == 9 && words[0] == queue) return words;
  }
  return {};
}

void check_fits(const std::string& frame, std::size_t width) {
  for (const std::string& line : lines_of(frame)) {
    INFO(line);
    CHECK(display_width(line) <= width);
  }
}

void age_lease(FreshDatabase& fixture, const json& job) {
  fixture.db().session() << "UPDATE job_queue SET lock_until = " + hours_ago_sql(2) +
                                " WHERE id = " + id_text(job);
}

// alpha: 3 ready, 1 scheduled, 3 processing (1 of them expired), 1 failed, 1 done in the
// last minute and 1 done two hours ago. beta: 1 ready, paused. gamma: no jobs, strict
// groups. old: only a job done two hours ago. Workers: w1 holds 2 leases, w2 1 (expired).
void fill(FreshDatabase& fixture) {
  const std::string url = fixture.url();
  for (int i = 0; i < 7; ++i) enqueue(url, "alpha");
  claim(url, "alpha", {"--limit", "2", "--worker", "w1", "--lease", "1h"});
  age_lease(fixture, claim_one(url, "alpha", {"--worker", "w2"}));
  json failing = claim_one(url, "alpha", {"--worker", "w3"});
  ok(url, {"fail", id_text(failing), "--token", failing["lock_token"].get<std::string>(),
           "--permanent", "--error", "boom: disk full\nsecond line of the trace"});
  json done = claim_one(url, "alpha", {"--worker", "w3"});
  ok(url, {"ack", id_text(done), "--token", done["lock_token"].get<std::string>()});
  json done_long_ago = claim_one(url, "alpha", {"--worker", "w3"});
  ok(url,
     {"ack", id_text(done_long_ago), "--token", done_long_ago["lock_token"].get<std::string>()});
  age_job(fixture, done_long_ago, "finished_at");
  for (int i = 0; i < 2; ++i) enqueue(url, "alpha");
  enqueue(url, "alpha", "{}", {"--delay", "1h"});
  enqueue(url, "beta");
  ok(url, {"pause", "beta"});
  ok(url, {"queue", "gamma", "--strict-groups", "on"});
  json old = enqueue(url, "old");
  json old_claimed = claim_one(url, "old");
  ok(url, {"ack", id_text(old_claimed), "--token", old_claimed["lock_token"].get<std::string>()});
  age_job(fixture, old, "finished_at");
}

}  // namespace

TEST_CASE("cli: top --once shows each queue's numbers in its row, workers and failures") {
  FreshDatabase fixture;
  fill(fixture);
  const std::string before = db_fingerprint(fixture);
  RunResult r = ok(fixture.url(), {"top", "--once"}, "", kNoColumns);
  INFO(r.out);
  CHECK(r.err.empty());
  CHECK(r.out.find("\x1b") == std::string::npos);
  check_fits(r.out, 80);
  CHECK(lines_of(r.out).front().rfind("queuectl top", 0) == 0);

  // QUEUE READY SCHED PROC EXPIRED FAILED DONE/M OLDEST FLAGS
  CHECK(queue_row(r.out, "QUEUE") == std::vector<std::string>{"QUEUE", "READY", "SCHED", "PROC",
                                                              "EXPIRED", "FAILED", "DONE/M",
                                                              "OLDEST", "FLAGS"});
  auto alpha = queue_row(r.out, "alpha");
  REQUIRE(alpha.size() == 9);
  CHECK(alpha[1] == "3");
  CHECK(alpha[2] == "1");
  CHECK(alpha[3] == "3");
  CHECK(alpha[4] == "1");
  CHECK(alpha[5] == "1");
  CHECK(alpha[6] == "1");  // the job done two hours ago is not counted
  CHECK(alpha[7] != "-");  // the oldest ready job's age
  CHECK(alpha[8] == "-");
  auto beta = queue_row(r.out, "beta");
  REQUIRE(beta.size() == 9);
  CHECK(beta[1] == "1");
  CHECK(beta[8] == "P");
  auto gamma = queue_row(r.out, "gamma");
  REQUIRE(gamma.size() == 9);
  CHECK(gamma[1] == "0");
  CHECK(gamma[7] == "-");
  CHECK(gamma[8] == "S");
  // Nothing ready, running, failed or done in the last minute, no setting: left out.
  CHECK(queue_row(r.out, "old").empty());
  CHECK(r.out.find("3 queues  ready 4  sched 1  proc 3  expired 1  failed 1  "
                   "done/min 1") != std::string::npos);

  // The busiest workers, most leases first.
  const auto lines = lines_of(r.out);
  auto worker_header = std::find_if(lines.begin(), lines.end(),
                                    [](const std::string& l) { return l.rfind("WORKER", 0) == 0; });
  REQUIRE(worker_header != lines.end());
  CHECK(words_of(*(worker_header + 1)) == std::vector<std::string>{"w1", "2", "0"});
  CHECK(words_of(*(worker_header + 2)) == std::vector<std::string>{"w2", "1", "1"});

  // The newest failure with its error's first line only.
  CHECK(r.out.find("boom: disk full") != std::string::npos);
  CHECK(r.out.find("second line") == std::string::npos);
  CHECK(db_fingerprint(fixture) == before);
}

TEST_CASE("cli: top --once -o json carries the frame's data") {
  FreshDatabase fixture;
  fill(fixture);
  json doc = parse(ok(fixture.url(), {"-o", "json", "top", "--once"}).out);
  CHECK(is_rfc3339_us(doc["now"]));
  REQUIRE(doc["queues"].size() == 3);
  const json& alpha = doc["queues"][0];
  CHECK(alpha["queue"] == "alpha");
  CHECK(alpha["ready"] == 3);
  CHECK(alpha["scheduled"] == 1);
  CHECK(alpha["processing"] == 3);
  CHECK(alpha["expired"] == 1);
  CHECK(alpha["failed"] == 1);
  CHECK(alpha["done_last_minute"] == 1);
  CHECK(alpha["oldest_ready_age_seconds"].is_number());
  CHECK(alpha["paused"] == false);
  CHECK(alpha["max_processing"].is_null());
  CHECK(doc["queues"][1]["queue"] == "beta");
  CHECK(doc["queues"][1]["paused"] == true);
  CHECK(doc["queues"][2]["strict_groups"] == true);
  REQUIRE(doc["workers"].size() == 2);
  CHECK(doc["workers"][0] == json{{"worker", "w1"}, {"leases", 2}, {"expired", 0}});
  REQUIRE(doc["failures"].size() == 1);
  CHECK(doc["failures"][0]["queue"] == "alpha");
  CHECK(doc["failures"][0]["error"] == "boom: disk full");
  CHECK(doc["failures"][0]["attempts"] == 1);
  // -o ndjson: the same object on one line.
  RunResult nd = ok(fixture.url(), {"-o", "ndjson", "top", "--once"});
  CHECK(count_lines(nd.out) == 1);
  CHECK(parse(nd.out)["queues"].size() == 3);
}

TEST_CASE("cli: top flags a queue's rate, retention and keep-done off, in FLAGS and JSON") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "kept", "--retain", "7d"});
  ok(url, {"queue", "lean", "--keep-done", "off"});
  ok(url, {"queue", "all", "--rate", "5/s", "--retain", "2h", "--keep-done", "off"});
  ok(url, {"queue", "plain", "--keep-done", "on"});  // the default: no flag, left out
  enqueue(url, "plain");
  RunResult r = ok(url, {"top", "--once"}, "", kNoColumns);
  INFO(r.out);
  check_fits(r.out, 80);
  CHECK(queue_row(r.out, "kept") ==
        std::vector<std::string>{"kept", "0", "0", "0", "0", "0", "0", "-", "T"});
  CHECK(queue_row(r.out, "lean") ==
        std::vector<std::string>{"lean", "0", "0", "0", "0", "0", "0", "-", "N"});
  CHECK(queue_row(r.out, "all").back() == "RTN");
  CHECK(queue_row(r.out, "plain").back() == "-");
  CHECK(r.out.find("T retain N acks delete") != std::string::npos);

  json doc = parse(ok(url, {"-o", "json", "top", "--once"}).out);
  std::map<std::string, json> by_name;
  for (const json& q : doc["queues"]) by_name[q["queue"].get<std::string>()] = q;
  REQUIRE(by_name.size() == 4);
  CHECK(by_name["kept"]["retain"] == "7d");
  CHECK(by_name["kept"]["keep_done"] == true);
  CHECK(by_name["lean"]["retain"].is_null());
  CHECK(by_name["lean"]["keep_done"] == false);
  CHECK(by_name["all"]["rate"] == "5/s");
  CHECK(by_name["all"]["retain"] == "2h");
  CHECK(by_name["all"]["keep_done"] == false);
  CHECK(by_name["plain"]["retain"].is_null());
  CHECK(by_name["plain"]["keep_done"] == true);
  // What `queue -o json` says of the same queue.
  CHECK(ok_json(url, {"queue", "all"})["retain"] == by_name["all"]["retain"]);
}

TEST_CASE("cli: top escapes text from the table and fits the width it is given") {
  FreshDatabase fixture;
  // Rows written by other code, with control characters in every text top shows.
  std::string queue = "evil\x1b[2J", worker = "w\x1b[31mred", error = "bad\x1b]0;pwned\x07 tail";
  std::string long_queue(60, 'q');
  allow_any_queue_name(fixture);  // rows written before the table refused such names
  fixture.db().session() << "INSERT INTO job_queue (queue, status, payload, last_error, "
                            "finished_at) VALUES (:q, 3, '{}', :e, " +
                                hours_ago_sql(0) + ")",
      soci::use(queue, "q"), soci::use(error, "e");
  fixture.db().session() << "INSERT INTO job_queue (queue, status, payload, locked_by, "
                            "lock_until) VALUES (:q, 1, '{}', :w, " +
                                hours_ago_sql(0) + ")",
      soci::use(long_queue, "q"), soci::use(worker, "w");
  RunResult r = ok(fixture.url(), {"top", "--once"}, "", kNoColumns);
  INFO(r.out);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
  CHECK(r.out.find("evil\\x1b[2J") != std::string::npos);
  CHECK(r.out.find("w\\x1b[31mred") != std::string::npos);
  CHECK(r.out.find("bad\\x1b]0;pwned\\x07 tail") != std::string::npos);
  check_fits(r.out, 80);
  // The long name is cut ("…"), its numbers still in their columns.
  CHECK(r.out.find(std::string(20, 'q') + "…") != std::string::npos);
  RunResult narrow = ok(fixture.url(), {"top", "--once"}, "", {{"COLUMNS", "50"}});
  check_fits(narrow.out, 50);
  RunResult wide = ok(fixture.url(), {"top", "--once"}, "", {{"COLUMNS", "200"}});
  CHECK(wide.out.find(long_queue + " ") != std::string::npos);
}

TEST_CASE("cli: top refuses bad input with exit 2 before it reads anything") {
  FreshDatabase fixture;
  enqueue(fixture.url(), "alpha");
  rejects(fixture, {"top", "--interval", "soon"}, "--interval");
  rejects(fixture, {"top", "--interval", "50ms"}, "--interval must be at least 100ms");
  rejects(fixture, {"top", "--interval", "-1s"}, "--interval");
  rejects(fixture, {"-o", "json", "top"}, "--once");
  rejects(fixture, {"-o", "ndjson", "top", "--interval", "2s"}, "--once");
  rejects(fixture, {"-o", "prometheus", "top", "--once"}, "prometheus");
  rejects(fixture, {"--field", "id", "top", "--once"}, "--field");
  rejects(fixture, {"top", "alpha"}, "alpha");
}

TEST_CASE("cli: top never migrates: an unmigrated database is refused and left alone") {
  FreshDatabase fixture;
  drop_schema(fixture);
  RunResult r = queuectl(fixture.url(), {"top", "--once"});
  check_error(r, 1, "queuectl migrate");
  std::string name = "queuectl_schema_migrations";
  int found = 0;
  std::string column, type;
  soci::statement st =
      statement_once(fixture.db().session(), fixture.db().sql().migrations.table_columns,
                     soci::into(column), soci::into(type), soci::use(name, "name"));
  for (bool got = st.execute(true); got; got = st.fetch()) ++found;
  CHECK(found == 0);
}

TEST_CASE("cli: top without a terminal prints a plain frame every interval until SIGTERM") {
  FreshDatabase fixture;
  fill(fixture);
  const std::string before = db_fingerprint(fixture);
  TempDir dir;
  const std::string log = dir.path() + "/top.log";
  int pid = spawn_process({QUEUECTL_BINARY, "--db", fixture.url(), "top", "--interval", "100ms"},
                          log, kNoColumns);
  // Frames keep coming: wait for a third, then ask it to stop.
  std::string text;
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream in(log);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::size_t frames = 0;
    for (std::size_t at = 0; (at = text.find("queuectl top", at)) != std::string::npos; ++at)
      ++frames;
    if (frames >= 3) break;
  }
  kill(pid, SIGTERM);
  CHECK(wait_process(pid) == 0);
  std::ifstream in(log);
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  INFO(text);
  std::size_t frames = 0;
  for (std::size_t at = 0; (at = text.find("queuectl top", at)) != std::string::npos; ++at)
    ++frames;
  CHECK(frames >= 3);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("every 100ms") != std::string::npos);
  CHECK(queue_row(text, "alpha").size() == 9);
  check_fits(text, 80);
  CHECK(db_fingerprint(fixture) == before);
}

}  // namespace queuectl::testing::cli
