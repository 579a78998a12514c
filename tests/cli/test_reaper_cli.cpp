// The reaper through the real binary: workers that die mid-job, leases that expire, stale
// tokens after a reap, ack racing the reaper, and reapers that overlap. Runs unchanged
// on every backend.
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: reap returns the job of a SIGKILLed worker; another worker finishes it") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q", R"({"n":1})"));

  // A real worker that dies with SIGKILL in the middle of its job. Its command records
  // its pid (= its process group: the worker starts each job in a group of its own).
  const std::string pid_file = dir.path() + "/child.pid";
  int worker =
      cleanup.child(spawn_queuectl(url,
                                   {"work", "q", "--lease", "1s", "--worker", "w-doomed", "--",
                                    "sh", "-c", "echo $$ > '" + pid_file + "'; exec sleep 30"},
                                   dir.path() + "/worker.log"));
  int job_pgid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pgid > 0, "the worker never started its job:\n"
                                    << read_text(dir.path() + "/worker.log"));
  cleanup.group(job_pgid);  // the orphaned `sleep 30` is killed at the end
  json running = show(url, id);
  CHECK(running["status"] == "processing");
  CHECK(running["locked_by"] == "w-doomed");
  kill(worker, SIGKILL);
  CHECK(wait_child(cleanup, worker) == 128 + SIGKILL);

  // Once the lease has run out, `leases --expired` shows who held it.
  json leases = wait_expired(url);
  INFO(leases.dump());
  REQUIRE(leases.size() == 1);
  CHECK(id_of(leases[0]) == id);
  CHECK(leases[0]["locked_by"] == "w-doomed");
  CHECK(leases[0]["seconds_left"].get<double>() < 0);
  CHECK(leases[0]["expired"] == true);
  RunResult table = ok(url, {"leases", "--expired"});
  CHECK(contains(table.out, "w-doomed"));
  CHECK(contains(table.out, std::to_string(id)));
  CHECK(contains(table.out, "expired"));

  // --dry-run says what it would do and changes nothing.
  json before = show(url, id);
  json dry = ok_json(url, {"reap", "--dry-run"});
  INFO(dry.dump());
  CHECK(dry["dry_run"] == true);
  CHECK(dry["requeued"] == 1);
  CHECK(dry["requeued_ids"] == json::array({id}));
  CHECK(dry["failed_ids"] == json::array());
  RunResult dry_table = ok(url, {"reap", "--dry-run"});
  CHECK(contains(dry_table.out, "would return 1"));
  CHECK(show(url, id) == before);

  // The reap itself: back to ready, with backoff, and a last_error naming the worker.
  json reaped = ok_json(url, {"reap"});
  INFO(reaped.dump());
  CHECK(reaped["dry_run"] == false);
  CHECK(reaped["requeued"] == 1);
  CHECK(reaped["failed"] == 0);
  CHECK(reaped["requeued_ids"] == json::array({id}));
  CHECK(reaped["failed_ids"] == json::array());
  json after = show(url, id);
  INFO(after.dump());
  CHECK(after["status"] == "ready");
  CHECK(after["attempts"] == 1);
  CHECK(after["lock_token"].is_null());
  CHECK(after["lock_until"].is_null());
  CHECK(after["finished_at"].is_null());
  REQUIRE(after["last_error"].is_string());
  const std::string last_error = after["last_error"];
  CHECK(contains(last_error, "lease expired"));
  CHECK(contains(last_error, "w-doomed"));
  // Backoff: run_at lies after the reap (5s * 2^0, jittered to at least 2.5s).
  CHECK(seconds_between(after["updated_at"], after["run_at"]) >= 2.0);
  CHECK(seconds_between(after["updated_at"], after["run_at"]) <= 5.5);
  CHECK(expired_leases(url) == json::array());

  // Reaping again finds nothing.
  RunResult again = ok(url, {"reap"});
  CHECK(contains(again.out, "returned 0"));
  CHECK(show(url, id) == after);

  // Once run_at has passed, another worker picks it up and finishes it.
  json summary;
  bool finished = wait_until(
      [&] {
        summary =
            ok_json(url, {"work", "q", "--drain", "--worker", "w-rescue", "--", "sh", "-c", "cat"});
        return status_of(url, id) == "done";
      },
      20000, 250);
  REQUIRE_MESSAGE(finished, "the reaped job was never run again: " << show(url, id).dump());
  CHECK(summary["done"] == 1);
  json done = show(url, id);
  INFO(done.dump());
  CHECK(done["attempts"] == 2);
  CHECK(done["locked_by"] == "w-rescue");
  CHECK(done["result"] == json{{"n", 1}});  // `cat` echoed the payload: JSON, so kept
  CHECK(is_rfc3339_us(done["finished_at"]));
}

TEST_CASE("cli: reap fails a job whose last attempt expired") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::int64_t last = id_of(enqueue(url, "q", "{}", {"--max-attempts", "1"}));
  const std::int64_t more = id_of(enqueue(url, "q", "{}", {"--max-attempts", "2"}));
  json claimed = claim(url, "q", {"--limit", "2", "--lease", "500ms", "--worker", "w-gone"});
  REQUIRE(claimed.size() == 2);
  wait_expired(url, 2);

  json dry = ok_json(url, {"reap", "--dry-run"});
  CHECK(dry["failed_ids"] == json::array({last}));
  CHECK(dry["requeued_ids"] == json::array({more}));
  CHECK(status_of(url, last) == "processing");

  json reaped = ok_json(url, {"reap"});
  INFO(reaped.dump());
  CHECK(reaped["failed"] == 1);
  CHECK(reaped["failed_ids"] == json::array({last}));
  CHECK(reaped["requeued_ids"] == json::array({more}));
  json failed = show(url, last);
  INFO(failed.dump());
  CHECK(failed["status"] == "failed");
  CHECK(failed["attempts"] == 1);
  CHECK(is_rfc3339_us(failed["finished_at"]));
  CHECK(failed["lock_token"].is_null());
  CHECK(contains(failed["last_error"].get<std::string>(), "lease expired"));
  CHECK(contains(failed["last_error"].get<std::string>(), "w-gone"));
  CHECK(status_of(url, more) == "ready");

  // A failed job stays failed: nothing claims it, the next reap leaves it alone.
  make_due(fixture, more);
  json next = claim(url, "q", {"--limit", "5"});
  REQUIRE(next.size() == 1);
  CHECK(id_of(next[0]) == more);
  CHECK(next[0]["attempts"] == 2);
  ok(url, {"reap"});
  CHECK(show(url, last) == failed);
}

// The issue's "a job that dies on its last attempt ends failed", with a real worker: the
// job fails once, then a worker takes its last attempt and is SIGKILLed mid-job; its
// command dies with it, and the reaper fails the job, naming the worker.
TEST_CASE("cli: reap fails the job of a worker SIGKILLed during its last attempt") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q", "{}", {"--max-attempts", "2"}));
  json first = claim_one(url, "q", {"--worker", "w-first"});
  ok(url, {"fail", id_text(first), "--token", first["lock_token"].get<std::string>(), "--error",
           "boom", "--retry-in", "0s"});
  REQUIRE(status_of(url, id) == "ready");

  // A shell script that starts a child of its own: the parent-death signal reaches only
  // the script, the worker's guard must take care of the child.
  const std::string pid_file = dir.path() + "/child.pid", grandchild_file = dir.path() + "/gc.pid";
  int worker = cleanup.child(spawn_queuectl(
      url,
      {"work", "q", "--lease", "1s", "--worker", "w-last", "--", "sh", "-c",
       "echo $$ > '" + pid_file + "'; sleep 30 & echo $! > '" + grandchild_file + "'; wait"},
      dir.path() + "/worker.log"));
  int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the worker never started the job:\n"
                                   << read_text(dir.path() + "/worker.log"));
  cleanup.group(job_pid);  // the worker starts each job in a process group of its own
  int grandchild = read_pid(grandchild_file);
  REQUIRE(grandchild > 0);
  cleanup.pid(grandchild);
  json running = show(url, id);
  INFO(running.dump());
  REQUIRE(running["status"] == "processing");
  REQUIRE(running["attempts"] == 2);  // the last one
  REQUIRE(running["max_attempts"] == 2);
  REQUIRE(running["locked_by"] == "w-last");

  kill(worker, SIGKILL);
  CHECK(wait_child(cleanup, worker) == 128 + SIGKILL);
  // The job's command does not outlive its worker (it would run on without a lease).
  const bool cmd_gone = wait_until([&] { return process_gone(job_pid); }, 10000);
  CHECK_MESSAGE(cmd_gone, "the job's command outlived its SIGKILLed worker");
  const bool grandchild_gone = wait_until([&] { return process_gone(grandchild); }, 10000);
  CHECK_MESSAGE(grandchild_gone, "the command's own child outlived the SIGKILLed worker");
  if (cmd_gone && grandchild_gone) cleanup.gone(job_pid);
  if (grandchild_gone) cleanup.gone(grandchild);

  wait_expired(url);
  json reaped = ok_json(url, {"reap"});
  INFO(reaped.dump());
  CHECK(reaped["failed"] == 1);
  CHECK(reaped["failed_ids"] == json::array({id}));
  CHECK(reaped["requeued"] == 0);
  json failed = show(url, id);
  INFO(failed.dump());
  CHECK(failed["status"] == "failed");
  CHECK(failed["attempts"] == 2);
  CHECK(is_rfc3339_us(failed["finished_at"]));
  CHECK(failed["lock_token"].is_null());
  CHECK(failed["lock_until"].is_null());
  REQUIRE(failed["last_error"].is_string());
  CHECK(contains(failed["last_error"].get<std::string>(), "lease expired"));
  CHECK(contains(failed["last_error"].get<std::string>(), "w-last"));

  // Nothing runs it again: a draining worker finds nothing, the next reap leaves it alone.
  json drained = ok_json(url, {"work", "q", "--drain", "--", "true"});
  CHECK(drained["done"] == 0);
  CHECK(ok_json(url, {"reap"})["failed"] == 0);
  CHECK(show(url, id) == failed);
}

TEST_CASE("cli: reap: the old token is dead after a reap") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string id_str = std::to_string(id);
  json claimed = claim_one(url, "q", {"--lease", "500ms", "--worker", "w-slow"});
  const std::string old_token = claimed["lock_token"];
  wait_expired(url);

  RunResult reaped = ok(url, {"reap"});
  CHECK(contains(reaped.out, "returned 1 expired job(s) to ready"));
  CHECK(contains(reaped.out, id_str));
  json after = show(url, id);
  REQUIRE(after["status"] == "ready");

  // The slow worker comes back: every token-guarded command refuses it, nothing changes.
  check_error(queuectl(url, {"ack", id_str, "--token", old_token}), 3, "lease");
  check_error(queuectl(url, {"fail", id_str, "--token", old_token, "--error", "late"}), 3, "lease");
  check_error(queuectl(url, {"extend", id_str, "--token", old_token, "--lease", "1h"}), 3, "lease");
  check_error(queuectl(url, {"release", id_str, "--token", old_token}), 3, "lease");
  CHECK(show(url, id) == after);

  // Claimed again by someone else: the old token still cannot touch it; the new one can.
  make_due(fixture, id);
  json second = claim_one(url, "q", {"--worker", "w-new"});
  CHECK(second["attempts"] == 2);
  const std::string new_token = second["lock_token"];
  CHECK(new_token != old_token);
  json held = show(url, id);
  check_error(queuectl(url, {"ack", id_str, "--token", old_token}), 3, "lease");
  CHECK(show(url, id) == held);
  ok(url, {"ack", id_str, "--token", new_token});
  CHECK(status_of(url, id) == "done");
}

// An ack and the reaper race for a job whose lease has already expired, over many rounds
// in which either side starts first, by margins from very wide (so that each side surely
// wins some rounds, even on a loaded machine) down to none; the narrow margins, where the
// outcome is open, twice. Every round exactly one wins: an ack that comes too late exits 3
// and changes nothing; a reaper that comes too late leaves the done job alone.
TEST_CASE("cli: reap racing ack: a done job is never reopened, no job is lost") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // How many ms the ack starts before the reaper (negative: after it).
  const std::vector<int> head_starts = {2000, -2000, 800, -800, 300,  -300, 100, -100, 30,
                                        -30,  0,     0,   100,  -100, 30,   -30, 0,    0};
  const int rounds = static_cast<int>(head_starts.size());
  // One queue per round, so that each round's `reap QUEUE` sees only its own job.
  std::vector<json> claimed;
  for (int round = 0; round < rounds; ++round) {
    const std::string queue = "race-" + std::to_string(round);
    enqueue(url, queue);
    claimed.push_back(claim_one(url, queue, {"--lease", "200ms", "--worker", "w-race"}));
  }
  wait_expired(url, static_cast<std::size_t>(rounds));  // every race starts after expiry

  int ack_wins = 0, reaper_wins = 0;
  std::vector<json> settled;
  for (int round = 0; round < rounds; ++round) {
    const int head_start = head_starts[static_cast<std::size_t>(round) % head_starts.size()];
    CAPTURE(round);
    CAPTURE(head_start);
    const json& job = claimed[static_cast<std::size_t>(round)];
    const std::int64_t id = id_of(job);
    const std::vector<std::string> ack_args = {"ack", id_text(job), "--token",
                                               job["lock_token"].get<std::string>()};
    const std::vector<std::string> reap_args = {"-o", "json", "reap",
                                                job["queue"].get<std::string>()};
    std::future<RunResult> ack, reap;
    if (head_start >= 0) {
      ack = queuectl_async(url, ack_args);
      sleep_ms(head_start);
      reap = queuectl_async(url, reap_args);
    } else {
      reap = queuectl_async(url, reap_args);
      sleep_ms(-head_start);
      ack = queuectl_async(url, ack_args);
    }
    RunResult a = ack.get(), r = reap.get();
    INFO("ack: " << dump(a));
    INFO("reap: " << dump(r));
    REQUIRE(r.exit_code == 0);
    json report = parse(r.out);
    CHECK(report["failed_ids"] == json::array());
    json now = show(url, id);
    INFO("job after the race: " << now.dump());
    CHECK(now["attempts"] == 1);  // neither side gives an attempt back or adds one
    if (a.exit_code == 0) {
      ++ack_wins;
      CHECK(now["lock_token"] == job["lock_token"]);  // an ack keeps the token that finished it
      // The reaper came too late: it found nothing and wrote nothing.
      CHECK(report["requeued_ids"] == json::array());
      CHECK(now["status"] == "done");
      CHECK(is_rfc3339_us(now["finished_at"]));
      CHECK(now["last_error"].is_null());
      CHECK(now["run_at"] == job["run_at"]);
    } else {
      ++reaper_wins;
      // The ack came too late: exit 3, and the job is exactly as the reaper left it.
      check_error(a, 3, "lease");
      CHECK(now["lock_token"].is_null());
      CHECK(report["requeued_ids"] == json::array({id}));
      CHECK(now["status"] == "ready");
      CHECK(now["finished_at"].is_null());
      CHECK(now["result"].is_null());
      CHECK(contains(now["last_error"].dump(), "lease expired"));
      // The worker trying again later changes nothing either.
      check_error(queuectl(url, ack_args), 3, "lease");
      CHECK(show(url, id) == now);
    }
    settled.push_back(now);
  }
  MESSAGE("ack won " << ack_wins << " round(s), the reaper " << reaper_wins);
  CHECK(ack_wins >= 1);
  CHECK(reaper_wins >= 1);

  // A reap over every queue afterwards finds nothing: no done job reopened, none lost.
  json last = ok_json(url, {"reap"});
  CHECK(last["requeued"] == 0);
  CHECK(last["failed"] == 0);
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    CHECK(show(url, id_of(claimed[static_cast<std::size_t>(round)])) ==
          settled[static_cast<std::size_t>(round)]);
  }
  CHECK(job_rows(fixture) == rounds);
  CHECK(jobs_with_status(fixture, 2) == ack_wins);
  CHECK(jobs_with_status(fixture, 0) == reaper_wins);
}

// Two reapers from cron overlap: the second starts while the first is visibly at work
// (some jobs reaped, many left), so it must find queuectl:reap taken, say so, exit 0
// and reap nothing, and the first reaps every job. The first is frozen (SIGSTOP) for
// the second's whole run, so the overlap does not depend on timing; without the lock
// the second would reap what the first had left.
TEST_CASE("cli: reap: a reaper started while another runs backs off; the first reaps all") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  // SQLite needs more: it is fast, and freezing it between batches can take some tries.
  const int kJobs = is_sqlite() ? 2000 : 400;
  enqueue_many(url, "q", kJobs);
  REQUIRE(
      claim(url, "q", {"--limit", std::to_string(kJobs), "--lease", "500ms", "--worker", "w-dead"})
          .size() == static_cast<std::size_t>(kJobs));
  REQUIRE(wait_until(
      [&] {
        return ok_json(url, {"reap", "--dry-run"})["requeued"] == kJobs;
      },
      20000, 100));

  // Small batches, so that the first reaper works for a while, holding the lock.
  const std::string out = dir.path() + "/first.out", err = dir.path() + "/first.err";
  int first =
      cleanup.child(spawn_queuectl_split(url, {"-o", "json", "reap", "--batch", "2"}, out, err));
  REQUIRE_MESSAGE(wait_until([&] { return jobs_with_status(fixture, 0) > 0; }, 30000, 5),
                  "the first reaper never reaped anything: " << read_text(err));
  kill(first, SIGSTOP);
  // SQLite: a frozen write transaction would block everyone; freeze it between batches.
  for (int tries = 0; is_sqlite() && !sqlite_write_lock_free(fixture) && tries < 1000; ++tries) {
    kill(first, SIGCONT);
    sleep_ms(1);
    kill(first, SIGSTOP);
  }
  if (is_sqlite()) REQUIRE(sqlite_write_lock_free(fixture));
  // A COMMIT the frozen reaper sent just before SIGSTOP may still land on the server: count
  // once the number has stopped moving.
  long long left = jobs_with_status(fixture, 1);
  for (int tries = 0; tries < 50; ++tries) {
    sleep_ms(100);
    const long long now = jobs_with_status(fixture, 1);
    if (now == left) break;
    left = now;
  }
  int code = 0;
  REQUIRE_FALSE(try_wait(first, code));
  REQUIRE_MESSAGE(left > 0, "the first reaper was done before it could be frozen");

  RunResult second = queuectl(url, {"-o", "json", "reap"});
  INFO("second: " << dump(second));
  CHECK(second.exit_code == 0);
  CHECK(contains(second.err, "another reaper holds the lock"));
  CHECK(contains(second.err, "queuectl:reap"));
  if (!second.out.empty()) {  // a report, if any, must say it reaped nothing
    json report = parse(second.out);
    CHECK(report["requeued"] == 0);
    CHECK(report["failed"] == 0);
  }
  CHECK(jobs_with_status(fixture, 1) == left);

  kill(first, SIGCONT);
  CHECK(wait_child(cleanup, first) == 0);
  INFO("first: " << read_text(out) << read_text(err));
  json report = parse(read_text(out));
  CHECK(report["requeued"] == kJobs);
  CHECK(id_set(report["requeued_ids"]).size() == static_cast<std::size_t>(kJobs));
  CHECK(report["failed"] == 0);
  CHECK(jobs_with_status(fixture, 0) == kJobs);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE attempts = 1") == kJobs);
}

// --batch 1: one job per transaction, and still every expired job.
TEST_CASE("cli: reap --batch 1 reaps every expired job, one per batch") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::set<std::int64_t> ids;
  for (int i = 0; i < 3; ++i) ids.insert(id_of(enqueue(url, "q")));
  REQUIRE(claim(url, "q", {"--limit", "3", "--lease", "300ms"}).size() == 3);
  wait_expired(url, 3);
  json reaped = ok_json(url, {"reap", "--batch", "1"});
  INFO(reaped.dump());
  CHECK(id_set(reaped["requeued_ids"]) == ids);
  CHECK(reaped["batches"] == 3);
  CHECK(jobs_with_status(fixture, 0) == 3);
}

}  // namespace queuectl::testing::cli
