// Every wait is bounded: a command that meets a row lock held by someone else (an
// application's open transaction, a DBA's SELECT ... FOR UPDATE) gives up after a short
// lock wait and a bounded number of retries, with exit 75; and a worker whose heartbeat
// cannot confirm a lease gives the job up before the lease ends. On SQLite the "row lock"
// is the database's write lock, held by BEGIN IMMEDIATE. Runs on every backend.
#include <doctest/doctest.h>

#include <chrono>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

// Holds job `id`'s row (SQLite: the whole database's write lock) in a transaction of its
// own connection until destroyed.
class RowHolder {
 public:
  RowHolder(FreshDatabase& fixture, std::int64_t id) : db_(fixture.connect()) {
    soci::session& s = db_->session();
    if (is_sqlite()) {
      s << "BEGIN IMMEDIATE";
    } else {
      s.begin();
      s << "SELECT id FROM job_queue WHERE id = " + std::to_string(id) + " FOR UPDATE";
    }
  }
  ~RowHolder() {
    try {
      db_->session().rollback();
    } catch (...) {
    }
  }
  RowHolder(const RowHolder&) = delete;
  RowHolder& operator=(const RowHolder&) = delete;

 private:
  std::unique_ptr<Database> db_;
};

}  // namespace

TEST_CASE("cli: bounded waits: ack behind a row lock held elsewhere ends in exit 75") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  json job = claim_one(url, "q");
  const std::int64_t id = id_of(job);
  {
    RowHolder holder(fixture, id);
    // Without a lock wait this never returns (the test would hang, not pass).
    const auto started = std::chrono::steady_clock::now();
    RunResult r =
        queuectl(url, {"ack", std::to_string(id), "--token", job["lock_token"].get<std::string>()});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    MESSAGE("ack gave up after " << seconds << " s");
    check_error(r, 75, "contention");
  }
  // Nothing was written: the job is still processing under its token, and can be acked now.
  CHECK(status_of(url, id) == "processing");
  ok(url, {"ack", std::to_string(id), "--token", job["lock_token"].get<std::string>()});
  CHECK(status_of(url, id) == "done");
}

// The heartbeat cannot extend the lease (the row is held elsewhere): before the lease ends,
// the worker gives the job up and stops its command, instead of running on without a
// lease that the reaper could hand to another worker.
TEST_CASE("cli: bounded waits: a lease the heartbeat cannot confirm is given up in time") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string pid_file = dir.path() + "/job.pid", marker = dir.path() + "/finished";
  auto worker = queuectl_async(
      url, {"-o", "json", "work", "q", "--max-jobs", "1", "--lease", "6s", "--", "sh", "-c",
            "echo $$ > '" + pid_file + "'; sleep 30; touch '" + marker + "'"});
  const int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started");
  cleanup.group(job_pid);
  REQUIRE(status_of(url, id) == "processing");
  {
    RowHolder holder(fixture, id);
    // The lease is 6 s: the worker must stop the command well before the 30 s sleep ends.
    REQUIRE_MESSAGE(wait_until([&] { return process_gone(job_pid); }, 25000),
                    "the command still runs although its lease could not be extended");
  }
  REQUIRE_MESSAGE(wait_until([&] { return is_ready(worker); }, 30000), "the worker hangs");
  RunResult w = worker.get();
  INFO(dump(w));
  CHECK(w.exit_code == 0);
  json summary = parse(w.out);
  CHECK(summary["lost"] == 1);
  CHECK(summary["done"] == 0);
  CHECK(contains(w.err, "stopped before its lease could end unconfirmed"));
  CHECK(!file_exists(marker));
  // Not acked, not released: the job waits for its lease to run out and the reaper.
  CHECK(status_of(url, id) == "processing");
}

// A short lease (3 s, a beat a second) and a row that stays locked: the command must be
// stopped before the lease it last confirmed ends, on every backend. On SQLite the extend
// used to wait the 2 s of every command's lock wait, and the worker learned it had no lease
// at the lease's very end (the command ran on 1.9 s past it under load).
TEST_CASE("cli: bounded waits: with a 3 s lease, a job whose extend cannot commit stops in time") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string pid_file = dir.path() + "/job.pid";
  auto worker =
      queuectl_async(url, {"-o", "json", "work", "q", "--max-jobs", "1", "--lease", "3s", "--",
                           "sh", "-c", "echo $$ > '" + pid_file + "'; exec sleep 30"});
  const int job_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(job_pid > 0, "the job never started");
  cleanup.group(job_pid);
  {
    RowHolder holder(fixture, id);
    // The lease as last confirmed: nothing extends it while the row is held.
    const std::int64_t lease_end_us = epoch_us(show(url, id)["lock_until"]);
    std::int64_t gone_us = 0;
    REQUIRE_MESSAGE(wait_until(
                        [&] {
                          if (!process_gone(job_pid)) return false;
                          gone_us = std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count();
                          return true;
                        },
                        20000, 10),
                    "the command still runs although its lease could not be extended");
    MESSAGE("the command stopped " << (lease_end_us - gone_us) / 1000
                                   << " ms before its lease ended");
    CHECK(gone_us < lease_end_us);
  }
  REQUIRE_MESSAGE(wait_until([&] { return is_ready(worker); }, 30000), "the worker hangs");
  RunResult w = worker.get();
  INFO(dump(w));
  CHECK(parse(w.out)["lost"] == 1);
}

// `migrate` meets an application's transaction that wrote to job_queue and was left open:
// the DDL of a pending migration waits for it. All its lock waits end together at
// --lock-wait (default 15 s), with exit 75, the migration named, and nothing recorded;
// once the transaction ends, migrate applies it. (Before, each statement waited 60 s and
// was retried 8 times.)
TEST_CASE("cli: bounded waits: migrate behind an open transaction on job_queue ends in exit 75") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // The last migration (8 on every backend), pending again: its record gone and, where it
  // can run again, what it creates dropped.
  Database& db = fixture.db();
  db.session() << "DELETE FROM queuectl_schema_migrations WHERE version = 8";
  if (is_postgresql()) db.session() << "DROP INDEX job_queue_processing_groups";
  if (is_sqlite()) db.session() << "DROP INDEX job_queue_ready_groups";
  auto recorded = [&] {
    return scalar(db, "SELECT COUNT(*) FROM queuectl_schema_migrations WHERE version = 8");
  };
  auto migrate = [&](const std::vector<std::string>& extra, double& seconds) {
    std::vector<std::string> args{"migrate"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto started = std::chrono::steady_clock::now();
    RunResult r = queuectl(url, args);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return r;
  };
  {
    std::unique_ptr<Database> app = fixture.connect();
    if (is_sqlite())
      app->session() << "BEGIN IMMEDIATE";
    else
      app->session().begin();
    app->session() << "INSERT INTO job_queue (queue, payload) VALUES ('outbox', '{}')";

    double seconds = 0;
    RunResult r = migrate({"--lock-wait", "2s"}, seconds);
    MESSAGE("migrate --lock-wait 2s gave up after " << seconds << " s");
    check_error(r, 75, "migration 8");
    CHECK(contains(r.err, "--lock-wait"));
    CHECK(seconds < 10);
    if (!is_sqlite()) {
      // The default bound, on the servers (SQLite's write lock is the same wait).
      r = migrate({}, seconds);
      MESSAGE("migrate gave up after " << seconds << " s");
      check_error(r, 75, "waited 15s");
      CHECK(seconds < 30);
    }
    app->session().rollback();
  }
  CHECK(recorded() == 0);
  if (is_mysql()) return;  // its DDL before the wait is committed; the test's undo was partial
  ok(url, {"migrate"});
  CHECK(recorded() == 1);
}

}  // namespace queuectl::testing::cli
