// Trace context and progress through the real binary (issue 31): TRACEPARENT stored at
// enqueue and handed to the first attempt, a linked new trace for a retry; extend's
// --progress/--note/--checkpoint under the token check; a command under `work` reporting on
// descriptor 3; a checkpoint that outlives a failed attempt and a SIGKILLed worker. Runs
// unchanged on every backend (and through PgBouncer).
#include <doctest/doctest.h>

#include <signal.h>

#include <regex>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

const std::string kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const std::string kState = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

// The variables a command saved with `env > FILE`, by name.
std::map<std::string, std::string> env_file(const std::string& path) {
  std::map<std::string, std::string> vars;
  for (const std::string& line : read_lines(path)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return vars;
}

// One `work` run that takes one job and stops.
RunResult work_one(const std::string& url, const std::string& queue,
                   const std::vector<std::string>& command,
                   const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> args = {"work", queue, "--drain", "--max-jobs", "1", "--"};
  args.insert(args.end(), command.begin(), command.end());
  return queuectl(url, args, "", env);
}

}  // namespace

TEST_CASE(
    "cli: enqueue keeps TRACEPARENT; work hands it to the first attempt, a retry gets a "
    "linked new trace, and a job without one does not get the worker's") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::map<std::string, std::string> traced = {{"TRACEPARENT", kParent},
                                                     {"TRACESTATE", kState}};
  const json job =
      parse(ok(url, {"-o", "json", "enqueue", "t", "{}", "--max-attempts", "3"}, "", traced).out);
  const std::int64_t id = id_of(job);
  CHECK(job["trace_parent"] == kParent);
  CHECK(job["trace_state"] == kState);
  const RunResult shown = ok(url, {"show", std::to_string(id)});
  CHECK(contains(shown.out, kParent));

  // Each attempt saves its environment; the first fails. The worker runs in a trace of its
  // own, which no job may inherit.
  const std::string script =
      "env > '" + dir.path() + "/attempt-'$QUEUECTL_ATTEMPT; " + "[ \"$QUEUECTL_ATTEMPT\" -ge 2 ]";
  const std::map<std::string, std::string> worker_env = {
      {"TRACEPARENT", "00-11111111111111111111111111111111-2222222222222222-01"},
      {"TRACESTATE", "worker=1"}};
  RunResult first = work_one(url, "t", {"sh", "-c", script}, worker_env);
  INFO(dump(first));
  CHECK(first.exit_code == 1);  // the drain saw a failure
  auto a1 = env_file(dir.path() + "/attempt-1");
  CHECK(a1["TRACEPARENT"] == kParent);
  CHECK(a1["TRACESTATE"] == kState);
  CHECK(a1.count("QUEUECTL_TRACE_LINK") == 0);

  make_due(fixture, id);
  ok(url, {"work", "t", "--drain", "--max-jobs", "1", "--", "sh", "-c", script}, "", worker_env);
  auto a2 = env_file(dir.path() + "/attempt-2");
  INFO(read_text(dir.path() + "/attempt-2"));
  const std::regex shape("00-([0-9a-f]{32})-([0-9a-f]{16})-01");
  std::smatch m;
  REQUIRE(std::regex_match(a2["TRACEPARENT"], m, shape));
  CHECK(m[1].str() != kParent.substr(3, 32));               // a trace of its own
  CHECK(m[1].str() != "11111111111111111111111111111111");  // not the worker's
  CHECK(m[2].str() != kParent.substr(36, 16));
  CHECK(a2["QUEUECTL_TRACE_LINK"] == kParent);
  CHECK(a2.count("TRACESTATE") == 0);
  CHECK(show(url, id)["status"] == "done");

  // No trace context of its own: none in the command's environment either.
  const std::int64_t plain = id_of(enqueue(url, "t"));
  CHECK(show(url, plain)["trace_parent"].is_null());
  const std::string saves = "env > '" + dir.path() + "/attempt-'$QUEUECTL_ATTEMPT";
  ok(url, {"work", "t", "--drain", "--max-jobs", "1", "--", "sh", "-c", saves}, "", worker_env);
  auto p1 = env_file(dir.path() + "/attempt-1");
  CHECK(p1["QUEUECTL_JOB_ID"] == std::to_string(plain));
  CHECK(p1.count("TRACEPARENT") == 0);
  CHECK(p1.count("TRACESTATE") == 0);
}

TEST_CASE("cli: a malformed TRACEPARENT is dropped with a warning and the job is enqueued") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (const std::string bad : {"garbage", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"}) {
    CAPTURE(bad);
    RunResult r = queuectl(url, {"-o", "json", "enqueue", "t"}, "", {{"TRACEPARENT", bad}});
    INFO(dump(r));
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "warning"));
    CHECK(contains(r.err, "TRACEPARENT"));
    CHECK(parse(r.out)["trace_parent"].is_null());
  }
  // A good TRACEPARENT with a bad TRACESTATE keeps the first.
  RunResult r = queuectl(url, {"-o", "json", "enqueue", "t"}, "",
                         {{"TRACEPARENT", kParent}, {"TRACESTATE", "no equals sign"}});
  INFO(dump(r));
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.err, "TRACESTATE"));
  CHECK(parse(r.out)["trace_parent"] == kParent);
  CHECK(parse(r.out)["trace_state"].is_null());

  // --from: the environment's context on every line without its own; a line's own wins.
  const std::string other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
  const std::string lines = "{\"queue\":\"f\"}\n{\"queue\":\"f\",\"traceparent\":\"" + other +
                            "\",\"tracestate\":\"a=b\"}\n";
  ok(url, {"enqueue", "--from", "-"}, lines, {{"TRACEPARENT", kParent}});
  json listed = ok_json(url, {"list", "f"});
  REQUIRE(listed.size() == 2);
  if (listed[0]["id"] > listed[1]["id"]) std::swap(listed[0], listed[1]);
  CHECK(listed[0]["trace_parent"] == kParent);
  CHECK(listed[0]["trace_state"].is_null());
  CHECK(listed[1]["trace_parent"] == other);
  CHECK(listed[1]["trace_state"] == "a=b");
  // A bad one in a line is bad input, as any field is: exit 2, nothing written.
  rejects(fixture, {"enqueue", "--from", "-"}, "traceparent",
          "{\"queue\":\"f\"}\n{\"queue\":\"f\",\"traceparent\":\"00-nope\"}\n");
}

TEST_CASE(
    "cli: extend --progress/--note/--checkpoint is token-guarded; show, list, leases and "
    "top show it; the checkpoint reaches the next attempt") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::int64_t id = id_of(enqueue(url, "p", "{}", {"--max-attempts", "3"}));
  const json c = claim_one(url, "p", {"--lease", "5m", "--worker", "w-p"});
  const std::string token = c["lock_token"];
  CHECK(c["checkpoint"].is_null());
  CHECK(c["progress"].is_null());

  // A stale token: exit 3, nothing written.
  const std::string before = db_fingerprint(fixture);
  RunResult stale = queuectl(url, {"extend", std::to_string(id), "--token",
                                   "00000000-0000-4000-8000-000000000000", "--progress", "10"});
  check_error(stale, 3, "");
  CHECK(db_fingerprint(fixture) == before);
  // Bad values: exit 2, nothing written.
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--progress", "101"},
                                              {"--progress", "4x"},
                                              {"--checkpoint", "{bad"},
                                              {"--note", "two\nlines"}}) {
    std::vector<std::string> args = {"extend", std::to_string(id), "--token", token};
    args.insert(args.end(), bad.begin(), bad.end());
    CAPTURE(bad[0] + " " + bad[1]);
    RunResult r = queuectl(url, args);
    check_error(r, 2, bad[0]);
    CHECK(db_fingerprint(fixture) == before);
  }

  ok(url, {"extend", std::to_string(id), "--token", token, "--progress", "40", "--note",
           "table 3 of 8", "--checkpoint", R"({"table": 3, "row": 1200})"});
  json s = show(url, id);
  CHECK(s["progress"] == 40);
  CHECK(s["progress_note"] == "table 3 of 8");
  CHECK(s["checkpoint"] == json{{"table", 3}, {"row", 1200}});
  // A part not given is kept.
  ok(url, {"extend", std::to_string(id), "--token", token, "--progress", "60"});
  s = show(url, id);
  CHECK(s["progress"] == 60);
  CHECK(s["progress_note"] == "table 3 of 8");
  CHECK(s["checkpoint"] == json{{"table", 3}, {"row", 1200}});

  const RunResult text = ok(url, {"show", std::to_string(id)});
  CHECK(contains(text.out, "table 3 of 8"));
  CHECK(contains(ok(url, {"list", "p"}, "", {{"COLUMNS", "200"}}).out, "processing 60%"));
  CHECK(contains(ok(url, {"leases"}, "", {{"COLUMNS", "200"}}).out, "60% table 3 of 8"));
  const json top = parse(ok(url, {"-o", "json", "top", "--once"}).out);
  REQUIRE(top["progress"].size() == 1);
  CHECK(top["progress"][0]["id"] == id);
  CHECK(top["progress"][0]["progress"] == 60);
  CHECK(top["progress"][0]["note"] == "table 3 of 8");
  CHECK(contains(ok(url, {"top", "--once"}, "", {{"COLUMNS", "100"}}).out, "table 3 of 8"));

  // The attempt fails: the next claim returns the checkpoint, and no progress of its own.
  ok(url, {"fail", std::to_string(id), "--token", token, "--error", "boom"});
  make_due(fixture, id);
  const json again = claim_one(url, "p", {"--lease", "5m"});
  CHECK(again["id"] == id);
  CHECK(again["attempts"] == 2);
  CHECK(again["checkpoint"] == json{{"table", 3}, {"row", 1200}});
  CHECK(again["progress"].is_null());
  CHECK(again["progress_note"].is_null());
  // The old token no longer writes.
  RunResult old =
      queuectl(url, {"extend", std::to_string(id), "--token", token, "--progress", "99"});
  check_error(old, 3, "");
  CHECK(show(url, id)["progress"].is_null());
}

TEST_CASE(
    "cli: work: a command reports on descriptor 3; its last checkpoint before a failing "
    "exit reaches the retry, a bad line is logged and ignored") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::int64_t id = id_of(enqueue(url, "r", "{}", {"--max-attempts", "3"}));
  const std::string seen = dir.path() + "/seen";
  // Attempt 1 reports and fails at once; attempt 2 saves what it was given and succeeds.
  const std::string script =
      "if [ -z \"$QUEUECTL_CHECKPOINT\" ]; then "
      "echo \"fd=$QUEUECTL_REPORT_FD\" > '" +
      dir.path() +
      "/fd'; "
      "echo 'progress 500' >&3; echo 'progress 50' >&3; echo 'note half way' >&3; "
      "echo 'checkpoint {\"offset\": 5}' >&3; exit 1; "
      "else printf '%s' \"$QUEUECTL_CHECKPOINT\" > '" +
      seen + "'; fi";
  RunResult first = work_one(url, "r", {"sh", "-c", script});
  INFO(dump(first));
  CHECK(first.exit_code == 1);
  CHECK(read_text(dir.path() + "/fd") == "fd=3\n");
  CHECK(contains(first.err, "job " + std::to_string(id) + ": report ignored"));
  json after = show(url, id);
  CHECK(after["status"] == "ready");
  CHECK(after["checkpoint"] == json{{"offset", 5}});
  CHECK(after["progress"] == 50);
  CHECK(after["progress_note"] == "half way");

  make_due(fixture, id);
  RunResult second = work_one(url, "r", {"sh", "-c", script});
  INFO(dump(second));
  CHECK(second.exit_code == 0);
  CHECK(parse(read_text(seen)) == json{{"offset", 5}});
  CHECK(show(url, id)["status"] == "done");
}

TEST_CASE(
    "cli: work: a checkpoint survives a SIGKILL of the worker and reaches the next "
    "attempt") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "k", "{}", {"--max-attempts", "5"}));
  const std::string reported = dir.path() + "/reported", seen = dir.path() + "/seen";
  const std::string script =
      "if [ -z \"$QUEUECTL_CHECKPOINT\" ]; then "
      "echo 'checkpoint {\"step\": 3}' >&3; echo 'progress 30' >&3; touch '" +
      reported + "'; exec sleep 60; else printf '%s' \"$QUEUECTL_CHECKPOINT\" > '" + seen + "'; fi";
  const int worker = spawn_queuectl(
      url, {"work", "k", "--lease", "2s", "--no-housekeeping", "--", "sh", "-c", script},
      dir.path() + "/worker.log");
  cleanup.child(worker);
  REQUIRE(wait_until([&] { return file_exists(reported); }));
  // Written by the worker's heartbeat thread within moments of the report.
  // Both lines may come in one read or two, so in one write or two.
  REQUIRE(wait_until([&] {
    const json now = show(url, id);
    return now["checkpoint"] == json{{"step", 3}} && now["progress"] == 30;
  }));
  kill(worker, SIGKILL);
  wait_child(cleanup, worker);

  // The lease runs out; the reaper returns the job; the next attempt resumes.
  wait_expired(url);
  ok(url, {"reap"});
  make_due(fixture, id);
  RunResult next = work_one(url, "k", {"sh", "-c", script});
  INFO(dump(next));
  INFO(read_text(dir.path() + "/worker.log"));
  CHECK(next.exit_code == 0);
  CHECK(parse(read_text(seen)) == json{{"step", 3}});
  json done = show(url, id);
  CHECK(done["status"] == "done");
  CHECK(done["attempts"] == 2);
}

TEST_CASE(
    "cli: work: one command reporting in a tight loop costs the other jobs no lease, and "
    "a daemon that keeps descriptor 3 does not hold its job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  for (int i = 0; i < 3; ++i) enqueue(url, "busy", "{\"n\":" + std::to_string(i) + "}");
  // Job 0 reports every 20 ms for 4 s; the others sleep as long: the reports' writes must not
  // be taken for beats that left the others' leases unconfirmed (a 3 s lease beats every 1 s).
  const std::string script =
      "n=$(cat | tr -dc 0-9); if [ \"$n\" = 0 ]; then i=0; while [ $i -lt 200 ]; do "
      "echo \"progress $((i / 2))\" >&3; i=$((i + 1)); sleep 0.02; done; else sleep 4; fi";
  RunResult r = queuectl(url, {"-o", "json", "work", "busy", "--drain", "--concurrency", "3",
                               "--lease", "3s", "--", "sh", "-c", script});
  INFO(dump(r));
  REQUIRE(r.exit_code == 0);
  const json summary = parse(r.out);
  CHECK(summary["done"] == 3);
  CHECK(summary["lost"] == 0);

  // A daemon that leaves the group with descriptor 3 open: the job ends with its command.
  enqueue(url, "daemon");
  const std::string started = dir.path() + "/daemon";
  // The command ends only once the daemon runs: ended sooner, its worker could stop the
  // daemon before it left the group, and there would be no daemon holding descriptor 3.
  const std::string daemon = "echo 'progress 5' >&3; setsid sh -c 'echo $$ > \"" + started +
                             ".tmp\"; mv \"" + started + ".tmp\" \"" + started +
                             "\"; exec sleep 300' >/dev/null 2>&1 </dev/null & "
                             "while [ ! -e \"" +
                             started + "\" ]; do sleep 0.01; done; exit 0";
  // (Under `timeout`, shorter than the daemon's life: a job held by the daemon would hold the
  // worker until `timeout` ends it, exit 124.)
  RunResult d = run_process({"timeout", "60", QUEUECTL_BINARY, "--db", url, "-o", "json", "work",
                             "daemon", "--drain", "--max-jobs", "1", "--", "sh", "-c", daemon});
  INFO(dump(d));
  const int pid = read_pid(started);
  if (pid > 0) kill(pid, SIGKILL);
  CHECK_MESSAGE(pid > 0, "the daemon never ran: the case tested nothing");
  REQUIRE(d.exit_code == 0);
  CHECK(parse(d.out)["done"] == 1);
}

}  // namespace queuectl::testing::cli
