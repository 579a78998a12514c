// Inspecting: list with filters and keyset paging, and per-queue stats.
#include "contract/contract_helpers.hpp"

namespace queuectl::testing::contract {
namespace {

ListFilter filter(std::optional<std::string> queue, std::vector<Status> statuses = {},
                  std::int64_t after = 0, int limit = 100) {
  ListFilter f;
  f.queue = std::move(queue);
  f.statuses = std::move(statuses);
  f.after = after;
  f.limit = limit;
  return f;
}

void set_status(Database& db, std::int64_t id, Status status) {
  exec(db, "UPDATE job_queue SET status = " + std::to_string(static_cast<int>(status)) +
               " WHERE id = " + std::to_string(id));
}

}  // namespace

TEST_CASE("list filters by status and queue, in id order") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  Job a = add(repo, "q1");
  Job b = add(repo, "q1", "{}", 10);
  Job c = add(repo, "q1", "{}", 5);
  Job d = add(repo, "q2");
  Job e = add(repo, "q2", "{}", 3);
  NewJob later = new_job("q2");
  later.delay = Duration::seconds(3600);
  Job f = add(repo, later);

  Job claimed_b = claim_one(repo, "q1");
  REQUIRE_EQ(claimed_b.id, b.id);
  Job claimed_c = claim_one(repo, "q1");
  REQUIRE_EQ(claimed_c.id, c.id);
  repo.ack({c.id, *claimed_c.lock_token, std::nullopt});
  Job claimed_e = claim_one(repo, "q2");
  REQUIRE_EQ(claimed_e.id, e.id);
  FailRequest fail;
  fail.id = e.id;
  fail.token = *claimed_e.lock_token;
  fail.error = "no";
  fail.permanent = true;
  repo.fail(fail);

  using V = std::vector<std::int64_t>;
  CHECK_EQ(ids_of(repo.list(filter(std::nullopt))), V{a.id, b.id, c.id, d.id, e.id, f.id});
  CHECK_EQ(ids_of(repo.list(filter(std::nullopt, {Status::ready}))), V{a.id, d.id, f.id});
  CHECK_EQ(ids_of(repo.list(filter(std::nullopt, {Status::processing}))), V{b.id});
  CHECK_EQ(ids_of(repo.list(filter(std::nullopt, {Status::failed, Status::done}))), V{c.id, e.id});
  CHECK(repo.list(filter(std::nullopt, {Status::canceled})).empty());
  CHECK_EQ(ids_of(repo.list(filter("q1"))), V{a.id, b.id, c.id});
  CHECK_EQ(ids_of(repo.list(filter("q2", {Status::ready}))), V{d.id, f.id});
  CHECK_EQ(ids_of(repo.list(filter("q2", {Status::processing, Status::done}))), V{});
  CHECK(repo.list(filter("q")).empty());
  CHECK(repo.list(filter("q1%")).empty());

  // list returns whole jobs, as get does.
  for (const Job& j : repo.list(filter(std::nullopt)))
    CHECK_EQ(describe(j), describe(repo.get(j.id)));
  CHECK_EQ(repo.list(filter(std::nullopt, {Status::processing})).front().lock_token,
           claimed_b.lock_token);
}

TEST_CASE("list pages with after and limit, stably by id") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  std::vector<NewJob> batch;
  for (int i = 0; i < 23; ++i) batch.push_back(new_job(i % 3 ? "pages" : "noise", "{}", 23 - i));
  REQUIRE_EQ(repo.enqueue_many(batch).enqueued, 23);
  const auto everything = ids_of(repo.list(filter("pages")));
  REQUIRE_EQ(everything.size(), 15u);
  CHECK(std::is_sorted(everything.begin(), everything.end()));

  std::vector<std::int64_t> paged;
  std::int64_t after = 0;
  int pages = 0;
  for (;;) {
    auto page = repo.list(filter("pages", {}, after, 4));
    CHECK(page.size() <= 4u);
    if (page.empty()) break;
    for (const Job& j : page) paged.push_back(j.id);
    after = page.back().id;
    REQUIRE(++pages < 10);
  }
  CHECK_EQ(pages, 4);
  CHECK_EQ(paged, everything);

  CHECK_EQ(ids_of(repo.list(filter("pages", {}, everything[2], 3))),
           std::vector<std::int64_t>(everything.begin() + 3, everything.begin() + 6));
  CHECK(repo.list(filter("pages", {}, everything.back(), 100)).empty());
  CHECK_EQ(repo.list(filter(std::nullopt, {}, 0, 1)).size(), 1u);
}

TEST_CASE("list filters by group key and error text, and by an id range") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) {
    NewJob job = new_job("q");
    if (i % 2 == 0) job.group_key = i < 4 ? "acct-1" : "acct-2";
    jobs.push_back(add(repo, job));
  }
  add(repo, "other");
  // Jobs 1, 2, 3 and 5 fail with an error; 1 with another text, 3 in another case.
  const char* errors[] = {nullptr, "Timed out after 30s", "timed out after 30s", "TIMED OUT",
                          nullptr, "connect: Timed out"};
  for (int i = 0; i < 6; ++i) {
    Job claimed = claim_one(repo, "q");
    REQUIRE_EQ(claimed.id, jobs[i].id);
    if (!errors[i]) {
      repo.ack({claimed.id, *claimed.lock_token, std::nullopt});
      continue;
    }
    FailRequest fail;
    fail.id = claimed.id;
    fail.token = *claimed.lock_token;
    fail.error = errors[i];
    fail.permanent = true;
    repo.fail(fail);
  }
  using V = std::vector<std::int64_t>;
  auto ids = [&](std::vector<Status> statuses, std::optional<std::string> group,
                 std::optional<std::string> error, bool newest = false) {
    ListFilter f = filter("q", std::move(statuses));
    f.group_key = std::move(group);
    f.error_text = std::move(error);
    f.newest_first = newest;
    return ids_of(repo.list(f));
  };
  const std::int64_t j0 = jobs[0].id, j1 = jobs[1].id, j2 = jobs[2].id, j3 = jobs[3].id,
                     j4 = jobs[4].id, j5 = jobs[5].id, j6 = jobs[6].id;
  // Case-sensitive text, on each backend (MySQL's table is utf8mb4_bin); one status takes
  // the status' own statement, two the general listing: both filter alike.
  for (const auto& statuses : {std::vector<Status>{Status::failed},
                               std::vector<Status>{Status::failed, Status::canceled}}) {
    CHECK_EQ(ids(statuses, std::nullopt, std::string("Timed out")), V{j1, j5});
    CHECK_EQ(ids(statuses, std::nullopt, std::string("Timed out"), true), V{j5, j1});
    CHECK_EQ(ids(statuses, std::nullopt, std::string("out")), V{j1, j2, j5});
    CHECK_EQ(ids(statuses, std::string("acct-1"), std::nullopt), V{j2});
    CHECK_EQ(ids(statuses, std::string("acct-1"), std::string("Timed")), V{});
    CHECK_EQ(ids(statuses, std::string("acct-1"), std::string("timed")), V{j2});
    CHECK_EQ(ids(statuses, std::nullopt, std::string("%")), V{});  // no pattern, just text
  }
  CHECK_EQ(ids({}, std::string("acct-1"), std::nullopt), V{j0, j2});
  CHECK_EQ(ids({}, std::string("acct-2"), std::nullopt), V{j4, j6});
  CHECK_EQ(ids({Status::ready}, std::string("acct-2"), std::nullopt), V{j6});
  CHECK_EQ(ids({}, std::nullopt, std::string("30s")), V{j1, j2});
  // An id range: above `after`, below `before`, oldest or newest first.
  ListFilter range = filter("q");
  range.after = j1;
  range.before = j5;
  CHECK_EQ(ids_of(repo.list(range)), V{j2, j3, j4});
  range.newest_first = true;
  CHECK_EQ(ids_of(repo.list(range)), V{j4, j3, j2});
  range.statuses = {Status::failed};
  CHECK_EQ(ids_of(repo.list(range)), V{j3, j2});
}

TEST_CASE("stats counts every state per queue") {
  FreshDatabase fx;
  JobRepository repo(fx.db());

  Job expiring = add(repo, "q", "{}", 6);
  Job live = add(repo, "q", "{}", 5);
  Job done = add(repo, "q", "{}", 4);
  Job failed = add(repo, "q", "{}", 3);
  Job canceled = add(repo, "q", "{}", 2);
  add(repo, "q", "{}", 1);
  add(repo, "q", "{}", 1);
  NewJob later = new_job("q", "{}", 100);
  later.delay = Duration::seconds(3600);
  add(repo, later);
  add(repo, "other");

  REQUIRE_EQ(claim_one(repo, "q", millis(1)).id, expiring.id);
  REQUIRE_EQ(claim_one(repo, "q", Duration::seconds(3600)).id, live.id);
  Job c = claim_one(repo, "q");
  REQUIRE_EQ(c.id, done.id);
  repo.ack({c.id, *c.lock_token, std::nullopt});
  c = claim_one(repo, "q");
  REQUIRE_EQ(c.id, failed.id);
  FailRequest fail;
  fail.id = c.id;
  fail.token = *c.lock_token;
  fail.error = "gave up";
  fail.permanent = true;
  repo.fail(fail);
  set_status(fx.db(), canceled.id, Status::canceled);
  sleep_ms(50);  // the 1 ms lease is over

  auto all = repo.stats({});
  REQUIRE_EQ(all.size(), 2u);
  CHECK_EQ(all[0].queue, "other");
  CHECK_EQ(all[0].ready, 1);
  CHECK_EQ(all[0].processing, 0);
  CHECK_EQ(all[1].queue, "q");

  const QueueStats& q = all[1];
  CHECK_EQ(q.ready, 2);
  CHECK_EQ(q.scheduled, 1);
  CHECK_EQ(q.processing, 2);
  CHECK_EQ(q.expired, 1);
  CHECK_EQ(q.done, 1);
  CHECK_EQ(q.failed, 1);
  CHECK_EQ(q.canceled, 1);
  CHECK_FALSE(q.paused);
  REQUIRE(q.oldest_ready_age_seconds);
  CHECK(*q.oldest_ready_age_seconds >= 0.0);
  CHECK(*q.oldest_ready_age_seconds < 3600.0);

  auto some = repo.stats({"q", "nothing"});
  REQUIRE_EQ(some.size(), 2u);
  CHECK_EQ(some[0].queue, "q");
  CHECK_EQ(some[0].processing, 2);
  CHECK_EQ(some[1].queue, "nothing");
  CHECK_EQ(some[1].ready + some[1].scheduled + some[1].processing + some[1].done + some[1].failed +
               some[1].canceled,
           0);
  CHECK_FALSE(some[1].oldest_ready_age_seconds);
}

TEST_CASE("stats of an empty database and of a paused queue") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  CHECK(repo.stats({}).empty());
  pause_queue(fx.db(), "idle");
  auto st = repo.stats({});
  REQUIRE_EQ(st.size(), 1u);
  CHECK_EQ(st[0].queue, "idle");
  CHECK(st[0].paused);
  CHECK_EQ(st[0].ready, 0);
}

}  // namespace queuectl::testing::contract
