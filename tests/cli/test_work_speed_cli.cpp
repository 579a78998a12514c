// The faster paths of `queuectl work` keep its behaviour: the acks of jobs that finished
// together are written as one batch, jobs are claimed ahead of a free slot, those claimed
// ahead but not started are given back at shutdown, and the loop keeps reaping commands
// while an ack waits for the database. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <csignal>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// The id of the job whose payload is `payload`, among `ids` (0: none).
std::int64_t job_with_payload(const std::string& url, const std::vector<std::int64_t>& ids,
                              const json& payload) {
  for (std::int64_t id : ids)
    if (show(url, id)["payload"] == payload) return id;
  return 0;
}

std::vector<std::int64_t> enqueue_payloads(const std::string& url,
                                           const std::vector<std::string>& payloads) {
  std::vector<std::int64_t> ids;
  for (const std::string& p : payloads) ids.push_back(id_of(enqueue(url, "q", p)));
  return ids;
}

}  // namespace

// Six jobs claimed together and finished together: the one whose command exits 3 is failed
// (retry later, its stderr kept), the five others are acked in the same turn.
TEST_CASE("cli: work: in one batch, a failing job is failed and the others are acked") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const auto ids = enqueue_payloads(url, {R"({"n":1})", R"({"n":2})", R"({"fail":true})",
                                          R"({"n":4})", R"({"n":5})", R"({"n":6})"});
  const std::int64_t bad = job_with_payload(url, ids, json{{"fail", true}});
  REQUIRE(bad > 0);
  RunResult r =
      queuectl(url, {"-o", "json", "work", "q", "--concurrency", "8", "--drain", "--", "sh", "-c",
                     "case \"$(cat)\" in *fail*) echo broken >&2; exit 3;; esac"});
  INFO(dump(r));
  CHECK(r.exit_code == 1);  // --drain: a job failed
  json summary = parse(r.out);
  CHECK(summary["done"] == 5);
  CHECK(summary["failed"] == 1);
  CHECK(summary["lost"] == 0);
  CHECK(lines_with(r.err, ": done (").size() == 5);
  CHECK(lines_with(r.err, "failed with exit 3").size() == 1);
  for (std::int64_t id : ids) {
    json job = show(url, id);
    INFO(job.dump());
    CHECK(job["attempts"] == 1);
    if (id == bad) {
      CHECK(job["status"] == "ready");
      CHECK(contains(job["last_error"].get<std::string>(), "exit code 3: broken"));
    } else {
      CHECK(job["status"] == "done");
    }
  }
}

// One job loses its lease while its command runs (the command cancels its own job, as an
// operator's `cancel --force` would) and still exits 0. The five jobs were claimed together
// and end together (each waits for the same file, made once the cancel has landed), so
// their acks go as one batch: it reports that job alone as lost; the others are done.
TEST_CASE("cli: work: a lost lease in a batch of acks is reported for that job only") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string go = dir.path() + "/go";
  const auto ids = enqueue_payloads(
      url, {R"({"n":1})", R"({"n":2})", R"({"cancel":true})", R"({"n":4})", R"({"n":5})"});
  const std::int64_t stolen = job_with_payload(url, ids, json{{"cancel", true}});
  REQUIRE(stolen > 0);
  const std::string cancel = std::string("'") + QUEUECTL_BINARY + "' --db '" + url +
                             "' -q cancel \"$QUEUECTL_JOB_ID\" --force >/dev/null";
  const std::string wait_go = "while [ ! -e '" + go + "' ]; do sleep 0.01; done";
  // A long lease: no heartbeat beat (every 20s) comes between the cancel and the ack.
  auto run = queuectl_async(
      url, {"-o", "json", "work", "q", "--concurrency", "8", "--drain", "--lease", "1m", "--", "sh",
            "-c", "case \"$(cat)\" in *cancel*) " + cancel + ";; esac; " + wait_go});
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, stolen) == "canceled"; }),
                  "the command never canceled its job");
  touch(go);
  RunResult r = run.get();
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  json summary = parse(r.out);
  CHECK(summary["done"] == 4);
  CHECK(summary["lost"] == 1);
  CHECK(summary["failed"] == 0);
  const auto lost = lines_with(r.err, "lease lost before it could be recorded");
  REQUIRE(lost.size() == 1);
  CHECK(contains(lost[0], "job " + std::to_string(stolen) + " "));
  CHECK(lines_with(r.err, ": done (").size() == 4);
  CHECK(status_of(url, stolen) == "canceled");
  for (std::int64_t id : ids)
    if (id != stolen) CHECK(status_of(url, id) == "done");
}

// Two slots: once short jobs have run, twice as many jobs again are claimed ahead of a free
// slot while two slow ones run. SIGTERM gives those back at once (ready, the attempt
// returned); the running ones finish within --grace and are acked; the last job is never
// claimed. --batch 1 tops the jobs ahead up one at a time: by default a claim waits for room
// for half of all the worker may hold (3 of 6 here), so it may stop at two or three ahead,
// as the order of exits and claims falls.
TEST_CASE("cli: work: jobs claimed ahead and not started are released at shutdown") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::string go = dir.path() + "/go", started = dir.path() + "/started",
                    log = dir.path() + "/worker.log";
  enqueue_many(url, "q", 4);  // short ones, first in claim order
  for (int i = 0; i < 7; ++i) enqueue(url, "q", R"({"slow":true})");
  int worker = cleanup.child(spawn_queuectl(
      url,
      {"work", "q", "--concurrency", "2", "--batch", "1", "--grace", "60s", "--", "sh", "-c",
       "case \"$(cat)\" in *slow*) echo \"$QUEUECTL_JOB_ID\" >> '" + started + "'; " +
           wait_for_file(go) + ";; esac"},
      log));
  // Two slow jobs running, four more claimed and waiting for a slot.
  REQUIRE_MESSAGE(wait_until([&] { return read_lines(started).size() == 2; }),
                  "the slow jobs never started: " << read_text(log));
  REQUIRE_MESSAGE(wait_until([&] { return jobs_with_status(fixture, 1) == 6; }),
                  "fewer than four jobs were claimed ahead: " << read_text(log));
  CHECK(read_lines(started).size() == 2);    // the other four are claimed, not started
  CHECK(jobs_with_status(fixture, 0) == 1);  // never more than four ahead: one left

  kill(worker, SIGTERM);
  REQUIRE_MESSAGE(wait_until([&] {
                    return lines_with(read_text(log), "not started before shutdown").size() == 4;
                  }),
                  "the jobs claimed ahead were not given back: " << read_text(log));
  // Given back before the running ones finish: only those two are processing now.
  CHECK(jobs_with_status(fixture, 1) == 2);
  touch(go);
  int code = wait_child(cleanup, worker);
  const std::string text = read_text(log);
  INFO(text);
  CHECK(code == 0);
  CHECK(contains(text, "6 done, 0 failed, 0 timed out, 4 released, 0 lost"));
  CHECK(read_lines(started).size() == 2);  // the released ones never ran
  CHECK(jobs_with_status(fixture, 2) == 6);
  CHECK(jobs_with_status(fixture, 0) == 5);  // the four released, and the one never claimed
  for (const std::string& line : lines_with(text, "not started before shutdown")) {
    const std::int64_t id = std::stoll(line.substr(line.find("job ") + 4));
    json job = show(url, id);
    INFO(job.dump());
    CHECK(job["status"] == "ready");
    CHECK(job["attempts"] == 0);
    CHECK(job["payload"] == json{{"slow", true}});
  }
}

// Claims and acks go by a thread of their own: while one job's ack waits for a lock held
// elsewhere (its row, or SQLite's write lock), the worker still reaps the other job's
// command when it exits, and does not spin meanwhile. (When the loop itself made the
// call, the other command stayed a zombie until the lock was let go.)
TEST_CASE("cli: work: a command that exits is reaped while another job's ack waits") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t a = id_of(enqueue(url, "q", R"({"job":"a"})"));
  id_of(enqueue(url, "q", R"({"job":"b"})"));
  const std::string go_a = dir.path() + "/go-a", go_b = dir.path() + "/go-b",
                    a_pid = dir.path() + "/a.pid", b_pid = dir.path() + "/b.pid",
                    log = dir.path() + "/worker.log";
  int worker = cleanup.child(spawn_queuectl(
      url,
      {"work", "q", "--concurrency", "2", "--", "sh", "-c",
       "case \"$(cat)\" in *'\"a\"'*) echo $$ > '" + a_pid + "'; " + wait_for_file(go_a) +
           ";; *) echo $$ > '" + b_pid + "'; " + wait_for_file(go_b) + ";; esac"},
      log));
  const int pid_a = read_pid(a_pid), pid_b = read_pid(b_pid);
  REQUIRE_MESSAGE((pid_a > 0 && pid_b > 0), "the jobs never started: " << read_text(log));
  cleanup.group(pid_a);
  cleanup.group(pid_b);

  soci::session& holder = fixture.db().session();
  hold_ack_lock(holder, a);
  touch(go_a);  // a succeeds; its ack goes out and waits for the lock
  REQUIRE_MESSAGE(wait_until([&] { return process_reaped(pid_a); }, 30000),
                  "the worker never reaped a's command: " << read_text(log));
  // a's ack is waiting: for the lock itself, or (MariaDB, whose lock waits end after a
  // second) between tries, once the worker has said the contention persisted. A ready
  // observer sometimes saw neither wait of a burst of tries that ended before it looked.
  if (!is_sqlite()) {
    std::unique_ptr<Database> observer = fixture.connect();
    const std::string waiters = lock_waiters_sql();
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                          return scalar(*observer, waiters) > 0 ||
                                 contains(read_text(log), "database trouble");
                        },
                        30000),
                    "a's ack never waited for the lock: " << read_text(log));
  }
  touch(go_b);  // b succeeds too, while a's ack still waits
  const bool reaped = wait_until([&] { return process_reaped(pid_b); }, 5000);
  // Meanwhile the worker sleeps in poll(): a loop that woke for the pending ack would spin.
  const auto t0 = std::chrono::steady_clock::now();
  const double share = cpu_share_until(worker, [&] {
    return std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(1000);
  });
  holder.rollback();
  INFO(read_text(log));
  CHECK_MESSAGE(reaped, "b's command stayed a zombie while a's ack waited");
  CHECK(share < 0.3);
  // Let go: both acks land.
  REQUIRE(wait_until([&] { return jobs_with_status(fixture, 2) == 2; }, 30000));
  kill(worker, SIGTERM);
  CHECK(wait_child(cleanup, worker) == 0);
  CHECK(contains(read_text(log), "2 done, 0 failed, 0 timed out, 0 released, 0 lost"));
}

// --drain ends once a claim made with nothing held comes back empty. The last claim of a
// drain often goes out while the last jobs still run and comes back empty after they
// finished: the worker must ask again at once, not sleep its idle pause first (on
// PostgreSQL, listening, the whole --poll-interval: here an hour).
TEST_CASE("cli: work --drain ends when the last jobs finish, not after an idle pause") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  enqueue_many(url, "q", 200);
  const std::string log = dir.path() + "/worker.log";
  int worker = cleanup.child(spawn_queuectl(
      url, {"work", "q", "--concurrency", "8", "--drain", "--poll-interval", "1h", "--", "true"},
      log));
  const int code = wait_child(cleanup, worker, 60000);
  const std::string text = read_text(log);
  INFO(text);
  CHECK_MESSAGE(code == 0, "the worker did not end (-1: still running after a minute)");
  CHECK(contains(text, "200 done, 0 failed, 0 timed out, 0 released, 0 lost"));
  CHECK(jobs_with_status(fixture, 2) == 200);
}

}  // namespace queuectl::testing::cli
