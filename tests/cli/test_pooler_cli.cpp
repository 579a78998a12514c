// queuectl through a real PgBouncer (started by scripts/test-servers.sh, in front of the
// test PostgreSQL: database queuectl_tx in transaction mode with 4 server connections,
// queuectl_session in session mode). Issue 35: behind transaction pooling a session's
// advisory lock stayed on a server session that the pooler then handed to the next
// `queuectl lock`, which "took" it again, and both commands ran.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "cli/fault_helpers.hpp"
#include "db/migrations.hpp"

namespace queuectl::testing::cli {

namespace {

// The PgBouncer URL for one of its two pools. Unset is a failure, not a skip: the
// servers script starts PgBouncer with PostgreSQL.
std::string pooled_url(const std::string& pool) {
  const char* url = std::getenv("QUEUECTL_TEST_PGBOUNCER_URL");
  REQUIRE_MESSAGE((url && *url),
                  "QUEUECTL_TEST_PGBOUNCER_URL is not set: run the tests through "
                  "scripts/test.sh, which starts PgBouncer");
  std::string u = url;
  return u.substr(0, u.rfind('/') + 1) + pool;
}

const char* const kPools[] = {"queuectl_tx", "queuectl_session"};

// pg_locks of this database only: other suites run beside on databases of their own.
const std::string kThisDatabase =
    "database = (SELECT oid FROM pg_database WHERE datname = current_database())";

}  // namespace

TEST_CASE(
    "cli: lock behind PgBouncer: while one holds a name, the next exits 5 and its "
    "command never runs, 50 rounds per pool mode" *
    doctest::skip(!is_postgresql() || lock_rows_forced() || through_pooler())) {
  FreshDatabase fixture;
  for (const char* pool : kPools) {
    const std::string url = pooled_url(pool);
    CAPTURE(pool);
    TempDir dir;
    for (int round = 0; round < 50; ++round) {
      CAPTURE(round);
      const std::string r = dir.path() + "/" + std::to_string(round);
      std::filesystem::create_directories(r);
      Cleanup cleanup;
      // The first holds the lock until `go` exists; the second starts once it holds it.
      const int holder = hold_lock(url, "nightly", r, r + "-go", cleanup);
      RunResult second = queuectl(url, {"lock", "nightly", "--", "touch", r + "-second"});
      INFO(dump(second));
      CHECK(second.exit_code == 5);
      CHECK_FALSE(file_exists(r + "-second"));
      touch(r + "-go");
      CHECK(wait_child(cleanup, holder) == 0);
    }
    // Given back each time: one more run takes it at once.
    RunResult free = queuectl(url, {"lock", "nightly", "--", "true"});
    INFO(dump(free));
    CHECK(free.exit_code == 0);
  }
}

TEST_CASE(
    "cli: lock behind PgBouncer: two started together never both run, 20 rounds per "
    "pool mode" *
    doctest::skip(!is_postgresql() || lock_rows_forced() || through_pooler())) {
  FreshDatabase fixture;
  for (const char* pool : kPools) {
    const std::string url = pooled_url(pool);
    CAPTURE(pool);
    TempDir dir;
    for (int round = 0; round < 20; ++round) {
      CAPTURE(round);
      const std::string log = dir.path() + "/log" + std::to_string(round);
      Cleanup cleanup;
      // Each command records its start and end, and runs long enough for the other to try.
      const std::string cmd = "echo start >> '" + log + "'; sleep 0.3; echo end >> '" + log + "'";
      std::vector<int> pids;
      for (int i = 0; i < 2; ++i)
        pids.push_back(cleanup.child(
            spawn_queuectl(url, {"lock", "nightly", "--", "sh", "-c", cmd},
                           dir.path() + "/out" + std::to_string(round) + "-" + std::to_string(i))));
      std::vector<int> codes;
      for (int pid : pids) codes.push_back(wait_child(cleanup, pid));
      std::sort(codes.begin(), codes.end());
      // One ran, the other found it busy (or, had it started after the first ended, ran
      // after it); never the two at once.
      const std::vector<std::string> lines = read_lines(log);
      INFO("log: " << read_text(log));
      CHECK((codes == std::vector<int>{0, 5} || codes == std::vector<int>{0, 0}));
      if (codes == std::vector<int>{0, 0})
        CHECK(lines == std::vector<std::string>{"start", "end", "start", "end"});
      else
        CHECK(lines == std::vector<std::string>{"start", "end"});
    }
  }
}

TEST_CASE(
    "cli: behind PgBouncer in transaction mode: an application's own advisory lock "
    "and the reaper's lock still exclude" *
    doctest::skip(!is_postgresql() || lock_rows_forced() || through_pooler())) {
  FreshDatabase fixture;
  const std::string url = pooled_url("queuectl_tx");
  TempDir dir;
  Cleanup cleanup;
  // Held through the pooler: a direct session of the application cannot take it.
  const int holder = hold_lock(url, "nightly", dir.path(), dir.path() + "/go", cleanup);
  CHECK(scalar(fixture.db(),
               "SELECT CASE WHEN pg_try_advisory_lock(hashtextextended('nightly', 0)) "
               "THEN 1 ELSE 0 END") == 0);
  touch(dir.path() + "/go");
  CHECK(wait_child(cleanup, holder) == 0);
  // Given back through the pooler: now the application takes it, and queuectl meets it.
  REQUIRE(scalar(fixture.db(),
                 "SELECT CASE WHEN pg_try_advisory_lock(hashtextextended('nightly', 0)) "
                 "THEN 1 ELSE 0 END") == 1);
  check_error(queuectl(url, {"lock", "nightly", "--", "true"}), 5, "held by someone else");
  REQUIRE(scalar(fixture.db(),
                 "SELECT CASE WHEN pg_advisory_unlock(hashtextextended('nightly', 0)) "
                 "THEN 1 ELSE 0 END") == 1);

  // A reaper holding its lock through the pooler: another reaper through it does nothing.
  TempDir reaper;
  const int reaping =
      hold_lock(url, "queuectl:reap", reaper.path(), reaper.path() + "/go", cleanup);
  RunResult second = queuectl(url, {"reap"});
  INFO(dump(second));
  CHECK(second.exit_code == 0);
  CHECK(contains(second.err, "another reaper holds the lock"));
  touch(reaper.path() + "/go");
  CHECK(wait_child(cleanup, reaping) == 0);
}

// Four clients at once on a pool of four server connections: a statement prepared on one
// server session and run on another fails ("prepared statement ... does not exist").
TEST_CASE(
    "cli: behind PgBouncer in transaction mode: claims and acks with a result from four "
    "clients at once all succeed" *
    doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fixture;
  const std::string url = pooled_url("queuectl_tx");
  enqueue_many(url, "acks", 60);
  TempDir dir;
  Cleanup cleanup;
  std::vector<int> pids;
  for (int c = 0; c < 4; ++c) {
    const std::string q = std::string("'") + QUEUECTL_BINARY + "' --db '" + url + "'";
    const std::string script =
        "for i in $(seq 15); do "
        "set -- $(" +
        q +
        " claim acks --field id,lock_token) || exit 10; "
        "[ -n \"$1\" ] || exit 11; " +
        q + " -q ack \"$1\" --token \"$2\" --result '{\"by\": " + std::to_string(c) +
        "}' || exit 12; done";
    pids.push_back(cleanup.child(
        spawn_process({"sh", "-c", script}, dir.path() + "/c" + std::to_string(c) + ".log")));
  }
  for (int c = 0; c < 4; ++c)
    CHECK_MESSAGE(wait_child(cleanup, pids[static_cast<std::size_t>(c)], 120000) == 0,
                  read_text(dir.path() + "/c" + std::to_string(c) + ".log"));
  CHECK(scalar(fixture.db(),
               "SELECT COUNT(*) FROM job_queue WHERE queue = 'acks' AND status = 2 "
               "AND result IS NOT NULL") == 60);
}

TEST_CASE(
    "cli: behind PgBouncer in transaction mode: migrate runs at once take turns; "
    "workers poll instead of trusting LISTEN" *
    doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fixture;
  const std::string url = pooled_url("queuectl_tx");
  const std::size_t versions = migrations_for(Backend::postgresql).size();
  TempDir logs;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    drop_schema(fixture);
    std::vector<int> pids;
    for (int i = 0; i < 3; ++i)
      pids.push_back(spawn_queuectl(
          url, {"migrate", "-q"}, logs.path() + "/m" + std::to_string(round) + std::to_string(i)));
    for (std::size_t i = 0; i < pids.size(); ++i) {
      const int code = wait_exit(pids[i]);
      CHECK_MESSAGE(code == 0, "run " << i << " exited " << code << ": "
                                      << read_text(logs.path() + "/m" + std::to_string(round) +
                                                   std::to_string(i)));
    }
    CHECK_EQ(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_schema_migrations"),
             static_cast<long long>(versions));
  }
  // No advisory lock is left behind on any server session of the pool.
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND " +
                                 kThisDatabase) == 0);

  enqueue_many(url, "pooled", 5);
  // --max-jobs, not --drain: a draining worker does not listen at all.
  RunResult work = queuectl(url, {"-o", "json", "work", "pooled", "--max-jobs", "5", "--", "true"});
  INFO(dump(work));
  REQUIRE(work.exit_code == 0);
  CHECK(parse(work.out)["done"] == 5);
  CHECK(contains(work.err, "goes through a pooler"));
  // Straight to the server, the same worker listens, and says nothing of a pooler.
  enqueue_many(fixture.url(), "pooled", 2);
  RunResult direct = queuectl(
      fixture.url(), {"-v", "-o", "json", "work", "pooled", "--max-jobs", "2", "--", "true"});
  INFO(dump(direct));
  REQUIRE(direct.exit_code == 0);
  CHECK_FALSE(contains(direct.err, "pooler"));
  CHECK(contains(direct.err, "listening for new jobs on pooled"));
}

namespace {

// What `SHOW lock_timeout` answers to a new client of the pool of one server session
// (queuectl_one): it gets the session the previous client used, so this sees what that
// client left behind there.
std::string pool_lock_timeout(const std::string& raw_url) {
  RunResult r = run_process({"psql", "-X", "-At", raw_url, "-c", "SHOW lock_timeout"});
  REQUIRE_MESSAGE(r.exit_code == 0, dump(r));
  std::string v = r.out;
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
  return v;
}

void reset_pool_lock_timeout(const std::string& raw_url) {
  RunResult r = run_process({"psql", "-X", "-q", raw_url, "-c", "RESET lock_timeout"});
  REQUIRE_MESSAGE(r.exit_code == 0, dump(r));
}

}  // namespace

TEST_CASE(
    "cli: ?pooling=: without it a session setting stays behind for the pool's next client; "
    "?pooling=transaction leaves none" *
    doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fixture;
  const std::string raw = pooled_url("queuectl_one");
  reset_pool_lock_timeout(raw);
  REQUIRE(pool_lock_timeout(raw) == "0");
  // Told that session state is safe (as it is without a pooler), queuectl sets its lock
  // wait for the session: the next client of the pool, someone else's application, inherits
  // it. (Found on its own, the pooler is noticed by that same first round trip: the same.)
  ok(raw + "?pooling=session", {"stats"});
  CHECK(pool_lock_timeout(raw) != "0");
  reset_pool_lock_timeout(raw);
  REQUIRE(pool_lock_timeout(raw) == "0");
  ok(raw, {"stats"});
  CHECK(pool_lock_timeout(raw) != "0");
  reset_pool_lock_timeout(raw);
  // Told of the pooler, it sets nothing that outlives its transactions, and still works.
  enqueue_many(raw + "?pooling=transaction", "said", 3);
  RunResult work = queuectl(raw + "?pooling=transaction",
                            {"-o", "json", "work", "said", "--max-jobs", "3", "--", "true"});
  INFO(dump(work));
  REQUIRE(work.exit_code == 0);
  CHECK(parse(work.out)["done"] == 3);
  CHECK(contains(work.err, "goes through a pooler"));
  CHECK(pool_lock_timeout(raw) == "0");
}

TEST_CASE(
    "cli: ?pooling=transaction: lock and the reaper hold a lock row, no advisory lock and "
    "no server connection" *
    doctest::skip(!is_postgresql() || lock_rows_forced() || through_pooler())) {
  FreshDatabase fixture;
  const std::string url = pooled_url("queuectl_tx") + "?pooling=transaction";
  TempDir dir;
  Cleanup cleanup;
  const int holder = hold_lock(url, "nightly", dir.path(), dir.path() + "/go", cleanup);
  // Held by a row, not by a transaction kept open on one of the pool's 4 server sessions.
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_locks WHERE name = 'nightly'") == 1);
  CHECK(scalar(fixture.db(),
               "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND "
               "((classid::bigint << 32) | objid::bigint) = hashtextextended('nightly', 0) AND " +
                   kThisDatabase) == 0);
  CHECK(scalar(fixture.db(),
               "SELECT COUNT(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' "
               "AND datname = current_database()") == 0);
  check_error(queuectl(url, {"lock", "nightly", "--", "true"}), 5, "held by someone else");
  touch(dir.path() + "/go");
  CHECK(wait_child(cleanup, holder) == 0);
  CHECK(queuectl(url, {"lock", "nightly", "--", "true"}).exit_code == 0);

  // The reaper's lock is a row too: a second reaper through the pooler does nothing.
  TempDir reaper;
  const int reaping =
      hold_lock(url, "queuectl:reap", reaper.path(), reaper.path() + "/go", cleanup);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_locks WHERE name = 'queuectl:reap'") ==
        1);
  RunResult second = queuectl(url, {"reap"});
  INFO(dump(second));
  CHECK(second.exit_code == 0);
  CHECK(contains(second.err, "another reaper holds the lock"));
  touch(reaper.path() + "/go");
  CHECK(wait_child(cleanup, reaping) == 0);
}

TEST_CASE("cli: ?pooling= takes transaction, session or auto, on PostgreSQL URLs only") {
  check_usage_error(queuectl("postgresql://u@127.0.0.1/db?pooling=yes", {"stats"}),
                    "query parameter 'pooling' must be transaction");
  check_usage_error(queuectl("mysql://u@127.0.0.1/db?pooling=transaction", {"stats"}),
                    "unknown query parameter 'pooling'");
}

// The fleet: 32 `work` processes through a pool of 8 server connections
// (queuectl_fleet in scripts/test-servers.sh) drain 5,000 jobs while workers are killed
// with SIGKILL and replaced. Each run of a job (0.1 to 0.3 s) holds an flock on a file of its id
// for as long as it runs (the kernel drops it when the process dies): a run that finds it held ran
// while another run of the same job was still going.
TEST_CASE("slow: pooler fleet: 32 workers on 8 server connections, SIGKILLs, 5,000 jobs" *
          doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fixture;
  const std::string url = pooled_url("queuectl_fleet") + "?pooling=transaction";
  constexpr int kJobs = 5000;
  constexpr int kKills = 8;
  enqueue_many(url, "fleet", kJobs);
  TempDir dir;
  Cleanup cleanup;
  std::filesystem::create_directories(dir.path() + "/locks");
  const std::string ledger = dir.path() + "/ledger";
  const std::string script =
      "exec 9>'" + dir.path() +
      "/locks/'$QUEUECTL_JOB_ID; flock -n 9 || echo \"D $QUEUECTL_JOB_ID\" >> '" + ledger +
      "'; echo \"S $QUEUECTL_JOB_ID\" >> '" + ledger + "'; sleep 0.$((1 + QUEUECTL_JOB_ID % 3))";
  int started = 0;
  auto start_worker = [&] {
    return cleanup.child(spawn_queuectl(
        url,
        {"work", "fleet", "--lease", "5s", "--poll-interval", "250ms", "--", "sh", "-c", script},
        dir.path() + "/w" + std::to_string(started++) + ".log"));
  };
  std::vector<int> workers;
  for (int i = 0; i < 32; ++i) workers.push_back(start_worker());
  for (int k = 0; k < kKills; ++k) {
    sleep_ms(1500);
    const std::size_t victim = static_cast<std::size_t>(k * 5) % workers.size();
    kill(workers[victim], SIGKILL);
    wait_child(cleanup, workers[victim]);
    workers[victim] = start_worker();
  }
  auto done = [&] {
    return scalar(fixture.db(),
                  "SELECT COUNT(*) FROM job_queue WHERE queue = 'fleet' AND status = 2");
  };
  const bool drained = wait_until([&] { return done() == kJobs; }, 300000, 1000);
  for (int pid : workers) kill(pid, SIGTERM);
  for (int pid : workers) wait_child(cleanup, pid);
  INFO("done: " << done() << " of " << kJobs);
  REQUIRE(drained);
  std::map<std::int64_t, int> runs;
  int doubles = 0;
  for (const std::string& line : read_lines(ledger)) {
    std::istringstream in(line);
    std::string tag;
    std::int64_t id = 0;
    in >> tag >> id;
    if (tag == "D") ++doubles;
    if (tag == "S") ++runs[id];
  }
  // 0 lost: every job done, and each ran; 0 claimed twice at once.
  CHECK(runs.size() == static_cast<std::size_t>(kJobs));
  CHECK(doubles == 0);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE queue = 'fleet'") == kJobs);
  // Run again only when a worker was killed while running it: at most one job per kill.
  int again = 0;
  for (const auto& [id, n] : runs) again += n - 1;
  MESSAGE("jobs run again after a worker was killed: " << again);
  CHECK(again <= kKills);
}

}  // namespace queuectl::testing::cli
