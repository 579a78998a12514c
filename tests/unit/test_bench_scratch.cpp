// bench's pure parts: the strategy list, the scratch names, the renamed copy of queuectl's
// statements and schema (which must never name a real table), and the latency percentiles.
#include <doctest/doctest.h>

#include <string>
#include <variant>
#include <vector>

#include "bench/latency.hpp"
#include "bench/scratch.hpp"
#include "bench/strategy.hpp"
#include "db/dialect.hpp"
#include "unit/unit_helpers.hpp"

using queuectl::Backend;
using queuectl::ClaimPickThenMark;
using queuectl::ClaimReturning;
using queuectl::make_dialect;
using queuectl::Statements;
using queuectl::test::contains;
using queuectl::test::usage_error_of;
namespace bench = queuectl::bench;
using bench::Strategy;

namespace {

// The claim's statements: the one statement and its locking pick, or every step.
std::vector<std::string> claim_texts(const Statements& s) {
  if (const auto* one = std::get_if<ClaimReturning>(&s.claim))
    return {one->claim, one->locking_pick.value_or("")};
  const auto& steps = std::get<ClaimPickThenMark>(s.claim);
  return {steps.start,      steps.pick, steps.recheck,        steps.limit_lock,
          steps.limit_busy, steps.mark, steps.pick_ungrouped, steps.rate_take};
}

// All of them in one text.
std::string claim_text(const Statements& s) {
  std::string all;
  for (const std::string& sql : claim_texts(s)) all += sql;
  return all;
}

// The statements a claim and an ack run, and the bulk insert that seeds the copy.
std::vector<std::string> used_by_claim(const Statements& s) {
  std::vector<std::string> out = claim_texts(s);
  const std::vector<std::string> rest = {s.job_columns,
                                         s.finish.ack,
                                         s.finish.ack_ids.write,
                                         s.finish.ack_ids.pick,
                                         s.finish.ack_id_array.value_or(""),
                                         s.finish.ack_id_one.value_or(""),
                                         s.enqueue.values_rows.prefix,
                                         s.enqueue.values_rows.row,
                                         s.enqueue.values_rows.suffix};
  out.insert(out.end(), rest.begin(), rest.end());
  return out;
}

// Whether the claim runs in a transaction of its own: a pick-then-mark claim always does.
bool claim_in_transaction(const Statements& s) {
  const auto* one = std::get_if<ClaimReturning>(&s.claim);
  return one ? one->in_transaction : true;
}

const Backend kBackends[] = {Backend::postgresql, Backend::mysql, Backend::sqlite};

}  // namespace

TEST_CASE("bench::parse_strategies") {
  using V = std::vector<Strategy>;
  CHECK(bench::parse_strategies("naive") == V{Strategy::naive});
  CHECK(bench::parse_strategies("claim,naive,claim") == V{Strategy::claim, Strategy::naive});
  CHECK(bench::parse_strategies("naive,for-update,skip-locked,claim") == bench::all_strategies());
  CHECK(contains(usage_error_of([] { bench::parse_strategies("nolock"); }), "--strategy 'nolock'"));
  CHECK(contains(usage_error_of([] { bench::parse_strategies("naive,,claim"); }), "empty"));
  CHECK(contains(usage_error_of([] { bench::parse_strategies("for_update"); }), "--strategy"));
  CHECK(contains(usage_error_of([] { bench::parse_strategies("Naive"); }), "--strategy"));
}

TEST_CASE("bench::scratch_tables: names from the pid and the strategy only") {
  const bench::ScratchTables t = bench::scratch_tables(4194304, Strategy::skip_locked);
  CHECK(t.jobs == "queuectl_bench_4194304_skip_locked");
  CHECK(t.ledger == "queuectl_bench_4194304_skip_locked_ledger");
  CHECK(t.queues.empty());
  CHECK(bench::scratch_tables(7, Strategy::claim).queues == "queuectl_bench_7_claim_queues");
  CHECK(t.render("DROP TABLE {table}", t.ledger) ==
        "DROP TABLE queuectl_bench_4194304_skip_locked_ledger");
}

TEST_CASE("bench::claim_statements: queuectl's claim and ack, on the copy only") {
  const bench::ScratchTables t = bench::scratch_tables(42, Strategy::claim);
  for (Backend b : kBackends) {
    CAPTURE(static_cast<int>(b));
    const auto dialect = make_dialect(b);
    const Statements& real = dialect->sql();
    const Statements copy = bench::claim_statements(real, t);
    for (const std::string& sql : used_by_claim(copy)) {
      CHECK_FALSE(contains(sql, "job_queue"));
      CHECK_FALSE(contains(sql, "queuectl_queues"));
    }
    CHECK(contains(claim_text(copy), "queuectl_bench_42_claim"));
    // The paused check reads the copy's settings table.
    CHECK(contains(claim_text(copy), "queuectl_bench_42_claim_queues"));
    CHECK(contains(copy.finish.ack_ids.write, "UPDATE queuectl_bench_42_claim"));
    CHECK(copy.finish.ack_id_array.has_value() == real.finish.ack_id_array.has_value());
    if (copy.finish.ack_id_array)
      CHECK(contains(*copy.finish.ack_id_array, "UPDATE queuectl_bench_42_claim"));
    CHECK(copy.finish.ack_id_one.has_value() == real.finish.ack_id_one.has_value());
    if (copy.finish.ack_id_one)
      CHECK(contains(*copy.finish.ack_id_one, "UPDATE queuectl_bench_42_claim"));
    CHECK(copy.claim.index() == real.claim.index());
    CHECK(claim_in_transaction(copy) == claim_in_transaction(real));
    // Nothing else is copied: no statement of the copy can reach another table.
    CHECK(copy.listing.stats_ready.empty());
    CHECK(copy.leases.reap_mark.empty());
    CHECK(copy.queues.pause.empty());
    CHECK(copy.migrations.create_table.empty());
    CHECK_FALSE(copy.enqueue.insert_arrays.has_value());
    // The real statements still name job_queue.
    CHECK(contains(claim_text(real), "job_queue"));
  }
}

TEST_CASE("bench::rename_tables renames tables and the names made from them") {
  const bench::ScratchTables t = bench::scratch_tables(9, Strategy::claim);
  CHECK(bench::rename_tables("SELECT 1 FROM job_queue j FORCE INDEX (ix_job_queue_claim)", t) ==
        "SELECT 1 FROM queuectl_bench_9_claim j FORCE INDEX (ix_queuectl_bench_9_claim_claim)");
  CHECK(bench::rename_tables("queuectl_queues p, queuectl_locks", t) ==
        "queuectl_bench_9_claim_queues p, queuectl_locks");
  CHECK(bench::rename_tables("SELECT status FROM t", t) == "SELECT status FROM t");
}

TEST_CASE("bench::copy_ddl keeps what builds the copy, and nothing that reaches further") {
  const bench::ScratchTables t = bench::scratch_tables(9, Strategy::claim);
  using V = std::vector<std::string>;
  CHECK(bench::copy_ddl({"CREATE TABLE job_queue (id INT)"}, t) ==
        V{"CREATE TABLE queuectl_bench_9_claim (id INT)"});
  CHECK(bench::copy_ddl({"CREATE TABLE IF NOT EXISTS queuectl_queues (q TEXT)"}, t) ==
        V{"CREATE TABLE IF NOT EXISTS queuectl_bench_9_claim_queues (q TEXT)"});
  CHECK(bench::copy_ddl({"CREATE UNIQUE INDEX job_queue_dedupe ON job_queue (queue)"}, t) ==
        V{"CREATE UNIQUE INDEX queuectl_bench_9_claim_dedupe ON queuectl_bench_9_claim (queue)"});
  CHECK(bench::copy_ddl({"ALTER TABLE job_queue ADD KEY ix_job_queue_groups (queue)"}, t) ==
        V{"ALTER TABLE queuectl_bench_9_claim ADD KEY ix_queuectl_bench_9_claim_groups (queue)"});
  // A self-contained trigger comes along; its body writes the copy.
  CHECK(bench::copy_ddl({"CREATE TRIGGER job_queue_t AFTER UPDATE OF status ON job_queue "
                         "BEGIN UPDATE job_queue SET attempts = 1; END"},
                        t) == V{"CREATE TRIGGER queuectl_bench_9_claim_t AFTER UPDATE OF status "
                                "ON queuectl_bench_9_claim BEGIN UPDATE queuectl_bench_9_claim "
                                "SET attempts = 1; END"});
  // A migration that replaces a trigger drops it first: the copy's, by its copied name.
  CHECK(bench::copy_ddl({"DROP TRIGGER IF EXISTS job_queue_count_attempts"}, t) ==
        V{"DROP TRIGGER IF EXISTS queuectl_bench_9_claim_count_attempts"});
  // Left out: another table, a function, a trigger calling a shared function or notifying
  // the real channel, a table that is not queuectl's, anything but DDL.
  const V left_out = {
      "CREATE TABLE queuectl_locks (name TEXT PRIMARY KEY)",
      "CREATE TABLE audit (id INT)",
      "CREATE INDEX audit_id ON audit (id)",
      "CREATE OR REPLACE FUNCTION queuectl_notify_queue() RETURNS trigger AS $$ BEGIN "
      "PERFORM pg_notify('queuectl_jobs', NEW.queue); END $$",
      "CREATE TRIGGER job_queue_notify AFTER UPDATE ON job_queue FOR EACH ROW "
      "EXECUTE FUNCTION queuectl_notify_queue()",
      "CREATE TRIGGER job_queue_x AFTER INSERT ON job_queue BEGIN "
      "INSERT INTO queuectl_locks VALUES (1); END",
      "INSERT INTO job_queue (queue) VALUES ('x')",
      "DROP TABLE job_queue"};
  for (const std::string& sql : left_out) {
    CAPTURE(sql);
    CHECK(bench::copy_ddl({sql}, t).empty());
  }
  // Comments do not count.
  CHECK(
      bench::copy_ddl({"CREATE TABLE job_queue (\n  -- see queuectl_locks\n  id INT)"}, t).size() ==
      1);
}

TEST_CASE("bench::schema_copy: the copy of each backend's migrations") {
  const bench::ScratchTables t = bench::scratch_tables(9, Strategy::claim);
  for (Backend b : kBackends) {
    CAPTURE(static_cast<int>(b));
    const auto ddl = bench::schema_copy(b, t);
    REQUIRE(!ddl.empty());
    bool jobs_table = false, queues_table = false;
    for (const std::string& sql : ddl) {
      CAPTURE(sql);
      CHECK_FALSE(contains(sql, "job_queue"));
      CHECK_FALSE(contains(sql, "queuectl_queues"));
      CHECK_FALSE(contains(sql, "queuectl_locks"));
      CHECK_FALSE(contains(sql, "FUNCTION"));
      if (b == Backend::postgresql) CHECK_FALSE(contains(sql, "TRIGGER"));
      CHECK(contains(sql, "queuectl_bench_9_claim"));
      jobs_table = jobs_table || contains(sql, "TABLE queuectl_bench_9_claim (") ||
                   contains(sql, "EXISTS queuectl_bench_9_claim (");
      queues_table = queues_table || contains(sql, "TABLE queuectl_bench_9_claim_queues (") ||
                     contains(sql, "EXISTS queuectl_bench_9_claim_queues (");
    }
    CHECK(jobs_table);
    CHECK(queues_table);
  }
}

TEST_CASE("bench::percentile (nearest rank)") {
  std::vector<double> none;
  CHECK(bench::percentile(none, 50) == 0);
  std::vector<double> v = {5, 1, 4, 2, 3};
  CHECK(bench::percentile(v, 50) == 3);
  CHECK(bench::percentile(v, 99) == 5);
  CHECK(bench::percentile(v, 20) == 1);
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);
  CHECK(bench::percentile(hundred, 99) == 99);
  CHECK(bench::percentile(hundred, 50) == 50);
}
