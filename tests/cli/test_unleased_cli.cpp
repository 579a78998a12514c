// Rows without a lease: other code (the first article's claim sets only status) may set a
// job to processing without lock_until. `leases` lists such rows ("no lease"), `stats`
// counts them apart (unleased), and `reap --unleased --older-than DUR` returns the old
// ones; the plain reaper never touches them. Also: an application's own claim respects
// `queuectl pause` with the condition docs/shared-table.md gives. Runs on every backend; the
// application's SQL is hand-written here, never queuectl's statements.
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// An application's claim of one job as the first article writes it (status only), or
// with its worker and start (`with_holder`), but never a lease. Returns the id.
std::int64_t claim_without_lease(Database& app, std::int64_t id, bool with_holder) {
  long long v = id;
  app.transaction([&] {
    long long picked = 0;
    const std::string lock = backend_under_test() == Backend::sqlite ? "" : " FOR UPDATE";
    app.session() << "SELECT id FROM job_queue WHERE id = :id AND status = 0" + lock,
        soci::into(picked), soci::use(v, "id");
    REQUIRE(picked == v);
    if (with_holder)
      app.session() << "UPDATE job_queue SET status = 1, locked_by = 'app-worker', locked_at = " +
                           now_sql() + " WHERE id = :id",
          soci::use(v, "id");
    else
      app.session() << "UPDATE job_queue SET status = 1 WHERE id = :id", soci::use(v, "id");
  });
  return id;
}

// Moves a column of one row two hours back.
void two_hours_ago(FreshDatabase& fixture, std::int64_t id, const std::string& column) {
  long long v = id;
  fixture.db().session() << "UPDATE job_queue SET " + column + " = " + hours_ago_sql(2) +
                                " WHERE id = :id",
      soci::use(v, "id");
}

json by_id(const json& rows, std::int64_t id) {
  for (const json& r : rows)
    if (r["id"] == id) return r;
  FAIL("no row " << id << " in " << rows.dump());
  return {};
}

}  // namespace

TEST_CASE("cli: leases and stats show processing rows without a lease") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto app = fixture.connect();
  const std::int64_t leased = id_of(enqueue(url, "q"));
  const std::int64_t bare = id_of(enqueue(url, "q"));
  const std::int64_t held = id_of(enqueue(url, "q"));
  enqueue(url, "q");  // stays ready
  REQUIRE(id_of(claim_one(url, "q", {"--lease", "5m", "--worker", "w1"})) == leased);
  claim_without_lease(*app, bare, false);
  claim_without_lease(*app, held, true);

  // leases: all three, the two without a lease first; their expiry is none.
  json all = ok_json(url, {"leases"});
  INFO(all.dump());
  REQUIRE(all.size() == 3);
  CHECK(ids_in(all) == std::vector<std::int64_t>{bare, held, leased});
  for (std::int64_t id : {bare, held}) {
    json l = by_id(all, id);
    CHECK(l["status"] == "processing");
    CHECK(l["lock_until"].is_null());
    CHECK(l["seconds_left"].is_null());
    CHECK(l["expired"] == false);
    CHECK(l["unleased"] == true);
  }
  CHECK(by_id(all, held)["locked_by"] == "app-worker");
  CHECK(by_id(all, leased)["unleased"] == false);
  CHECK(by_id(all, leased)["seconds_left"].get<double>() > 0);

  std::string table = ok(url, {"leases"}).out;
  INFO(table);
  CHECK(lines_with(table, "no lease").size() == 2);
  CHECK(contains(table, "UNLEASED"));

  // Filters: --unleased only those; --expired and --expiring-within only leases;
  // --worker names a worker, which the bare row has not.
  CHECK(ids_in(ok_json(url, {"leases", "--unleased"})) == std::vector<std::int64_t>{bare, held});
  CHECK(ok_json(url, {"leases", "--expired"}) == json::array());
  CHECK(ids_in(ok_json(url, {"leases", "--expiring-within", "1h"})) ==
        std::vector<std::int64_t>{leased});
  CHECK(ids_in(ok_json(url, {"leases", "--worker", "app-worker"})) ==
        std::vector<std::int64_t>{held});
  CHECK(ids_in(ok_json(url, {"leases", "q", "--unleased", "--older-than", "1h"})).empty());

  // stats: counted in processing and, apart, as unleased; never as expired.
  json stats = ok_json(url, {"stats", "q"});
  INFO(stats.dump());
  REQUIRE(stats.size() == 1);
  CHECK(stats[0]["processing"] == 3);
  CHECK(stats[0]["expired_leases"] == 0);
  CHECK(stats[0]["unleased"] == 2);
  CHECK(stats[0]["ready"] == 1);
  std::string stats_table = ok(url, {"stats"}).out;
  CHECK(contains(stats_table, "UNLEASED"));
  std::string prom = ok(url, {"-o", "prometheus", "stats"}).out;
  CHECK(contains(prom, "# TYPE queuectl_unleased_jobs gauge\n"));
  CHECK(contains(prom, "queuectl_unleased_jobs{queue=\"q\"} 2\n"));

  // The plain reaper leaves them alone: they have no lease to expire.
  json reaped = ok_json(url, {"reap"});
  CHECK(reaped["requeued"] == 0);
  CHECK(reaped["unleased"] == false);
  CHECK(ok_json(url, {"leases", "--unleased"}).size() == 2);
}

TEST_CASE("cli: reap --unleased --older-than returns old rows without a lease, and only those") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto app = fixture.connect();
  const std::int64_t bare = id_of(enqueue(url, "q"));   // judged by updated_at
  const std::int64_t held = id_of(enqueue(url, "q"));   // judged by locked_at
  const std::int64_t fresh = id_of(enqueue(url, "q"));  // in processing just now
  const std::int64_t spent = id_of(enqueue(url, "q"));  // out of attempts
  const std::int64_t other = id_of(enqueue(url, "other"));
  const std::int64_t expired = id_of(enqueue(url, "q"));  // a lease, expired long ago
  claim_without_lease(*app, bare, false);
  claim_without_lease(*app, held, true);
  claim_without_lease(*app, fresh, true);
  claim_without_lease(*app, spent, true);
  claim_without_lease(*app, other, false);
  REQUIRE(id_of(claim_one(url, "q", {"--lease", "5m"})) == expired);
  two_hours_ago(fixture, bare, "updated_at");
  two_hours_ago(fixture, held, "locked_at");
  two_hours_ago(fixture, spent, "locked_at");
  two_hours_ago(fixture, other, "updated_at");
  two_hours_ago(fixture, expired, "lock_until");
  two_hours_ago(fixture, expired, "locked_at");
  {
    long long v = spent;
    fixture.db().session() << "UPDATE job_queue SET attempts = max_attempts WHERE id = :id",
        soci::use(v, "id");
  }

  // Nothing has been processing for over 3h.
  json none = ok_json(url, {"reap", "--unleased", "--older-than", "3h"});
  CHECK(none["requeued"] == 0);
  CHECK(none["failed"] == 0);

  // A dry run says what would happen and writes nothing.
  const std::string before = db_fingerprint(fixture);
  json dry = ok_json(url, {"reap", "q", "--unleased", "--older-than", "1h", "--dry-run"});
  INFO(dry.dump());
  CHECK(dry["dry_run"] == true);
  CHECK(dry["unleased"] == true);
  CHECK(id_set(dry["requeued_ids"]) == std::set<std::int64_t>{bare, held});
  CHECK(id_set(dry["failed_ids"]) == std::set<std::int64_t>{spent});
  CHECK(db_fingerprint(fixture) == before);

  // The run: the two old ones back to ready, the spent one failed; the fresh row, the
  // other queue and the expired lease (the plain reaper's) untouched.
  json run = ok_json(url, {"reap", "q", "--unleased", "--older-than", "1h"});
  INFO(run.dump());
  CHECK(run["unleased"] == true);
  CHECK(run["requeued"] == 2);
  CHECK(run["failed"] == 1);
  CHECK(id_set(run["requeued_ids"]) == std::set<std::int64_t>{bare, held});
  CHECK(id_set(run["failed_ids"]) == std::set<std::int64_t>{spent});
  CHECK(run["lock"] == "queuectl:reap:q");
  for (std::int64_t id : {bare, held}) {
    json job = show(url, id);
    CHECK(job["status"] == "ready");
    CHECK(contains(job["last_error"].get<std::string>(), "no lease"));
    CHECK(job["lock_until"].is_null());
  }
  CHECK(contains(show(url, held)["last_error"].get<std::string>(), "app-worker"));
  CHECK(status_of(url, spent) == "failed");
  CHECK(status_of(url, fresh) == "processing");
  CHECK(status_of(url, other) == "processing");
  CHECK(status_of(url, expired) == "processing");

  std::string table = ok(url, {"reap", "--unleased", "--older-than", "1h"}).out;
  CHECK(contains(table, "returned 1 job(s) without a lease to ready"));  // the other queue's
  CHECK(status_of(url, other) == "ready");
  json plain = ok_json(url, {"reap"});
  CHECK(id_set(plain["requeued_ids"]) == std::set<std::int64_t>{expired});
  CHECK(status_of(url, fresh) == "processing");
}

TEST_CASE("cli: reap --unleased and leases --unleased refuse bad usage, writing nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto app = fixture.connect();
  const std::int64_t id = id_of(enqueue(url, "q"));
  claim_without_lease(*app, id, false);
  two_hours_ago(fixture, id, "updated_at");
  rejects(fixture, {"reap", "--unleased"}, "--older-than");
  rejects(fixture, {"reap", "--older-than", "1h"}, "--unleased");
  rejects(fixture, {"reap", "--unleased", "--older-than", "soon"}, "--older-than");
  rejects(fixture, {"reap", "--unleased", "--older-than", "1h", "--batch", "0"}, "--batch");
  rejects(fixture, {"reap", "bad queue!", "--unleased", "--older-than", "1h"}, "queue");
  rejects(fixture, {"leases", "--unleased", "--expired"}, "exclude each other");
  rejects(fixture, {"leases", "--unleased", "--expiring-within", "1m"}, "exclude each other");
  CHECK(status_of(url, id) == "processing");
}

// `pause` stops queuectl's claims only; an application's own claim respects it with the
// condition of docs/shared-table.md ("`pause` and your own claim").
TEST_CASE("cli: an application's claim with the README's condition skips a paused queue") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto app = fixture.connect();
  const std::int64_t id = id_of(enqueue(url, "q"));
  const std::string lock =
      backend_under_test() == Backend::sqlite ? "" : "\n FOR UPDATE SKIP LOCKED";
  // The claim of docs/shared-table.md, with its condition word for word.
  const std::string pick =
      "SELECT id FROM job_queue\n WHERE queue = :queue AND status = 0"
      " AND run_at <= " +
      now_sql() + R"(
   AND queue NOT IN (SELECT queue FROM queuectl_queues WHERE paused_at IS NOT NULL)
 ORDER BY priority DESC, run_at, id LIMIT 1)" +
      lock;
  auto claimable = [&] {
    std::vector<std::int64_t> out;
    app->transaction([&] {
      out.clear();
      std::string queue = "q";
      long long got = 0;
      soci::statement st =
          statement_once(app->session(), pick, soci::use(queue, "queue"), soci::into(got));
      for (bool more = st.execute(true); more; more = st.fetch()) out.push_back(got);
    });
    return out;
  };
  CHECK(claimable() == std::vector<std::int64_t>{id});
  ok(url, {"pause", "q"});
  CHECK(claimable().empty());
  ok(url, {"resume", "q"});
  CHECK(claimable() == std::vector<std::int64_t>{id});
}

}  // namespace queuectl::testing::cli
