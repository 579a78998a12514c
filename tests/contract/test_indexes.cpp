// The claim and the reaper are served by indexes whose size does not grow with finished
// jobs (DESIGN.md, Indexes): with 100,000 done jobs in the table, EXPLAIN of each hot
// query must name its index. The statements are written out here, mirroring the
// dialects; a second test EXPLAINs the dialects' own statements with bound values.
#include "contract/contract_helpers.hpp"

#include <cctype>
#include <map>
#include <tuple>
#include "db/dialects/count_sql.hpp"
#include "db/dialects/list_sql.hpp"
#include "support/row_text.hpp"

#include <sstream>
#include <variant>

namespace queuectl::testing::contract {
namespace {

struct IndexNames {
  std::vector<std::string> claim;
  // Processing rows only: by lease expiry, or (PostgreSQL, SQLite) by queue and group, the
  // index the concurrency limit counts with. Either keeps finished jobs out of the plan.
  std::vector<std::string> leases;
};

IndexNames expected_indexes() {
  if (is_mysql()) return {{"ix_job_queue_claim"}, {"ix_job_queue_lease"}};
  return {{"job_queue_claim"}, {"job_queue_leases", "job_queue_processing_groups"}};
}

// What EXPLAIN said, as text for messages, and the index names the plan uses.
struct Plan {
  std::string text;
  std::vector<std::string> indexes_used;  // MySQL: the `key` column of job_queue's rows
  long long rows_examined = -1;           // MySQL: the `rows` estimate for job_queue
  bool uses(const std::string& index) const {
    if (!is_mysql()) return text.find(index) != std::string::npos;
    return std::find(indexes_used.begin(), indexes_used.end(), index) != indexes_used.end();
  }
};

std::string explain_keyword() {
  if (is_sqlite()) return "EXPLAIN QUERY PLAN ";
  return "EXPLAIN ";
}

// Runs EXPLAIN of `sql` with the binds `bind(statement&)` adds.
template <typename Bind>
Plan explain(Database& db, const std::string& sql, Bind bind) {
  Plan plan;
  soci::row r;
  soci::statement st(db.session());
  st.exchange(soci::into(r));
  bind(st);
  st.alloc();
  st.prepare(explain_keyword() + sql);
  st.define_and_bind();
  for (bool got = st.execute(true); got; got = st.fetch()) {
    std::string table, key, rows;
    for (std::size_t i = 0; i < r.size(); ++i) {
      std::string value = cell_text(r, i);
      plan.text += (i ? " | " : "") + value;
      const std::string name = r.get_properties(i).get_name();
      if (name == "table") table = value;
      if (name == "key") key = value;
      if (name == "rows") rows = value;
    }
    plan.text += "\n";
    // j: job_queue's alias in stats_ready and the claim; k: in the claim's group probes.
    // (The probes' row estimates come from the index's cardinality, not from live rows.)
    if (table == "job_queue" || table == "j" || table == "k") plan.indexes_used.push_back(key);
    if ((table == "job_queue" || table == "j") && !rows.empty() && rows != "NULL")
      plan.rows_examined = std::stoll(rows);
  }
  return plan;
}

Plan explain(Database& db, const std::string& sql) {
  return explain(db, sql, [](soci::statement&) {});
}

// EXPLAIN of the dialect's own claim of queue 'q' (its locking pick where the claim is
// two statements; `ungrouped`: the pick, or on PostgreSQL the claim, without the group
// checks), with bound values.
Plan explain_claim(Database& db, bool ungrouped = false) {
  const ClaimStatements& q = db.sql().claim;
  std::string queue = "q", worker = "w", token = "00000000-0000-4000-8000-000000000000";
  long long lease_ms = 30000;
  int limit = 25;
  ClaimStart start;  // where the pick starts: before every job
  if (const auto* steps = std::get_if<ClaimPickThenMark>(&q))
    return explain(db, ungrouped ? steps->pick_ungrouped : steps->pick, [&](soci::statement& st) {
      st.exchange(soci::use(queue, "queue"));
      st.exchange(soci::use(limit, "limit"));
      bind_claim_start(st, start);
    });
  const ClaimReturning& one = std::get<ClaimReturning>(q);
  const bool lean = ungrouped && one.claim_ungrouped.has_value();
  return explain(db, lean ? *one.claim_ungrouped : one.claim, [&](soci::statement& st) {
    st.exchange(soci::use(worker, "worker"));
    st.exchange(soci::use(token, "token"));
    st.exchange(soci::use(lease_ms, "lease_ms"));
    st.exchange(soci::use(queue, "queue"));
    st.exchange(soci::use(limit, "limit"));
  });
}

// 100,000 done jobs, made by the database itself, plus a few ready, scheduled, processing and
// expired ones; then statistics.
void fill_table(FreshDatabase& fx, JobRepository& repo) {
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
       "SELECT 'q', 2, 1, '{}', " +
           now_sql() + " FROM " + hundred_thousand_rows());
  REQUIRE_EQ(count_rows(fx.db(), "status = 2"), 100000);

  for (int i = 0; i < 8; ++i) add(repo, "q", "{}", i % 3);
  for (int i = 0; i < 5; ++i) add(repo, "other");
  NewJob later = new_job("q");
  later.delay = Duration::seconds(3600);
  add(repo, later);
  claim(repo, "q", 3, Duration::seconds(3600));
  claim(repo, "q", 2, millis(1));
  sleep_ms(20);

  analyze(fx.db());
}

// The claim's SELECT, as each dialect writes it (on PostgreSQL the CTE inside the claim,
// on MySQL the claim's pick, on SQLite the subquery of the claim's UPDATE).
std::string claim_select() {
  if (is_postgresql())
    return R"(
      SELECT id
        FROM job_queue
       WHERE queue = 'q'
         AND status = 0
         AND run_at <= now()
         AND NOT EXISTS (SELECT 1 FROM queuectl_queues p
                          WHERE p.queue = job_queue.queue AND p.paused_at IS NOT NULL)
       ORDER BY priority DESC, run_at, id
       LIMIT 25
         FOR UPDATE SKIP LOCKED)";
  if (is_mysql())
    return R"(
      SELECT id
        FROM job_queue FORCE INDEX (ix_job_queue_claim)
       WHERE queue = 'q'
         AND status = 0
         AND run_at <= NOW(6)
         AND NOT EXISTS (SELECT 1 FROM queuectl_queues p
                          WHERE p.queue = job_queue.queue AND p.paused_at IS NOT NULL)
       ORDER BY priority DESC, run_at, id
       LIMIT 25
         FOR UPDATE SKIP LOCKED)";
  return R"(
      SELECT id
        FROM job_queue
       WHERE queue = 'q'
         AND status = 0
         AND run_at <= strftime('%Y-%m-%d %H:%M:%f', 'now')
         AND NOT EXISTS (SELECT 1 FROM queuectl_queues p
                          WHERE p.queue = job_queue.queue AND p.paused_at IS NOT NULL)
       ORDER BY priority DESC, run_at, id
       LIMIT 25)";
}

// The reaper's pick of expired leases (reap_pick), for all queues.
std::string expired_select() {
  if (is_postgresql())
    return R"(
      SELECT id
        FROM job_queue
       WHERE status = 1 AND lock_until < now()
         AND queue = COALESCE(CAST(NULL AS text), queue)
       ORDER BY lock_until, id
       LIMIT 1000
         FOR UPDATE SKIP LOCKED)";
  if (is_mysql())
    return R"(
      SELECT id
        FROM job_queue FORCE INDEX (ix_job_queue_lease)
       WHERE status = 1 AND lock_until < NOW(6)
         AND queue = COALESCE(NULL, queue)
       ORDER BY lock_until, id
       LIMIT 1000
         FOR UPDATE SKIP LOCKED)";
  return R"(
      SELECT id
        FROM job_queue
       WHERE status = 1 AND lock_until < strftime('%Y-%m-%d %H:%M:%f', 'now')
         AND queue = COALESCE(NULL, queue)
       ORDER BY lock_until, id
       LIMIT 1000)";
}

void check_plan(const Plan& plan, const std::vector<std::string>& indexes) {
  std::string names;
  bool used = false;
  for (const std::string& index : indexes) {
    names += (names.empty() ? "" : " or ") + index;
    used = used || plan.uses(index);
  }
  CHECK_MESSAGE(used, "the plan does not use " << names << ":\n" << plan.text);
  if (is_postgresql())
    CHECK_MESSAGE(plan.text.find("Seq Scan on job_queue") == std::string::npos,
                  "the plan scans the whole table:\n"
                      << plan.text);
  if (is_mysql()) {
    // The estimate must count the few live rows, not the 100,000 finished ones.
    CHECK_MESSAGE(plan.rows_examined >= 0, plan.text);
    CHECK_MESSAGE(plan.rows_examined < 1000, "the plan reads about " << plan.rows_examined
                                                                     << " rows:\n"
                                                                     << plan.text);
  }
}

}  // namespace

TEST_CASE("the claim and the expired-lease pick use their indexes among 100,000 done jobs") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  fill_table(fx, repo);
  const IndexNames names = expected_indexes();

  check_plan(explain(fx.db(), claim_select()), names.claim);
  check_plan(explain(fx.db(), expired_select()), names.leases);
  // And the queries still answer correctly.
  CHECK_EQ(repo.stats({"q"}).front().expired, 2);
  CHECK_EQ(claim(repo, "q", 100).size(), 3u);
}

// Migration 16: each claim and ack of a job writes a new row version, with an entry in every
// index whose predicate it meets. Only the primary key takes every job; the dedupe index
// only jobs with a key, so 300 jobs enqueued, claimed and acked without one leave it as it
// was made (one page, its metapage), and a key still refuses a second job.
TEST_CASE("PostgreSQL: only the primary key indexes every job; the dedupe index only keyed ones" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  long long full = -1;
  fx.db().session() << "SELECT count(*) FROM pg_index i WHERE i.indrelid = 'job_queue'::regclass"
                       " AND i.indpred IS NULL AND NOT i.indisprimary",
      soci::into(full);
  CHECK_MESSAGE(full == 0, query_text(fx.db(),
                                      "SELECT indexdef FROM pg_indexes WHERE tablename = "
                                      "'job_queue' ORDER BY 1"));
  std::vector<NewJob> jobs(300, new_job("q"));
  repo.enqueue_many(jobs);
  std::vector<AckItem> acks;
  for (const Job& j : claim(repo, "q", 300))
    acks.push_back(AckItem{j.id, j.lock_token.value_or(""), std::nullopt});
  REQUIRE_EQ(acks.size(), 300u);
  CHECK(repo.ack_many(acks).empty());
  long long pages = -1;
  fx.db().session() << "SELECT pg_relation_size('job_queue_dedupe_key') / "
                       "current_setting('block_size')::integer",
      soci::into(pages);
  CHECK_EQ(pages, 1);
  NewJob keyed = new_job("q");
  keyed.dedupe_key = "k";
  CHECK_FALSE(repo.enqueue(keyed).duplicate);
  CHECK(repo.enqueue(keyed).duplicate);
  CHECK_EQ(count_rows(fx.db(), "dedupe_key = 'k'"), 1);
}

TEST_CASE("the dialects' own claim, reaper and lease statements use their indexes") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  fill_table(fx, repo);
  const IndexNames names = expected_indexes();
  const Statements& q = fx.db().sql();

  std::string null_text;
  soci::indicator null_ind = soci::i_null;
  long long within_ms = 0, older_ms = 0;
  int batch = 1000, leased = 1, unleased = 0;

  {
    INFO("the claim");
    check_plan(explain_claim(fx.db()), names.claim);
    if (is_mysql() || is_postgresql()) check_plan(explain_claim(fx.db(), true), names.claim);
  }
  {
    INFO("reap_pick");
    Plan plan = explain(fx.db(), q.leases.reap_pick, [&](soci::statement& st) {
      st.exchange(soci::use(null_text, null_ind, "queue"));
      st.exchange(soci::use(batch, "batch"));
    });
    check_plan(plan, names.leases);
  }
  // The leases a filter matches: listed (the leases view) or counted per worker (the
  // workers view); `within` and `with_unleased` as `leases` binds them.
  auto explain_leases = [&](const std::string& sql, long long within, int with_unleased,
                            bool limited) {
    return explain(fx.db(), sql, [&](soci::statement& st) {
      st.exchange(soci::use(null_text, null_ind, "queue"));
      st.exchange(soci::use(null_text, null_ind, "worker"));
      st.exchange(soci::use(leased, "leased"));
      st.exchange(soci::use(within, "within_ms"));
      st.exchange(soci::use(with_unleased, "unleased"));
      st.exchange(soci::use(older_ms, "older_ms"));
      if (limited) st.exchange(soci::use(batch, "limit"));
    });
  };
  const long long far_ms = 9'000'000'000'000LL;
  {
    INFO("list_leases, expired only");
    check_plan(explain_leases(q.leases.list_leases, within_ms, unleased, true), names.leases);
  }
  {
    INFO("list_leases, all: leased and unleased");
    check_plan(explain_leases(q.leases.list_leases, far_ms, 1, true), names.leases);
  }
  {
    INFO("lease_summary (the workers view), all leases");
    check_plan(explain_leases(q.leases.lease_summary, far_ms, 1, false), names.leases);
  }
  {
    // The groups view of a queue whose 100,000 done jobs must not be read.
    INFO("groups.list of q");
    std::string queue = "q";
    int blocked_only = 0;
    Plan plan = explain(fx.db(), q.groups.list, [&](soci::statement& st) {
      st.exchange(soci::use(queue, "queue"));
      st.exchange(soci::use(blocked_only, "blocked_only"));
      st.exchange(soci::use(batch, "limit"));
    });
    INFO(plan.text);
    CHECK(plan.text.find("Seq Scan on job_queue") == std::string::npos);
    if (is_mysql()) CHECK(plan.rows_examined < 1000);
    if (is_sqlite()) CHECK(plan.text.find("SCAN job_queue\n") == std::string::npos);
  }
  {
    INFO("reap_unleased_pick");
    Plan plan = explain(fx.db(), q.leases.reap_unleased_pick, [&](soci::statement& st) {
      st.exchange(soci::use(null_text, null_ind, "queue"));
      st.exchange(soci::use(older_ms, "older_ms"));
      st.exchange(soci::use(batch, "batch"));
    });
    check_plan(plan, names.leases);
  }
  {
    // stats must not scan finished rows to count ready and processing ones. (MySQL's row
    // estimate for a ref on (queue, status) comes from the index's cardinality, not from
    // the 20-odd live rows, so there the access type is checked instead: a ref lookup on
    // the claim index reads only the queue's ready rows.)
    INFO("stats_ready");
    Plan ready = explain(fx.db(), q.listing.stats_ready);
    CHECK_MESSAGE(ready.uses(names.claim.front()), ready.text);
    if (is_mysql())
      CHECK_MESSAGE(ready.text.find("| ref | " + names.claim.front()) != std::string::npos,
                    ready.text);
    if (is_postgresql())
      CHECK_MESSAGE(ready.text.find("Seq Scan on job_queue") == std::string::npos, ready.text);
    INFO("stats_processing");
    check_plan(explain(fx.db(), q.listing.stats_processing), names.leases);
  }
}

// PostgreSQL: does some scan ask for one group's processing jobs by index? Each scan
// node's line is followed by its "Index Cond:" line.
bool processing_probe_keyed_by_group(const std::string& plan_text) {
  std::vector<std::string> lines;
  std::istringstream in(plan_text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    const std::string& cond = lines[i + 1];
    if (cond.find("Index Cond:") == std::string::npos) continue;
    if (cond.find("group_key =") == std::string::npos) continue;
    if (lines[i].find("using job_queue_processing_groups ") != std::string::npos) return true;
    if (lines[i].find("using job_queue_groups ") != std::string::npos &&
        cond.find("(status = 1)") != std::string::npos)
      return true;
  }
  return false;
}

TEST_CASE("the grouped claim probes the groups index among 100,000 done grouped jobs") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  fill_table(fx, repo);
  // The done jobs get group keys too (1,000 groups), so that a probe which read finished
  // rows would show in the plan; then busy groups: a processing head and a waiting job.
  exec(fx.db(), is_mysql()
                    ? "UPDATE job_queue SET group_key = CONCAT('g', id % 1000) WHERE status = 2"
                    : "UPDATE job_queue SET group_key = 'g' || (id % 1000) WHERE status = 2");
  for (int g = 0; g < 20; ++g) {
    NewJob j = new_job("q");
    j.group_key = "g" + std::to_string(g);
    add(repo, j);
    add(repo, j);
  }
  REQUIRE_EQ(claim(repo, "q", 100, Duration::seconds(3600)).size(), 23u);  // 3 + 20 heads
  for (int i = 0; i < 3; ++i) add(repo, "q");
  analyze(fx.db());

  const std::string groups_index = is_mysql()    ? "ix_job_queue_groups"
                                   : is_sqlite() ? "job_queue_ready_groups"
                                                 : "job_queue_groups";
  Plan plan = explain_claim(fx.db());
  CHECK_MESSAGE(plan.uses(expected_indexes().claim.front()), plan.text);
  CHECK_MESSAGE(plan.uses(groups_index), plan.text);
  // SQLite: the processing and failed probes have indexes of their own (migration 8).
  if (is_sqlite()) {
    CHECK_MESSAGE(plan.uses("job_queue_processing_groups"), plan.text);
    CHECK_MESSAGE(plan.uses("job_queue_failed_groups"), plan.text);
  }
  // On PostgreSQL the processing probe is keyed by the group: through
  // job_queue_processing_groups (queue, group_key, id) WHERE status = 1, or through
  // job_queue_groups with status = 1 in its index condition (the planner picks either by
  // its statistics, and both read one group's processing entries). Not through an index of
  // the queue alone, where a probe reads every processing job of the queue per candidate.
  if (is_postgresql()) CHECK_MESSAGE(processing_probe_keyed_by_group(plan.text), plan.text);
  if (is_postgresql())
    CHECK_MESSAGE(plan.text.find("Seq Scan on job_queue") == std::string::npos, plan.text);
  // And it answers right: the 20 groups are busy, so only the ungrouped ready jobs remain.
  auto jobs = claim(repo, "q", 100);
  CHECK_EQ(jobs.size(), 3u);
  for (const Job& j : jobs) CHECK_FALSE(j.group_key.has_value());
}

// Many ready jobs: the claim must still read its rows through the claim index and join
// the rows it took by id. (A LIMIT the planner could not evaluate made PostgreSQL expect
// a tenth of the table, hash all of it for the UPDATE and JIT-compile the plan.)
TEST_CASE("the dialect's own claim takes its rows by index among 100,000 ready jobs") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  exec(fx.db(),
       "INSERT INTO job_queue (queue, payload) SELECT 'q', '{}' FROM " + hundred_thousand_rows());
  analyze(fx.db());
  const Plan plan = explain_claim(fx.db());
  // (check_plan's row estimate does not apply: here every row is ready.)
  CHECK_MESSAGE(plan.uses(expected_indexes().claim.front()), plan.text);
  // MySQL's picks of one job, from the top without the start's terms.
  if (const auto* steps = std::get_if<ClaimPickThenMark>(&fx.db().sql().claim)) {
    for (const std::string* top : {&steps->pick_top, &steps->pick_ungrouped_top}) {
      std::string queue = "q";
      int limit = 1;
      const Plan one = explain(fx.db(), *top, [&](soci::statement& st) {
        st.exchange(soci::use(queue, "queue"));
        st.exchange(soci::use(limit, "limit"));
      });
      CHECK_MESSAGE(one.uses(expected_indexes().claim.front()), one.text);
    }
  }
  if (!is_sqlite()) {
    const Plan lean = explain_claim(fx.db(), true);
    CHECK_MESSAGE(lean.uses(expected_indexes().claim.front()), lean.text);
    if (is_postgresql())
      CHECK_MESSAGE(lean.text.find("Seq Scan on job_queue") == std::string::npos, lean.text);
  }
  if (is_postgresql())
    CHECK_MESSAGE(plan.text.find("Seq Scan on job_queue") == std::string::npos,
                  "the plan scans the whole table:\n"
                      << plan.text);
  if (is_postgresql())
    CHECK_MESSAGE(plan.text.find("JIT") == std::string::npos, "the plan is JIT-compiled:\n"
                                                                  << plan.text);
  CHECK_EQ(claim(repo, "q", 100).size(), 100u);
}

namespace {

// The prepared claim statements (of the connection `db`) whose LIMIT matches `limit`, a
// regular expression: how many, and their custom and generic plans, summed.
struct PreparedClaims {
  long long statements = 0, custom = 0, generic = 0;
};
PreparedClaims prepared_claims(Database& db, const std::string& limit) {
  PreparedClaims c;
  db.session() << "SELECT count(*), CAST(COALESCE(sum(custom_plans), 0) AS bigint),"
                  " CAST(COALESCE(sum(generic_plans), 0) AS bigint)"
                  " FROM pg_prepared_statements"
                  " WHERE statement LIKE '%UPDATE job_queue j%'"
                  " AND statement ~ ('LIMIT ' || :limit || '\\s+FOR UPDATE OF j')",
      soci::into(c.statements), soci::into(c.custom), soci::into(c.generic),
      soci::use(limit, "limit");
  return c;
}
// The LIMIT of the bound claim statements, and of any written one.
const std::string kBoundLimit = "CAST\\(\\$[0-9]+ AS integer\\)";
const std::string kWrittenLimit = "[0-9]+";

}  // namespace

// A worker's claim statements are kept prepared (JobRepository::PreparedClaim). PostgreSQL
// then plans each run with its values (a custom plan) unless the generic plan is estimated
// no dearer. A claim of more than 1,000 jobs binds its LIMIT, which a generic plan cannot see:
// it expects a tenth of the ready jobs (cost enough to JIT-compile it), so those runs stay
// custom. A claim of up to 1,000 has its LIMIT written in (ClaimReturning::with_limit): its
// generic plan costs what its custom plans cost, and PostgreSQL plans it once, from the
// sixth run. Every generic plan, chosen or not, reads the claim index.
TEST_CASE(
    "PostgreSQL: prepared claims of more than 1,000 jobs stay custom-planned, of up to 1,000 "
    "generic; every generic plan reads the claim index" *
    doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  fill_table(fx, repo);
  exec(fx.db(),
       "INSERT INTO job_queue (queue, payload) SELECT 'q', '{}' FROM " + hundred_thousand_rows());
  analyze(fx.db());
  const auto& batch = std::get<ClaimReturning>(fx.db().sql().claim);
  REQUIRE((batch.with_limit != nullptr));
  for (int i = 0; i < 8; ++i) CHECK_EQ(claim(repo, "q", 1001).size(), 1001u);
  for (int i = 0; i < 10; ++i) CHECK_EQ(claim(repo, "q", 2).size(), 2u);
  for (int i = 0; i < 8; ++i) CHECK_EQ(claim(repo, "q", 1).size(), 1u);
  // Each prepared at its second claim (of these, or of fill_table's): at least seven runs
  // since. The bound one's each planned with its values; a written one's planned once, for
  // all values.
  CHECK_GE(prepared_claims(fx.db(), kBoundLimit).custom, 7);
  CHECK_EQ(prepared_claims(fx.db(), kBoundLimit).generic, 0);
  for (int limit : {1, 2}) {
    INFO("LIMIT " << limit);
    CHECK_GE(prepared_claims(fx.db(), std::to_string(limit)).generic, 2);
    CHECK_LE(prepared_claims(fx.db(), std::to_string(limit)).custom, 5);
  }
  const std::map<std::string, std::string> values = {
      {"worker", "'w'"},
      {"token", "'00000000-0000-4000-8000-000000000000'"},
      {"lease_ms", "30000"},
      {"queue", "'q'"},
      {"limit", "1"}};
  std::vector<ClaimReturning> written;
  for (int limit : {1, 2, ClaimReturning::kWrittenLimitMax}) {
    written.push_back(batch.with_limit(limit));
    CHECK_FALSE(written.back().binds_limit);
  }
  std::vector<const std::string*> claims;
  std::vector<const ClaimReturning*> all = {&batch};
  for (const ClaimReturning& w : written) all.push_back(&w);
  for (const ClaimReturning* statements : all) {
    claims.push_back(&statements->claim);
    if (statements->claim_ungrouped) claims.push_back(&*statements->claim_ungrouped);
    if (statements->claim_rated_simple) claims.push_back(&*statements->claim_rated_simple);
    if (statements->claim_rated) claims.push_back(&*statements->claim_rated);
  }
  exec(fx.db(), "SET plan_cache_mode = force_generic_plan");
  for (const std::string* sql : claims) {
    const auto [text, args] = positional(*sql, values);
    exec(fx.db(), "PREPARE qc_generic AS " + text);
    const Plan plan = explain(fx.db(), "EXECUTE qc_generic(" + args + ")");
    exec(fx.db(), "DEALLOCATE qc_generic");
    INFO("generic plan:\n" << plan.text);
    CHECK(plan.uses("job_queue_claim"));
    CHECK(plan.text.find("Seq Scan on job_queue") == std::string::npos);
  }
  exec(fx.db(), "RESET plan_cache_mode");
}

// A repository keeps the written statements of at most kWrittenLimitsKept sizes (each
// holds its plans in the server session): a claim of another size past that binds its LIMIT,
// and so does a size's first claim. Through a pooler, only one job's are written (nothing is
// kept prepared there).
TEST_CASE("PostgreSQL: claims of many sizes keep the written statements of at most 16" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  exec(fx.db(),
       "INSERT INTO job_queue (queue, payload) SELECT 'q', '{}' FROM generate_series(1, 1800)");
  // A size's first claim binds its LIMIT, its second runs the written statements once (not
  // yet prepared), its third prepares them; one job's are written from the first.
  for (int round = 0; round < 3; ++round) {
    for (int limit = 1; limit <= 33; ++limit)
      CHECK_EQ(claim(repo, "q", limit).size(), static_cast<std::size_t>(limit));
    if (round == 1 && !through_pooler())
      CHECK_EQ(prepared_claims(fx.db(), kWrittenLimit).statements, 1);
  }
  if (through_pooler()) return;
  CHECK_EQ(prepared_claims(fx.db(), kWrittenLimit).statements, 16);
  CHECK_EQ(prepared_claims(fx.db(), kBoundLimit).statements, 1);
}

// A worker's acks are kept prepared too (JobRepository::PreparedAck). The generic plan of
// an ack cannot see how many ids it names, nor which: with 100,000 jobs processing (a backlog
// under long leases) and 100,000 done, it must still find them by the primary key, not
// read a processing index or the table.
TEST_CASE("PostgreSQL: the generic plan of the prepared ack reads the primary key" *
          doctest::skip(!is_postgresql() || through_pooler())) {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  fill_table(fx, repo);
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, locked_by, lock_token, "
       "locked_at, lock_until) SELECT 'q', 1, 1, '{}', 'w', 't', now(), now() + interval "
       "'1 hour' FROM " +
           hundred_thousand_rows());
  analyze(fx.db());
  const FinishStatements& f = fx.db().sql().finish;
  REQUIRE(f.ack_id_array.has_value());
  REQUIRE(f.ack_id_one.has_value());
  for (const auto& [sql, ids_name, ids_value] :
       {std::tuple<std::string, std::string, std::string>{*f.ack_id_array, "ids", "'{1,2,3}'"},
        std::tuple<std::string, std::string, std::string>{*f.ack_id_one, "id", "'1'"}}) {
    const auto [text, args] = positional(sql, {{ids_name, ids_value}, {"token", "'t'"}});
    // Untyped, as SOCI sends them: the server gives each the type its CAST names.
    exec(fx.db(), "PREPARE qc_ack AS " + text);
    exec(fx.db(), "SET plan_cache_mode = force_generic_plan");
    const Plan plan = explain(fx.db(), "EXECUTE qc_ack(" + args + ")");
    exec(fx.db(), "RESET plan_cache_mode");
    exec(fx.db(), "DEALLOCATE qc_ack");
    INFO("generic plan:\n" << plan.text);
    CHECK(plan.uses("job_queue_pkey"));
    CHECK(plan.text.find("Seq Scan on job_queue") == std::string::npos);
    CHECK(plan.text.find("job_queue_processing_groups") == std::string::npos);
    CHECK(plan.text.find("job_queue_leases") == std::string::npos);
  }
}

TEST_CASE("stats counts finished jobs through indexes, up to its cap, and finds every queue") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  fill_table(fx, repo);
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
       "VALUES ('done_only', 3, 1, '{}', " +
           now_sql() + ")");
  analyze(fx.db());
  const CountStatements& sql = count_sql(fx.db().dialect().backend());
  // A cap well below the queue's history, as 100,000 is below a production table's millions
  // (at 100,000 of this table's 100,000 rows a sequential scan is rightly cheaper).
  std::string queue = "q";
  long long cap = 1000;
  Plan counts = explain(fx.db(), sql.capped_finished, [&](soci::statement& st) {
    for (const char* n : {"2", "3", "4"}) {
      st.exchange(soci::use(queue, std::string("q") + n));
      st.exchange(soci::use(cap, std::string("c") + n));
    }
  });
  INFO("capped counts:\n" << counts.text);
  // MariaDB: a plan that sorts nothing. The regression of issue 34 was a temporary table and a
  // filesort over every finished job's index entry.
  auto sorts_nothing = [](const Plan& plan) {
    CHECK_MESSAGE(plan.text.find("Using filesort") == std::string::npos, plan.text);
    CHECK_MESSAGE(plan.text.find("Using temporary") == std::string::npos, plan.text);
  };
  if (is_postgresql()) {
    CHECK(counts.uses("job_queue_finished"));
    CHECK(counts.text.find("Seq Scan on job_queue") == std::string::npos);
  } else if (is_mysql()) {
    // Each of the three counts (a probe past the cap, then the count) reads (queue, status)
    // of the claim index, never the table, and sorts nothing.
    sorts_nothing(counts);
    REQUIRE(counts.indexes_used.size() == 6);
    for (const std::string& key : counts.indexes_used) CHECK(key == "ix_job_queue_claim");
    CHECK(counts.text.find("Using index") != std::string::npos);
    // The same for every queue at once, the queues found by a loose scan.
    Plan all = explain(fx.db(), sql.capped_all,
                       [&](soci::statement& st) { st.exchange(soci::use(cap, "c")); });
    INFO("every queue:\n" << all.text);
    CHECK(std::count(all.indexes_used.begin(), all.indexes_used.end(), "ix_job_queue_claim") == 6);
    CHECK(all.indexes_used.size() == 7);  // and the loose scan's
    CHECK(all.text.find("Using index for group-by") != std::string::npos);
    sorts_nothing(all);
  } else {
    CHECK(counts.uses("job_queue_finished"));
    CHECK(counts.text.find("SCAN job_queue\n") == std::string::npos);
    // Each count seeks to its own status: a range from `status >= 2` would read the queue's
    // done entries to count its failed ones.
    CHECK(counts.text.find("status>?") == std::string::npos);
    CHECK(counts.text.find("(queue=? AND status=?)") != std::string::npos);
  }
  Plan queues = explain(fx.db(), sql.finished_queues);
  INFO("queues:\n" << queues.text);
  if (is_mysql()) {
    CHECK(queues.text.find("Using index for group-by") != std::string::npos);
    sorts_nothing(queues);
  } else {
    CHECK(queues.uses("job_queue_finished"));
    CHECK(queues.text.find("Seq Scan on job_queue") == std::string::npos);
  }
  // What they count: capped, named in at_least at the cap, exact without one.
  auto find = [](const std::vector<QueueStats>& all, const std::string& name) {
    for (const QueueStats& s : all)
      if (s.queue == name) return s;
    FAIL("no stats for queue " << name);
    return QueueStats{};
  };
  const auto capped = repo.stats({}, 1000);
  CHECK(find(capped, "q").done == 1000);
  CHECK(find(capped, "q").at_least == std::vector<std::string>{"done"});
  CHECK(find(capped, "done_only").failed == 1);
  CHECK(find(capped, "done_only").at_least.empty());
  const auto exact = repo.stats({}, 0);
  CHECK(find(exact, "q").done == 100000);
  CHECK(find(exact, "q").at_least.empty());
  CHECK(find(repo.stats({"q"}, 200000), "q").done == 100000);
  CHECK(find(repo.stats({"q"}, 200000), "q").at_least.empty());
  // At the cap exactly and one past it, every queue at once and a named one.
  for (const std::vector<std::string>& named : {std::vector<std::string>{}, {"q"}}) {
    CHECK(find(repo.stats(named, 100000), "q").done == 100000);
    CHECK(find(repo.stats(named, 100000), "q").at_least == std::vector<std::string>{"done"});
    CHECK(find(repo.stats(named, 100001), "q").done == 100000);
    CHECK(find(repo.stats(named, 100001), "q").at_least.empty());
    CHECK(find(repo.stats(named, 99999), "q").done == 99999);
  }
  CHECK(find(repo.stats({"done_only"}, 1000), "done_only").failed == 1);
}

TEST_CASE("list of one status reads that status' index among 100,000 done jobs") {
  FreshDatabase fx;
  JobRepository repo(fx.db());
  fill_table(fx, repo);  // 8 ready in q (3 then claimed, 2 expired), 5 in other, 1 scheduled
  const Backend backend = fx.db().dialect().backend();
  for (const Status status : {Status::ready, Status::processing, Status::failed})
    for (const bool by_queue : {true, false})
      for (const bool newest : {false, true})
        for (const bool filtered : {false, true}) {  // by group key and error text
          ListingShape shape;
          shape.status = status;
          shape.by_queue = by_queue;
          shape.newest_first = newest;
          shape.by_group = shape.by_error = filtered;
          const auto sql = list_one_status_sql(backend, fx.db().sql().job_columns, shape);
          REQUIRE(sql);
          std::string queue = "q", group = "g", error = "timed out";
          long long after = 0, before = 1000000000;
          int flag = 1, limit = 100;
          Plan plan = explain(fx.db(), *sql, [&](soci::statement& st) {
            if (by_queue) st.exchange(soci::use(queue, "queue"));
            if (status == Status::ready) {
              st.exchange(soci::use(flag, "waiting"));
              st.exchange(soci::use(flag, "ready_now"));
            }
            if (filtered) {
              st.exchange(soci::use(group, "group_key"));
              st.exchange(soci::use(error, "error"));
            }
            st.exchange(soci::use(after, "after"));
            st.exchange(soci::use(before, "before"));
            st.exchange(soci::use(limit, "limit"));
          });
          INFO(status_name(status) << (by_queue ? " of q" : "") << (newest ? " newest" : "")
                                   << (filtered ? " filtered" : "") << ":\n"
                                   << plan.text);
          CHECK(plan.text.find("Seq Scan on job_queue") == std::string::npos);
          CHECK(plan.text.find("job_queue_pkey") == std::string::npos);
          if (is_mysql()) CHECK(plan.rows_examined < 1000);
          if (is_sqlite()) CHECK(plan.text.find("SCAN job_queue\n") == std::string::npos);
        }
  // Every status of a small queue ("other": 5 ready jobs, after the 100,000 done in q):
  // the general listing reads that queue's rows by an index on the queue, never every job
  // in id order.
  for (const bool newest : {false, true}) {
    ListingShape shape;
    shape.by_queue = true;
    shape.newest_first = newest;
    shape.small_queue = true;  // as JobRepository::list finds it on SQLite (checked below)
    std::string queue = "other";
    int mask = 0x1f, flag = 1, limit = 100;
    long long after = 0, before = 1000000000;
    Plan plan = explain(fx.db(), list_jobs_sql(backend, fx.db().sql().job_columns, shape),
                        [&](soci::statement& st) {
                          st.exchange(soci::use(mask, "status_mask"));
                          st.exchange(soci::use(queue, "queue"));
                          st.exchange(soci::use(flag, "waiting"));
                          st.exchange(soci::use(flag, "ready_now"));
                          st.exchange(soci::use(after, "after"));
                          st.exchange(soci::use(before, "before"));
                          st.exchange(soci::use(limit, "limit"));
                        });
    INFO("every status of other" << (newest ? ", newest first" : "") << ":\n" << plan.text);
    CHECK(plan.text.find("Seq Scan on job_queue") == std::string::npos);
    CHECK(plan.text.find("job_queue_pkey") == std::string::npos);
    if (is_mysql()) CHECK(plan.rows_examined < 1000);
    if (is_sqlite()) {
      CHECK(plan.text.find("SCAN job_queue") == std::string::npos);
      CHECK(plan.text.find("PRIMARY KEY") == std::string::npos);
    }
  }
  if (is_sqlite()) {  // the probe that tells a small queue: an index range, at most the cap
    std::string queue = "other";
    int cap = kSmallQueueRows;
    Plan plan = explain(fx.db(), sqlite_queue_rows_sql(), [&](soci::statement& st) {
      st.exchange(soci::use(queue, "queue"));
      st.exchange(soci::use(cap, "cap"));
    });
    INFO(plan.text);
    CHECK(plan.text.find("job_queue_dedupe (queue=?)") != std::string::npos);
    long long rows = 0;
    fx.db().session() << sqlite_queue_rows_sql(), soci::use(queue, "queue"), soci::use(cap, "cap"),
        soci::into(rows);
    CHECK(rows == 5);
  }
  // Canceled jobs: of one queue through the finished index, seeking to the status (on
  // SQLite a range from `status >= 2` would read the queue's 100,000 done entries); of
  // every queue through the canceled index (migration 15).
  exec(fx.db(),
       "INSERT INTO job_queue (queue, status, attempts, payload, finished_at) "
       "VALUES ('q', 4, 0, '{}', " +
           now_sql() + "), ('q', 4, 0, '{}', " + now_sql() + "), ('q', 4, 0, '{}', " + now_sql() +
           ")");
  analyze(fx.db());
  for (const bool by_queue : {true, false}) {
    ListingShape shape;
    shape.status = Status::canceled;
    shape.by_queue = by_queue;
    const auto sql = list_one_status_sql(backend, fx.db().sql().job_columns, shape);
    REQUIRE(sql);
    std::string queue = "q";
    long long after = 0, before = 1000000000;
    int limit = 100;
    Plan plan = explain(fx.db(), *sql, [&](soci::statement& st) {
      if (by_queue) st.exchange(soci::use(queue, "queue"));
      st.exchange(soci::use(after, "after"));
      st.exchange(soci::use(before, "before"));
      st.exchange(soci::use(limit, "limit"));
    });
    INFO("canceled" << (by_queue ? " of q" : ", every queue") << ":\n" << plan.text);
    CHECK(plan.text.find("Seq Scan on job_queue") == std::string::npos);
    CHECK(plan.text.find("job_queue_pkey") == std::string::npos);
    if (is_mysql()) CHECK(plan.rows_examined < 1000);
    if (is_sqlite())
      CHECK(plan.text.find(by_queue ? "job_queue_finished (queue=? AND status=?)"
                                    : "job_queue_canceled") != std::string::npos);
    // PostgreSQL: neither the whole finished index nor the table (100,000 done entries).
    if (is_postgresql() && !by_queue) CHECK(plan.uses("job_queue_canceled"));
  }
  // And what it lists: the same jobs, in id order, as the general listing, also within an
  // id range.
  for (const Status status : {Status::ready, Status::processing, Status::canceled})
    for (const bool newest : {false, true})
      for (const bool ranged : {false, true}) {
        ListFilter one;
        one.queue = "q";
        one.statuses = {status};
        one.newest_first = newest;
        ListFilter two = one;
        // The general statement, with a status that has no jobs in q.
        two.statuses = {status, Status::failed};
        std::vector<long long> all, a, b;
        for (const Job& j : repo.list(one)) all.push_back(j.id);
        REQUIRE(all.size() >= 3);
        if (ranged) {  // strictly between the first and the last: the middle ones
          one.after = two.after = std::min(all.front(), all.back());
          one.before = two.before = std::max(all.front(), all.back());
        }
        for (const Job& j : repo.list(one)) a.push_back(j.id);
        for (const Job& j : repo.list(two)) b.push_back(j.id);
        CHECK(a.size() == (ranged ? all.size() - 2 : all.size()));
        INFO(status_name(status) << (newest ? ", newest first" : "")
                                 << (ranged ? ", a range" : ""));
        CHECK(a == b);
      }
}

}  // namespace queuectl::testing::contract
