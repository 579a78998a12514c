// Token-guarded changes: ack, fail, extend and release change a job only while it is
// processing under the token its claim issued; otherwise LeaseLost and nothing written.
#include "contract/contract_helpers.hpp"

namespace queuectl::testing::contract {
namespace {

// A token that was never issued, in the same shape as a real one.
const std::string kWrongToken = "00000000-0000-4000-8000-000000000000";

// `change` must throw LeaseLost and leave the job exactly as it was.
template <typename Change>
void check_refused(JobRepository& repo, std::int64_t id, Change change) {
  const std::string before = describe(repo.get(id));
  CHECK_THROWS_AS(change(), LeaseLost);
  CHECK_EQ(describe(repo.get(id)), before);
}

FailRequest fail_request(const Job& j, const std::string& error) {
  FailRequest r;
  r.id = j.id;
  r.token = j.lock_token.value_or("");
  r.error = error;
  return r;
}

}  // namespace

TEST_CASE("ack with the right token finishes the job and stores the result") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  add(repo, "q");
  Job c = claim_one(repo, "q");

  repo.ack({c.id, *c.lock_token, std::string(R"({"sent":true,"n":[1,2]})")});
  Job done = repo.get(c.id);
  CHECK_EQ(done.status, Status::done);
  REQUIRE(done.result);
  CHECK_MESSAGE(same_json(*done.result, R"({"sent":true,"n":[1,2]})"), *done.result);
  CHECK(is_rfc3339_us(done.finished_at));
  CHECK(epoch_us(done.finished_at) >= epoch_us(c.locked_at));
  CHECK(epoch_us(done.finished_at) <= epoch_us(repo.now()));
  CHECK_EQ(done.attempts, 1);
  // The ack keeps the token (see Statements::ack): it grants nothing on a done job.
  CHECK_EQ(done.lock_token, c.lock_token);
  CHECK(claim(repo, "q", 10).empty());

  SUBCASE("ack without a result stores none") {
    add(repo, "q");
    Job d = claim_one(repo, "q");
    repo.ack({d.id, *d.lock_token, std::nullopt});
    CHECK_EQ(repo.get(d.id).status, Status::done);
    CHECK_FALSE(repo.get(d.id).result);
  }
}

TEST_CASE("ack is refused without the live lease, and nothing changes") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job ready = add(repo, "q");
  add(repo, "q");
  Job c = claim_one(repo, "q");
  REQUIRE_EQ(c.id, ready.id);
  Job other = add(repo, "q");

  SUBCASE("wrong token") {
    check_refused(repo, c.id, [&] { repo.ack({c.id, kWrongToken, std::nullopt}); });
  }
  SUBCASE("empty token") {
    check_refused(repo, c.id, [&] { repo.ack({c.id, "", std::nullopt}); });
  }
  SUBCASE("another claim's token") {
    Job d = claim_one(repo, "q");
    check_refused(repo, c.id, [&] { repo.ack({c.id, *d.lock_token, std::nullopt}); });
    check_refused(repo, d.id, [&] { repo.ack({d.id, *c.lock_token, std::nullopt}); });
  }
  SUBCASE("twice") {
    repo.ack({c.id, *c.lock_token, std::string("1")});
    check_refused(repo, c.id, [&] { repo.ack({c.id, *c.lock_token, std::string("2")}); });
    CHECK(same_json(repo.get(c.id).result.value_or(""), "1"));
  }
  SUBCASE("a ready job") {
    check_refused(repo, other.id, [&] { repo.ack({other.id, *c.lock_token, std::nullopt}); });
    check_refused(repo, other.id, [&] { repo.ack({other.id, "", std::nullopt}); });
  }
  SUBCASE("a job that does not exist: not found, not a lost lease") {
    CHECK_THROWS_AS(repo.ack({other.id + 100, *c.lock_token, std::nullopt}), NotFound);
    CHECK_THROWS_AS(repo.extend(other.id + 100, *c.lock_token, Duration::seconds(30)), NotFound);
    CHECK_THROWS_AS(repo.release(other.id + 100, *c.lock_token), NotFound);
  }
  CHECK_EQ(count_rows(fx.db()), 3);
}

TEST_CASE("ack_many acks what it holds and returns the ids whose lease was lost") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  for (int i = 0; i < 4; ++i) add(repo, "q");
  Job ready = add(repo, job_at("q", "2037-12-01 00:00:00.000000"));
  auto jobs = claim(repo, "q", 4);
  REQUIRE_EQ(jobs.size(), 4u);
  const std::string t = *jobs[0].lock_token;

  std::vector<AckItem> items = {
      {jobs[0].id, t, std::string(R"({"ok":0})")},
      {jobs[1].id, kWrongToken, std::nullopt},
      {jobs[2].id, t, std::nullopt},
      {ready.id, t, std::nullopt},
      {ready.id + 1000, t, std::nullopt},
  };
  auto lost = repo.ack_many(items);
  CHECK_EQ(lost, std::vector<std::int64_t>{jobs[1].id, ready.id, ready.id + 1000});
  CHECK_EQ(repo.get(jobs[0].id).status, Status::done);
  CHECK(same_json(repo.get(jobs[0].id).result.value_or(""), R"({"ok":0})"));
  CHECK_EQ(repo.get(jobs[1].id).status, Status::processing);
  CHECK_EQ(repo.get(jobs[2].id).status, Status::done);
  CHECK_EQ(repo.get(jobs[3].id).status, Status::processing);
  CHECK_EQ(repo.get(ready.id).status, Status::ready);

  CHECK(repo.ack_many({{jobs[3].id, t, std::nullopt}}).empty());
  CHECK_EQ(repo.get(jobs[3].id).status, Status::done);
}

// Many ids under one token, past every chunk size (500 ids a statement with an IN list,
// 5,000 an array on PostgreSQL), with lost leases spread over the chunks: each reported,
// the rest acked, all in one call. MySQL/MariaDB's optimistic UPDATE misses here and acks
// the locking way; a second call with none lost takes the optimistic path.
TEST_CASE("ack_many across chunks reports exactly the lost leases") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  exec(fx.db(), "INSERT INTO job_queue (queue, payload) SELECT 'q', '{}' FROM " +
                    hundred_thousand_rows() + " LIMIT 6500");
  auto jobs = claim(repo, "q", 6000, Duration::seconds(3600));
  REQUIRE_EQ(jobs.size(), 6000u);
  const std::string t = *jobs[0].lock_token;
  std::vector<AckItem> items;
  std::vector<std::int64_t> expected_lost;
  for (std::size_t i = 0; i < 5000; ++i) {
    const bool lost = i % 1250 == 7;  // 4 of them, in different chunks
    items.push_back({jobs[i].id, lost ? kWrongToken : t, std::nullopt});
    if (lost) expected_lost.push_back(jobs[i].id);
  }
  auto lost = repo.ack_many(items);
  std::sort(lost.begin(), lost.end());
  std::sort(expected_lost.begin(), expected_lost.end());
  CHECK_EQ(lost, expected_lost);
  CHECK_EQ(count_rows(fx.db(), "status = 2"), 4996);
  // The other thousand, none lost.
  items.clear();
  for (std::size_t i = 5000; i < 6000; ++i) items.push_back({jobs[i].id, t, std::nullopt});
  CHECK(repo.ack_many(items).empty());
  CHECK_EQ(count_rows(fx.db(), "status = 2"), 5996);
  CHECK_EQ(count_rows(fx.db(), "status = 1"), 4);
  CHECK_EQ(count_rows(fx.db(), "status = 0"), 500);
}

// As claims (test_claim.cpp): a worker acks again and again on one connection, so from its
// second run each ack statement (of one job, of several) is prepared on the server (parsed
// once) and deallocated with the repository. One `queuectl ack`, and any connection through a
// transaction pooler, send it as a one-time statement. A prepared ack refuses a lost lease
// as the other does.
TEST_CASE("PostgreSQL: a repository's repeated acks run statements prepared on the server" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fx;
  auto prepared = [&] {
    return scalar(fx.db(),
                  "SELECT count(*) FROM pg_prepared_statements"
                  " WHERE statement LIKE '%SET status = 2, result = NULL%'");
  };
  const long long kept = through_pooler() ? 0 : 1;
  {
    JobRepository repo(fx.db());
    for (int i = 0; i < 6; ++i) add(repo, "q");
    Job later = add(repo, job_at("q", "2037-12-01 00:00:00.000000"));
    auto jobs = claim(repo, "q", 6);
    REQUIRE_EQ(jobs.size(), 6u);
    const std::string t = *jobs[0].lock_token;
    repo.ack({jobs[0].id, t, std::nullopt});
    CHECK_EQ(prepared(), 0);
    check_refused(repo, jobs[1].id, [&] { repo.ack({jobs[1].id, kWrongToken, std::nullopt}); });
    CHECK_EQ(prepared(), kept);
    repo.ack({jobs[1].id, t, std::nullopt});
    CHECK_EQ(repo.get(jobs[1].id).status, Status::done);
    std::vector<AckItem> items = {{jobs[2].id, t, std::nullopt},
                                  {later.id, t, std::nullopt},
                                  {jobs[3].id, kWrongToken, std::nullopt},
                                  {jobs[4].id, t, std::nullopt}};
    auto lost = repo.ack_many(items);
    std::sort(lost.begin(), lost.end());
    CHECK_EQ(lost, std::vector<std::int64_t>{jobs[3].id, later.id});
    CHECK_EQ(prepared(), kept);
    CHECK_EQ(repo.get(later.id).status, Status::ready);
    CHECK_EQ(repo.get(jobs[3].id).status, Status::processing);
    // The ack of several ids under one token (jobs[2], later, jobs[4] above) is a statement
    // of its own, prepared at its second run.
    CHECK(repo.ack_many({{jobs[3].id, t, std::nullopt}, {jobs[5].id, t, std::nullopt}}).empty());
    CHECK_EQ(prepared(), 2 * kept);
  }
  CHECK_EQ(prepared(), 0);
  CHECK_EQ(count_rows(fx.db(), "status = 2"), 6);
  CHECK_EQ(count_rows(fx.db(), "status = 1"), 0);
  // A worker's one-job acks: PostgreSQL plans that statement once, from its sixth run (a
  // generic plan), as it does the one-job claim; the array one it would plan at every run.
  if (kept == 0) return;
  JobRepository repo(fx.db());
  for (int i = 0; i < 9; ++i) add(repo, "q");
  for (const Job& j : claim(repo, "q", 9)) repo.ack({j.id, *j.lock_token, std::nullopt});
  CHECK_EQ(count_rows(fx.db(), "status = 2"), 15);
  CHECK_GE(scalar(fx.db(),
                  "SELECT COALESCE(sum(generic_plans), 0) FROM pg_prepared_statements"
                  " WHERE statement LIKE '%SET status = 2, result = NULL%'"
                  " AND statement NOT LIKE '%ANY%'"),
           2);
}

// The server ends the connection under a prepared ack: that ack fails as a lost connection
// (a worker then connects again, with a new repository) and writes nothing, and a repository
// whose statement can no longer be deallocated goes quietly.
TEST_CASE("PostgreSQL: a prepared ack whose connection the server ended" *
          doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fx;
  {
    JobRepository repo(fx.db());
    for (int i = 0; i < 6; ++i) add(repo, "q");
  }
  for (int round = 0; round < 2; ++round) {
    auto victim = fx.connect();
    JobRepository repo(*victim);
    auto jobs = claim(repo, "q", 3);
    REQUIRE_EQ(jobs.size(), 3u);
    const std::string t = *jobs[0].lock_token;
    repo.ack({jobs[0].id, t, std::nullopt});
    repo.ack({jobs[1].id, t, std::nullopt});  // prepared
    exec(fx.db(), "SELECT pg_terminate_backend(" +
                      std::to_string(scalar(*victim, "SELECT pg_backend_pid()")) + ")");
    if (round == 0) {
      CHECK_THROWS_AS(repo.ack({jobs[2].id, t, std::nullopt}), TemporaryError);
      JobRepository again(fx.db());
      again.ack({jobs[2].id, t, std::nullopt});
    }
    // round 1: destroyed with its statement still prepared, its third job still held
  }
  CHECK_EQ(count_rows(fx.db(), "status = 2"), 5);
  CHECK_EQ(count_rows(fx.db(), "status = 1"), 1);
}

TEST_CASE("fail puts the job back with a backoff and the error") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  add(repo, "q");
  Job c = claim_one(repo, "q");

  Job f = repo.fail(fail_request(c, "boom: connection reset"));
  CHECK_EQ(f.status, Status::ready);
  CHECK_EQ(f.attempts, 1);
  CHECK_EQ(f.last_error.value_or(""), "boom: connection reset");
  CHECK_FALSE(f.lock_token);
  CHECK_FALSE(f.lock_until);
  CHECK_FALSE(f.finished_at);
  CHECK_MESSAGE(epoch_us(f.run_at) > epoch_us(repo.now()), "run_at " << f.run_at);
  // Default policy: base 5s with jitter in [base/2, base] for the first attempt.
  double delay = seconds_between(f.updated_at, f.run_at);
  CHECK_MESSAGE(delay >= 2.4, "backoff of " << delay << "s");
  CHECK_MESSAGE(delay <= 5.1, "backoff of " << delay << "s");
  CHECK_EQ(describe(repo.get(c.id)), describe(f));
  CHECK(claim(repo, "q", 10).empty());

  SUBCASE("the token does not work twice") {
    check_refused(repo, c.id, [&] { repo.fail(fail_request(c, "again")); });
    check_refused(repo, c.id, [&] { repo.ack({c.id, *c.lock_token, std::nullopt}); });
  }
}

TEST_CASE("fail with an explicit retry_in") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  add(repo, "q");
  Job c = claim_one(repo, "q");

  SUBCASE("of an hour") {
    FailRequest r = fail_request(c, "later");
    r.retry_in = Duration::seconds(3600);
    Job f = repo.fail(r);
    double delay = seconds_between(f.updated_at, f.run_at);
    CHECK_MESSAGE(std::abs(delay - 3600.0) < 1.0, "retry in " << delay << "s");
    CHECK(claim(repo, "q", 10).empty());
  }
  SUBCASE("of zero: claimable at once, and the next claim is attempt 2") {
    FailRequest r = fail_request(c, "again now");
    r.retry_in = Duration();
    Job f = repo.fail(r);
    CHECK_EQ(f.status, Status::ready);
    CHECK_EQ(f.attempts, 1);
    Job again = claim_one(repo, "q");
    CHECK_EQ(again.id, c.id);
    CHECK_EQ(again.attempts, 2);
    CHECK_NE(again.lock_token, c.lock_token);
    CHECK_EQ(again.last_error.value_or(""), "again now");
  }
}

TEST_CASE("fail out of attempts, or permanent, makes the job failed") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  SUBCASE("attempts reached max_attempts") {
    NewJob once = new_job("q");
    once.max_attempts = 2;
    add(repo, once);
    FailRequest r = fail_request(claim_one(repo, "q"), "first");
    r.retry_in = Duration();
    CHECK_EQ(repo.fail(r).status, Status::ready);
    Job c = claim_one(repo, "q");
    REQUIRE_EQ(c.attempts, 2);
    Job f = repo.fail(fail_request(c, "second"));
    CHECK_EQ(f.status, Status::failed);
    CHECK_EQ(f.attempts, 2);
    CHECK_EQ(f.last_error.value_or(""), "second");
    CHECK(is_rfc3339_us(f.finished_at));
    CHECK_FALSE(f.lock_token);
    CHECK(claim(repo, "q", 10).empty());
  }
  SUBCASE("max_attempts 1 fails at the first failure, retry_in or not") {
    NewJob once = new_job("q");
    once.max_attempts = 1;
    add(repo, once);
    FailRequest r = fail_request(claim_one(repo, "q"), "only");
    r.retry_in = Duration();
    CHECK_EQ(repo.fail(r).status, Status::failed);
    CHECK(claim(repo, "q", 10).empty());
  }
  SUBCASE("permanent with attempts left") {
    add(repo, "q");
    Job c = claim_one(repo, "q");
    FailRequest r = fail_request(c, "bad payload");
    r.permanent = true;
    Job f = repo.fail(r);
    CHECK_EQ(f.status, Status::failed);
    CHECK_EQ(f.attempts, 1);
    CHECK_EQ(f.last_error.value_or(""), "bad payload");
    CHECK(is_rfc3339_us(f.finished_at));
    check_refused(repo, c.id, [&] { repo.fail(r); });
  }
  SUBCASE("permanent with a wrong token") {
    add(repo, "q");
    Job c = claim_one(repo, "q");
    FailRequest r = fail_request(c, "x");
    r.permanent = true;
    r.token = kWrongToken;
    check_refused(repo, c.id, [&] { repo.fail(r); });
  }
}

TEST_CASE("extend moves a live lease and refuses an expired one") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job first = add(repo, "q");
  Job second = add(repo, "q");

  SUBCASE("live lease") {
    Job c = claim_one(repo, "q", Duration::seconds(30));
    Job e = repo.extend(c.id, *c.lock_token, Duration::seconds(3600));
    CHECK_EQ(e.status, Status::processing);
    CHECK_EQ(e.lock_token, c.lock_token);
    CHECK_EQ(e.attempts, 1);
    CHECK_MESSAGE(epoch_us(e.lock_until) > epoch_us(c.lock_until),
                  e.lock_until.value_or("NULL") << " is not after " << c.lock_until.value_or(""));
    double left = seconds_between(repo.now(), e.lock_until);
    CHECK_MESSAGE(left > 3000.0, "lease ends in " << left << "s");
    CHECK_MESSAGE(left <= 3600.0, "lease ends in " << left << "s");
    check_refused(repo, c.id, [&] { repo.extend(c.id, kWrongToken, Duration::seconds(60)); });
    // The token still works after an extension.
    repo.ack({c.id, *c.lock_token, std::nullopt});
    check_refused(repo, c.id, [&] { repo.extend(c.id, *c.lock_token, Duration::seconds(60)); });
  }
  SUBCASE("expired lease") {
    Job c = claim_one(repo, "q", millis(1));
    sleep_ms(50);
    check_refused(repo, c.id, [&] { repo.extend(c.id, *c.lock_token, Duration::seconds(60)); });
    CHECK_EQ(repo.get(c.id).status, Status::processing);
  }
  SUBCASE("a ready job") {
    Job c = claim_one(repo, "q");
    REQUIRE_EQ(c.id, first.id);
    Job ready = repo.get(second.id);
    REQUIRE_EQ(ready.status, Status::ready);
    check_refused(repo, ready.id,
                  [&] { repo.extend(ready.id, *c.lock_token, Duration::seconds(60)); });
  }
}

TEST_CASE("release gives the job back at once and returns the attempt") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  add(repo, "q");
  Job c = claim_one(repo, "q");
  REQUIRE_EQ(c.attempts, 1);

  Job r = repo.release(c.id, *c.lock_token);
  CHECK_EQ(r.status, Status::ready);
  CHECK_EQ(r.attempts, 0);
  CHECK_FALSE(r.lock_token);
  CHECK_FALSE(r.locked_by);
  CHECK_FALSE(r.lock_until);
  CHECK(epoch_us(r.run_at) <= epoch_us(repo.now()));
  CHECK_EQ(describe(repo.get(c.id)), describe(r));

  SUBCASE("the stale token is refused after release") {
    check_refused(repo, c.id, [&] { repo.ack({c.id, *c.lock_token, std::nullopt}); });
    check_refused(repo, c.id, [&] { repo.release(c.id, *c.lock_token); });
    check_refused(repo, c.id, [&] { repo.fail(fail_request(c, "stale")); });
    check_refused(repo, c.id, [&] { repo.extend(c.id, *c.lock_token, Duration::seconds(60)); });
  }
  SUBCASE("and after a new claim, only the new token works") {
    Job again = claim_one(repo, "q");
    CHECK_EQ(again.id, c.id);
    CHECK_EQ(again.attempts, 1);
    REQUIRE(again.lock_token);
    CHECK_NE(*again.lock_token, *c.lock_token);
    check_refused(repo, c.id, [&] { repo.ack({c.id, *c.lock_token, std::nullopt}); });
    check_refused(repo, c.id, [&] { repo.release(c.id, *c.lock_token); });
    check_refused(repo, c.id, [&] { repo.fail(fail_request(c, "stale")); });
    check_refused(repo, c.id, [&] { repo.extend(c.id, *c.lock_token, Duration::seconds(60)); });
    repo.ack({again.id, *again.lock_token, std::nullopt});
    CHECK_EQ(repo.get(c.id).status, Status::done);
  }
  SUBCASE("release with a wrong token") {
    Job again = claim_one(repo, "q");
    check_refused(repo, again.id, [&] { repo.release(again.id, kWrongToken); });
  }
}

}  // namespace queuectl::testing::contract
