// A claim on a table whose statistics predate a burst of new jobs (issue 33). A long-lived
// queue's table is mostly finished jobs; ANALYZE saw no ready ones; then thousands arrive,
// fewer than the share of the table that makes autovacuum analyze again. A planner that
// trusts those statistics takes the ready rows for none, and on PostgreSQL the claim's
// UPDATE compared every ready row with every claimed id, and the group probes read every
// ready (or failed) row of the queue for each candidate.
//
// The test builds that state twice, in two queues alike: 'stale' is claimed before a
// fresh ANALYZE, 'fresh' after it. The claim of the stale queue must do no more than twice
// the work of the fresh one, counted by the database, not by a clock: on PostgreSQL the
// rows each plan node produced and threw away (EXPLAIN ANALYZE), on MariaDB the handler's
// row reads (Handler_read_*), on SQLite the virtual machine's steps (a progress handler).
//
// The same for an ack after a burst of claims: ANALYZE saw no job processing, then
// thousands are. On PostgreSQL the ack of a few ids (`id = ANY (...) AND status = 1 ...`)
// then read every processing row through a processing index instead of each id through the
// primary key, whose estimate (one descent an id) the empty-looking index undercut. The same
// for every other statement that finds jobs by id (the last two tests).
#include "contract/contract_helpers.hpp"

#include <soci/sqlite3/soci-sqlite3.h>
#include <sqlite3.h>

#include <functional>
#include <variant>

#include "db/dialects/flow_sql.hpp"
#include "db/row_reader.hpp"

namespace queuectl::testing::contract {
namespace {

constexpr int kBatch = 500;

// A FROM clause of 1,000 rows, with n from 0 to 999 (a, b, c: the digits).
std::string thousand_rows() {
  const std::string digits =
      "(SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL "
      "SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 "
      "UNION ALL SELECT 9)";
  return digits + " a, " + digits + " b, " + digits + " c";
}
const char* kRowNumber = "(a.n * 100 + b.n * 10 + c.n)";

// 'prefix' followed by an SQL integer expression, as text, on the backend under test.
std::string key_sql(const std::string& prefix, const std::string& number) {
  if (is_mysql()) return "CONCAT('" + prefix + "', " + number + ")";
  return "'" + prefix + "' || " + number;
}

// The planner's estimate of the entries in `index` (the premise of a stale-statistics test).
long long estimated_entries(Database& db, const std::string& index) {
  long long entries = -1;
  db.session() << "SELECT CAST(reltuples AS bigint) FROM pg_class WHERE relname = :index",
      soci::into(entries), soci::use(index, "index");
  return entries;
}

// The burst in `queue`: 3,000 ungrouped ready jobs, 3,000 grouped ones (300 groups of 10),
// and 1,000 failed jobs in groups of their own (the queue is strict, so the claim probes
// for older failed jobs of each head's group too).
void add_burst(Database& db, const std::string& queue) {
  for (int i = 0; i < 3; ++i) {
    exec(db, "INSERT INTO job_queue (queue, payload) SELECT '" + queue + "', '{}' FROM " +
                 thousand_rows());
    exec(db, "INSERT INTO job_queue (queue, payload, group_key) SELECT '" + queue + "', '{}', " +
                 key_sql("g" + std::to_string(i) + "-", std::string(kRowNumber) + " % 100") +
                 " FROM " + thousand_rows());
  }
  exec(db,
       "INSERT INTO job_queue (queue, status, attempts, payload, group_key, last_error, "
       "finished_at) SELECT '" +
           queue + "', 3, 1, '{}', " + key_sql("f-", kRowNumber) + ", 'boom', " + now_sql() +
           " FROM " + thousand_rows());
  exec(db, "INSERT INTO queuectl_queues (queue, strict_groups) VALUES ('" + queue + "', " +
               (is_postgresql() ? "true" : "1") + ")");
}

// The work of one claim of kBatch from `queue`, as the backend counts it, and what it took.
struct ClaimWork {
  long long work = 0;
  long long claimed = 0;
  std::string plan;  // PostgreSQL: EXPLAIN ANALYZE's plan, as JSON text
};

// PostgreSQL: every row each plan node returned or removed, over all its loops.
long long rows_touched(const json& node) {
  const long long loops = node.value("Actual Loops", 0LL);
  long long rows = node.value("Actual Rows", 0LL) + node.value("Rows Removed by Filter", 0LL) +
                   node.value("Rows Removed by Join Filter", 0LL) +
                   node.value("Rows Removed by Index Recheck", 0LL);
  long long total = rows * loops;
  if (node.contains("Plans"))
    for (const json& child : node["Plans"]) total += rows_touched(child);
  return total;
}

bool has_join_filter(const json& node) {
  if (node.contains("Join Filter")) return true;
  if (node.contains("Plans"))
    for (const json& child : node["Plans"])
      if (has_join_filter(child)) return true;
  return false;
}

ClaimWork claim_postgresql(Database& db, const std::string& queue) {
  const ClaimReturning& q = std::get<ClaimReturning>(db.sql().claim);  // PostgreSQL's one statement
  std::string worker = "w", token = "00000000-0000-4000-8000-000000000000", plan_text;
  std::string queue_name = queue;
  long long lease_ms = 30000;
  int limit = kBatch;
  soci::statement st(db.session());
  st.exchange(soci::into(plan_text));
  st.exchange(soci::use(worker, "worker"));
  st.exchange(soci::use(token, "token"));
  st.exchange(soci::use(lease_ms, "lease_ms"));
  st.exchange(soci::use(queue_name, "queue"));
  st.exchange(soci::use(limit, "limit"));
  st.alloc();
  st.prepare("EXPLAIN (ANALYZE, FORMAT JSON) " + q.claim);
  st.define_and_bind();
  st.execute(true);
  ClaimWork w;
  w.plan = plan_text;
  const json plan = json::parse(plan_text);
  w.work = rows_touched(plan.at(0).at("Plan"));
  return w;
}

long long handler_reads(Database& db) {
  long long sum = 0;
  soci::rowset<soci::row> rows = db.session().prepare << "SHOW SESSION STATUS LIKE 'Handler_read%'";
  for (const soci::row& r : rows) sum += std::stoll(r.get<std::string>(1));
  return sum;
}

// SQLite: a progress handler called every 100 virtual machine instructions.
int count_steps(void* counter) {
  ++*static_cast<long long*>(counter);
  return 0;
}

ClaimWork claim_and_count(FreshDatabase& fx, JobRepository& repo, const std::string& queue) {
  ClaimWork w;
  if (is_postgresql()) {
    w = claim_postgresql(fx.db(), queue);
  } else if (is_mysql()) {
    const long long before = handler_reads(fx.db());
    claim(repo, queue, kBatch);
    w.work = handler_reads(fx.db()) - before;
  } else {
    auto* backend = static_cast<soci::sqlite3_session_backend*>(fx.db().session().get_backend());
    long long steps = 0;
    sqlite3_progress_handler(backend->conn_, 100, count_steps, &steps);
    claim(repo, queue, kBatch);
    sqlite3_progress_handler(backend->conn_, 0, nullptr, nullptr);
    w.work = steps;
  }
  w.claimed = count_rows(fx.db(), "queue = '" + queue + "' AND status = 1");
  return w;
}

TEST_CASE("a claim after a burst of new jobs works no harder than with fresh statistics") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  // 100,000 finished jobs, half of them grouped; statistics taken with no job ready.
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
       "SELECT 'done', 2, 1, '{}', " +
           now_sql() + " FROM " + hundred_thousand_rows());
  exec(fx.db(),
       "UPDATE job_queue SET group_key = " + key_sql("g0-", "(id % 100)") + " WHERE id % 2 = 0");
  analyze(fx.db());
  add_burst(fx.db(), "stale");
  add_burst(fx.db(), "fresh");

  const ClaimWork stale = claim_and_count(fx, repo, "stale");
  analyze(fx.db());
  const ClaimWork fresh = claim_and_count(fx, repo, "fresh");

  // Both claims take a full batch: heads of the 300 groups and ungrouped jobs.
  CHECK_EQ(stale.claimed, kBatch);
  CHECK_EQ(fresh.claimed, kBatch);
  INFO("work of the claim with stale statistics: " << stale.work << ", fresh: " << fresh.work);
  CHECK_GT(fresh.work, 0);
  CHECK_LE(stale.work, 2 * fresh.work);
  if (is_postgresql()) {
    // The UPDATE reaches the claimed rows by their tuple ids (a Tid Scan): no join that
    // compares each ready row with each claimed id.
    CHECK_MESSAGE(!has_join_filter(json::parse(stale.plan).at(0).at("Plan")), stale.plan);
    CHECK_MESSAGE(stale.plan.find("Tid Scan") != std::string::npos, stale.plan);
  }
}

// The work of acking `jobs` (all held under one token) through the repository, as the
// backend counts it. PostgreSQL: the ack statement itself under EXPLAIN ANALYZE (it acks),
// planned with its values as a one-time statement is, or generically as a prepared one may be.
long long ack_and_count(FreshDatabase& fx, JobRepository& repo, const std::vector<Job>& jobs,
                        bool generic = false) {
  const std::string token = jobs.front().lock_token.value_or("");
  if (is_postgresql()) {
    // The statement the repository runs: for one job its own, with :id.
    const bool one = jobs.size() == 1;
    const FinishStatements& f = fx.db().sql().finish;
    const std::string sql = one ? f.ack_id_one.value() : f.ack_id_array.value();
    std::string ids = one ? "" : "{";
    for (const Job& j : jobs) ids += (ids.size() > 1 ? "," : "") + std::to_string(j.id);
    if (!one) ids += "}";
    std::string plan_text, token_value = token;
    std::string execute;
    if (generic) {
      const PositionalSql p =
          positional(sql, {{one ? "id" : "ids", "'" + ids + "'"}, {"token", "'" + token + "'"}});
      exec(fx.db(), "PREPARE qc_ack AS " + p.text);
      exec(fx.db(), "SET plan_cache_mode = force_generic_plan");
      execute = "EXECUTE qc_ack(" + p.args + ")";
    }
    soci::statement st(fx.db().session());
    st.exchange(soci::into(plan_text));
    if (!generic) {
      st.exchange(soci::use(ids, one ? "id" : "ids"));
      st.exchange(soci::use(token_value, "token"));
    }
    st.alloc();
    // EXPLAIN EXECUTE takes no bound values: the test's own ids and token, written in.
    st.prepare("EXPLAIN (ANALYZE, FORMAT JSON) " + (generic ? execute : sql));
    st.define_and_bind();
    st.execute(true);
    if (generic) {
      exec(fx.db(), "RESET plan_cache_mode");
      exec(fx.db(), "DEALLOCATE qc_ack");
    }
    INFO("ack plan: " << plan_text);
    return rows_touched(json::parse(plan_text).at(0).at("Plan"));
  }
  std::vector<AckItem> items;
  for (const Job& j : jobs) items.push_back({j.id, token, std::nullopt});
  if (is_mysql()) {
    const long long before = handler_reads(fx.db());
    CHECK(repo.ack_many(items).empty());
    return handler_reads(fx.db()) - before;
  }
  auto* backend = static_cast<soci::sqlite3_session_backend*>(fx.db().session().get_backend());
  long long steps = 0;
  sqlite3_progress_handler(backend->conn_, 100, count_steps, &steps);
  CHECK(repo.ack_many(items).empty());
  sqlite3_progress_handler(backend->conn_, 0, nullptr, nullptr);
  return steps;
}

TEST_CASE("an ack after a burst of claims works no harder than with fresh statistics") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  // Autovacuum must not analyze the table in the middle (PostgreSQL: the state under test).
  if (is_postgresql()) exec(fx.db(), "ALTER TABLE job_queue SET (autovacuum_enabled = false)");
  // 20,000 finished jobs; statistics taken with none ready or processing.
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
       "SELECT 'done', 2, 1, '{}', " +
           now_sql() + " FROM " + hundred_thousand_rows() + " LIMIT 20000");
  analyze(fx.db());
  // The burst: 10,000 jobs, all claimed under long leases.
  exec(fx.db(), "INSERT INTO job_queue (queue, payload) SELECT 'q', '{}' FROM " +
                    hundred_thousand_rows() + " LIMIT 10000");
  std::vector<std::vector<Job>> claims;
  for (int i = 0; i < 10; ++i) claims.push_back(claim(repo, "q", 1000, Duration::seconds(3600)));
  for (const auto& c : claims) REQUIRE_EQ(c.size(), 1000u);
  REQUIRE_EQ(count_rows(fx.db(), "status = 1"), 10000);
  if (is_postgresql()) {
    // The premise: the statistics still say that nothing is processing.
    REQUIRE_LT(estimated_entries(fx.db(), "job_queue_processing_groups"), 100);
  }
  auto first = [](const std::vector<Job>& c, std::size_t n) {
    return std::vector<Job>(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n));
  };
  const long long stale_one = ack_and_count(fx, repo, first(claims[0], 1));
  const long long stale_hundred = ack_and_count(fx, repo, first(claims[1], 100));
  // (PREPARE, SET and EXECUTE must meet one server session: not through a pooler.)
  const bool generic = is_postgresql() && !through_pooler();
  const long long stale_generic = generic ? ack_and_count(fx, repo, first(claims[2], 1), true) : 0;
  analyze(fx.db());
  const long long fresh_one = ack_and_count(fx, repo, first(claims[3], 1));
  const long long fresh_hundred = ack_and_count(fx, repo, first(claims[4], 100));
  INFO("work of an ack of 1 / 100 with stale statistics: " << stale_one << " / " << stale_hundred
                                                           << ", fresh: " << fresh_one << " / "
                                                           << fresh_hundred);
  CHECK_GT(fresh_one, 0);
  CHECK_LE(stale_one, 2 * fresh_one + 10);
  CHECK_LE(stale_hundred, 2 * fresh_hundred + 10);
  if (generic) {
    INFO("generic plan of an ack of 1, stale statistics: " << stale_generic);
    CHECK_LE(stale_generic, 2 * fresh_one + 10);
  }
  CHECK_EQ(count_rows(fx.db(), "status = 2 AND queue = 'q'"), generic ? 203 : 202);
}

// Every other statement that finds jobs by id and tests their status, on PostgreSQL: the lease
// holder's writes (ack with a result, fail, extend, release), the dependencies' (a parent's
// ack, a waiting child's release or cancel), the reaper's marks, and the admin commands'
// writes by id. Most were written `id = ... AND status = 1` (or 0), the dead letters' move
// `dead_from IS NOT NULL`: a partial index's predicate, so with that index's statistics taken
// before the jobs now in it, the planner read the whole index (processing, claim or dead
// letters) for one id. Each statement runs under EXPLAIN (ANALYZE, BUFFERS) on one job
// (rolled back), planned with its values and generically, with stale statistics and then
// fresh ones; the stale run may do at most twice the fresh work.
struct ByIdCase {
  std::string name;
  std::string sql;
  std::function<std::map<std::string, std::string>()> values;
};

// PostgreSQL: the buffers the plan's scans of job_queue read (an index searched on a column
// that is not its first is read whole inside the scan, and its rows removed never show as
// rows), each scan with what it read for its children.
long long scan_blocks(const json& node) {
  const std::string type = node.value("Node Type", "");
  if (node.value("Relation Name", "") == "job_queue" && type.find("Scan") != std::string::npos)
    return node.value("Shared Hit Blocks", 0LL) + node.value("Shared Read Blocks", 0LL);
  long long total = 0;
  if (node.contains("Plans"))
    for (const json& child : node["Plans"]) total += scan_blocks(child);
  return total;
}

long long explain_by_id(Database& db, const ByIdCase& c, bool generic) {
  const PositionalSql p = positional(c.sql, c.values());
  soci::transaction tx(db.session());  // rolled back: the job is there for the next run
  exec(db, "PREPARE qc_by_id AS " + p.text);
  if (generic) exec(db, "SET LOCAL plan_cache_mode = force_generic_plan");
  const std::string plan =
      query_text(db, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE qc_by_id(" + p.args + ")");
  exec(db, "DEALLOCATE qc_by_id");
  tx.rollback();
  INFO(c.name << (generic ? " (generic plan): " : ": ") << plan);
  const json root = json::parse(plan).at(0).at("Plan");
  return rows_touched(root) + scan_blocks(root);
}

// Runs each case with the statistics as they are (stale), then ANALYZE, then again (fresh),
// with its values and generically: the stale runs may do at most twice the fresh work.
// (PREPARE and EXECUTE meet one server session inside the transaction, pooler or not.)
void check_stale_against_fresh(Database& db, const std::vector<ByIdCase>& cases) {
  std::vector<std::pair<long long, long long>> stale;
  for (const ByIdCase& c : cases)
    stale.emplace_back(explain_by_id(db, c, false), explain_by_id(db, c, true));
  analyze(db);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const long long fresh = explain_by_id(db, cases[i], false);
    const long long fresh_generic = explain_by_id(db, cases[i], true);
    INFO(cases[i].name << ": rows and scanned blocks with stale statistics " << stale[i].first
                       << " (generic " << stale[i].second << "), fresh " << fresh << " (generic "
                       << fresh_generic << ")");
    CHECK_GT(fresh, 0);
    CHECK_LE(stale[i].first, 2 * fresh + 10);
    CHECK_LE(stale[i].second, 2 * fresh_generic + 10);
  }
}

TEST_CASE("writes that find jobs by id work no harder with stale statistics" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  Database& db = fx.db();
  exec(db, "ALTER TABLE job_queue SET (autovacuum_enabled = false)");
  // 20,000 canceled jobs; statistics taken with nothing ready, processing, failed or done.
  exec(db, "INSERT INTO job_queue (queue, status, payload, finished_at) SELECT 'old', 4, '{}', " +
               now_sql() + " FROM " + hundred_thousand_rows() + " LIMIT 20000");
  analyze(db);
  // The burst: 10,000 jobs processing (one claim's token on the first 1,000), 10,000 ready,
  // 1,000 waiting for parents, 10,000 failed and moved to a dead-letter queue.
  exec(db, "INSERT INTO job_queue (queue, payload) SELECT 'q', '{}' FROM " +
               hundred_thousand_rows() + " LIMIT 10000");
  std::vector<Job> held;
  for (int i = 0; i < 10; ++i) {
    std::vector<Job> c = claim(repo, "q", 1000, Duration::seconds(3600));
    REQUIRE_EQ(c.size(), 1000u);
    if (i == 0) held = c;
  }
  exec(db, "INSERT INTO job_queue (queue, payload) SELECT 'r', '{}' FROM " +
               hundred_thousand_rows() + " LIMIT 10000");
  exec(db,
       "INSERT INTO job_queue (queue, payload, run_at) SELECT 'w', '{}', "
       "TIMESTAMPTZ '9999-12-31 00:00:00+00' FROM " +
           hundred_thousand_rows() + " LIMIT 1000");
  exec(db,
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at, dead_from) "
       "SELECT 'f', 3, 1, '{}', " +
           now_sql() + ", 'orig' FROM " + hundred_thousand_rows() + " LIMIT 10000");
  // One held job has children (the dependencies' ack), another lost its lease.
  const std::string token = held.front().lock_token.value_or("");
  const std::string held_id = std::to_string(held[0].id), parent_id = std::to_string(held[1].id),
                    unleased_id = std::to_string(held[2].id);
  exec(db, "UPDATE job_queue SET has_dependents = 1 WHERE id = " + parent_id);
  exec(db,
       "UPDATE job_queue SET lock_until = NULL, locked_at = now() - INTERVAL '1 hour'"
       " WHERE id = " +
           unleased_id);
  // The premise: the statistics still say that nothing is processing, ready or dead-lettered.
  REQUIRE_LT(estimated_entries(db, "job_queue_processing_groups"), 100);
  REQUIRE_LT(estimated_entries(db, "job_queue_claim"), 100);
  REQUIRE_LT(estimated_entries(db, "job_queue_dead_letters"), 100);
  auto first_of = [&](const std::string& where) {
    return std::to_string(scalar(db, "SELECT MIN(id) FROM job_queue WHERE " + where));
  };
  const std::string ready_id = first_of("queue = 'r'"), waiting_id = first_of("queue = 'w'"),
                    failed_id = first_of("queue = 'f'"), canceled_id = first_of("queue = 'old'");
  // Every name any statement below binds, for one job `id`.
  auto values_for = [&](const std::string& id) {
    return [=]() {
      return std::map<std::string, std::string>{{"id", id},
                                                {"id0", id},
                                                {"child", id},
                                                {"ids", "'{" + id + "}'"},
                                                {"token", "'" + token + "'"},
                                                {"result", "'{}'"},
                                                {"error", "'boom'"},
                                                {"base_ms", "1000"},
                                                {"cap_ms", "60000"},
                                                {"jitter", "1"},
                                                {"lease_ms", "60000"},
                                                {"progress", "NULL"},
                                                {"note", "NULL"},
                                                {"checkpoint", "NULL"},
                                                {"older_ms", "0"},
                                                {"queue", "NULL"},
                                                {"status_mask", "4"},
                                                {"to", "NULL"}};
    };
  };
  const Statements& q = db.sql();
  const DependencySql& deps = dependency_sql(Backend::postgresql);
  const std::vector<ByIdCase> cases = {
      {"ack with a result", q.finish.ack, values_for(held_id)},
      {"ack of ids", expand_ids(q.finish.ack_ids.write, 1), values_for(held_id)},
      {"ack of an id array", q.finish.ack_id_array.value(), values_for(held_id)},
      {"ack of one id", q.finish.ack_id_one.value(), values_for(held_id)},
      {"fail with a retry", q.finish.fail_retry.write, values_for(held_id)},
      {"fail for good", q.finish.fail_final.write, values_for(held_id)},
      {"extend", q.finish.extend.write, values_for(held_id)},
      {"release", q.finish.release.write, values_for(held_id)},
      {"a parent's ack", deps.ack_parent, values_for(parent_id)},
      {"the parents a token acks", expand_ids(deps.ackable_parents, 1), values_for(parent_id)},
      {"a child's release", deps.release, values_for(waiting_id)},
      {"children's release", expand_ids(deps.release_many, 1), values_for(waiting_id)},
      {"a child's cancel", deps.cancel_child, values_for(waiting_id)},
      {"a child revived", deps.revive_child, values_for(canceled_id)},
      {"the reaper's mark", expand_ids(q.leases.reap_mark, 1), values_for(held_id)},
      {"the reaper's mark of a job with no lease", expand_ids(q.leases.reap_unleased_mark, 1),
       values_for(unleased_id)},
      {"retry by id", expand_ids(q.admin.retry_ids.write, 1), values_for(failed_id)},
      {"cancel by id", expand_ids(q.admin.cancel_ids.write, 1), values_for(ready_id)},
      {"a dead letter moved back", expand_ids(q.admin.move_ids.write, 1), values_for(failed_id)},
      {"cancel --force by id", expand_ids(q.admin.cancel_ids_force.write, 1), values_for(held_id)},
  };
  check_stale_against_fresh(db, cases);
}

// Purge's delete by id tests `status >= 2`, job_queue_finished's predicate: the same trap when
// that index's statistics predate the jobs finished since.
TEST_CASE("a purge by id works no harder with stale statistics" * doctest::skip(!is_postgresql())) {
  FreshDatabase fx;
  Database& db = fx.db();
  exec(db, "ALTER TABLE job_queue SET (autovacuum_enabled = false)");
  // 20,000 jobs processing; statistics taken with none finished; then 10,000 finish.
  exec(db,
       "INSERT INTO job_queue (queue, status, attempts, payload, lock_token, locked_at) "
       "SELECT 'q', 1, 1, '{}', 't', now() FROM " +
           hundred_thousand_rows() + " LIMIT 20000");
  analyze(db);
  exec(db,
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
       "SELECT 'd', 2, 1, '{}', now() - INTERVAL '1 hour' FROM " +
           hundred_thousand_rows() + " LIMIT 10000");
  REQUIRE_LT(estimated_entries(db, "job_queue_finished"), 100);
  const std::string id =
      std::to_string(scalar(db, "SELECT MIN(id) FROM job_queue WHERE queue = 'd'"));
  const ByIdCase purge{
      "purge by id", expand_ids(db.sql().admin.delete_ids, 1), [&] {
        return std::map<std::string, std::string>{
            {"id0", id}, {"queue", "NULL"}, {"status_mask", "4"}, {"older_ms", "0"}};
      }};
  check_stale_against_fresh(db, {purge});
}

}  // namespace
}  // namespace queuectl::testing::contract
