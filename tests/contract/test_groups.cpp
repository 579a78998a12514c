// Ordered groups (DESIGN.md): jobs of one queue with the same group_key run one at a time,
// in id order. A group is busy while its head (oldest unfinished job) is processing or
// waits out a backoff; a claim takes at most one job of a group; priority orders across
// groups only; a failed head blocks its group only in strict mode.
#include "contract/contract_helpers.hpp"
#include "db/admin_repository.hpp"
#include "db/group_repository.hpp"
#include "db/lease_repository.hpp"

namespace queuectl::testing::contract {
namespace {

NewJob grouped(const std::string& queue, const std::string& key, int priority = 0) {
  NewJob j = new_job(queue, "{}", priority);
  j.group_key = key;
  return j;
}

Job add_grouped(JobRepository& repo, const std::string& queue, const std::string& key,
                int priority = 0) {
  return add(repo, grouped(queue, key, priority));
}

Job fail_job(JobRepository& repo, const Job& job, bool permanent,
             std::optional<Duration> retry_in = std::nullopt) {
  FailRequest r;
  r.id = job.id;
  r.token = *job.lock_token;
  r.error = "boom";
  r.permanent = permanent;
  r.retry_in = retry_in;
  return repo.fail(r);
}

void ack_job(JobRepository& repo, const Job& job) {
  repo.ack({job.id, *job.lock_token, std::nullopt});
}

std::vector<std::int64_t> claimed_ids(JobRepository& repo, const std::string& queue, int limit) {
  auto ids = ids_of(claim(repo, queue, limit));
  std::sort(ids.begin(), ids.end());
  return ids;
}

using Ids = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("groups: one claim takes at most one job of a group, its oldest") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job a1 = add_grouped(repo, "q", "a");
  Job a2 = add_grouped(repo, "q", "a");
  Job b1 = add_grouped(repo, "q", "b");
  Job a3 = add_grouped(repo, "q", "a");
  Job b2 = add_grouped(repo, "q", "b");
  CHECK_EQ(claimed_ids(repo, "q", 10), (Ids{a1.id, b1.id}));
  // Both groups are busy now: nothing more, however large the limit.
  CHECK(claim(repo, "q", 10).empty());
  (void)a2, (void)a3, (void)b2;
}

TEST_CASE("groups: the next job of a group is claimable only once the head is done") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job first = add_grouped(repo, "q", "order-42");
  Job second = add_grouped(repo, "q", "order-42");
  Job head = claim_one(repo, "q");
  REQUIRE_EQ(head.id, first.id);
  CHECK(claim(repo, "q", 5).empty());
  ack_job(repo, head);
  Job next = claim_one(repo, "q");
  CHECK_EQ(next.id, second.id);
  CHECK_EQ(next.group_key, std::optional<std::string>("order-42"));
}

TEST_CASE("groups: the same key in another queue is another group") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job q1 = add_grouped(repo, "q", "k");
  Job other = add_grouped(repo, "other", "k");
  CHECK_EQ(claim_one(repo, "q").id, q1.id);
  CHECK_EQ(claim_one(repo, "other").id, other.id);
}

TEST_CASE("groups: ungrouped jobs keep flowing while every group is busy") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job a1 = add_grouped(repo, "q", "a");
  add_grouped(repo, "q", "a");
  Job plain1 = add(repo, "q");
  add_grouped(repo, "q", "a");
  Job plain2 = add(repo, "q");
  CHECK_EQ(claimed_ids(repo, "q", 2), (Ids{a1.id, plain1.id}));
  CHECK_EQ(claimed_ids(repo, "q", 10), (Ids{plain2.id}));
  CHECK(claim(repo, "q", 10).empty());
}

// MySQL and MariaDB pick a queue without the group checks until a pick meets a grouped job;
// the claim is then made again with them, by that worker from then on. Another worker
// still picks without them, and must not take a follower either.
TEST_CASE("groups: grouped jobs that come to a queue claimed without them keep their order") {
  FreshDatabase fx;
  JobRepository first_worker(fx.db()), second_worker(fx.db());
  Job plain = add(first_worker, "q");
  CHECK_EQ(claim_one(first_worker, "q").id, plain.id);
  Job plain1 = add(first_worker, "q");
  CHECK_EQ(claim_one(second_worker, "q").id, plain1.id);
  Job a1 = add_grouped(first_worker, "q", "a");
  Job a2 = add_grouped(first_worker, "q", "a");
  Job plain2 = add(first_worker, "q");
  Job head = claim_one(first_worker, "q");
  CHECK_EQ(head.id, a1.id);
  // The head is processing: its follower is not the second worker's either.
  CHECK_EQ(claimed_ids(second_worker, "q", 10), (Ids{plain2.id}));
  CHECK(claim(first_worker, "q", 10).empty());
  CHECK(claim(second_worker, "q", 10).empty());
  ack_job(first_worker, head);
  CHECK_EQ(claimed_ids(second_worker, "q", 10), (Ids{a2.id}));
}

TEST_CASE("groups: priority orders across groups and never reorders a group") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job a1 = add_grouped(repo, "q", "a", 0);
  Job a2 = add_grouped(repo, "q", "a", 100);  // urgent, but behind a1 in its group
  Job b1 = add_grouped(repo, "q", "b", 50);
  // b1 outranks a1 across groups; a2's priority does not let it jump a1.
  auto first = claim(repo, "q", 1);
  REQUIRE_EQ(first.size(), 1u);
  CHECK_EQ(first.front().id, b1.id);
  auto second = claim(repo, "q", 1);
  REQUIRE_EQ(second.size(), 1u);
  CHECK_EQ(second.front().id, a1.id);
  CHECK(claim(repo, "q", 5).empty());
  ack_job(repo, second.front());
  CHECK_EQ(claim_one(repo, "q").id, a2.id);
}

TEST_CASE("groups: a head waiting out its retry backoff keeps the group") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job a1 = add_grouped(repo, "q", "a");
  Job a2 = add_grouped(repo, "q", "a");
  Job head = claim_one(repo, "q");
  Job failed = fail_job(repo, head, false, Duration::seconds(3600));
  REQUIRE_EQ(failed.status, Status::ready);
  // Ready but not due: the follower must not overtake it.
  CHECK(claim(repo, "q", 5).empty());
  GroupFilter f;
  f.queue = "q";
  auto groups = GroupRepository(fx.db()).busy_groups(f);
  REQUIRE_EQ(groups.size(), 1u);
  CHECK_EQ(groups.front().id, a1.id);
  CHECK_EQ(groups.front().status, Status::ready);
  CHECK_EQ(groups.front().waiting, 1);
  CHECK_EQ(groups.front().last_error, std::optional<std::string>("boom"));
  // Once due, the head runs again before the follower.
  exec(fx.db(), "UPDATE job_queue SET run_at = created_at WHERE id = " + std::to_string(a1.id));
  CHECK_EQ(claim_one(repo, "q").id, a1.id);
  CHECK(claim(repo, "q", 5).empty());
  (void)a2;
}

TEST_CASE("groups: a head scheduled for later holds its group until it is due") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  NewJob later = grouped("q", "a");
  later.delay = Duration::seconds(3600);
  add(repo, later);
  add_grouped(repo, "q", "a");
  CHECK(claim(repo, "q", 5).empty());
}

TEST_CASE("groups: a released head stays the head") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job a1 = add_grouped(repo, "q", "a");
  Job a2 = add_grouped(repo, "q", "a");
  Job head = claim_one(repo, "q");
  repo.release(head.id, *head.lock_token);
  CHECK_EQ(claimed_ids(repo, "q", 5), (Ids{a1.id}));
  (void)a2;
}

TEST_CASE("groups: a reaped head stays the head, after its backoff") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Job a1 = add_grouped(repo, "q", "a");
  Job a2 = add_grouped(repo, "q", "a");
  claim(repo, "q", 1, millis(1));
  sleep_ms(20);
  ReapOptions o;
  o.queue = "q";
  ReapResult reaped = LeaseRepository(fx.db()).reap(o);
  REQUIRE_EQ(reaped.requeued, Ids{a1.id});
  // The reaper's backoff makes the head wait; the follower still may not run.
  CHECK(claim(repo, "q", 5).empty());
  exec(fx.db(), "UPDATE job_queue SET run_at = created_at WHERE id = " + std::to_string(a1.id));
  CHECK_EQ(claimed_ids(repo, "q", 5), (Ids{a1.id}));
  (void)a2;
}

TEST_CASE("groups: failed and canceled heads do not block outside strict mode") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  Job a1 = add_grouped(repo, "q", "a");
  Job a2 = add_grouped(repo, "q", "a");
  Job b1 = add_grouped(repo, "q", "b");
  Job b2 = add_grouped(repo, "q", "b");
  REQUIRE_EQ(claimed_ids(repo, "q", 5), (Ids{a1.id, b1.id}));
  fail_job(repo, repo.get(a1.id), true);
  CHECK_EQ(claimed_ids(repo, "q", 5), (Ids{a2.id}));
  // A canceled head (canceled while processing) frees its group too.
  REQUIRE_EQ(admin.cancel({b1.id}, Force::yes).changed, Ids{b1.id});
  CHECK_EQ(claimed_ids(repo, "q", 5), (Ids{b2.id}));
}

TEST_CASE("groups: in strict mode a failed head blocks its group until retry, cancel or purge") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  admin.set_strict_groups("q", true);
  CHECK(admin.settings("q").strict_groups);
  CHECK(repo.stats({"q"}).front().strict_groups);

  Job head = add_grouped(repo, "q", "a");
  Job next = add_grouped(repo, "q", "a");
  Job other = add_grouped(repo, "q", "b");
  Job plain = add(repo, "q");
  REQUIRE_EQ(claimed_ids(repo, "q", 1), (Ids{head.id}));
  fail_job(repo, repo.get(head.id), true);
  // Group a is blocked; group b and ungrouped jobs are not.
  CHECK_EQ(claimed_ids(repo, "q", 5), (Ids{other.id, plain.id}));
  CHECK(claim(repo, "q", 5).empty());

  GroupFilter f;
  f.queue = "q";
  f.blocked_only = true;
  auto blocked = GroupRepository(fx.db()).busy_groups(f);
  REQUIRE_EQ(blocked.size(), 1u);
  CHECK_EQ(blocked.front().group_key, "a");
  CHECK_EQ(blocked.front().id, head.id);
  CHECK_EQ(blocked.front().status, Status::failed);
  CHECK_EQ(blocked.front().waiting, 1);

  SUBCASE("retry: the head runs again, then the rest") {
    REQUIRE_EQ(admin.retry({head.id}).changed, Ids{head.id});
    Job again = claim_one(repo, "q");
    CHECK_EQ(again.id, head.id);
    CHECK(claim(repo, "q", 5).empty());
    ack_job(repo, again);
    CHECK_EQ(claim_one(repo, "q").id, next.id);
  }
  SUBCASE("cancel: the group gives up on the head and moves on") {
    REQUIRE_EQ(admin.cancel({head.id}, Force::no).changed, Ids{head.id});
    CHECK_EQ(repo.get(head.id).status, Status::canceled);
    CHECK_EQ(claim_one(repo, "q").id, next.id);
  }
  SUBCASE("purge: the deleted head blocks nothing") {
    FinishedFilter pf;
    pf.queue = "q";
    pf.statuses = {Status::failed};
    pf.older_than = Duration();
    sleep_ms(5);
    REQUIRE_EQ(admin.purge(pf, DryRun::no), 1);
    CHECK_EQ(claim_one(repo, "q").id, next.id);
  }
  SUBCASE("leaving strict mode unblocks the group") {
    admin.set_strict_groups("q", false);
    CHECK_FALSE(admin.settings("q").strict_groups);
    CHECK_EQ(claim_one(repo, "q").id, next.id);
  }
}

TEST_CASE("groups: strict mode is per queue and keeps the pause flag") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  admin.pause("q");
  admin.set_strict_groups("q", true);
  QueueSettings s = admin.settings("q");
  CHECK(s.paused);
  CHECK(s.strict_groups);
  CHECK_FALSE(admin.settings("other").strict_groups);
  CHECK(admin.resume("q"));
  CHECK(admin.settings("q").strict_groups);
  // A failed head in a queue that is not strict blocks nothing.
  Job head = add_grouped(repo, "other", "a");
  Job next = add_grouped(repo, "other", "a");
  fail_job(repo, claim_one(repo, "other"), true);
  CHECK_EQ(claim_one(repo, "other").id, next.id);
  (void)head;
}

TEST_CASE("groups: a job retried behind a running one waits for it") {
  // A failed job retried after its group moved on is older than the job now running:
  // it becomes the head, but may not run beside the running one.
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  Job a1 = add_grouped(repo, "q", "a");
  Job a2 = add_grouped(repo, "q", "a");
  fail_job(repo, claim_one(repo, "q"), true);
  Job running = claim_one(repo, "q");
  REQUIRE_EQ(running.id, a2.id);
  REQUIRE_EQ(admin.retry({a1.id}).changed, Ids{a1.id});
  CHECK(claim(repo, "q", 5).empty());
  ack_job(repo, running);
  CHECK_EQ(claim_one(repo, "q").id, a1.id);
}

TEST_CASE("groups: busy_groups lists processing, waiting and blocked heads, not idle ones") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  AdminRepository admin(fx.db());
  admin.set_strict_groups("q", true);
  Job p1 = add_grouped(repo, "q", "processing");
  add_grouped(repo, "q", "processing");
  add_grouped(repo, "q", "processing");
  Job w1 = add_grouped(repo, "q", "waiting");
  Job f1 = add_grouped(repo, "q", "blocked");
  add_grouped(repo, "q", "blocked");
  Job idle = add_grouped(repo, "q", "idle");
  REQUIRE_EQ(claimed_ids(repo, "q", 3), (Ids{p1.id, w1.id, f1.id}));
  fail_job(repo, repo.get(w1.id), false, Duration::seconds(3600));
  fail_job(repo, repo.get(f1.id), true);

  GroupFilter f;
  f.queue = "q";
  auto groups = GroupRepository(fx.db()).busy_groups(f);
  REQUIRE_EQ(groups.size(), 3u);
  CHECK_EQ(groups[0].group_key, "processing");
  CHECK_EQ(groups[0].status, Status::processing);
  CHECK_EQ(groups[0].waiting, 2);
  CHECK_EQ(groups[0].attempts, 1);
  CHECK_EQ(groups[1].group_key, "waiting");
  CHECK_EQ(groups[1].status, Status::ready);
  CHECK_EQ(groups[1].waiting, 0);
  CHECK_EQ(groups[2].group_key, "blocked");
  CHECK_EQ(groups[2].status, Status::failed);
  CHECK(groups[2].age_seconds >= 0);
  f.limit = 1;
  CHECK_EQ(GroupRepository(fx.db()).busy_groups(f).size(), 1u);
  // The idle group's head is claimable: not listed, and claimed next.
  CHECK_EQ(claim_one(repo, "q").id, idle.id);
}

TEST_CASE("groups: enqueue_many keeps each line's group key") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  std::vector<NewJob> jobs = {grouped("q", "a"), grouped("q", "a"), new_job("q")};
  REQUIRE_EQ(repo.enqueue_many(jobs).enqueued, 3);
  auto first = claim(repo, "q", 10);
  CHECK_EQ(first.size(), 2u);
  CHECK_EQ(count_rows(fx.db(), "group_key = 'a' AND status = 0"), 1);
}

}  // namespace queuectl::testing::contract
