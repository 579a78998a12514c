// The retry backoff as each dialect computes it in SQL (fail_retry and reap_mark): the
// delay before the next try lies in [1/2, 1] x min(cap, base x 2^(attempts-1)), the cap
// holds at any attempt count, and a huge base cannot overflow.
#include "contract/contract_helpers.hpp"
#include "core/backoff.hpp"
#include "db/lease_repository.hpp"

namespace queuectl::testing::contract {
namespace {

// How an attempt ends: `fail` by the worker, or `reap` of its expired lease.
enum class Path { fail, reap };

const char* path_name(Path p) {
  return p == Path::fail ? "fail" : "reap";
}

// Rounding of the stored times (SQLite keeps milliseconds).
constexpr double kSlack = 0.005;
constexpr double kCentury = 100.0 * 365 * 86400;  // seconds; the longest duration the CLI takes

BackoffPolicy policy(double base_s, double cap_s) {
  BackoffPolicy p;
  p.base = millis(static_cast<std::int64_t>(base_s * 1000));
  p.cap = millis(static_cast<std::int64_t>(cap_s * 1000));
  return p;
}

// min(cap, base x 2^(attempts-1)) in seconds: the longest delay after attempt `attempts`,
// from core/backoff's reference function, which the SQL of every dialect must agree with.
double ceiling_s(const BackoffPolicy& p, int attempts) {
  return backoff_ceiling(p, attempts).secs();
}

// A time `seconds` ago, as an SQL expression of the backend under test.
std::string ago_sql(int seconds) {
  std::string s = std::to_string(seconds);
  if (is_postgresql()) return "now() - interval '" + s + " seconds'";
  if (is_mysql()) return "NOW(6) - INTERVAL " + s + " SECOND";
  return "strftime('%Y-%m-%d %H:%M:%f', 'now', '-" + s + " seconds')";
}

std::string where_id(std::int64_t id) {
  return " WHERE id = " + std::to_string(id);
}

// Makes the job due as attempt `attempt` (its attempts column one less, so the claim
// counts it), claims it, and ends that attempt through `path` under `backoff`. Returns
// the job as it is afterwards.
Job run_attempt(FreshDatabase& fx, JobRepository& repo, const Job& job, int attempt, Path path,
                const BackoffPolicy& backoff) {
  exec(fx.db(), "UPDATE job_queue SET attempts = " + std::to_string(attempt - 1) +
                    ", run_at = " + ago_sql(1) + where_id(job.id));
  Job claimed = claim_one(repo, job.queue);
  REQUIRE_EQ(claimed.id, job.id);
  REQUIRE_EQ(claimed.attempts, attempt);
  if (path == Path::fail) {
    FailRequest r;
    r.id = claimed.id;
    r.token = *claimed.lock_token;
    r.error = "boom";
    r.backoff = backoff;
    return repo.fail(r);
  }
  exec(fx.db(), "UPDATE job_queue SET lock_until = " + ago_sql(5) + where_id(job.id));
  LeaseRepository leases(fx.db());
  ReapOptions o;
  o.queue = job.queue;
  o.backoff = backoff;
  ReapResult reaped = leases.reap(o);
  CHECK_EQ(reaped.requeued, std::vector<std::int64_t>{job.id});
  CHECK(reaped.failed.empty());
  return repo.get(job.id);
}

// The job went back to ready with run_at = now + a delay in [ceiling/2, ceiling]; "now"
// is the statement's own clock, which also wrote updated_at.
void check_backoff(const Job& after, int attempt, double ceiling) {
  INFO("attempt " << attempt << ", expected delay in [" << ceiling / 2 << ", " << ceiling
                  << "] s; job: " << describe(after));
  CHECK_EQ(after.status, Status::ready);
  CHECK_EQ(after.attempts, attempt);
  double delay = seconds_between(after.updated_at, after.run_at);
  double floor = ceiling / 2;
  // MySQL/MariaDB: run_at is a TIMESTAMP(6), and a backoff past its end (2038) stops there.
  if (backend_under_test() == Backend::mysql) {
    const double to_end =
        seconds_between(after.updated_at, std::string("2038-01-19T03:14:07.999999Z"));
    CHECK_LE(delay, to_end + kSlack);
    floor = std::min(floor, to_end);
  }
  CHECK_GE(delay, floor - kSlack);
  CHECK_LE(delay, ceiling + kSlack);
}

Job add_retryable(JobRepository& repo, const std::string& queue) {
  NewJob j = new_job(queue);
  j.max_attempts = 2000000;
  return add(repo, j);
}

}  // namespace

TEST_CASE("backoff in SQL: the delay doubles from the base per attempt up to the cap") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const BackoffPolicy p = policy(1, 8);
  for (Path path : {Path::fail, Path::reap}) {
    CAPTURE(path_name(path));
    Job job = add_retryable(repo, std::string("q-") + path_name(path));
    for (int attempt = 1; attempt <= 6; ++attempt)
      check_backoff(run_attempt(fx, repo, job, attempt, path, p), attempt, ceiling_s(p, attempt));
  }
}

// Around the exponent clamp (40) and far past where 2^(attempts-1) would overflow.
TEST_CASE("backoff in SQL: the cap holds at high attempt counts") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const BackoffPolicy p = policy(1, 8);
  for (Path path : {Path::fail, Path::reap}) {
    CAPTURE(path_name(path));
    Job job = add_retryable(repo, std::string("q-") + path_name(path));
    for (int attempt : {30, 40, 41, 42, 64, 65, 1000, 1000000})
      check_backoff(run_attempt(fx, repo, job, attempt, path, p), attempt, 8.0);
  }
}

TEST_CASE("backoff in SQL: a huge base neither overflows nor escapes the cap") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  for (Path path : {Path::fail, Path::reap}) {
    CAPTURE(path_name(path));
    Job job = add_retryable(repo, std::string("q-") + path_name(path));
    // A century's base under an 8 s cap.
    const BackoffPolicy capped = policy(kCentury, 8);
    for (int attempt : {1, 2, 41, 64, 100000})
      check_backoff(run_attempt(fx, repo, job, attempt, path, capped), attempt, 8.0);
    // A century's base and cap: the delay is up to a century.
    const BackoffPolicy uncapped = policy(kCentury, kCentury);
    for (int attempt : {1, 41, 100000})
      check_backoff(run_attempt(fx, repo, job, attempt, path, uncapped), attempt, kCentury);
  }
}

TEST_CASE("backoff in SQL: the reaper draws the jitter per job, so a dead host's jobs spread") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i) add_retryable(repo, "spread");
  REQUIRE_EQ(claim(repo, "spread", kJobs).size(), static_cast<std::size_t>(kJobs));
  exec(fx.db(), "UPDATE job_queue SET lock_until = " + ago_sql(5));
  LeaseRepository leases(fx.db());
  ReapOptions o;
  o.queue = "spread";
  o.backoff = policy(60, 60);  // attempt 1: a delay in [30, 60] s
  REQUIRE_EQ(leases.reap(o).requeued.size(), static_cast<std::size_t>(kJobs));
  ListFilter all;
  all.queue = "spread";
  std::set<std::string> run_ats;
  for (const Job& j : repo.list(all)) {
    check_backoff(j, 1, 60);
    run_ats.insert(j.run_at);
  }
  // One jitter for the whole batch would give one run_at (the statement has one clock).
  MESSAGE(run_ats.size() << " distinct run_at among " << kJobs << " reaped jobs");
  CHECK(run_ats.size() > kJobs / 2);
}

}  // namespace queuectl::testing::contract
