// Enqueue through JobRepository: what a new job looks like, dedupe keys, and bulk inserts
// that land all or nothing.
#include "contract/contract_helpers.hpp"

namespace queuectl::testing::contract {

TEST_CASE("enqueue returns the new job, ready, with RFC 3339 UTC times") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  NewJob in = new_job("emails", R"({"to":"a@example.com","n":1})", 7);
  in.max_attempts = 3;
  in.group_key = "g1";
  auto r = repo.enqueue(in);
  const Job& j = r.job;

  CHECK_FALSE(r.duplicate);
  CHECK(j.id > 0);
  CHECK_EQ(j.queue, "emails");
  CHECK_EQ(j.status, Status::ready);
  CHECK_EQ(j.priority, 7);
  CHECK_EQ(j.attempts, 0);
  CHECK_EQ(j.max_attempts, 3);
  CHECK_MESSAGE(same_json(j.payload, in.payload), "payload came back as " << j.payload);
  CHECK_FALSE(j.result);
  CHECK_FALSE(j.last_error);
  CHECK_FALSE(j.locked_by);
  CHECK_FALSE(j.lock_token);
  CHECK_FALSE(j.locked_at);
  CHECK_FALSE(j.lock_until);
  CHECK_FALSE(j.dedupe_key);
  CHECK_EQ(j.group_key.value_or(""), "g1");
  CHECK_FALSE(j.finished_at);
  for (const std::string& t : {j.run_at, j.created_at, j.updated_at})
    CHECK_MESSAGE(is_rfc3339_us(t), "not RFC 3339 UTC with microseconds: " << t);
  // No delay: due at once, on the database clock.
  CHECK(epoch_us(j.run_at) <= epoch_us(repo.now()));
  CHECK(std::abs(seconds_between(j.created_at, j.run_at)) < 1.0);

  CHECK_EQ(count_rows(fx.db()), 1);
  CHECK_EQ(describe(repo.get(j.id)), describe(j));
  CHECK_FALSE(repo.find(j.id + 1000));
  CHECK_THROWS_AS(repo.get(j.id + 1000), NotFound);
}

TEST_CASE("enqueue with a delay or an absolute run_at schedules the job") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  NewJob delayed = new_job("q");
  delayed.delay = Duration::seconds(3600);
  Job d = add(repo, delayed);
  CHECK_EQ(d.status, Status::ready);
  double ahead = seconds_between(d.created_at, d.run_at);
  CHECK_MESSAGE(ahead > 3599.0, "run_at is " << ahead << "s after created_at");
  CHECK_MESSAGE(ahead < 3601.0, "run_at is " << ahead << "s after created_at");

  Job at = add(repo, job_at("q", "2031-05-06 07:08:09.123456"));
  CHECK_EQ(at.run_at.substr(0, 23), "2031-05-06T07:08:09.123");

  NewJob both = job_at("q", "2031-05-06 07:08:09.000000");
  both.delay = Duration::seconds(60);
  CHECK_EQ(add(repo, both).run_at.substr(0, 19), "2031-05-06T07:09:09");
}

TEST_CASE("a taken dedupe key returns the existing job and writes nothing") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  NewJob first = new_job("q", R"({"v":1})");
  first.dedupe_key = "order-42";
  auto a = repo.enqueue(first);
  CHECK_FALSE(a.duplicate);
  CHECK_EQ(a.job.dedupe_key.value_or(""), "order-42");

  NewJob second = new_job("q", R"({"v":2})", 9);
  second.dedupe_key = "order-42";
  auto b = repo.enqueue(second);
  CHECK(b.duplicate);
  CHECK_EQ(b.job.id, a.job.id);
  CHECK_MESSAGE(same_json(b.job.payload, R"({"v":1})"),
                "the existing job's payload, got " << b.job.payload);
  CHECK_EQ(b.job.priority, 0);
  CHECK_EQ(count_rows(fx.db()), 1);

  SUBCASE("the key stays taken after the job finished") {
    Job c = claim_one(repo, "q");
    repo.ack({c.id, *c.lock_token, std::nullopt});
    auto again = repo.enqueue(second);
    CHECK(again.duplicate);
    CHECK_EQ(again.job.id, a.job.id);
    CHECK_EQ(again.job.status, Status::done);
    CHECK_EQ(count_rows(fx.db()), 1);
  }
  SUBCASE("the same key in another queue is a new job") {
    NewJob other = second;
    other.queue = "other";
    auto c = repo.enqueue(other);
    CHECK_FALSE(c.duplicate);
    CHECK_NE(c.job.id, a.job.id);
    CHECK_EQ(c.job.queue, "other");
    CHECK_EQ(count_rows(fx.db()), 2);
  }
  SUBCASE("jobs without a key never collide") {
    add(repo, "q");
    add(repo, "q");
    CHECK_EQ(count_rows(fx.db()), 3);
  }
}

TEST_CASE("enqueue_many inserts every job and counts duplicates") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  NewJob existing = new_job("q");
  existing.dedupe_key = "a";
  add(repo, existing);

  std::vector<NewJob> batch;
  for (const char* key : {"a", "b", "b", "c"}) {
    NewJob j = new_job("q", R"({"k":")" + std::string(key) + "\"}");
    j.dedupe_key = key;
    batch.push_back(j);
  }
  NewJob elsewhere = new_job("q2");
  elsewhere.dedupe_key = "a";
  batch.push_back(elsewhere);
  batch.push_back(new_job("q", "[1,2,3]", 4));
  batch.push_back(new_job("q", "\"text\""));

  auto r = repo.enqueue_many(batch);
  CHECK_EQ(r.enqueued, 5);    // b, c, q2/a and the two without a key
  CHECK_EQ(r.duplicates, 2);  // a (already there) and the second b
  CHECK_EQ(count_rows(fx.db()), 6);
  CHECK_EQ(count_rows(fx.db(), "queue = 'q' AND dedupe_key = 'b'"), 1);
  CHECK_EQ(count_rows(fx.db(), "queue = 'q2'"), 1);
  CHECK_EQ(count_rows(fx.db(), "priority = 4"), 1);
  CHECK_EQ(count_rows(fx.db(), "status = 0 AND attempts = 0"), 6);

  ListFilter all;
  all.limit = 100;
  for (const Job& j : repo.list(all)) {
    CHECK(is_rfc3339_us(j.run_at));
    CHECK(is_rfc3339_us(j.created_at));
  }
}

TEST_CASE("enqueue_many of 1200 jobs crosses chunks and lands them all") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  std::vector<NewJob> batch;
  for (int i = 0; i < 1200; ++i) {
    NewJob j = new_job("bulk", R"({"i":)" + std::to_string(i) + "}", i % 7);
    if (i % 100 == 0) j.delay = Duration::seconds(600);
    batch.push_back(j);
  }
  auto r = repo.enqueue_many(batch);
  CHECK_EQ(r.enqueued, 1200);
  CHECK_EQ(r.duplicates, 0);
  CHECK_EQ(count_rows(fx.db()), 1200);
  CHECK_EQ(count_rows(fx.db(), "priority = 6"), 171);
  CHECK_EQ(scalar(fx.db(), "SELECT COUNT(DISTINCT id) FROM job_queue"), 1200);

  auto st = repo.stats({"bulk"});
  REQUIRE_EQ(st.size(), 1u);
  CHECK_EQ(st[0].ready, 1188);
  CHECK_EQ(st[0].scheduled, 12);
}

TEST_CASE("enqueue_many is all or nothing when the database rejects a row") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  add(repo, "before");

  // 1000 rows: the first 500-row chunk is written before the bad row in the second chunk
  // fails, so only the transaction can take it back.
  std::vector<NewJob> batch;
  for (int i = 0; i < 1000; ++i)
    batch.push_back(new_job("bulk", R"({"i":)" + std::to_string(i) + "}"));
  batch[700].payload = "{not json";

  CHECK_THROWS_AS(repo.enqueue_many(batch), Error);
  CHECK_EQ(count_rows(fx.db(), "queue = 'bulk'"), 0);
  CHECK_EQ(count_rows(fx.db()), 1);

  // The connection is still usable, and a good batch goes through.
  const long long before = count_rows(fx.db());
  batch[700].payload = "{}";
  CHECK_EQ(repo.enqueue_many(batch).enqueued, 1000);
  CHECK_EQ(count_rows(fx.db()), before + 1000);
}

TEST_CASE("enqueue of a payload the database rejects writes nothing") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  CHECK_THROWS_AS(repo.enqueue(new_job("q", "{not json")), Error);
  CHECK_EQ(count_rows(fx.db()), 0);
  CHECK(add(repo, "q").id > 0);
}

}  // namespace queuectl::testing::contract
