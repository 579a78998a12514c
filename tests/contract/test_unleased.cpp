// Processing rows without a lease (lock_until NULL, as other code may leave them): the
// lease listing shows them with no time left, stats counts them apart, and the unleased
// reaper returns only those old enough, re-checking status, lease and age in the UPDATE
// itself, so a row given a lease or finished after the pick is never touched.
#include "contract/contract_helpers.hpp"
#include "db/lease_repository.hpp"
#include "db/row_reader.hpp"

namespace queuectl::testing::contract {

namespace {

// What other code does: sets the job processing with no lease; with a start, `hours` ago.
void set_unleased(Database& db, std::int64_t id, std::optional<int> started_hours_ago) {
  long long v = id;
  std::string start = "NULL";
  if (started_hours_ago) {
    const std::string h = std::to_string(*started_hours_ago);
    start = is_postgresql() ? "now() - interval '" + h + " hours'"
            : is_mysql()    ? "NOW(6) - INTERVAL " + h + " HOUR"
                            : "strftime('%Y-%m-%d %H:%M:%f', 'now', '-" + h + " hours')";
  }
  db.session() << "UPDATE job_queue SET status = 1, lock_until = NULL, lock_token = NULL, "
                  "locked_at = " +
                      start + " WHERE id = :id",
      soci::use(v, "id");
}

Status status_of(JobRepository& repo, std::int64_t id) {
  return repo.get(id).status;
}

}  // namespace

TEST_CASE("leases lists rows without a lease first, with no time left; stats counts them") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  LeaseRepository leases(fx.db());
  const Job leased = add(repo, "q");
  const Job bare = add(repo, "q");
  REQUIRE(claim_one(repo, "q", Duration::seconds(600)).id == leased.id);
  set_unleased(fx.db(), bare.id, std::nullopt);

  LeaseFilter all;
  auto got = leases.leases(all);
  REQUIRE(got.size() == 2);
  CHECK(got[0].job.id == bare.id);
  CHECK_FALSE(got[0].seconds_left.has_value());
  CHECK_FALSE(got[0].job.lock_until.has_value());
  CHECK(got[1].job.id == leased.id);
  REQUIRE(got[1].seconds_left.has_value());
  CHECK(*got[1].seconds_left > 0);

  LeaseFilter only;
  only.kind = LeaseKind::unleased;
  auto unleased = leases.leases(only);
  REQUIRE(unleased.size() == 1);
  CHECK(unleased[0].job.id == bare.id);
  LeaseFilter expired;
  expired.kind = LeaseKind::expired;
  CHECK(leases.leases(expired).empty());

  auto stats = repo.stats({"q"});
  REQUIRE(stats.size() == 1);
  CHECK(stats[0].processing == 2);
  CHECK(stats[0].unleased == 1);
  CHECK(stats[0].expired == 0);
}

TEST_CASE("the unleased reaper returns old rows, by locked_at or else updated_at") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  LeaseRepository leases(fx.db());
  const Job old_start = add(repo, "q");
  const Job young = add(repo, "q");
  const Job no_start = add(repo, "q");
  set_unleased(fx.db(), old_start.id, 3);
  set_unleased(fx.db(), young.id, 0);
  set_unleased(fx.db(), no_start.id, std::nullopt);  // judged by updated_at: just now

  ReapOptions o;
  o.unleased_older_than = Duration::seconds(3600);
  ReapResult r = leases.reap(o);
  CHECK(r.requeued == std::vector<std::int64_t>{old_start.id});
  CHECK(r.failed.empty());
  CHECK(status_of(repo, old_start.id) == Status::ready);
  CHECK(status_of(repo, young.id) == Status::processing);
  CHECK(status_of(repo, no_start.id) == Status::processing);
  const Job back = repo.get(old_start.id);
  REQUIRE(back.last_error.has_value());
  CHECK(back.last_error->find("no lease") != std::string::npos);
  CHECK(back.last_error->find("an unknown worker") != std::string::npos);

  // The expired-lease reaper never takes them.
  ReapOptions expired;
  CHECK(leases.reap(expired).requeued.empty());
  CHECK(status_of(repo, young.id) == Status::processing);
}

TEST_CASE("the unleased mark re-checks status, lease and age in its own WHERE") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  const Job leased_since = add(repo, "q");
  const Job acked_since = add(repo, "q");
  const Job still = add(repo, "q");
  for (const Job& j : {leased_since, acked_since, still}) set_unleased(fx.db(), j.id, 3);
  // After a pick saw all three: one got a lease, one was finished.
  {
    long long a = leased_since.id, b = acked_since.id;
    fx.db().session() << "UPDATE job_queue SET lock_until = created_at WHERE id = :id",
        soci::use(a, "id");
    fx.db().session() << "UPDATE job_queue SET status = 2 WHERE id = :id", soci::use(b, "id");
  }
  std::vector<long long> ids = {leased_since.id, acked_since.id, still.id};
  long long base_ms = 1000, cap_ms = 1000, older_ms = 3600 * 1000;
  fx.db().transaction([&] {
    soci::statement mark(fx.db().session());
    bind_ids(mark, ids);
    mark.exchange(soci::use(base_ms, "base_ms"));
    mark.exchange(soci::use(cap_ms, "cap_ms"));
    mark.exchange(soci::use(older_ms, "older_ms"));
    prepare_once(mark, expand_ids(fx.db().sql().leases.reap_unleased_mark, ids.size()));
    mark.execute(true);
  });
  CHECK(status_of(repo, leased_since.id) == Status::processing);
  CHECK(status_of(repo, acked_since.id) == Status::done);
  CHECK(status_of(repo, still.id) == Status::ready);

  // Younger than the cutoff: untouched too.
  const Job fresh = add(repo, "q");
  set_unleased(fx.db(), fresh.id, 0);
  std::vector<long long> one = {fresh.id};
  fx.db().transaction([&] {
    soci::statement mark(fx.db().session());
    bind_ids(mark, one);
    mark.exchange(soci::use(base_ms, "base_ms"));
    mark.exchange(soci::use(cap_ms, "cap_ms"));
    mark.exchange(soci::use(older_ms, "older_ms"));
    prepare_once(mark, expand_ids(fx.db().sql().leases.reap_unleased_mark, one.size()));
    mark.execute(true);
  });
  CHECK(status_of(repo, fresh.id) == Status::processing);
}

}  // namespace queuectl::testing::contract
