// Queue policies: dead-letter queues (a job that gives up moves there in the statement that
// fails it, whoever fails it) and the concurrency limit (max_processing, enforced by the
// claim itself), on every backend.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "contract/contract_helpers.hpp"
#include "db/admin_repository.hpp"
#include "db/lease_repository.hpp"

namespace queuectl::testing::contract {
namespace {

using namespace std::chrono_literals;

Job add_with_attempts(JobRepository& repo, const std::string& queue, int max_attempts,
                      const std::string& payload = R"({"order":42})") {
  NewJob j = new_job(queue, payload);
  j.max_attempts = max_attempts;
  return add(repo, j);
}

FailRequest failing(const Job& job, const std::string& error, bool permanent = false) {
  FailRequest r;
  r.id = job.id;
  r.token = *job.lock_token;
  r.error = error;
  r.permanent = permanent;
  r.retry_in = permanent ? std::nullopt : std::optional<Duration>(millis(0));
  return r;
}

// What a dead letter must look like: the same job, ready in `dlq` from attempt 0.
void check_dead_letter(const Job& j, const Job& before, const std::string& dlq,
                       const std::string& from, const std::string& error) {
  CHECK_EQ(j.id, before.id);
  CHECK_EQ(j.queue, dlq);
  CHECK_EQ(j.status, Status::ready);
  CHECK_EQ(j.attempts, 0);
  CHECK(same_json(j.payload, before.payload));
  CHECK_EQ(j.last_error.value_or("(none)"), error);
  CHECK_EQ(j.dead_from.value_or("(none)"), from);
  CHECK_FALSE(j.lock_token.has_value());
  CHECK_FALSE(j.finished_at.has_value());
  CHECK_FALSE(j.dedupe_key.has_value());
}

}  // namespace

TEST_CASE("dead letters: a job on its last attempt moves to the dead-letter queue") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  admin.set_dead_letter("orders", std::string("orders-dead"));

  SUBCASE("through fail, with the error") {
    NewJob n = new_job("orders", R"({"order":42})");
    n.max_attempts = 2;
    n.dedupe_key = "order-42";
    n.group_key = "customer-7";
    const Job job = add(repo, n);
    // A failed attempt with attempts left stays in its queue.
    Job first = repo.fail(failing(claim_one(repo, "orders"), "first try"));
    CHECK_EQ(first.queue, "orders");
    CHECK_EQ(first.status, Status::ready);
    CHECK_FALSE(first.dead_from.has_value());
    Job moved = repo.fail(failing(claim_one(repo, "orders"), "second try"));
    check_dead_letter(moved, job, "orders-dead", "orders", "second try");
    CHECK_EQ(moved.group_key.value_or(""), "customer-7");
    check_dead_letter(repo.get(job.id), job, "orders-dead", "orders", "second try");
    CHECK_EQ(count_rows(fx.db(), "queue = 'orders'"), 0);
    CHECK_EQ(count_rows(fx.db(), "status = 3"), 0);
    // Its dedupe key is free again in its old queue.
    NewJob again = new_job("orders");
    again.dedupe_key = "order-42";
    CHECK_FALSE(repo.enqueue(again).duplicate);
  }
  SUBCASE("through fail --permanent, attempts left or not") {
    const Job job = add_with_attempts(repo, "orders", 25);
    Job moved = repo.fail(failing(claim_one(repo, "orders"), "bad payload", true));
    check_dead_letter(moved, job, "orders-dead", "orders", "bad payload");
  }
  SUBCASE("through the reaper, when the last lease expires") {
    const Job job = add_with_attempts(repo, "orders", 1);
    claim_one(repo, "orders", millis(50));
    sleep_ms(120);
    ReapOptions o;
    o.queue = "orders";
    ReapResult r = LeaseRepository(fx.db()).reap(o);
    CHECK_EQ(r.failed, std::vector<std::int64_t>{job.id});
    CHECK_EQ(r.dead_lettered, std::vector<std::int64_t>{job.id});
    CHECK(r.requeued.empty());
    REQUIRE_EQ(r.counts.size(), 1u);
    CHECK_EQ(r.counts[0].queue, "orders");  // counted where it was reaped
    Job moved = repo.get(job.id);
    CHECK_EQ(moved.queue, "orders-dead");
    CHECK_EQ(moved.status, Status::ready);
    CHECK_EQ(moved.dead_from.value_or(""), "orders");
    CHECK(moved.last_error.value_or("").find("lease expired") != std::string::npos);
  }
  SUBCASE("through an application's own SQL that fails the job") {
    const Job job = add_with_attempts(repo, "orders", 1);
    const Job held = claim_one(repo, "orders");
    exec(fx.db(),
         "UPDATE job_queue SET status = 3, last_error = 'app gave up', lock_token = NULL"
         " WHERE id = " +
             std::to_string(held.id));
    check_dead_letter(repo.get(job.id), job, "orders-dead", "orders", "app gave up");
  }
  SUBCASE("a queue without a dead-letter queue keeps its failed jobs") {
    const Job job = add_with_attempts(repo, "other", 1);
    Job failed = repo.fail(failing(claim_one(repo, "other"), "no"));
    CHECK_EQ(failed.queue, "other");
    CHECK_EQ(failed.status, Status::failed);
    CHECK_FALSE(failed.dead_from.has_value());
    CHECK_EQ(repo.get(job.id).status, Status::failed);
  }
  SUBCASE("cleared, jobs fail in place again") {
    admin.set_dead_letter("orders", std::nullopt);
    CHECK_FALSE(admin.settings("orders").dead_letter.has_value());
    const Job job = add_with_attempts(repo, "orders", 1);
    CHECK_EQ(repo.fail(failing(claim_one(repo, "orders"), "no")).status, Status::failed);
    CHECK_EQ(repo.get(job.id).queue, "orders");
  }
}

TEST_CASE("dead letters: move sends them back, and they run") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  admin.set_dead_letter("mail", std::string("mail-dead"));
  admin.set_dead_letter("sms", std::string("mail-dead"));
  std::vector<Job> dead;
  for (const char* q : {"mail", "sms", "mail"}) {
    const Job j = add_with_attempts(repo, q, 1);
    repo.fail(failing(claim_one(repo, q), "gave up"));
    dead.push_back(j);
  }
  const Job bystander = add(repo, "mail-dead");  // an ordinary job of the dead-letter queue

  SUBCASE("by id, back to where each came from; then it is claimed and acked") {
    IdOutcome o = admin.move({dead[1].id, bystander.id, 999999}, std::nullopt);
    CHECK_EQ(o.changed, std::vector<std::int64_t>{dead[1].id});
    CHECK_EQ(o.not_found, std::vector<std::int64_t>{999999});
    REQUIRE_EQ(o.skipped.size(), 1u);
    CHECK_EQ(o.skipped[0].first, bystander.id);
    Job back = repo.get(dead[1].id);
    CHECK_EQ(back.queue, "sms");
    CHECK_EQ(back.status, Status::ready);
    CHECK_EQ(back.attempts, 0);
    CHECK_FALSE(back.dead_from.has_value());
    CHECK_EQ(back.last_error.value_or(""), "gave up");  // the history stays
    Job again = claim_one(repo, "sms");
    CHECK_EQ(again.id, dead[1].id);
    repo.ack({again.id, *again.lock_token, std::nullopt});
    CHECK_EQ(repo.get(again.id).status, Status::done);
  }
  SUBCASE("by queue, a batch at a time; a dry run changes nothing") {
    auto would = admin.move_matching(std::string("mail-dead"), std::nullopt, DryRun::yes, 2);
    CHECK_EQ(would, ids_of(dead));
    CHECK_EQ(count_rows(fx.db(), "queue = 'mail-dead'"), 4);
    std::vector<std::int64_t> seen;
    auto moved = admin.move_matching(std::string("mail-dead"), std::nullopt, DryRun::no, 2,
                                     [&](std::int64_t n) { seen.push_back(n); });
    CHECK_EQ(moved, ids_of(dead));
    CHECK_EQ(seen, std::vector<std::int64_t>{2, 3});
    CHECK_EQ(count_rows(fx.db(), "queue = 'mail-dead'"), 1);  // the bystander
    CHECK_EQ(count_rows(fx.db(), "queue = 'mail' AND status = 0"), 2);
    CHECK_EQ(count_rows(fx.db(), "queue = 'sms' AND status = 0"), 1);
  }
  SUBCASE("all of them, to another queue") {
    auto moved = admin.move_matching(std::nullopt, std::string("triage"), DryRun::no, 1000);
    CHECK_EQ(moved, ids_of(dead));
    CHECK_EQ(count_rows(fx.db(), "queue = 'triage' AND status = 0 AND dead_from IS NULL"), 3);
  }
  SUBCASE("one a worker of the dead-letter queue holds stays where it is") {
    const Job held = claim_one(repo, "mail-dead");  // the oldest: dead[0]
    CHECK_EQ(held.id, dead[0].id);
    auto moved = admin.move_matching(std::string("mail-dead"), std::nullopt, DryRun::no, 1000);
    CHECK_EQ(moved, std::vector<std::int64_t>{dead[1].id, dead[2].id});
    CHECK_EQ(repo.get(held.id).status, Status::processing);
    CHECK_EQ(repo.get(held.id).queue, "mail-dead");
  }
}

TEST_CASE("dead letters: a loop of dead-letter queues is refused, nothing written") {
  FreshDatabase fx;
  AdminRepository admin(fx.db());
  admin.set_dead_letter("a", std::string("b"));
  admin.set_dead_letter("b", std::string("c"));
  CHECK_THROWS_AS(admin.set_dead_letter("c", std::string("a")), UsageError);
  CHECK_FALSE(admin.settings("c").dead_letter.has_value());
  admin.set_dead_letter("c", std::string("d"));  // a chain is fine
  CHECK_EQ(admin.settings("c").dead_letter.value_or(""), "d");
}

TEST_CASE("concurrency limit: a claim takes no more than the free slots") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  for (int i = 0; i < 10; ++i) add(repo, "api");
  admin.set_max_processing("api", 3);
  CHECK_EQ(admin.settings("api").max_processing.value_or(0), 3);

  auto held = claim(repo, "api", 5);
  REQUIRE_EQ(held.size(), 3u);
  CHECK(claim(repo, "api", 5).empty());
  CHECK_EQ(count_rows(fx.db(), "status = 1"), 3);

  SUBCASE("ack, fail, release and reap each free a slot") {
    repo.ack({held[0].id, *held[0].lock_token, std::nullopt});
    CHECK_EQ(claim(repo, "api", 5).size(), 1u);
    CHECK(claim(repo, "api", 5).empty());
    repo.fail(failing(held[1], "later"));
    CHECK_EQ(claim(repo, "api", 5).size(), 1u);
    CHECK(claim(repo, "api", 5).empty());
    repo.release(held[2].id, *held[2].lock_token);
    auto short_lease = claim(repo, "api", 5, millis(50));
    CHECK_EQ(short_lease.size(), 1u);
    CHECK(claim(repo, "api", 5).empty());
    sleep_ms(120);
    ReapOptions o;
    o.queue = "api";
    CHECK_EQ(LeaseRepository(fx.db()).reap(o).requeued.size(), 1u);
    CHECK_EQ(claim(repo, "api", 5).size(), 1u);
    CHECK_EQ(count_rows(fx.db(), "status = 1"), 3);
  }
  SUBCASE("other queues are not limited by it") {
    for (int i = 0; i < 4; ++i) add(repo, "bulk");
    CHECK_EQ(claim(repo, "bulk", 10).size(), 4u);
  }
  SUBCASE("raised or cleared, the claim takes more at once") {
    admin.set_max_processing("api", 5);
    CHECK_EQ(claim(repo, "api", 5).size(), 2u);
    admin.set_max_processing("api", std::nullopt);
    CHECK_EQ(claim(repo, "api", 10).size(), 5u);
  }
}

namespace {

constexpr int kRaceWorkers = 8;
constexpr int kRaceJobs = 240;
constexpr const char* kRaceQueue = "limited";

// A racing claimer: claims batches of 3, logs "S id" and "E id" around a short piece of
// work (both while it holds the lease), then acks, until nothing is left.
[[noreturn]] void limit_worker(const FreshDatabase& fx, int index, const std::string& log_path) {
  int code = 0;
  try {
    const int fd = open(log_path.c_str(), O_WRONLY | O_APPEND);
    if (fd < 0) _exit(21);
    auto db = fx.connect();
    JobRepository repo(*db);
    auto log = [&](char kind, std::int64_t id) {
      const std::string line = std::string(1, kind) + " " + std::to_string(id) + "\n";
      if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(20);
    };
    for (int idle = 0; idle < 20000;) {
      auto jobs = claim(repo, kRaceQueue, 3, Duration::seconds(60), "w" + std::to_string(index));
      if (jobs.empty()) {
        if (scalar(*db, "SELECT COUNT(*) FROM job_queue WHERE status IN (0, 1)") == 0) break;
        ++idle;
        std::this_thread::sleep_for(1ms);
        continue;
      }
      for (const Job& job : jobs) log('S', job.id);
      std::this_thread::sleep_for(3ms);
      for (const Job& job : jobs) {
        log('E', job.id);
        repo.ack({job.id, *job.lock_token, std::nullopt});
      }
    }
    close(fd);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker %d: %s\n", index, e.what());
    code = 1;
  }
  std::fflush(nullptr);
  _exit(code);
}

struct RaceOutcome {
  int most_in_progress = 0;       // from the workers' log
  long long most_processing = 0;  // sampled from the table while they ran
};

// 8 processes drain the queue; `limit` set or not. Returns the peaks seen.
RaceOutcome race(FreshDatabase& fx, std::optional<int> limit) {
  JobRepository repo(fx.db());
  std::vector<NewJob> jobs(kRaceJobs, new_job(kRaceQueue));
  REQUIRE_EQ(repo.enqueue_many(jobs).enqueued, kRaceJobs);
  AdminRepository(fx.db()).set_max_processing(kRaceQueue, limit);

  char tmpl[] = "/tmp/queuectl-limit-race-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string log_path = dir + "/events.log";
  { std::ofstream(log_path).flush(); }
  std::vector<pid_t> pids;
  std::cout.flush();
  std::fflush(nullptr);
  for (int w = 0; w < kRaceWorkers; ++w) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) limit_worker(fx, w, log_path);
    pids.push_back(pid);
  }
  RaceOutcome out;
  std::vector<int> codes(kRaceWorkers, -1);
  const auto deadline = std::chrono::steady_clock::now() + 240s;
  for (int running = kRaceWorkers; running > 0;) {
    out.most_processing = std::max(out.most_processing, count_rows(fx.db(), "status = 1"));
    std::this_thread::sleep_for(2ms);
    for (int w = 0; w < kRaceWorkers; ++w) {
      int status = 0;
      if (codes[w] == -1 && waitpid(pids[w], &status, WNOHANG) == pids[w]) {
        codes[w] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --running;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (int w = 0; w < kRaceWorkers; ++w)
        if (codes[w] == -1) kill(pids[w], SIGKILL);
      FAIL("the workers did not finish within 240 s");
    }
  }
  for (int w = 0; w < kRaceWorkers; ++w) CHECK_MESSAGE(codes[w] == 0, "worker " << w << " failed");
  CHECK_EQ(count_rows(fx.db(), "status = 2"), kRaceJobs);
  std::ifstream in(log_path);
  std::set<std::int64_t> in_progress;
  std::int64_t starts = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    char kind = 0;
    std::int64_t id = 0;
    fields >> kind >> id;
    if (kind == 'S') {
      ++starts;
      CHECK_MESSAGE(in_progress.insert(id).second, "job " << id << " started twice at once");
      out.most_in_progress = std::max(out.most_in_progress, static_cast<int>(in_progress.size()));
    } else {
      CHECK_MESSAGE(in_progress.erase(id) == 1, "an end without a start: " << line);
    }
  }
  CHECK_EQ(starts, kRaceJobs);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return out;
}

}  // namespace

TEST_CASE("concurrency limit: 8 racing claimers never have more than N processing") {
  FreshDatabase fx;
  const RaceOutcome limited = race(fx, 4);
  MESSAGE("limit 4: at most " << limited.most_in_progress << " in progress (log), "
                              << limited.most_processing << " processing (table)");
  CHECK_LE(limited.most_in_progress, 4);
  CHECK_LE(limited.most_processing, 4);
  CHECK_GE(limited.most_in_progress, 2);  // the limit was reached, not starved
}

TEST_CASE("concurrency limit: the race check sees more than N without a limit (control)") {
  FreshDatabase fx;
  const RaceOutcome free_run = race(fx, std::nullopt);
  MESSAGE("no limit: at most " << free_run.most_in_progress << " in progress (log)");
  CHECK_GT(free_run.most_in_progress, 4);
}

}  // namespace queuectl::testing::contract
