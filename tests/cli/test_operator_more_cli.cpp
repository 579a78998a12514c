// More of what got in the way of operators and scripts in a first week (issue 14): the
// lock's conflict code, reap's summary, the job's stderr in the worker's log, claim --wait.
#include <algorithm>
#include <chrono>
#include <thread>

#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"
#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: lock -E chooses the exit code of a busy lock, apart from the command's own") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string go = dir.path() + "/go", log = dir.path() + "/log";
  const std::string marker = dir.path() + "/ran";
  // The holder writes `start`, then waits for `go`.
  const std::string gated = "echo start >> '" + log + "'; " + wait_for_file(go);
  // Free: the command's own 5 comes back as 5, whatever -E says.
  CHECK(queuectl(url, {"lock", "-E", "99", "nightly", "--", "sh", "-c", "exit 5"}).exit_code == 5);
  auto holder = queuectl_async(url, {"lock", "nightly", "--", "sh", "-c", gated});
  REQUIRE(wait_until([&] { return file_exists(log); }));
  RunResult busy = queuectl(url, {"lock", "-E", "99", "nightly", "--", "touch", marker});
  INFO(dump(busy));
  CHECK(busy.exit_code == 99);
  CHECK(busy.err.find("lock 'nightly' is held by someone else") != std::string::npos);
  RunResult quiet =
      queuectl(url, {"-q", "lock", "--conflict-exit-code", "0", "nightly", "--", "touch", marker});
  INFO(dump(quiet));
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  // Without -E a busy lock is still exit 5.
  check_error(queuectl(url, {"lock", "nightly", "--", "touch", marker}), 5, "nightly");
  CHECK(!file_exists(marker));
  touch(go);
  CHECK(holder.get().exit_code == 0);
  // Out of range or with --print-key: exit 2 before anything is locked.
  check_error(queuectl(url, {"lock", "-E", "256", "nightly", "--", "touch", marker}), 2,
              "--conflict-exit-code 256");
  check_error(queuectl(url, {"lock", "-E", "7", "--print-key", "nightly"}), 2, "--print-key");
  CHECK(!file_exists(marker));
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: reap counts by queue and former worker and lists only the first ids") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 14; ++i) enqueue(url, "mail");
  for (int i = 0; i < 3; ++i) enqueue(url, "sms", "{}", {"--max-attempts", "1"});
  json a = claim(url, "mail", {"--limit", "12", "--worker", "w-a"});
  json b = claim(url, "mail", {"--limit", "2", "--worker", "w-b"});
  json c = claim(url, "sms", {"--limit", "3", "--worker", "w-a"});
  fixture.db().session() << "UPDATE job_queue SET lock_until = " + hours_ago_sql(1) +
                                " WHERE status = 1";
  const std::string before = db_fingerprint(fixture);
  RunResult dry = ok(url, {"reap", "--dry-run"});
  CHECK(contains(dry.out, "WOULD_READY"));
  CHECK(contains(dry.out, "would return 14 expired job(s) to ready and fail 3"));
  CHECK(db_fingerprint(fixture) == before);

  RunResult reaped = ok(url, {"reap"});
  INFO(dump(reaped));
  std::vector<std::string> lines;
  for (std::size_t at = 0, end; at < reaped.out.size(); at = end + 1) {
    end = reaped.out.find('\n', at);
    if (end == std::string::npos) end = reaped.out.size();
    std::string line = reaped.out.substr(at, end - at);
    // Columns as words: the table's alignment is not the point here.
    std::string words;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] != ' ' || (!words.empty() && words.back() != ' ')) words += line[i];
    while (!words.empty() && words.back() == ' ') words.pop_back();
    lines.push_back(words);
  }
  const std::vector<std::int64_t> mail = ids_in(a);
  std::string first_ten;
  for (int i = 0; i < 10; ++i) first_ten += (i ? " " : "") + std::to_string(mail[i]);
  std::string sms;
  for (auto id : ids_in(c)) sms += (sms.empty() ? "" : " ") + std::to_string(id);
  CHECK(lines == std::vector<std::string>{
                     "QUEUE FORMER_WORKER READY FAILED",
                     "mail w-a 12 0",
                     "mail w-b 2 0",
                     "sms w-a 0 3",
                     "returned 14 expired job(s) to ready and failed 3 out of attempts",
                     "ready: " + first_ten + " ... and 4 more",
                     "failed: " + sms,
                 });
  // The full lists stay in JSON; nothing is left to reap.
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 14);
  json again = ok_json(url, {"reap"});
  CHECK(again["requeued"] == 0);
  CHECK(again["counts"] == json::array());
}

TEST_CASE("cli: reap -o json has every id and the counts by queue and former worker") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 12; ++i) enqueue(url, "mail");
  json a = claim(url, "mail", {"--limit", "12", "--worker", "w-a"});
  fixture.db().session() << "UPDATE job_queue SET lock_until = " + hours_ago_sql(1) +
                                " WHERE status = 1";
  json report = ok_json(url, {"reap", "--batch", "5"});
  CHECK(report["requeued"] == 12);
  CHECK(report["batches"] == 3);
  std::vector<std::int64_t> ids = report["requeued_ids"].get<std::vector<std::int64_t>>();
  std::sort(ids.begin(), ids.end());
  CHECK(ids == ids_in(a));
  CHECK(report["counts"] ==
        json::parse(R"([{"queue":"mail","worker":"w-a","requeued":12,"failed":0}])"));
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

namespace {

// The lines of `text` that start with `prefix`.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
    at = end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("cli: work passes each job's stderr through, a whole line at a time, named by job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(id_of(enqueue(url, "logs")));
  // Each job writes 300 long lines to stderr in small pieces, and a last line without a
  // line end; -q silences queuectl's own lines, not the jobs'.
  const std::string script =
      "i=0; while [ $i -lt 300 ]; do "
      "printf '%s-%s-' $QUEUECTL_JOB_ID $i >&2; printf '%0200d\\n' 0 >&2; i=$((i+1)); done; "
      "printf 'last words' >&2";
  RunResult r = queuectl(
      url, {"-q", "work", "logs", "--drain", "--concurrency", "4", "--", "sh", "-c", script});
  INFO(r.err.substr(0, 2000));
  CHECK(r.exit_code == 0);
  for (std::int64_t id : ids) {
    const std::string prefix = "job " + std::to_string(id) + ": ";
    std::vector<std::string> got = lines_starting(r.err, prefix);
    REQUIRE(got.size() == 301);
    for (int i = 0; i < 300; ++i)
      CHECK(got[i] ==
            prefix + std::to_string(id) + "-" + std::to_string(i) + "-" + std::string(200, '0'));
    CHECK(got[300] == prefix + "last words");
  }
  // Nothing but whole job lines and the summary: no piece of one job's line inside another's.
  CHECK(lines_starting(r.err, "job ").size() == 4 * 301);
  CHECK(count_lines(r.err) == 4 * 301 + 1);
}

TEST_CASE("cli: work keeps the stderr tail of a timed-out job and says when stdout is dropped") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json slow = enqueue(url, "slow");
  RunResult r =
      queuectl(url, {"work", "slow", "--drain", "--max-jobs", "1", "--timeout", "1s", "--", "sh",
                     "-c", "echo 'waiting for the mail server' >&2; exec sleep 30"});
  INFO(dump(r));
  CHECK(r.exit_code == 1);
  CHECK(contains(r.err, "job " + id_text(slow) + ": waiting for the mail server"));
  json after = show(url, id_of(slow));
  CHECK(after["last_error"] == "timed out after 1s; stopped: waiting for the mail server");

  json plain = enqueue(url, "plain");
  RunResult done = queuectl(url, {"work", "plain", "--drain", "--", "echo", "not json"});
  INFO(dump(done));
  CHECK(done.exit_code == 0);
  CHECK(contains(done.err, "done"));
  CHECK(contains(done.err, "its stdout (9 bytes) is not one JSON document: not stored"));
  CHECK(show(url, id_of(plain))["result"].is_null());
  // JSON output is stored, and nothing is said about it.
  json stored = enqueue(url, "plain");
  RunResult kept = queuectl(url, {"work", "plain", "--drain", "--", "echo", "{\"sent\":1}"});
  CHECK(!contains(kept.err, "not stored"));
  CHECK(show(url, id_of(stored))["result"] == json::parse("{\"sent\":1}"));
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: claim --wait takes a job enqueued while it waits") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto waiting = queuectl_async(url, {"-o", "json", "claim", "inbox", "--wait", "60s"});
  // Give it time to find the queue empty and start waiting; it must still be waiting.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  REQUIRE(!is_ready(waiting));
  json job = enqueue(url, "inbox", "{\"n\":1}");
  RunResult r = waiting.get();
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  json claimed = parse(r.out);
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0]["id"] == job["id"]);
  CHECK(claimed[0]["status"] == "processing");
}

TEST_CASE("cli: claim --wait takes a job that becomes due while it waits") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // Delayed: no announcement when it becomes due; the timer finds it.
  json job = enqueue(url, "later", "{}", {"--delay", "1500ms"});
  json claimed = ok_json(url, {"claim", "later", "--wait", "60s"});
  REQUIRE(claimed.size() == 1);
  CHECK(claimed[0]["id"] == job["id"]);
}

TEST_CASE("cli: claim --wait returns empty after DUR, says so; bad values are exit 2") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "other");  // another queue's job is not taken
  RunResult r = ok(url, {"-o", "json", "claim", "empty", "--wait", "300ms"});
  CHECK(parse(r.out) == json::array());
  CHECK(contains(r.err, "no job due in queue empty (waited 300ms)"));
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 1);
  check_usage_error(queuectl(url, {"claim", "empty", "--wait", "soon"}), "--wait");
  check_usage_error(queuectl(url, {"claim", "empty", "--wait", "-1s"}), "--wait");
}

}  // namespace queuectl::testing::cli
