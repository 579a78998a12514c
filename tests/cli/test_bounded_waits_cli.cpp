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
  CHECK(contains(w.err, "no extend succeeded in time"));
  CHECK(!file_exists(marker));
  // Not acked, not released: the job waits for its lease to run out and the reaper.
  CHECK(status_of(url, id) == "processing");
}

}  // namespace queuectl::testing::cli
