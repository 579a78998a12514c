// `queuectl work` under signals and process trouble, through the real binary: a job that
// finishes within --grace, a second signal, SIGHUP, a lease lost while the command runs,
// commands that leave their stdin unread (SIGPIPE), commands that ignore SIGTERM (the
// worker must wait for them without spinning), a command that cannot be run at all, and
// NUL bytes in what a command prints. Runs unchanged on every backend.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// How many times `needle` occurs in `text`.
std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

// After SIGTERM, a command that ends within --grace is acked as usual, and the worker
// claims nothing more: a second ready job is left exactly as it was.
TEST_CASE("cli: work: SIGTERM lets a running job finish within --grace; nothing more is claimed") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t a = id_of(enqueue(url, "q"));
  const std::int64_t b = id_of(enqueue(url, "q"));
  const std::string id_file = dir.path() + "/job.id", go = dir.path() + "/go",
                    log = dir.path() + "/worker.log";
  int worker =
      cleanup.child(spawn_queuectl(url,
                                   {"work", "q", "--grace", "60s", "--", "sh", "-c",
                                    "echo $QUEUECTL_JOB_ID > '" + id_file + "'; " +
                                        wait_for_file(go) + "; echo '{\"finished\":true}'"},
                                   log));
  const int running = read_pid(id_file);  // the job id, written like a pid
  REQUIRE_MESSAGE(running > 0, "the job never started: " << read_text(log));
  const std::int64_t other = running == a ? b : a;
  json untouched = show(url, other);
  REQUIRE(untouched["status"] == "ready");

  kill(worker, SIGTERM);
  REQUIRE_MESSAGE(wait_until([&] { return contains(read_text(log), "stopping"); }),
                  "the worker never saw the signal: " << read_text(log));
  touch(go);  // the command finishes now, well within --grace
  int code = wait_child(cleanup, worker);
  INFO(read_text(log));
  CHECK(code == 0);
  CHECK(contains(read_text(log), "1 done, 0 failed, 0 timed out, 0 released, 0 lost"));
  json done = show(url, running);
  INFO(done.dump());
  CHECK(done["status"] == "done");
  CHECK(done["attempts"] == 1);
  CHECK(done["result"] == json{{"finished", true}});
  // The other job was never claimed (nor claimed and given back): it is exactly as it was.
  CHECK(show(url, other) == untouched);
  CHECK(untouched["attempts"] == 0);
}

// A second signal does not wait for --grace: the command is killed at once and its job
// released with the attempt given back; the worker exits 0.
TEST_CASE("cli: work: a second signal stops at once and releases the job") {
  for (int second : {SIGTERM, SIGINT}) {
    CAPTURE(second);
    FreshDatabase fixture;
    const std::string& url = fixture.url();
    TempDir dir;
    Cleanup cleanup;
    const std::int64_t id = id_of(enqueue(url, "q"));
    const std::string pid_file = dir.path() + "/job.pid", marker = dir.path() + "/finished",
                      log = dir.path() + "/worker.log";
    int worker = cleanup.child(
        spawn_queuectl(url,
                       {"work", "q", "--grace", "60s", "--", "sh", "-c",
                        "echo $$ > '" + pid_file + "'; sleep 60; touch '" + marker + "'"},
                       log));
    const int job_pid = read_pid(pid_file);
    REQUIRE_MESSAGE(job_pid > 0, "the job never started: " << read_text(log));
    cleanup.group(job_pid);

    kill(worker, SIGTERM);
    REQUIRE_MESSAGE(wait_until([&] { return contains(read_text(log), "stopping"); }),
                    "the worker never saw the first signal: " << read_text(log));
    kill(worker, second);
    // Well before the 60s grace (and the 60s command) could run out.
    int code = wait_child(cleanup, worker, 20000);
    INFO(read_text(log));
    CHECK(code == 0);
    CHECK(wait_until([&] { return process_gone(job_pid); }, 5000));
    CHECK(!file_exists(marker));
    CHECK(contains(read_text(log), "1 released"));
    json job = show(url, id);
    INFO(job.dump());
    CHECK(job["status"] == "ready");
    CHECK(job["attempts"] == 0);
    CHECK(job["lock_token"].is_null());
  }
}

// A second signal while the job's ack cannot be written (another connection holds the
// job's row lock, or SQLite's write lock, which waiting would only get after a series of
// bounded lock waits): the worker gives up on the write and exits, leaving the job to the
// reaper, instead of hanging on.
TEST_CASE("cli: work: a second signal stops a worker whose ack is stuck on a locked database") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string pid_file = dir.path() + "/job.pid", go = dir.path() + "/go",
                    log = dir.path() + "/worker.log";
  int worker = cleanup.child(spawn_queuectl(
      url, {"work", "q", "--", "sh", "-c", "echo $$ > '" + pid_file + "'; " + wait_for_file(go)},
      log));
  const int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started: " << read_text(log));
  cleanup.group(job_pid);

  soci::session& holder = fixture.db().session();
  hold_ack_lock(holder, id);
  touch(go);  // the command succeeds; its ack waits for the lock
  REQUIRE_MESSAGE(wait_until([&] { return process_reaped(job_pid); }, 30000),
                  "the worker never reaped the command: " << read_text(log));
  wait_for_lock_waiter(fixture, "the job's ack");
  kill(worker, SIGTERM);
  // Two signals sent before the first is taken would arrive as one.
  REQUIRE_MESSAGE(wait_until([&] { return !signal_pending(worker, SIGTERM); }, 30000),
                  "the worker never took the first signal: " << read_text(log));
  kill(worker, SIGTERM);
  // Without giving up, the ack would retry for most of a minute, then wait out --grace.
  int code = wait_child(cleanup, worker, 25000);
  holder.rollback();
  INFO(read_text(log));
  CHECK(code == 0);
  CHECK(contains(read_text(log), "not recorded"));
  CHECK(contains(read_text(log), "1 lost"));
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "processing");  // its lease runs out; the reaper returns it
}

// SIGHUP (a closed terminal) is handled like SIGTERM: the job is released after --grace
// and the worker exits 0, instead of dying and leaving the job locked.
TEST_CASE("cli: work: SIGHUP releases a running job after --grace like SIGTERM") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string pid_file = dir.path() + "/job.pid", log = dir.path() + "/worker.log";
  int worker = cleanup.child(spawn_queuectl(url,
                                            {"work", "q", "--grace", "200ms", "--", "sh", "-c",
                                             "echo $$ > '" + pid_file + "'; exec sleep 30"},
                                            log));
  const int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started: " << read_text(log));
  cleanup.group(job_pid);

  kill(worker, SIGHUP);
  int code = wait_child(cleanup, worker);
  INFO(read_text(log));
  CHECK(code == 0);
  CHECK(contains(read_text(log), "released"));
  CHECK(wait_until([&] { return process_gone(job_pid); }, 5000));
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 0);
  CHECK(job["lock_token"].is_null());
}

// A job canceled (--force) under a running command: the next heartbeat finds the lease
// gone, the command is stopped before it finishes, and nothing is acked.
TEST_CASE("cli: work: a lease lost while the command runs stops it; the job is not acked") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string pid_file = dir.path() + "/job.pid", marker = dir.path() + "/finished";
  auto worker = queuectl_async(url, {"-o", "json", "work", "q", "--drain", "--lease", "900ms",
                                     "--worker", "w-lost", "--", "sh", "-c",
                                     "echo $$ > '" + pid_file + "'; sleep 20; touch '" + marker +
                                         "'; echo '{\"finished\":true}'"});
  const int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started");
  cleanup.group(job_pid);
  REQUIRE(status_of(url, id) == "processing");

  ok(url, {"cancel", std::to_string(id), "--force"});
  REQUIRE_MESSAGE(wait_until([&] { return is_ready(worker); }, 30000),
                  "the worker did not stop the command of its lost job");
  RunResult w = worker.get();
  INFO(dump(w));
  REQUIRE(w.exit_code == 0);
  json summary = parse(w.out);
  CHECK(summary["lost"] == 1);
  CHECK(summary["done"] == 0);
  CHECK(summary["failed"] == 0);
  CHECK(contains(w.err, "lease lost"));
  CHECK(!file_exists(marker));  // stopped, not waited for
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "canceled");
  CHECK(job["result"].is_null());
}

// Commands that exit without reading their (2 MB) payload: writing the rest of it must not
// kill the worker with SIGPIPE. Several jobs in a row, each done.
TEST_CASE("cli: work: commands that leave a large payload unread are done; no SIGPIPE") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string big = "\"" + std::string(2 * 1024 * 1024, 'x') + "\"";
  const std::vector<std::vector<std::string>> commands = {
      {"true"},
      {"sh", "-c", "head -c 10 >/dev/null"},
      {"sh", "-c", "head -c 300000 >/dev/null"},  // reads a good part, then leaves
  };
  for (const auto& command : commands) {
    CAPTURE(command.back());
    for (int i = 0; i < 3; ++i) ok(url, {"--max-payload", "4000000", "enqueue", "big", "-"}, big);
    std::vector<std::string> args = {"-o", "json", "work", "big", "--drain", "--"};
    args.insert(args.end(), command.begin(), command.end());
    RunResult w = queuectl(url, args);
    INFO(w.exit_code << "\n" << w.err);
    REQUIRE(w.exit_code == 0);
    json summary = parse(w.out);
    CHECK(summary["done"] == 3);
    CHECK(summary["failed"] == 0);
    CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status <> 2") == 0);
  }
}

// --timeout with a command that ignores SIGTERM: SIGKILL after the kill delay, the job
// failed as timed out; and while the worker waits for that, it sleeps rather than spins.
TEST_CASE("cli: work --timeout: a command that ignores SIGTERM is killed; no busy wait") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string pid_file = dir.path() + "/job.pid", marker = dir.path() + "/finished",
                    log = dir.path() + "/worker.log";
  int worker = cleanup.child(spawn_queuectl(
      url,
      {"work", "q", "--drain", "--timeout", "2s", "--", "sh", "-c",
       "trap '' TERM; echo $$ > '" + pid_file + "'; sleep 30; touch '" + marker + "'"},
      log));
  const int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started: " << read_text(log));
  cleanup.group(job_pid);
  // From the start of the job through SIGTERM (ignored) to SIGKILL after the kill delay.
  // (The 2s timeout leaves the shell ample time to set its trap before SIGTERM comes.)
  const double share = cpu_share_until(worker, [&] { return process_gone(job_pid); });
  CHECK(share < 0.25);
  int code = wait_child(cleanup, worker);
  INFO(read_text(log));
  CHECK(code == 1);  // --drain, and the job timed out
  CHECK(contains(read_text(log), "1 timed out"));
  CHECK(!file_exists(marker));
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 1);
  CHECK(contains(job["last_error"].get<std::string>(), "timed out"));
}

// After --grace runs out, a command that ignores SIGTERM is killed after the kill delay and
// its job released; the worker does not spin while it waits for that.
TEST_CASE("cli: work: after --grace, a command that ignores SIGTERM is killed; no busy wait") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string pid_file = dir.path() + "/job.pid", log = dir.path() + "/worker.log";
  int worker =
      cleanup.child(spawn_queuectl(url,
                                   {"work", "q", "--grace", "300ms", "--", "sh", "-c",
                                    "trap '' TERM; echo $$ > '" + pid_file + "'; sleep 30"},
                                   log));
  const int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started: " << read_text(log));
  cleanup.group(job_pid);

  kill(worker, SIGTERM);
  const double share = cpu_share_until(worker, [&] { return process_gone(job_pid); });
  CHECK(share < 0.25);
  int code = wait_child(cleanup, worker);
  INFO(read_text(log));
  CHECK(code == 0);
  CHECK(contains(read_text(log), "1 released"));
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 0);
}

// A command that cannot be found or run is refused before the first claim: exit 2, every
// job as it was, not an attempt of each spent on exit 127.
TEST_CASE("cli: work: a command that cannot be run is refused before anything is claimed") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  id_of(enqueue(url, "q"));
  TempDir dir;
  const std::string plain = dir.path() + "/not-executable.sh";
  std::ofstream(plain) << "#!/bin/sh\nexit 0\n";
  for (const std::string& cmd : {std::string("/nonexistent/cmd"), std::string("./nonexistent.sh"),
                                 std::string("no-such-command-anywhere"), plain, dir.path()}) {
    CAPTURE(cmd);
    rejects(fixture, {"work", "q", "--drain", "--", cmd, "x"}, "'" + cmd + "'");
  }
}

// A command that exists but still cannot be started (here its interpreter is missing) fails
// each job with exit 127 and a message naming it; the worker carries on, and --drain then
// exits 1 because jobs failed.
TEST_CASE("cli: work: a command whose exec fails fails each job with exit 127") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::int64_t a = id_of(enqueue(url, "q"));
  const std::int64_t b = id_of(enqueue(url, "q"));
  TempDir dir;
  const std::string script = dir.path() + "/orphan.sh";
  std::ofstream(script) << "#!/nonexistent/interpreter\nexit 0\n";
  REQUIRE(chmod(script.c_str(), 0755) == 0);
  RunResult r = queuectl(url, {"-o", "json", "work", "q", "--drain", "--", script, "x"});
  INFO(dump(r));
  REQUIRE(r.exit_code == 1);
  json summary = parse(r.out);
  CHECK(summary["failed"] == 2);
  CHECK(summary["done"] == 0);
  CHECK(count_of(r.err, "failed with exit 127") == 2);
  for (std::int64_t id : {a, b}) {
    json job = show(url, id);
    INFO(job.dump());
    CHECK(job["status"] == "ready");
    CHECK(job["attempts"] == 1);
    const std::string error =
        job["last_error"].is_string() ? job["last_error"].get<std::string>() : "";
    CHECK(contains(error, "exit code 127"));
    CHECK(contains(error, "orphan.sh"));
  }
}

// NUL is valid UTF-8 but not storable everywhere (PostgreSQL text cuts at it, and jsonb
// refuses \u0000): a failure is still recorded with the final line of stderr, and a
// command that succeeds with such a JSON result still has its job acked (result kept or
// dropped), not left for the reaper to hand out again.
TEST_CASE("cli: work: NUL in stderr or in a JSON result is still recorded") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::int64_t id = id_of(enqueue(url, "q"));
  RunResult failing = queuectl(url, {"-o", "json", "work", "q", "--drain", "--", "sh", "-c",
                                     "printf 'binary \\000 junk\\nfinal words\\n' >&2; exit 2"});
  INFO(dump(failing));
  CHECK(failing.exit_code == 1);  // --drain, and the job failed
  json summary = parse(failing.out);
  INFO(summary.dump());
  CHECK(summary["failed"] == 1);
  json job = show(url, id);
  INFO(job.dump());
  CHECK(job["status"] == "ready");
  CHECK(job["attempts"] == 1);
  REQUIRE(job["last_error"].is_string());
  CHECK(contains(job["last_error"].get<std::string>(), "final words"));

  const std::int64_t ok_id = id_of(enqueue(url, "r"));
  json done = ok_json(
      url, {"work", "r", "--drain", "--", "sh", "-c", "printf '%s\\n' '{\"r\":\"a\\u0000b\"}'"});
  INFO(done.dump());
  CHECK(done["done"] == 1);
  CHECK(done["lost"] == 0);
  json acked = show(url, ok_id);
  INFO(acked.dump());
  CHECK(acked["status"] == "done");
  CHECK((acked["result"].is_null() || acked["result"] == json{{"r", std::string("a\0b", 3)}}));
}

}  // namespace queuectl::testing::cli
