// Claim through JobRepository: order, due times, limits, attempts, tokens, leases,
// queues and pausing.
#include "contract/contract_helpers.hpp"

#include <cstdlib>

#include "core/time_text.hpp"

namespace queuectl::testing::contract {

TEST_CASE("claim takes jobs by priority DESC, then run_at, then id") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  // Inserted in an order that matches none of the keys alone.
  Job a = add(repo, job_at("q", "2020-01-01 00:00:02.000000", 0));
  Job b = add(repo, job_at("q", "2020-01-01 00:00:03.000000", 5));
  Job c = add(repo, job_at("q", "2020-01-01 00:00:01.000000", 5));
  Job d = add(repo, job_at("q", "2020-01-01 00:00:02.000000", 0));
  Job e = add(repo, job_at("q", "2020-01-01 00:00:00.000000", -1));
  Job f = add(repo, job_at("q", "2020-01-01 00:00:00.500000", 0));
  const std::vector<std::int64_t> expected = {c.id, b.id, f.id, a.id, d.id, e.id};

  SUBCASE("one at a time") {
    std::vector<std::int64_t> got;
    for (int i = 0; i < 6; ++i) got.push_back(claim_one(repo, "q").id);
    CHECK_EQ(got, expected);
    CHECK(claim(repo, "q", 10).empty());
  }
  SUBCASE("in one call, returned in claim order") {
    CHECK_EQ(ids_of(claim(repo, "q", 10)), expected);
  }
  SUBCASE("a limited batch takes the head of the order") {
    auto first = claim(repo, "q", 3);
    CHECK_EQ(ids_of(first), std::vector<std::int64_t>(expected.begin(), expected.begin() + 3));
    CHECK_EQ(ids_of(claim(repo, "q", 3)),
             std::vector<std::int64_t>(expected.begin() + 3, expected.end()));
  }
}

// MySQL/MariaDB read where the pick starts before each claim (claim_start): a job that
// becomes ready ahead of the jobs claimed so far must still come first at the next claim.
TEST_CASE("a job that lands ahead of jobs already claimed is claimed next") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  std::vector<Job> plain;
  for (int i = 0; i < 6; ++i) plain.push_back(add(repo, job_at("q", "2020-01-01 00:00:10.000000")));
  CHECK_EQ(ids_of(claim(repo, "q", 2)), std::vector<std::int64_t>{plain[0].id, plain[1].id});

  SUBCASE("a higher priority") {
    Job urgent = add(repo, job_at("q", "2020-01-01 00:00:10.000000", 7));
    CHECK_EQ(ids_of(claim(repo, "q", 2)), std::vector<std::int64_t>{urgent.id, plain[2].id});
  }
  SUBCASE("an earlier run_at") {
    Job early = add(repo, job_at("q", "2020-01-01 00:00:05.000000"));
    CHECK_EQ(ids_of(claim(repo, "q", 2)), std::vector<std::int64_t>{early.id, plain[2].id});
  }
  SUBCASE("a job given back") {
    Job held = claim_one(repo, "q");
    CHECK_EQ(held.id, plain[2].id);
    REQUIRE(held.lock_token);
    exec(fx.db(),
         "UPDATE job_queue SET status = 0, lock_token = NULL, lock_until = NULL, "
         "run_at = '2020-01-01 00:00:01.000000' WHERE id = " +
             std::to_string(held.id));
    CHECK_EQ(ids_of(claim(repo, "q", 2)), std::vector<std::int64_t>{held.id, plain[3].id});
  }
}

TEST_CASE("claim takes only jobs whose run_at has come") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  NewJob later = new_job("q", "{}", 100);
  later.delay = Duration::seconds(3600);
  Job delayed = add(repo, later);
  Job future = add(repo, job_at("q", "2037-12-01 00:00:00.000000", 100));
  Job due = add(repo, "q");

  auto jobs = claim(repo, "q", 10);
  CHECK_EQ(ids_of(jobs), std::vector<std::int64_t>{due.id});
  CHECK(claim(repo, "q", 10).empty());
  CHECK_EQ(repo.get(delayed.id).status, Status::ready);
  CHECK_EQ(repo.get(delayed.id).attempts, 0);
  CHECK_EQ(repo.get(future.id).status, Status::ready);
}

TEST_CASE("claim respects the limit and counts the attempt") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  for (int i = 0; i < 5; ++i) add(repo, "q");

  auto jobs = claim(repo, "q", 3);
  REQUIRE_EQ(jobs.size(), 3u);
  for (const Job& j : jobs) {
    CHECK_EQ(j.status, Status::processing);
    CHECK_EQ(j.attempts, 1);
    CHECK_EQ(repo.get(j.id).attempts, 1);
  }
  CHECK_EQ(count_rows(fx.db(), "status = 1 AND attempts = 1"), 3);
  CHECK_EQ(count_rows(fx.db(), "status = 0 AND attempts = 0"), 2);
  CHECK_EQ(claim(repo, "q", 1).size(), 1u);
  CHECK_EQ(claim(repo, "q", 100).size(), 1u);
  CHECK(claim(repo, "q", 100).empty());
}

TEST_CASE("each claim call issues one fresh UUID token for its jobs") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  for (int i = 0; i < 6; ++i) add(repo, "q");

  auto first = claim(repo, "q", 3);
  auto second = claim(repo, "q", 2);
  auto third = claim(repo, "q", 1);
  REQUIRE_EQ(first.size(), 3u);
  REQUIRE_EQ(second.size(), 2u);
  REQUIRE_EQ(third.size(), 1u);

  std::set<std::string> tokens;
  for (const auto* batch : {&first, &second, &third}) {
    REQUIRE(batch->front().lock_token);
    const std::string token = *batch->front().lock_token;
    CHECK_MESSAGE(is_uuid(token), "not a UUID: " << token);
    for (const Job& j : *batch) {
      CHECK_EQ(j.lock_token.value_or(""), token);
      CHECK_EQ(repo.get(j.id).lock_token.value_or(""), token);
    }
    tokens.insert(token);
  }
  CHECK_EQ(tokens.size(), 3u);
}

TEST_CASE("claim sets the worker and a lease of the requested length") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  add(repo, "q");
  add(repo, "q");

  auto jobs = claim(repo, "q", 2, Duration::seconds(90), "host-a:123");
  std::string now = repo.now();
  REQUIRE_EQ(jobs.size(), 2u);
  for (const Job& j : jobs) {
    CHECK_EQ(j.locked_by.value_or(""), "host-a:123");
    REQUIRE(is_rfc3339_us(j.locked_at));
    REQUIRE(is_rfc3339_us(j.lock_until));
    // Both come from one database clock reading: the lease is exact up to rounding.
    double lease = seconds_between(j.locked_at, j.lock_until);
    CHECK_MESSAGE(std::abs(lease - 90.0) < 0.01, "lease of " << lease << "s");
    CHECK(epoch_us(j.locked_at) <= epoch_us(now));
    CHECK(epoch_us(j.lock_until) > epoch_us(now));
    CHECK_EQ(j.locked_at, jobs.front().locked_at);
    CHECK_EQ(describe(repo.get(j.id)), describe(j));
  }

  add(repo, "q");
  Job short_lease = claim_one(repo, "q", millis(1500));
  double lease = seconds_between(short_lease.locked_at, short_lease.lock_until);
  CHECK_MESSAGE(std::abs(lease - 1.5) < 0.01, "lease of " << lease << "s");
}

TEST_CASE("claim on an empty or unknown queue returns nothing") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  CHECK(claim(repo, "nothing-here", 10).empty());
  add(repo, "q");
  CHECK(claim(repo, "nothing-here", 10).empty());
  CHECK_EQ(count_rows(fx.db(), "status = 0 AND attempts = 0"), 1);
}

TEST_CASE("claim leaves other queues untouched") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  for (int i = 0; i < 3; ++i) {
    add(repo, "q");
    add(repo, "other", "{}", 1000);
    add(repo, "q.other");
  }

  auto jobs = claim(repo, "q", 100);
  CHECK_EQ(jobs.size(), 3u);
  for (const Job& j : jobs) CHECK_EQ(j.queue, "q");
  CHECK_EQ(count_rows(fx.db(), "queue <> 'q' AND status = 0 AND attempts = 0"), 6);
  CHECK_EQ(count_rows(fx.db(), "queue <> 'q' AND lock_token IS NULL"), 6);
}

TEST_CASE("a paused queue hands out nothing") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job j = add(repo, "q");
  add(repo, "open");
  pause_queue(fx.db(), "q");

  CHECK(claim(repo, "q", 10).empty());
  CHECK_EQ(describe(repo.get(j.id)), describe(j));
  CHECK_EQ(claim(repo, "open", 10).size(), 1u);

  auto st = repo.stats({"q"});
  REQUIRE_EQ(st.size(), 1u);
  CHECK(st[0].paused);
  CHECK_EQ(st[0].ready, 1);

  exec(fx.db(), "UPDATE queuectl_queues SET paused_at = NULL WHERE queue = 'q'");
  CHECK_EQ(ids_of(claim(repo, "q", 10)), std::vector<std::int64_t>{j.id});
}

}  // namespace queuectl::testing::contract

namespace queuectl::testing::contract {

// What claim returns is the row as stored, field for field: on MySQL/MariaDB the claim
// builds its jobs from the pick and the time it wrote, without reading them again.
TEST_CASE("claim returns each job exactly as the database now holds it") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  NewJob grouped = new_job("q", R"({"n":1,"s":"é\u0001"})", 3);
  grouped.group_key = "g";
  grouped.dedupe_key = "d-1";
  add(repo, grouped);
  add(repo, "q");
  add(repo, new_job("q", "[1,2,3]", -2));
  const auto jobs =
      claim(repo, "q", 10, Duration(std::chrono::milliseconds(90061001)));  // 1d 1h 1m 1.001s
  REQUIRE_EQ(jobs.size(), 3u);
  for (const Job& claimed : jobs) {
    const Job stored = repo.get(claimed.id);
    INFO("job " << claimed.id);
    CHECK_EQ(claimed.status, stored.status);
    CHECK_EQ(claimed.attempts, stored.attempts);
    CHECK_EQ(claimed.priority, stored.priority);
    CHECK_EQ(claimed.payload, stored.payload);
    CHECK_EQ(claimed.queue, stored.queue);
    CHECK_EQ(claimed.run_at, stored.run_at);
    CHECK_EQ(claimed.locked_by, stored.locked_by);
    CHECK_EQ(claimed.lock_token, stored.lock_token);
    CHECK_EQ(claimed.locked_at, stored.locked_at);
    CHECK_EQ(claimed.lock_until, stored.lock_until);
    CHECK_EQ(claimed.updated_at, stored.updated_at);
    CHECK_EQ(claimed.created_at, stored.created_at);
    CHECK_EQ(claimed.dedupe_key, stored.dedupe_key);
    CHECK_EQ(claimed.group_key, stored.group_key);
    CHECK_EQ(claimed.max_attempts, stored.max_attempts);
    CHECK_EQ(claimed.finished_at, stored.finished_at);
    REQUIRE(stored.locked_at);
    REQUIRE(stored.lock_until);
    const auto at = parse_utc_time_us(*stored.locked_at),
               until = parse_utc_time_us(*stored.lock_until);
    REQUIRE((at && until));
    // SQLite keeps milliseconds; the lease is 90,061.001 s either way.
    CHECK(std::llabs(*until - *at - 90061001000LL) <= 1000);
  }
}

// MySQL/MariaDB migration 8: two indexes are keyed on computed columns so that a claim and
// an ack touch fewer index entries. What the group and top statements find through them
// rests on these values; an application's SELECT * must not see them.
TEST_CASE("MySQL: group_status and finished_status follow status, unseen by SELECT *" *
          doctest::skip(!is_mysql())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  NewJob grouped = new_job("q");
  grouped.group_key = "g";
  const Job g = add(repo, grouped);
  const Job u = add(repo, "q");
  auto computed = [&](const Job& j) {
    return query_text(fx.db(), "SELECT group_status, finished_status FROM job_queue WHERE id = " +
                                   std::to_string(j.id));
  };
  CHECK_EQ(computed(g), "0 | NULL\n");
  CHECK_EQ(computed(u), "NULL | NULL\n");
  const auto jobs = claim(repo, "q", 10);
  REQUIRE_EQ(jobs.size(), 2u);
  CHECK_EQ(computed(g), "1 | NULL\n");
  CHECK_EQ(computed(u), "NULL | NULL\n");
  std::vector<AckItem> acks;
  for (const Job& j : jobs) acks.push_back(AckItem{j.id, j.lock_token.value_or(""), std::nullopt});
  CHECK(repo.ack_many(acks).empty());
  CHECK_EQ(computed(g), "2 | 2\n");
  CHECK_EQ(computed(u), "NULL | 2\n");

  for_each_row(fx.db().session(), "SELECT * FROM job_queue LIMIT 1", [](const soci::row& r) {
    // the 20 of migration 1, has_dependents (012), and the trace and progress columns (013)
    CHECK_EQ(r.size(), 26u);
    for (std::size_t i = 0; i < r.size(); ++i) {
      CHECK_NE(r.get_properties(i).get_name(), "group_status");
      CHECK_NE(r.get_properties(i).get_name(), "finished_status");
    }
  });
}

// A worker claims again and again on one connection: from its second run a claim
// statement is prepared on the server (parsed once) and deallocated with the repository. A one-shot
// command, and any connection through a transaction pooler (whose next server session may never
// have seen it), send it as a one-time statement.
TEST_CASE("PostgreSQL: a repository's repeated claims run one statement prepared on the server" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fx;
  auto prepared = [&] {
    return scalar(fx.db(),
                  "SELECT count(*) FROM pg_prepared_statements"
                  " WHERE statement LIKE '%UPDATE job_queue j%'");
  };
  const long long kept = through_pooler() ? 0 : 1;
  {
    JobRepository repo(fx.db());
    for (int i = 0; i < 5; ++i) add(repo, "q");
    CHECK_EQ(claim(repo, "q", 1).size(), 1u);
    CHECK_EQ(prepared(), 0);
    CHECK_EQ(claim(repo, "q", 1).size(), 1u);
    CHECK_EQ(prepared(), kept);
    // A claim of several jobs runs its own statement (LIMIT bound, not written in): once
    // as a one-time statement, then prepared.
    CHECK_EQ(claim(repo, "q", 2).size(), 2u);
    CHECK_EQ(prepared(), kept);
    CHECK_EQ(claim(repo, "q", 5).size(), 1u);
    CHECK(claim(repo, "q", 5).empty());
    CHECK_EQ(prepared(), 2 * kept);
    CHECK(claim(repo, "q", 1).empty());
    CHECK_EQ(prepared(), 2 * kept);
  }
  CHECK_EQ(prepared(), 0);
  CHECK_EQ(count_rows(fx.db(), "status = 1"), 5);
}

// On SQLite a repository keeps its claim statements compiled from their second run too
// (sqlite3_prepare_v2 of the claim was a third of `work`'s own CPU). SQLite lists a
// connection's statements in sqlite_stmt (Debian's build has it): a kept statement must be
// finished between runs (busy 0, so it holds no read transaction that would stop another
// connection's checkpoint), must survive another connection changing the schema (SQLite
// compiles it again), and goes with the repository.
TEST_CASE(
    "SQLite: a repository's repeated claims keep one compiled statement, finished between runs" *
    doctest::skip(!is_sqlite())) {
  FreshDatabase fx;
  auto kept = [&](const std::string& what) {
    return scalar(fx.db(),
                  "SELECT count(*) FROM sqlite_stmt WHERE sql LIKE '%UPDATE job_queue%'"
                  " AND sql LIKE '%attempts = attempts + 1%'"
                  " AND sql NOT LIKE '%sqlite_stmt%'" +
                      what);  // not this one
  };
  {
    JobRepository repo(fx.db());
    for (int i = 0; i < 6; ++i) add(repo, "q");
    CHECK_EQ(claim(repo, "q", 2).size(), 2u);
    CHECK_EQ(kept(""), 0);
    CHECK_EQ(claim(repo, "q", 2).size(), 2u);
    CHECK_EQ(kept(""), 1);
    CHECK_EQ(kept(" AND busy = 0"), 1);
    // Another connection adds a column and writes a job: the kept statement is compiled
    // again at its next run, and that run sees the new job.
    auto other = fx.connect();
    exec(*other, "ALTER TABLE job_queue ADD COLUMN qc_test_extra INTEGER");
    {
      JobRepository writer(*other);
      add(writer, "q");
    }
    CHECK_EQ(claim(repo, "q", 5).size(), 3u);
    CHECK_EQ(kept(""), 1);
    CHECK_EQ(kept(" AND busy = 0 AND reprep >= 1 AND run >= 2"), 1);
    // Nothing of this connection holds a read transaction: another connection's checkpoint
    // copies the whole log back (the last column, the frames checkpointed, equals the second,
    // the frames in the log, and the first, busy, is 0).
    long long busy = -1, frames = -1, copied = -2;
    other->session() << "PRAGMA wal_checkpoint(TRUNCATE)", soci::into(busy), soci::into(frames),
        soci::into(copied);
    CHECK_EQ(busy, 0);
    CHECK_EQ(frames, copied);
    CHECK(claim(repo, "q", 5).empty());
  }
  CHECK_EQ(kept(""), 0);
  CHECK_EQ(count_rows(fx.db(), "status = 1"), 7);
}

// The server ends the connection under a prepared claim: the next claim fails as a lost
// connection (a worker then connects again, with a new repository), and a repository whose
// statement can no longer be deallocated goes quietly.
TEST_CASE("PostgreSQL: a prepared claim whose connection the server ended" *
          doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fx;
  auto end_connection = [&](Database& db) {
    exec(fx.db(), "SELECT pg_terminate_backend(" +
                      std::to_string(scalar(db, "SELECT pg_backend_pid()")) + ")");
  };
  {
    JobRepository repo(fx.db());
    for (int i = 0; i < 6; ++i) add(repo, "q");
  }
  for (int round = 0; round < 2; ++round) {
    auto victim = fx.connect();
    JobRepository repo(*victim);
    CHECK_EQ(claim(repo, "q", 1).size(), 1u);
    CHECK_EQ(claim(repo, "q", 1).size(), 1u);  // prepared
    end_connection(*victim);
    if (round == 0) CHECK_THROWS_AS(claim(repo, "q", 1), TemporaryError);
    // round 1: destroyed with its statement still prepared
  }
  JobRepository fresh(fx.db());
  CHECK_EQ(claim(fresh, "q", 5).size(), 2u);
  CHECK_EQ(count_rows(fx.db(), "status = 1"), 6);
}

// A job's times come back to the microsecond (SQLite: the millisecond) in queuectl's one
// form, whatever their fraction: PostgreSQL sends them as its own text (trailing zeros dropped,
// none at a whole second), which the client completes; the session's DateStyle is ISO for that.
TEST_CASE("a job's times read back in RFC 3339 with six fractional digits") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const std::vector<std::pair<std::string, std::string>> times = {
      {"2020-01-01 00:00:00.000000", "2020-01-01T00:00:00.000000Z"},
      {"2020-01-01 00:00:01.100000", "2020-01-01T00:00:01.100000Z"},
      {"2020-01-01 00:00:02.123456", "2020-01-01T00:00:02.123456Z"},
      {"2020-01-01 00:00:03.000010", "2020-01-01T00:00:03.000010Z"},
      {"2020-01-01 00:00:04.120000", "2020-01-01T00:00:04.120000Z"}};
  for (const auto& [stored, shown] : times) add(repo, job_at("q", stored));
  const std::vector<Job> jobs = claim(repo, "q", 10);
  REQUIRE_EQ(jobs.size(), times.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    std::string shown = times[i].second;
    if (is_sqlite()) shown.replace(23, 3, "000");  // SQLite keeps milliseconds
    CHECK_EQ(jobs[i].run_at, shown);
    REQUIRE(jobs[i].locked_at.has_value());
    CHECK(parse_utc_time_us(*jobs[i].locked_at).has_value());
    CHECK_EQ(jobs[i].locked_at->size(), 27u);
    CHECK_EQ(jobs[i].created_at.size(), 27u);
    CHECK_FALSE(jobs[i].finished_at.has_value());
  }
  if (is_postgresql() && !through_pooler())
    CHECK_EQ(query_text(fx.db(), "SHOW DateStyle").rfind("ISO", 0), 0u);
}

}  // namespace queuectl::testing::contract
