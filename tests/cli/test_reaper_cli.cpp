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
  int worker = cleanup.child(spawn_queuectl(
      url,
      {"work", "q", "--lease", "1s", "--worker", "w-doomed", "--", "sh", "-c",
       "echo $$ > '" + pid_file + "'; exec sleep 30"},
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
  check_error(queuectl(url, {"fail", id_str, "--token", old_token, "--error", "late"}), 3,
              "lease");
  check_error(queuectl(url, {"extend", id_str, "--token", old_token, "--lease", "1h"}), 3,
              "lease");
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

TEST_CASE("cli: reap racing ack: a done job is never reopened, no job is lost") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  constexpr int kRounds = 30;
  int acked = 0, reaped = 0;
  std::vector<std::int64_t> ids;
  std::vector<bool> ack_won;
  for (int round = 0; round < kRounds; ++round) {
    CAPTURE(round);
    const std::string queue = "race-" + std::to_string(round);
    json job = enqueue(url, queue);
    json claimed = claim_one(url, queue, {"--lease", "300ms", "--worker", "w-race"});
    const std::string id_str = id_text(claimed);
    // Around the end of the lease, the worker's ack and the reaper run at the same time.
    sleep_ms(200 + (round % 5) * 50);
    auto ack = queuectl_async(url, {"ack", id_str, "--token", claimed["lock_token"].get<std::string>()});
    auto reap = queuectl_async(url, {"-o", "json", "reap"});
    RunResult a = ack.get(), r = reap.get();
    INFO("ack: " << dump(a));
    INFO("reap: " << dump(r));
    REQUIRE(r.exit_code == 0);
    REQUIRE((a.exit_code == 0 || a.exit_code == 3));
    json report = parse(r.out);
    const bool ack_ok = a.exit_code == 0;
    const bool requeued = id_set(report["requeued_ids"]).count(id_of(claimed)) == 1;
    // Exactly one of them wins: an acked job was not reaped, a reaped job was not acked.
    CHECK(ack_ok != requeued);
    CHECK(report["failed_ids"] == json::array());
    json now = show(url, id_of(claimed));
    CHECK(now["status"] == (ack_ok ? "done" : "ready"));
    (ack_ok ? acked : reaped) += 1;
    ids.push_back(id_of(claimed));
    ack_won.push_back(ack_ok);
  }
  MESSAGE("ack won " << acked << " round(s), the reaper " << reaped);

  // Afterwards, with every lease long gone, another reap changes nothing that was done.
  wait_until([&] { return expired_leases(url).empty(); }, 5000, 100);
  ok(url, {"reap"});
  for (std::size_t i = 0; i < ids.size(); ++i) {
    CAPTURE(i);
    json job = show(url, ids[i]);
    const std::string status = job["status"];
    if (ack_won[i]) {
      CHECK(status == "done");
      CHECK(job["attempts"] == 1);
    } else {
      CHECK(status == "ready");
      CHECK(job["lock_token"].is_null());
    }
  }
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue") == kRounds);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == acked);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 1") == 0);
}

TEST_CASE("cli: reap: two reapers at once share the work without doubling it") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 6; ++i) enqueue(url, "q");
  REQUIRE(claim(url, "q", {"--limit", "6", "--lease", "300ms"}).size() == 6);
  wait_expired(url, 6);

  auto first = queuectl_async(url, {"-o", "json", "reap", "--batch", "2"});
  auto second = queuectl_async(url, {"-o", "json", "reap", "--batch", "2"});
  RunResult a = first.get(), b = second.get();
  INFO(dump(a));
  INFO(dump(b));
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  // One of them may find the lock taken: then it says so and prints nothing.
  std::set<std::int64_t> all;
  std::size_t total = 0;
  for (const RunResult* r : {&a, &b}) {
    if (r->out.empty()) {
      CHECK(contains(r->err, "another reaper holds the lock"));
      continue;
    }
    json doc = parse(r->out);
    auto ids = id_set(doc["requeued_ids"]);
    total += ids.size();
    all.insert(ids.begin(), ids.end());
  }
  CHECK(total == 6);
  CHECK(all.size() == 6);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 6);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE attempts = 1") == 6);
}

TEST_CASE("cli: reap while another reaper holds queuectl:reap does nothing; --no-lock works") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  for (int i = 0; i < 2; ++i) enqueue(url, "q");
  REQUIRE(claim(url, "q", {"--limit", "2", "--lease", "300ms", "--worker", "w-dead"}).size() == 2);

  // Another reaper, as far as the lock goes: it holds queuectl:reap until we let it go.
  const std::string held = dir.path() + "/held", go = dir.path() + "/go";
  int holder = cleanup.child(spawn_queuectl(
      url,
      {"lock", "queuectl:reap", "--", "sh", "-c",
       "touch '" + held + "'; i=0; while [ ! -e '" + go + "' ] && [ $i -lt 600 ]; do sleep 0.05; "
                          "i=$((i+1)); done"},
      dir.path() + "/holder.log"));
  REQUIRE_MESSAGE(wait_until([&] { return file_exists(held); }),
                  "the lock holder never started: " << read_text(dir.path() + "/holder.log"));
  wait_expired(url, 2);

  json before = ok_json(url, {"list", "q"});
  auto first = queuectl_async(url, {"-o", "json", "reap"});
  auto second = queuectl_async(url, {"reap"});
  for (RunResult r : {first.get(), second.get()}) {
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "another reaper holds the lock"));
  }
  CHECK(ok_json(url, {"list", "q"}) == before);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 1") == 2);

  // -q: silent, still exit 0.
  RunResult quiet = queuectl(url, {"-q", "reap"});
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  CHECK(quiet.out.empty());

  // --dry-run does not need the lock.
  json dry = ok_json(url, {"reap", "--dry-run"});
  CHECK(dry["requeued"] == 2);
  CHECK(ok_json(url, {"list", "q"}) == before);

  // --no-lock reaps anyway.
  json forced = ok_json(url, {"reap", "--no-lock"});
  INFO(forced.dump());
  CHECK(forced["requeued"] == 2);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 2);

  touch(go);
  CHECK(wait_child(cleanup, holder) == 0);
  // The lock is free again: a normal reap runs (and finds nothing left).
  RunResult after = ok(url, {"reap"});
  CHECK(contains(after.out, "returned 0"));
  CHECK(!contains(after.err, "another reaper"));
}

}  // namespace queuectl::testing::cli
