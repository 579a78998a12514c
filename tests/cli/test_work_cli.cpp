// `queuectl work QUEUE -- CMD` through the real binary: success and failure, timeouts,
// the heartbeat, SIGTERM, --drain, --max-jobs and --concurrency. Runs unchanged on every
// backend.
#include <doctest/doctest.h>

#include <regex>
#include <sstream>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// `work` with -o json: the summary document (worker, done, failed, timed_out, ...).
json work_json(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), "work");
  return ok_json(url, args);
}

// A --drain run in which some job failed or timed out: its summary, after requiring exit 1
// and the one error line that counts them.
json failing_drain_json(const std::string& url, std::vector<std::string> args) {
  args.insert(args.begin(), {"-o", "json", "work"});
  RunResult r = queuectl(url, args);
  INFO(dump(r));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("failed or timed out while draining queue") != std::string::npos);
  return parse(r.out);
}

// Whether `s` is well-formed UTF-8: no stray continuation bytes, no truncated, overlong or
// surrogate sequences, nothing past U+10FFFF.
bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
    if (n < 0 || i + static_cast<std::size_t>(n) >= s.size() + (n == 0)) return false;
    unsigned cp = n == 0 ? c : n == 1 ? (c & 0x1Fu) : n == 2 ? (c & 0x0Fu) : (c & 0x07u);
    for (int k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    static const unsigned min_of[] = {0, 0x80, 0x800, 0x10000};
    if (cp < min_of[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<std::size_t>(n) + 1;
  }
  return true;
}

}  // namespace

TEST_CASE("cli: work runs CMD with the payload on stdin and the job in its environment") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string payload = R"({"to":"a@example.com","n":[1,2]})";
  const std::int64_t id = id_of(enqueue(url, "mail", payload, {"--max-attempts", "4"}));
  const std::string in = dir.path() + "/stdin", env = dir.path() + "/env",
                    extend = dir.path() + "/extend";
  // The command saves its stdin and environment, proves its token is the job's live
  // token by extending the lease with it, and prints a JSON result.
  const std::string script =
      "cat > '" + in + "'; env | grep '^QUEUECTL_' | sort > '" + env +
      "'; \"$0\" --db \"$1\" -q extend \"$QUEUECTL_JOB_ID\" --token \"$QUEUECTL_LOCK_TOKEN\" "
      "--lease 1m >/dev/null; echo $? > '" +
      extend + "'; echo '{\"sent\":true,\"id\":'$QUEUECTL_JOB_ID'}'";
  json summary = work_json(
      url, {"mail", "--drain", "--worker", "w-ok", "--", "sh", "-c", script, QUEUECTL_BINARY, url});
  INFO(summary.dump());
  CHECK(summary["worker"] == "w-ok");
  CHECK(summary["done"] == 1);
  CHECK(summary["failed"] == 0);
  CHECK(summary["lost"] == 0);

  CHECK(parse(read_text(in)) == parse(payload));
  std::map<std::string, std::string> vars;
  for (const std::string& line : read_lines(env)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  INFO(read_text(env));
  CHECK(vars["QUEUECTL_JOB_ID"] == std::to_string(id));
  CHECK(vars["QUEUECTL_QUEUE"] == "mail");
  CHECK(vars["QUEUECTL_ATTEMPT"] == "1");
  CHECK(vars["QUEUECTL_MAX_ATTEMPTS"] == "4");
  CHECK(is_uuid(vars["QUEUECTL_LOCK_TOKEN"]));
  CHECK(read_text(extend) == "0\n");

  json done = show(url, id);
  INFO(done.dump());
  CHECK(done["status"] == "done");
  CHECK(done["attempts"] == 1);
  CHECK(done["locked_by"] == "w-ok");
  CHECK(done["result"] == json{{"sent", true}, {"id", id}});
  CHECK(done["last_error"].is_null());
  CHECK(done["lock_token"].is_string());  // the token of the claim that finished it

  // Output that is not JSON acks the job all the same, with no result.
  const std::int64_t plain = id_of(enqueue(url, "mail"));
  json s2 = work_json(url, {"mail", "--drain", "--", "sh", "-c", "echo not json"});
  CHECK(s2["done"] == 1);
  json plain_done = show(url, plain);
  CHECK(plain_done["status"] == "done");
  CHECK(plain_done["result"].is_null());
}

TEST_CASE("cli: work: a failing command fails the job with its stderr; it retries later") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::int64_t id = id_of(enqueue(url, "q"));
  json summary =
      failing_drain_json(url, {"q", "--drain", "--", "sh", "-c",
                               "echo 'progress on stdout'; echo 'smtp said no: 550' >&2; exit 3"});
  INFO(summary.dump());
  CHECK(summary["failed"] == 1);
  CHECK(summary["done"] == 0);
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 1);
  CHECK(job["lock_token"].is_null());
  CHECK(job["result"].is_null());
  REQUIRE(job["last_error"].is_string());
  const std::string error = job["last_error"];
  CHECK(contains(error, "exit code 3"));
  CHECK(contains(error, "smtp said no: 550"));
  CHECK(!contains(error, "progress on stdout"));
  // Backoff: not due yet, so a second --drain worker finds nothing and leaves it alone.
  CHECK(epoch_us(job["run_at"]) > epoch_us(job["updated_at"]));

  // On the last attempt the job fails for good.
  {
    const std::int64_t last = id_of(enqueue(url, "last", "{}", {"--max-attempts", "1"}));
    json s =
        failing_drain_json(url, {"last", "--drain", "--", "sh", "-c", "echo boom >&2; exit 1"});
    CHECK(s["failed"] == 1);
    json failed = show(url, last);
    CHECK(failed["status"] == "failed");
    CHECK(contains(failed["last_error"].get<std::string>(), "boom"));
    CHECK(is_rfc3339_us(failed["finished_at"]));
  }
}

TEST_CASE("cli: work --timeout stops a job that runs too long and fails it") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::int64_t id = id_of(enqueue(url, "slow"));
  const std::string marker = dir.path() + "/finished";
  json summary = failing_drain_json(url, {"slow", "--drain", "--timeout", "500ms", "--", "sh", "-c",
                                          "sleep 5; touch '" + marker + "'"});
  INFO(summary.dump());
  CHECK(summary["timed_out"] == 1);
  CHECK(summary["done"] == 0);
  CHECK(!file_exists(marker));  // stopped, not waited for
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 1);
  CHECK(contains(job["last_error"].get<std::string>(), "timed out"));
}

TEST_CASE("cli: work: the heartbeat keeps a job alive past its lease; reap leaves it alone") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::int64_t id = id_of(enqueue(url, "long"));
  const std::string started = dir.path() + "/started", go = dir.path() + "/go";
  // The command runs until the test lets it end: once the heartbeat has kept its 600ms lease
  // going for more than three leases.
  auto worker = queuectl_async(
      url, {"-o", "json", "work", "long", "--drain", "--lease", "600ms", "--worker", "w-beat", "--",
            "sh", "-c", "touch '" + started + "'; " + wait_for_file(go)});
  REQUIRE_MESSAGE(wait_until([&] { return file_exists(started) || is_ready(worker); }),
                  "the job never started");
  // Reap over and over while the job runs, until a beat has extended its lease to more than
  // four leases after the claim (so at least three leases after it); the database's clock
  // says when.
  int reaps = 0;
  json held;
  const bool extended = wait_until(
      [&] {
        json r = ok_json(url, {"reap"});
        INFO(r.dump());
        CHECK(r["requeued"] == 0);
        CHECK(r["failed"] == 0);
        ++reaps;
        held = show(url, id);
        return is_ready(worker) ||
               (held["status"] == "processing" && held["lock_until"].is_string() &&
                seconds_between(held["locked_at"], held["lock_until"]) > 2.4);
      },
      30000, 100);
  touch(go);
  REQUIRE_MESSAGE(extended, "the lease was not kept past three leases within 30s: " << held.dump());
  REQUIRE_MESSAGE(wait_until([&] { return is_ready(worker); }, 30000),
                  "the worker did not end once its job did");
  RunResult w = worker.get();
  INFO(dump(w));
  REQUIRE(w.exit_code == 0);
  MESSAGE("reaped " << reaps << " time(s) while the job ran");
  json summary = parse(w.out);
  CHECK(summary["done"] == 1);
  CHECK(summary["lost"] == 0);
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "done");
  CHECK(job["attempts"] == 1);
  CHECK(job["last_error"].is_null());
  // The lease was really extended: locked for longer than one lease.
  CHECK(seconds_between(job["locked_at"], job["finished_at"]) > 1.0);
}

TEST_CASE("cli: work: SIGTERM releases a running job after --grace") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  enqueue(url, "q");  // a second job, which must not be started after the signal
  const std::string pid_file = dir.path() + "/job.pid", log = dir.path() + "/worker.log";
  int worker =
      cleanup.child(spawn_queuectl(url,
                                   {"work", "q", "--grace", "200ms", "--", "sh", "-c",
                                    "echo $$ > '" + pid_file + "'; sleep 10; echo finished"},
                                   log));
  int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started: " << read_text(log));
  cleanup.group(job_pid);
  CHECK(status_of(url, id) == "processing");

  kill(worker, SIGTERM);
  int code = wait_child(cleanup, worker);
  INFO(read_text(log));
  CHECK(code == 0);
  CHECK(contains(read_text(log), "released"));
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 0);
  CHECK(job["lock_token"].is_null());
  CHECK(job["lock_until"].is_null());
  // Released, not failed: due again at once, and nothing else was claimed.
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 2);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE attempts = 0") == 2);
  // Due again at once: a claim of both hands it out now, not after a backoff. (Its run_at
  // is the release time, so the untouched second job comes first in claim order.)
  json again = claim(url, "q", {"--limit", "2"});
  REQUIRE(again.size() == 2);
  CHECK((id_of(again[0]) == id || id_of(again[1]) == id));
}

TEST_CASE("cli: work --drain exits 0 when nothing is due") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  json empty = work_json(url, {"idle", "--drain", "--", "touch", marker});
  CHECK(empty["done"] == 0);
  // A job that is not due yet is not due.
  const std::int64_t later = id_of(enqueue(url, "idle", "{}", {"--delay", "1h"}));
  json delayed = work_json(url, {"idle", "--drain", "--", "touch", marker});
  CHECK(delayed["done"] == 0);
  CHECK(!file_exists(marker));
  json job = show(url, later);
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 0);
  // The table format prints nothing on stdout; the summary goes to stderr.
  RunResult table = ok(url, {"work", "idle", "--drain", "--", "touch", marker});
  CHECK(table.out.empty());
  CHECK(contains(table.err, "stopped after 0 job(s)"));
}

TEST_CASE("cli: work --max-jobs 2 exits after two jobs") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "batch", "{\"i\":" + std::to_string(i) + "}");
  // No --drain: only --max-jobs makes it exit.
  json summary = work_json(url, {"batch", "--max-jobs", "2", "--", "true"});
  INFO(summary.dump());
  CHECK(summary["done"] == 2);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 2);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 1);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE attempts = 0") == 1);
}

TEST_CASE("cli: work --concurrency 3 runs three jobs at once") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string log = dir.path() + "/log";
  for (int i = 0; i < 3; ++i) enqueue(url, "par");
  // Each job waits (up to ~10s) until all three have started; run one at a time, the first
  // would give up waiting and write `end` after a single `start`.
  const std::string script = "echo start >> '" + log + "'; i=0; while [ $(grep -c start '" + log +
                             "') -lt 3 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; "
                             "echo end >> '" +
                             log + "'";
  json summary = work_json(url, {"par", "--concurrency", "3", "--drain", "--", "sh", "-c", script});
  INFO(summary.dump());
  CHECK(summary["done"] == 3);
  std::vector<std::string> lines = read_lines(log);
  INFO(read_text(log));
  REQUIRE(lines.size() == 6);
  CHECK(std::vector<std::string>(lines.begin(), lines.begin() + 3) ==
        std::vector<std::string>{"start", "start", "start"});
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 3);
}

// Whatever JSON the command prints is kept (normalized); anything else, including empty
// output and output past the 1 MiB stdout bound, acks the job with no result.
TEST_CASE("cli: work keeps JSON stdout as the result and acks other output with none") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  struct Case {
    std::string script;
    json result;
  };
  const std::vector<Case> cases = {
      {"echo '[1, 2, 3]'", json::array({1, 2, 3})},
      {"printf '  {\"a\": {\"b\": null}}\\n\\n'", json{{"a", {{"b", nullptr}}}}},
      {"echo 42", 42},
      {"echo '\"text\"'", "text"},
      {"true", nullptr},
      {"echo '{\"a\":1} trailing'", nullptr},
      {"echo 'not json'", nullptr},
      // Valid JSON, but longer than the kept 1 MiB of stdout: cut, so not kept.
      {"printf '\"'; head -c 1100000 /dev/zero | tr '\\0' x; printf '\"'", nullptr},
  };
  for (const Case& c : cases) {
    CAPTURE(c.script);
    const std::int64_t id = id_of(enqueue(url, "out"));
    json summary = work_json(url, {"out", "--drain", "--", "sh", "-c", c.script});
    CHECK(summary["done"] == 1);
    json job = show(url, id);
    INFO(job.dump().substr(0, 2000));
    CHECK(job["status"] == "done");
    CHECK(job["result"] == c.result);
  }
}

// One stderr line per job: "job ID attempt A/M: OUTCOME (DURATION)[, what next]", and a
// summary; with -q the per-job lines go and only the summary stays.
TEST_CASE("cli: work prints one line per job on stderr, none with -q") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string ok_id = id_text(enqueue(url, "lines", R"({"k":"ok"})"));
  const std::int64_t retry =
      id_of(enqueue(url, "lines", R"({"k":"bad"})", {"--max-attempts", "3"}));
  const std::string last =
      id_text(enqueue(url, "lines", R"({"k":"bad"})", {"--max-attempts", "1"}));
  const std::vector<std::string> cmd = {"sh", "-c",
                                        "read p; case \"$p\" in *ok*) exit 0;; *) exit 3;; esac"};
  std::vector<std::string> args = {"work", "lines", "--drain", "--worker", "w-lines", "--"};
  args.insert(args.end(), cmd.begin(), cmd.end());
  RunResult r = queuectl(url, args);
  INFO(r.err);
  CHECK(r.exit_code == 1);  // --drain and jobs failed: the last line says how many
  CHECK(contains(r.err,
                 "queuectl: error: 2 of 3 job(s) failed or timed out while draining "
                 "queue lines\n"));
  CHECK(r.out.empty());
  const std::vector<std::string> jobs = lines_with(r.err, " attempt ");
  CHECK(jobs.size() == 3);
  // How long the job ran, as tables print durations: "850ms", "42s", "9m58s".
  const std::string took = R"( \((\d+ms|\d+s|\d+m\d*s?)\))";
  CHECK(std::regex_search(
      r.err, std::regex("(^|\n)queuectl: job " + ok_id + " attempt 1/25: done" + took + "\n")));
  json retried = show(url, retry);
  CHECK(retried["status"] == "ready");
  CHECK(contains(r.err,
                 "queuectl: job " + std::to_string(retry) + " attempt 1/3: failed with exit 3"));
  CHECK(std::regex_search(r.err,
                          std::regex("(^|\n)queuectl: job " + std::to_string(retry) +
                                     " attempt 1/3: failed with exit 3" + took + ", retry at " +
                                     retried["run_at"].get<std::string>() + "\n")));
  CHECK(std::regex_search(
      r.err, std::regex("(^|\n)queuectl: job " + last + " attempt 1/1: failed with exit 3" + took +
                        ", failed for good\n")));
  CHECK(contains(r.err,
                 "queuectl: worker w-lines stopped after 3 job(s): 1 done, 2 failed, 0 "
                 "timed out, 0 released, 0 lost\n"));

  // -q: the same work, no per-job lines (nor the start line).
  enqueue(url, "quiet", R"({"k":"ok"})");
  enqueue(url, "quiet", R"({"k":"bad"})");
  args = {"-q", "work", "quiet", "--drain", "--"};
  args.insert(args.end(), cmd.begin(), cmd.end());
  RunResult q = queuectl(url, args);
  INFO(q.err);
  CHECK(q.exit_code == 1);
  CHECK(q.out.empty());
  CHECK(lines_with(q.err, "attempt").empty());
  CHECK(lines_with(q.err, "on queue").empty());
  CHECK(contains(q.err, "stopped after 2 job(s): 1 done, 1 failed"));  // the summary stays
  CHECK(scalar(fixture.db(),
               "SELECT COUNT(*) FROM job_queue WHERE queue = 'quiet' AND attempts = 1") == 2);
}

// 20 KB of stderr with bytes that are not UTF-8 and a character cut by the 4 KiB tail: the
// job fails for a retry with a last_error that is valid UTF-8, bounded, and ends with the
// command's final line.
TEST_CASE("cli: work: stderr that is not UTF-8 becomes a valid, bounded last_error") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string final_line = "the final line: smtp said 550";
  std::string noise;
  while (noise.size() < 16000) noise += "bad bytes \xff\xfe here, caf\xc3\xa9 ok\n";
  // Ordinary text with an invalid pair every 400 bytes, sized so that the kept last 4096
  // bytes begin in the middle of the euro sign (E2 82 AC) placed just before it.
  std::string filler;
  while (filler.size() < 4096) filler += std::string(398, 'y') + "\xff\xfe";
  filler.resize(4096 - 2 - final_line.size() - 1);
  const std::string err = noise + "\xe2\x82\xac" + filler + final_line + "\n";
  const std::string file = dir.write("stderr", err);
  const std::int64_t id = id_of(enqueue(url, "q"));
  json summary =
      failing_drain_json(url, {"q", "--drain", "--", "sh", "-c", "cat '" + file + "' >&2; exit 1"});
  INFO(summary.dump());
  CHECK(summary["failed"] == 1);
  json job = show(url, id);
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 1);
  REQUIRE(job["last_error"].is_string());
  const std::string error = job["last_error"];
  INFO(error);
  CHECK(valid_utf8(error));
  CHECK(error.size() <= 4300);
  CHECK(error.size() >= 4000);  // the tail was kept, not dropped
  CHECK(contains(error, "exit code 1"));
  CHECK(error.substr(error.size() - final_line.size()) == final_line);
}

}  // namespace queuectl::testing::cli
