// Contention, provoked for real with two connections: lock-wait timeouts, deadlocks,
// serialization failures and SQLite BUSY are what the dialect calls contention (a unique
// violation is not), and Database::transaction retries contention a bounded number of
// times, committing once the other transaction lets go.
#include <atomic>
#include <future>
#include <memory>

#include "contract/contract_helpers.hpp"

namespace queuectl::testing::contract {
namespace {

using namespace std::chrono_literals;

// How one statement ended, classified by the connection's own dialect.
struct Outcome {
  bool threw = false;
  bool contention = false;
  bool constraint = false;
  std::string message;
};

Outcome attempt(Database& db, const std::string& sql) {
  try {
    db.session() << sql;
    return {};
  } catch (const soci::soci_error& e) {
    return {true, db.dialect().is_contention(e), db.dialect().is_constraint_violation(e),
            e.get_error_message()};
  }
}

// The same, then rolls back when the statement failed (a failed transaction keeps its
// locks on PostgreSQL until it ends).
Outcome attempt_or_rollback(Database& db, const std::string& sql) {
  Outcome o = attempt(db, sql);
  if (o.threw) {
    try {
      db.session().rollback();
    } catch (...) {
    }
  }
  return o;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string touch(std::int64_t id) {
  return "UPDATE job_queue SET priority = priority + 1 WHERE id = " + std::to_string(id);
}

// The statement that makes this backend give up waiting for a lock after a short while.
// A session setting: through PgBouncer in transaction mode it would land on one server
// session and the statement that waits on another, so the test cases using it skip there
// (behind a pooler each write transaction sets its wait itself: see begin_pooled).
std::string short_lock_wait() {
  if (is_postgresql()) return "SET lock_timeout = '200ms'";
  if (is_mysql()) return "SET SESSION innodb_lock_wait_timeout = 1";
  return "PRAGMA busy_timeout = 20";
}

// Counts the statements a session runs that contain `needle` (SOCI calls the logger
// before each one).
class CountingLogger : public soci::logger_impl {
 public:
  CountingLogger(std::shared_ptr<std::atomic<int>> count, std::string needle)
      : count_(std::move(count)), needle_(std::move(needle)) {}
  void start_query(const std::string& query) override {
    if (query.find(needle_) != std::string::npos) ++*count_;
  }

 private:
  logger_impl* do_clone() const override { return new CountingLogger(count_, needle_); }
  std::shared_ptr<std::atomic<int>> count_;
  std::string needle_;
};

// Polls `done` until it holds or `deadline` passes; returns whether it held.
template <typename F>
bool wait_until(F done, std::chrono::seconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace

TEST_CASE("contention: a lock-wait timeout (SQLite: BUSY) is contention" *
          doctest::skip(through_pooler())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job job = add(repo, "q");
  auto holder = fx.connect();
  auto waiter = fx.connect();
  exec(*waiter, short_lock_wait());

  // The holder keeps the row (SQLite: the whole database) in an open write transaction.
  if (is_sqlite()) {
    exec(*holder, "BEGIN IMMEDIATE");
  } else {
    holder->session().begin();
  }
  exec(*holder, touch(job.id));

  Outcome o = attempt(*waiter, touch(job.id));
  holder->session().rollback();
  INFO("error: " << o.message);
  REQUIRE(o.threw);
  CHECK(o.contention);
  CHECK_FALSE(o.constraint);
  const char* expected = is_postgresql() ? "lock timeout"
                         : is_mysql()    ? "lock wait timeout"
                                         : "database is locked";
  CHECK_MESSAGE(lower(o.message).find(expected) != std::string::npos,
                "not the error this test meant to provoke");
  // With the holder gone, the same statement goes through.
  CHECK_FALSE(attempt(*waiter, touch(job.id)).threw);
  CHECK_EQ(repo.get(job.id).priority, 1);
}

TEST_CASE("contention: a deadlock (SQLite: a stale read upgraded to a write) is contention" *
          doctest::skip(through_pooler())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job first = add(repo, "q");
  Job second = add(repo, "q");
  auto a = fx.connect();
  auto b = fx.connect();

  if (is_sqlite()) {
    // SQLite has no row locks, so no deadlock; its counterpart is two deferred
    // transactions that both read, then both write: the later writer's snapshot is stale
    // and it gets SQLITE_BUSY (BUSY_SNAPSHOT) at once. (BEGIN IMMEDIATE avoids this.)
    exec(*a, "BEGIN");
    exec(*b, "BEGIN");
    CHECK_EQ(scalar(*a, "SELECT COUNT(*) FROM job_queue"), 2);
    CHECK_EQ(scalar(*b, "SELECT COUNT(*) FROM job_queue"), 2);
    exec(*a, touch(first.id));
    exec(*a, "COMMIT");
    Outcome o = attempt_or_rollback(*b, touch(second.id));
    INFO("error: " << o.message);
    REQUIRE(o.threw);
    CHECK(o.contention);
    CHECK_FALSE(o.constraint);
    return;
  }

  // A safety net: a deadlock the server failed to detect ends as a timeout, not a hang
  // (and the message check below then fails).
  for (Database* db : {a.get(), b.get()})
    exec(*db, is_postgresql() ? "SET lock_timeout = '20s'"
                              : "SET SESSION innodb_lock_wait_timeout = 20");
  a->session().begin();
  b->session().begin();
  exec(*a, touch(first.id));
  exec(*b, touch(second.id));
  // A waits for B's row in a thread while B asks for A's: the server must pick a victim.
  auto in_thread =
      std::async(std::launch::async, [&] { return attempt_or_rollback(*a, touch(second.id)); });
  Outcome ob = attempt_or_rollback(*b, touch(first.id));
  Outcome oa = in_thread.get();
  // End whichever survived.
  if (!oa.threw) a->session().rollback();
  if (!ob.threw) b->session().rollback();

  CHECK_MESSAGE(oa.threw != ob.threw, "exactly one side should be the deadlock victim: A "
                                          << (oa.threw ? oa.message : "went through") << "; B "
                                          << (ob.threw ? ob.message : "went through"));
  const Outcome& victim = oa.threw ? oa : ob;
  INFO("error: " << victim.message);
  REQUIRE(victim.threw);
  CHECK(victim.contention);
  CHECK_FALSE(victim.constraint);
  CHECK_MESSAGE(lower(victim.message).find("deadlock") != std::string::npos,
                "not the error this test meant to provoke");
}

TEST_CASE("contention: a unique violation is a constraint violation, not contention") {
  FreshDatabase fx;
  exec(fx.db(), "INSERT INTO queuectl_queues (queue) VALUES ('dup')");
  Outcome o = attempt(fx.db(), "INSERT INTO queuectl_queues (queue) VALUES ('dup')");
  INFO("error: " << o.message);
  REQUIRE(o.threw);
  CHECK(o.constraint);
  CHECK_FALSE(o.contention);
  CHECK_EQ(scalar(fx.db(), "SELECT COUNT(*) FROM queuectl_queues"), 1);
}

// Write skew under SERIALIZABLE: each transaction reads both rows and writes one.
// Only PostgreSQL reports serialization failures (SQLSTATE 40001).
TEST_CASE("contention: PostgreSQL: a serialization failure is contention" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job first = add(repo, "q");
  Job second = add(repo, "q");
  auto t1 = fx.connect();
  auto t2 = fx.connect();
  const std::string read_both = "SELECT COUNT(*) FROM job_queue WHERE priority = 0";
  exec(*t1, "BEGIN ISOLATION LEVEL SERIALIZABLE");
  exec(*t2, "BEGIN ISOLATION LEVEL SERIALIZABLE");
  CHECK_EQ(scalar(*t1, read_both), 2);
  CHECK_EQ(scalar(*t2, read_both), 2);

  // Whichever statement PostgreSQL chooses to fail (usually T2's commit), the failures
  // are serialization failures, and at least one happens.
  std::vector<Outcome> failures;
  // (A failed COMMIT has ended its transaction already.)
  auto step = [&](Database& db, const std::string& sql) {
    Outcome o = sql == "COMMIT" ? attempt(db, sql) : attempt_or_rollback(db, sql);
    if (o.threw) failures.push_back(o);
    return !o.threw;
  };
  bool t1_alive = step(*t1, touch(first.id));
  bool t2_alive = step(*t2, touch(second.id));
  if (t1_alive) step(*t1, "COMMIT");
  if (t2_alive) step(*t2, "COMMIT");

  REQUIRE_MESSAGE(!failures.empty(), "both SERIALIZABLE transactions committed a write skew");
  for (const Outcome& o : failures) {
    INFO("error: " << o.message);
    CHECK(o.contention);
    CHECK_FALSE(o.constraint);
    CHECK(lower(o.message).find("could not serialize") != std::string::npos);
  }
}

// The work lambda fails with contention while another transaction holds the row
// (SQLite: the database; there the retried step is BEGIN IMMEDIATE itself).
TEST_CASE("contention: Database::transaction retries contention, boundedly" *
          doctest::skip(through_pooler())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job job = add(repo, "q");
  auto holder = fx.connect();
  auto worker = fx.connect();
  exec(*worker, short_lock_wait());
  auto begins = std::make_shared<std::atomic<int>>(0);
  worker->session().set_logger(new CountingLogger(begins, "BEGIN IMMEDIATE"));

  std::atomic<int> runs{0};
  auto work = [&] {
    ++runs;
    exec(*worker,
         "UPDATE job_queue SET attempts = attempts + 1 WHERE id = " + std::to_string(job.id));
  };
  // Tries so far: on SQLite the BEGINs (work runs only once the lock is had).
  auto tries = [&] { return is_sqlite() ? begins->load() : runs.load(); };

  if (is_sqlite()) {
    exec(*holder, "BEGIN IMMEDIATE");
  } else {
    holder->session().begin();
  }
  exec(*holder, "UPDATE job_queue SET priority = 7 WHERE id = " + std::to_string(job.id));

  SUBCASE("it commits once the other transaction lets go, and the write lands once") {
    worker->max_attempts = 40;  // generous: the holder lets go after the first failure
    auto done = std::async(std::launch::async, [&] { worker->transaction(work); });
    bool retried = wait_until(
        [&] { return tries() >= 2 || done.wait_for(0s) == std::future_status::ready; }, 60s);
    holder->session().commit();
    CHECK_MESSAGE(retried, "no second try within 60 s");
    REQUIRE_MESSAGE(done.wait_for(60s) == std::future_status::ready,
                    "the transaction did not finish after the holder committed");
    REQUIRE_NOTHROW(done.get());
    CHECK_GE(tries(), 2);
    CHECK_EQ(runs.load(), is_sqlite() ? 1 : tries());
    Job now = repo.get(job.id);
    CHECK_EQ(now.attempts, 1);  // the retried write landed exactly once
    CHECK_EQ(now.priority, 7);  // and so did the holder's
  }

  SUBCASE("it gives up after max_attempts tries with a TemporaryError, writing nothing") {
    worker->max_attempts = 3;
    CHECK_THROWS_AS(worker->transaction(work), TemporaryError);
    CHECK_EQ(tries(), 3);
    holder->session().commit();
    Job now = repo.get(job.id);
    CHECK_EQ(now.attempts, 0);
    CHECK_EQ(now.priority, 7);
  }
}

}  // namespace queuectl::testing::contract
