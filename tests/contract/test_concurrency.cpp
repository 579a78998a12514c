// Many claimers on one queue: every job is handed out exactly once, whether the claimers
// are processes running the real binary or threads with a connection each; and a claim
// skips rows someone else holds instead of waiting for them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <variant>

#include "contract/contract_helpers.hpp"
#include "db/row_reader.hpp"
#include "support/process.hpp"

namespace queuectl::testing::contract {
namespace {

using namespace std::chrono_literals;

// Waits for a spawned process; kills it and returns -1 when it outlives `deadline`.
int wait_or_kill(int pid, std::chrono::seconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    int status = 0;
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
    }
    if (got < 0) return -1;
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(20ms);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/queuectl-contract-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Checks that `claimed` (id -> how many times it was handed out) is exactly `expected`,
// each once, and that every job is done after one attempt.
void check_each_claimed_once(Database& db, const std::map<std::int64_t, int>& claimed,
                             const std::vector<std::int64_t>& expected) {
  std::vector<std::int64_t> twice;
  for (const auto& [id, n] : claimed)
    if (n != 1) twice.push_back(id);
  CHECK_MESSAGE(twice.empty(), twice.size() << " job(s) were claimed more than once, e.g. id "
                                            << (twice.empty() ? 0 : twice.front()));
  std::vector<std::int64_t> got;
  for (const auto& entry : claimed) got.push_back(entry.first);
  CHECK_EQ(got.size(), expected.size());
  CHECK_MESSAGE(got == expected, "the claimed ids are not the enqueued ids");
  CHECK_EQ(count_rows(db, "status = 2 AND attempts = 1"), static_cast<long long>(expected.size()));
  CHECK_EQ(count_rows(db, "status <> 2"), 0);
}

std::vector<std::int64_t> enqueue_jobs(JobRepository& repo, const std::string& queue, int n) {
  std::vector<NewJob> batch;
  for (int i = 0; i < n; ++i) batch.push_back(new_job(queue, R"({"n":)" + std::to_string(i) + "}"));
  REQUIRE_EQ(repo.enqueue_many(batch).enqueued, n);
  ListFilter all;
  all.queue = queue;
  all.limit = n + 1;
  auto ids = ids_of(repo.list(all));
  REQUIRE_EQ(ids.size(), static_cast<std::size_t>(n));
  return ids;
}

// A worker as a shell loop over the real binary: claim a batch, keep it, ack it, until
// the queue is empty. $0 = queuectl, $1 = URL, $2 = the file of claimed jobs.
constexpr const char* kWorkerLoop = R"(
i=0
while :; do
  out=$("$0" --db "$1" claim q --limit 25 --lease 5m -o ndjson) || exit 10
  [ -n "$out" ] || exit 0
  printf '%s\n' "$out" >> "$2"
  printf '%s\n' "$out" | "$0" --db "$1" ack --from - >/dev/null || exit 11
  i=$((i + 1))
  [ "$i" -lt 200 ] || exit 12
done
)";

}  // namespace

TEST_CASE("processes claiming in batches get every job exactly once") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const auto ids = enqueue_jobs(repo, "q", 2000);
  TempDir tmp;

  constexpr int kWorkers = 4;
  std::vector<int> pids;
  for (int w = 0; w < kWorkers; ++w) {
    std::string base = tmp.path + "/worker" + std::to_string(w);
    pids.push_back(spawn_process(
        {"sh", "-c", kWorkerLoop, QUEUECTL_BINARY, fx.url(), base + ".ndjson"}, base + ".log"));
  }
  for (int w = 0; w < kWorkers; ++w) {
    int code = wait_or_kill(pids[w], 120s);
    std::string base = tmp.path + "/worker" + std::to_string(w);
    CHECK_MESSAGE(code == 0, "worker " << w << " exited with " << code << ":\n"
                                       << read_file(base + ".log"));
  }

  std::map<std::int64_t, int> claimed;
  int workers_with_jobs = 0;
  for (int w = 0; w < kWorkers; ++w) {
    std::istringstream lines(read_file(tmp.path + "/worker" + std::to_string(w) + ".ndjson"));
    int mine = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.empty()) continue;
      json job = json::parse(line, nullptr, false);
      REQUIRE_MESSAGE(job.is_object(), "not a JSON object: " << line);
      ++claimed[job.at("id").get<std::int64_t>()];
      CHECK_EQ(job.at("attempts").get<int>(), 1);
      CHECK_EQ(job.at("status").get<std::string>(), "processing");
      ++mine;
    }
    if (mine) ++workers_with_jobs;
  }
  MESSAGE(workers_with_jobs << " of " << kWorkers << " processes claimed jobs");
  check_each_claimed_once(fx.db(), claimed, ids);
}

TEST_CASE("threads with a connection each get every job exactly once") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const auto ids = enqueue_jobs(repo, "q", 1000);

  constexpr int kThreads = 4;
  std::vector<std::future<std::vector<std::int64_t>>> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.push_back(std::async(std::launch::async, [&fx, t] {
      auto db = fx.connect();
      JobRepository mine(*db);
      std::vector<std::int64_t> got;
      for (int round = 0; round < 1000; ++round) {
        auto jobs = claim(mine, "q", 10, Duration::seconds(300), "thread-" + std::to_string(t));
        if (jobs.empty()) break;
        std::vector<AckItem> acks;
        for (const Job& j : jobs) {
          got.push_back(j.id);
          acks.push_back({j.id, *j.lock_token, std::nullopt});
        }
        auto lost = mine.ack_many(acks);
        if (!lost.empty()) throw std::runtime_error("lost the lease on a freshly claimed job");
      }
      return got;
    }));
  }
  std::map<std::int64_t, int> claimed;
  for (auto& w : workers) {
    std::vector<std::int64_t> got;
    REQUIRE_NOTHROW(got = w.get());
    for (auto id : got) ++claimed[id];
  }
  check_each_claimed_once(fx.db(), claimed, ids);
}

TEST_CASE("a claim never waits for rows another transaction holds") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job first = add(repo, "q");
  Job second = add(repo, "q");
  auto holder = fx.connect();
  auto other = fx.connect();

  if (is_sqlite()) {
    // SQLite has no row locks: a writer holds the whole database. A claim then waits
    // (busy_timeout, then bounded retries) and either succeeds once the writer is done
    // or reports contention as a TemporaryError; it never claims behind the lock.
    exec(*holder, "BEGIN IMMEDIATE");
    SUBCASE("the claim goes through once the writer commits") {
      auto claimed = std::async(std::launch::async, [&] {
        JobRepository mine(*other);
        return claim(mine, "q", 1);
      });
      // The claim cannot finish while the write lock is held.
      CHECK(claimed.wait_for(300ms) == std::future_status::timeout);
      exec(*holder, "COMMIT");
      std::vector<Job> jobs;
      REQUIRE_NOTHROW(jobs = claimed.get());
      CHECK_EQ(ids_of(jobs), std::vector<std::int64_t>{first.id});
    }
    SUBCASE("with the retries used up, the claim is a TemporaryError and changes nothing") {
      exec(*other, "PRAGMA busy_timeout = 20");
      other->max_attempts = 2;
      JobRepository mine(*other);
      CHECK_THROWS_AS(claim(mine, "q", 1), TemporaryError);
      exec(*holder, "COMMIT");
      CHECK_EQ(count_rows(fx.db(), "status = 0 AND attempts = 0"), 2);
    }
    return;
  }

  // Connection A locks the first job in claim order with a plain FOR UPDATE, the way a
  // naive worker would, and keeps its transaction open.
  holder->session().begin();
  CHECK_EQ(scalar(*holder, "SELECT id FROM job_queue WHERE id = " + std::to_string(first.id) +
                               " FOR UPDATE"),
           first.id);

  SUBCASE("the claim skips the locked row and takes the next") {
    auto claimed = std::async(std::launch::async, [&] {
      JobRepository mine(*other);
      return claim(mine, "q", 1);
    });
    bool prompt = claimed.wait_for(5s) == std::future_status::ready;
    CHECK_MESSAGE(prompt, "the claim waited for the other transaction's row lock");
    holder->session().commit();
    std::vector<Job> jobs;
    REQUIRE_NOTHROW(jobs = claimed.get());
    CHECK_EQ(ids_of(jobs), std::vector<std::int64_t>{second.id});
    CHECK_EQ(repo.get(first.id).status, Status::ready);
  }
  SUBCASE("with only locked rows due, the claim returns nothing at once") {
    JobRepository mine(*other);
    REQUIRE_EQ(claim_one(mine, "q").id, second.id);
    auto claimed = std::async(std::launch::async, [&] {
      JobRepository again(*other);
      return claim(again, "q", 10);
    });
    bool prompt = claimed.wait_for(5s) == std::future_status::ready;
    CHECK_MESSAGE(prompt, "the claim waited for the other transaction's row lock");
    holder->session().commit();
    std::vector<Job> jobs;
    REQUIRE_NOTHROW(jobs = claimed.get());
    CHECK(jobs.empty());
    // Once A is done, the row is claimable again.
    CHECK_EQ(claim_one(mine, "q").id, first.id);
  }
}

// SQLite: a claim holds the whole database for its statement; nothing to hide.
TEST_CASE("a claim in progress hides only the rows it takes" * doctest::skip(is_sqlite())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(add(repo, "q").id);

  // Connection A is half way through a claim: the dialect's own pick of one row, in an
  // open transaction (on PostgreSQL the same SELECT as the claim's CTE).
  auto holder = fx.connect();
  const ClaimStatements& q = holder->sql().claim;
  const auto* steps = std::get_if<ClaimPickThenMark>(&q);
  const std::optional<std::string> pick_sql =
      steps ? steps->pick : std::get<ClaimReturning>(q).locking_pick;
  REQUIRE((pick_sql && !pick_sql->empty()));
  holder->session().begin();
  std::string queue = "q";
  int limit = 1;
  long long picked = 0;
  std::optional<ClaimStart> start = steps ? read_claim_start(*holder, *steps, queue) : ClaimStart{};
  REQUIRE(start);
  soci::statement pick(holder->session());
  pick.exchange(soci::into(picked));
  pick.exchange(soci::use(queue, "queue"));
  pick.exchange(soci::use(limit, "limit"));
  if (steps) bind_claim_start(pick, *start);
  prepare_once(pick, *pick_sql);
  pick.execute(true);
  CHECK_EQ(picked, ids[0]);

  auto other = fx.connect();
  auto claimed = std::async(std::launch::async, [&] {
    JobRepository mine(*other);
    return claim(mine, "q", 10);
  });
  bool prompt = claimed.wait_for(5s) == std::future_status::ready;
  CHECK_MESSAGE(prompt, "a claim waited for another claim's transaction");
  holder->session().rollback();
  std::vector<Job> jobs;
  REQUIRE_NOTHROW(jobs = claimed.get());
  CHECK_MESSAGE(ids_of(jobs) == std::vector<std::int64_t>(ids.begin() + 1, ids.end()),
                "while one claim held job " << ids[0] << ", another claimed " << jobs.size()
                                            << " of the 4 other due jobs");
}

}  // namespace queuectl::testing::contract
