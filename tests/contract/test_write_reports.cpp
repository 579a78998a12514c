// Writes report from the write itself. Two processes race on the same jobs, each through
// its own connection: a claimer and a cancel, two retries, an ack and a forced cancel, a
// release and a claimer. Afterwards what each side reported must match the final state of
// every job: a job reported canceled ends canceled, a job claimed meanwhile was not
// reported canceled, no job is reported retried twice, and the row a release or a fail
// returns is the one it left, never the next holder's.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>

#include "contract/contract_helpers.hpp"
#include "db/admin_repository.hpp"
#include "db/row_reader.hpp"

namespace queuectl::testing::contract {
namespace {

constexpr int kJobs = 400;
constexpr std::size_t kChunk = 8;  // ids per cancel or retry, as an operator might pass them

// A folder for the children's reports, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/queuectl-write-reports-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Runs `body` in a forked process with a connection of its own; it writes what it saw to
// `report` (one id a line) and exits 0, or 1 with the reason on stderr. Returns once the
// child has connected, so that both sides start together.
pid_t fork_child(const FreshDatabase& fx, const std::string& report,
                 const std::function<void(Database&, std::ofstream&)>& body) {
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  std::cout.flush();
  std::fflush(nullptr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid > 0) {
    close(ready[1]);
    char byte = 0;
    REQUIRE_EQ(read(ready[0], &byte, 1), 1);
    close(ready[0]);
    return pid;
  }
  close(ready[0]);
  int code = 0;
  try {
    auto db = fx.connect();
    std::ofstream out(report);
    if (write(ready[1], "r", 1) != 1) _exit(3);
    close(ready[1]);
    body(*db, out);
    out.flush();
    if (!out) code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child: %s\n", e.what());
    code = 1;
  }
  std::fflush(nullptr);
  _exit(code);  // no destructors: the parent's connection must stay untouched
}

int wait_child(pid_t pid) {
  int status = 0;
  REQUIRE_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::set<std::int64_t> read_ids(const std::string& path) {
  std::set<std::int64_t> ids;
  std::ifstream in(path);
  for (std::int64_t id = 0; in >> id;) ids.insert(id);
  return ids;
}

std::vector<std::int64_t> enqueue_many(JobRepository& repo, const std::string& queue, int n,
                                       int max_attempts = 25) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < n; ++i) {
    NewJob j = new_job(queue);
    j.max_attempts = max_attempts;
    ids.push_back(add(repo, j).id);
  }
  return ids;
}

std::map<std::int64_t, Status> final_statuses(JobRepository& repo, const std::string& queue) {
  ListFilter f;
  f.queue = queue;
  f.limit = kJobs * 2;
  std::map<std::int64_t, Status> out;
  for (const Job& j : repo.list(f)) out[j.id] = j.status;
  return out;
}

// `ids` in an order of its own for each seed: two sides that walk the same ids in the same
// order would follow each other (the second waits on the first's row locks and then finds
// the work done), and never meet inside a write.
std::vector<std::int64_t> shuffled(std::vector<std::int64_t> ids, unsigned seed) {
  std::mt19937 gen(seed);
  std::shuffle(ids.begin(), ids.end(), gen);
  return ids;
}

// Calls `apply` on `ids` a chunk at a time.
void in_chunks(const std::vector<std::int64_t>& ids,
               const std::function<void(const std::vector<std::int64_t>&)>& apply) {
  for (std::size_t at = 0; at < ids.size(); at += kChunk)
    apply({ids.begin() + static_cast<std::ptrdiff_t>(at),
           ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + kChunk))});
}

}  // namespace

TEST_CASE("write reports: cancel racing a claimer reports exactly the jobs it canceled") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const auto ids = enqueue_many(repo, "rc", kJobs);
  TempDir dir;
  const std::string claimed_path = dir.path + "/claimed";
  pid_t claimer = fork_child(fx, claimed_path, [](Database& db, std::ofstream& out) {
    JobRepository mine(db);
    for (int empty = 0; empty < 3;) {
      auto jobs = claim(mine, "rc", 3, Duration::seconds(300), "racer");
      if (jobs.empty()) {
        ++empty;
        continue;
      }
      for (const Job& j : jobs) out << j.id << "\n";
    }
  });
  AdminRepository admin(fx.db());
  std::set<std::int64_t> canceled, skipped_processing;
  in_chunks(shuffled(ids, 1), [&](const std::vector<std::int64_t>& chunk) {
    IdOutcome o = admin.cancel(chunk, Force::no);
    canceled.insert(o.changed.begin(), o.changed.end());
    CHECK(o.not_found.empty());
    for (const auto& [id, status] : o.skipped) {
      CHECK_MESSAGE(status == Status::processing, "job " << id << " skipped as " << status);
      skipped_processing.insert(id);
    }
  });
  REQUIRE_EQ(wait_child(claimer), 0);
  const auto claimed = read_ids(claimed_path);
  const auto status = final_statuses(repo, "rc");
  REQUIRE_EQ(status.size(), ids.size());
  int wrong = 0;
  for (std::int64_t id : ids) {
    const bool c = canceled.count(id) > 0, k = claimed.count(id) > 0;
    const bool ok =
        c != k && (c ? status.at(id) == Status::canceled
                     : status.at(id) == Status::processing && skipped_processing.count(id) > 0);
    if (!ok && wrong++ < 5)
      FAIL_CHECK("job " << id << ": reported canceled " << c << ", claimed " << k << ", ends "
                        << status.at(id));
  }
  CHECK_EQ(wrong, 0);
  MESSAGE(canceled.size() << " canceled, " << claimed.size() << " claimed");
}

TEST_CASE("write reports: two retries at once report each job once, between them") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const auto ids = enqueue_many(repo, "rr", kJobs);
  exec(fx.db(),
       "UPDATE job_queue SET status = 3, finished_at = " + now_sql() + " WHERE queue = 'rr'");
  TempDir dir;
  const std::string theirs_path = dir.path + "/retried";
  pid_t other = fork_child(fx, theirs_path, [&ids](Database& db, std::ofstream& out) {
    AdminRepository admin(db);
    in_chunks(shuffled(ids, 2), [&](const std::vector<std::int64_t>& chunk) {
      for (std::int64_t id : admin.retry(chunk).changed) out << id << "\n";
    });
  });
  AdminRepository admin(fx.db());
  std::set<std::int64_t> mine;
  in_chunks(shuffled(ids, 3), [&](const std::vector<std::int64_t>& chunk) {
    IdOutcome o = admin.retry(chunk);
    mine.insert(o.changed.begin(), o.changed.end());
    for (const auto& [id, status] : o.skipped)
      CHECK_MESSAGE(status == Status::ready, "job " << id << " skipped as " << status);
  });
  REQUIRE_EQ(wait_child(other), 0);
  const auto theirs = read_ids(theirs_path);
  int twice = 0, never = 0;
  for (std::int64_t id : ids) {
    const bool a = mine.count(id) > 0, b = theirs.count(id) > 0;
    twice += a && b;
    never += !a && !b;
  }
  CHECK_MESSAGE(twice == 0, twice << " jobs reported retried by both");
  CHECK_MESSAGE(never == 0, never << " jobs reported retried by neither");
  CHECK_EQ(count_rows(fx.db(), "queue = 'rr' AND status = 0"), kJobs);
  MESSAGE(mine.size() << " retried here, " << theirs.size() << " by the other");
}

TEST_CASE("write reports: cancel --force racing acks: each job is done or canceled, as reported") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const auto ids = enqueue_many(repo, "ra", kJobs);
  std::map<std::int64_t, std::string> tokens;
  for (int round = 0; round < kJobs / 100; ++round)
    for (const Job& j : claim(repo, "ra", 100, Duration::seconds(300)))
      tokens[j.id] = *j.lock_token;
  REQUIRE_EQ(tokens.size(), ids.size());
  TempDir dir;
  const std::string acked_path = dir.path + "/acked";
  pid_t acker = fork_child(fx, acked_path, [&tokens](Database& db, std::ofstream& out) {
    JobRepository mine(db);
    std::vector<std::int64_t> order;
    for (const auto& entry : tokens) order.push_back(entry.first);
    for (std::int64_t id : shuffled(order, 4)) {
      try {
        mine.ack({id, tokens.at(id), std::nullopt});
        out << id << "\n";
      } catch (const LeaseLost&) {
        // canceled first: not acked
      }
    }
  });
  AdminRepository admin(fx.db());
  std::set<std::int64_t> canceled;
  in_chunks(shuffled(ids, 5), [&](const std::vector<std::int64_t>& chunk) {
    IdOutcome o = admin.cancel(chunk, Force::yes);
    canceled.insert(o.changed.begin(), o.changed.end());
    for (const auto& [id, status] : o.skipped)
      CHECK_MESSAGE(status == Status::done, "job " << id << " skipped as " << status);
  });
  REQUIRE_EQ(wait_child(acker), 0);
  const auto acked = read_ids(acked_path);
  const auto status = final_statuses(repo, "ra");
  int wrong = 0;
  for (std::int64_t id : ids) {
    const bool c = canceled.count(id) > 0, a = acked.count(id) > 0;
    const bool ok = c != a && status.at(id) == (c ? Status::canceled : Status::done);
    if (!ok && wrong++ < 5)
      FAIL_CHECK("job " << id << ": reported canceled " << c << ", acked " << a << ", ends "
                        << status.at(id));
  }
  CHECK_EQ(wrong, 0);
  MESSAGE(canceled.size() << " canceled, " << acked.size() << " acked");
}

TEST_CASE("write reports: release and fail return the row they left, not the next holder's") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  NewJob j = new_job("rl");
  j.max_attempts = 100000;  // every claim counts an attempt; fail must never run out
  const std::int64_t id = add(repo, j).id;
  TempDir dir;
  const std::string stop = dir.path + "/stop";
  // The other side claims the job whenever it is ready and fails it at once (retry now).
  pid_t other = fork_child(fx, dir.path + "/bad", [&](Database& db, std::ofstream& out) {
    JobRepository mine(db);
    while (!std::filesystem::exists(stop)) {
      auto jobs = claim(mine, "rl", 1, Duration::seconds(300), "other");
      if (jobs.empty()) continue;
      FailRequest r;
      r.id = jobs.front().id;
      r.token = *jobs.front().lock_token;
      r.error = "bounce";
      r.retry_in = millis(0);
      Job after = mine.fail(r);
      if (after.status != Status::ready || after.lock_token)
        out << "fail returned " << describe(after) << "\n";
    }
  });
  int released = 0, bad = 0;
  for (int tries = 0; released < 150 && tries < 200000; ++tries) {
    auto jobs = claim(repo, "rl", 1, Duration::seconds(300), "here");
    if (jobs.empty()) continue;
    Job after = repo.release(id, *jobs.front().lock_token);
    ++released;
    if ((after.status != Status::ready || after.lock_token) && bad++ < 3)
      FAIL_CHECK("release returned " << describe(after));
  }
  { std::ofstream(stop).flush(); }
  REQUIRE_EQ(wait_child(other), 0);
  CHECK_EQ(released, 150);
  CHECK_EQ(bad, 0);
  std::ifstream in(dir.path + "/bad");
  std::string line;
  CHECK_MESSAGE(!std::getline(in, line), line);
}

}  // namespace queuectl::testing::contract

namespace queuectl::testing::contract {

TEST_CASE("write reports: stats counts every job once while jobs move between states") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  constexpr int kTotal = 300;
  enqueue_many(repo, "rs", kTotal);
  TempDir dir;
  // The other side moves jobs from ready through processing to done, one at a time.
  pid_t mover = fork_child(fx, dir.path + "/moved", [](Database& db, std::ofstream& out) {
    JobRepository mine(db);
    for (auto jobs = claim(mine, "rs"); !jobs.empty(); jobs = claim(mine, "rs")) {
      mine.ack({jobs.front().id, *jobs.front().lock_token, std::nullopt});
      out << jobs.front().id << "\n";
    }
  });
  int reads = 0, wrong = 0;
  while (waitpid(mover, nullptr, WNOHANG) == 0 || reads == 0) {
    auto all = repo.stats({"rs"});
    REQUIRE_EQ(all.size(), 1u);
    const QueueStats& s = all.front();
    const std::int64_t sum = s.ready + s.scheduled + s.processing + s.done + s.failed + s.canceled;
    ++reads;
    if (sum != kTotal && wrong++ < 3)
      FAIL_CHECK("stats counted " << sum << " jobs of " << kTotal << ": ready " << s.ready
                                  << ", processing " << s.processing << ", done " << s.done);
  }
  CHECK_EQ(wrong, 0);
  CHECK_EQ(read_ids(dir.path + "/moved").size(), static_cast<std::size_t>(kTotal));
  MESSAGE(reads << " stats reads while jobs moved");
}

TEST_CASE("write reports: purge's DELETE checks the filter again, not only the ids picked") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  // Two finished jobs: one just now (newer than the cutoff), one canceled (not asked for).
  add(repo, "rp");
  Job recent = claim_one(repo, "rp");
  repo.ack({recent.id, *recent.lock_token, std::nullopt});
  Job other = add(repo, "rp");
  AdminRepository admin(fx.db());
  REQUIRE_EQ(admin.cancel({other.id}, Force::no).changed.size(), 1u);
  // As if both had been picked by a purge of done jobs older than an hour, and then retried
  // and finished again (or canceled) before its DELETE ran.
  std::vector<long long> ids{recent.id, other.id};
  std::string queue = "rp";
  soci::indicator queue_ind = soci::i_ok;
  int mask = 1 << static_cast<int>(Status::done);
  long long older_ms = 3600 * 1000;
  fx.db().transaction([&] {
    soci::statement st(fx.db().session());
    bind_ids(st, ids);
    st.exchange(soci::use(queue, queue_ind, "queue"));
    st.exchange(soci::use(mask, "status_mask"));
    st.exchange(soci::use(older_ms, "older_ms"));
    prepare_once(st, expand_ids(fx.db().sql().admin.delete_ids, ids.size()));
    st.execute(true);
    CHECK_EQ(st.get_affected_rows(), 0);
  });
  CHECK_EQ(count_rows(fx.db(), "queue = 'rp'"), 2);
  // And it does delete what the filter admits.
  older_ms = 0;
  mask |= 1 << static_cast<int>(Status::canceled);
  sleep_ms(5);
  fx.db().transaction([&] {
    soci::statement st(fx.db().session());
    bind_ids(st, ids);
    st.exchange(soci::use(queue, queue_ind, "queue"));
    st.exchange(soci::use(mask, "status_mask"));
    st.exchange(soci::use(older_ms, "older_ms"));
    prepare_once(st, expand_ids(fx.db().sql().admin.delete_ids, ids.size()));
    st.execute(true);
    CHECK_EQ(st.get_affected_rows(), 2);
  });
}

}  // namespace queuectl::testing::contract

#include <soci/sqlite3/soci-sqlite3.h>

namespace queuectl::testing::contract {
namespace {

using namespace sqlite_api;  // where soci-sqlite3.h puts sqlite3.h

// SQLite: every statement the connection runs, in order (sqlite3_trace_v2).
int record_statement(unsigned, void* context, void* statement, void*) {
  char* sql = sqlite3_expanded_sql(static_cast<sqlite3_stmt*>(statement));
  static_cast<std::vector<std::string>*>(context)->push_back(sql ? sql : "");
  sqlite3_free(sql);
  return 0;
}

}  // namespace

// A fail that sends the job to its queue's dead-letter queue reports the row as it left it.
// On SQLite the move is an AFTER trigger that RETURNING does not show, so the row is read
// again; that read must happen inside the write's transaction. (It ran after the COMMIT,
// where another process could claim or move the job first and the report showed their row.)
// The servers' RETURNING, or MariaDB's read under the row lock, already were the write's own.
TEST_CASE("write reports: fail into a dead-letter queue reads the row back before its commit") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  admin.set_dead_letter("dq", std::string("dlq"));
  NewJob j = new_job("dq");
  j.max_attempts = 1;
  const std::int64_t id = add(repo, j).id;
  Job claimed = claim_one(repo, "dq");
  std::vector<std::string> statements;
  sqlite3* conn = nullptr;
  if (is_sqlite()) {
    conn = static_cast<soci::sqlite3_session_backend*>(fx.db().session().get_backend())->conn_;
    sqlite3_trace_v2(conn, SQLITE_TRACE_STMT, record_statement, &statements);
  }
  FailRequest r;
  r.id = id;
  r.token = *claimed.lock_token;
  r.error = "gave up";
  Job after = repo.fail(r);
  if (conn) sqlite3_trace_v2(conn, 0, nullptr, nullptr);
  // The report: the job as the fail left it, ready in the dead-letter queue.
  CHECK_EQ(after.queue, "dlq");
  CHECK_EQ(after.status, Status::ready);
  CHECK_EQ(after.dead_from.value_or(""), "dq");
  if (!is_sqlite()) return;
  std::string trace;
  for (const std::string& s : statements) trace += s + "\n";
  INFO(trace);
  auto commit = std::find_if(statements.begin(), statements.end(), [](const std::string& s) {
    return s.rfind("COMMIT", 0) == 0 || s.rfind("commit", 0) == 0;
  });
  REQUIRE(commit != statements.end());
  for (auto it = commit; it != statements.end(); ++it)
    CHECK_MESSAGE(it->find("job_queue") == std::string::npos, "read after the commit: " << *it);
}

}  // namespace queuectl::testing::contract
