// `queuectl keda` through the real binary. On PostgreSQL and MySQL/MariaDB the query it
// prints, run on the database as KEDA would run it, counts what a claim could take now (plus
// the jobs processing, for a ScaledObject), nothing for a paused queue, and EXPLAIN of it
// names the indexes stats reads, among thousands of done jobs. On every backend (keda
// connects to nothing, so a server URL needs no server): SQLite is refused with one line,
// bad input too, and no password is ever printed.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "cli/fault_helpers.hpp"
#include "support/row_text.hpp"

namespace queuectl::testing::cli {
namespace {

// `queuectl keda QUEUE EXTRA... -o json` on `url`.
json keda_json(const std::string& url, const std::string& queue,
               std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"keda", queue};
  args.insert(args.end(), extra.begin(), extra.end());
  return ok_json(url, args);
}

// The query of the YAML's literal block: the lines after "query: |-", unindented.
std::string yaml_query(const std::string& yaml) {
  std::istringstream in(yaml);
  std::string out;
  bool in_block = false;
  for (std::string line; std::getline(in, line);) {
    if (!in_block) {
      in_block = line == "      query: |-";
      continue;
    }
    if (line.rfind("        ", 0) != 0) break;
    out += (out.empty() ? "" : "\n") + line.substr(8);
  }
  return out;
}

// What EXPLAIN said: its text, and (MySQL/MariaDB) the access type and key of each row that
// reads job_queue.
struct Plan {
  std::string text;
  std::vector<std::pair<std::string, std::string>> job_queue_reads;  // type, key
};

Plan explain(Database& db, const std::string& sql) {
  Plan plan;
  soci::row r;
  soci::statement st(db.session());
  st.exchange(soci::into(r));
  prepare_once(st, "EXPLAIN " + sql);  // unnamed: see for_each_row
  for (bool got = st.execute(true); got; got = st.fetch()) {
    std::string table, type, key;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const std::string value = cell_text(r, i);
      plan.text += (i ? " | " : "") + value;
      const std::string name = r.get_properties(i).get_name();
      if (name == "table") table = value;
      if (name == "type") type = value;
      if (name == "key") key = value;
    }
    plan.text += "\n";
    if (table == "job_queue") plan.job_queue_reads.emplace_back(type, key);
  }
  return plan;
}

}  // namespace

TEST_CASE("cli: keda: the query counts the jobs a claim could take now, plus processing ones" *
          doctest::skip(is_sqlite())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // Finished: one done, one failed for good; one waiting out a retry's backoff (ready, not
  // due).
  enqueue(url, "work");
  enqueue(url, "work");
  json two = claim(url, "work", {"--limit", "2"});
  REQUIRE(two.size() == 2);
  ok(url, {"ack", id_text(two[0]), "--token", two[0]["lock_token"].get<std::string>()});
  ok(url,
     {"fail", id_text(two[1]), "--token", two[1]["lock_token"].get<std::string>(), "--permanent"});
  enqueue(url, "work");
  json retried = claim_one(url, "work");
  ok(url, {"fail", id_text(retried), "--token", retried["lock_token"].get<std::string>(),
           "--retry-in", "1h"});
  // 8 due, 3 of them claimed: 5 ready, 3 processing.
  for (int i = 0; i < 8; ++i) enqueue(url, "work");
  REQUIRE(claim(url, "work", {"--limit", "3", "--lease", "1h"}).size() == 3);
  // Not due: scheduled later, and waiting for a job of another queue.
  enqueue(url, "work", "{}", {"--delay", "1h"});
  enqueue(url, "work", "{}", {"--delay", "2d"});
  json parent = enqueue(url, "other");
  enqueue(url, "work", "{}", {"--after", id_text(parent)});
  // Another queue's jobs, ready and processing.
  for (int i = 0; i < 4; ++i) enqueue(url, "other");
  REQUIRE(claim(url, "other", {"--limit", "2", "--lease", "1h"}).size() == 2);

  json object = keda_json(url, "work");
  json job = keda_json(url, "work", {"--scaled-job"});
  const std::string object_sql = object["query"], job_sql = job["query"];
  INFO("ScaledObject query:\n" << object_sql << "\nScaledJob query:\n" << job_sql);
  CHECK(scalar(fixture.db(), object_sql) == 5 + 3);
  CHECK(scalar(fixture.db(), job_sql) == 5);
  // What stats counts, the same way.
  json stats = ok_json(url, {"stats", "work"});
  REQUIRE(stats.size() == 1);
  CHECK(stats[0]["ready"] == 5);
  CHECK(stats[0]["processing"] == 3);
  CHECK(scalar(fixture.db(), keda_json(url, "other")["query"].get<std::string>()) == 3 + 2);
  CHECK(scalar(fixture.db(), keda_json(url, "nothing-here")["query"].get<std::string>()) == 0);

  // A paused queue has nothing ready: the pods scale down to those running jobs.
  ok(url, {"pause", "work"});
  CHECK(scalar(fixture.db(), object_sql) == 3);
  CHECK(scalar(fixture.db(), job_sql) == 0);
  ok(url, {"resume", "work"});
  CHECK(scalar(fixture.db(), object_sql) == 8);
  CHECK(scalar(fixture.db(), job_sql) == 5);

  // The YAML holds the same query, in a literal block.
  RunResult yaml = ok(url, {"keda", "work"});
  CHECK(yaml_query(yaml.out) == object_sql);
  CHECK(yaml_query(ok(url, {"keda", "work", "--scaled-job"}).out) == job_sql);
}

TEST_CASE("cli: keda: the query reads the partial or claim indexes among thousands of done jobs" *
          doctest::skip(is_sqlite())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // 10,000 done jobs of the queue, made by the database, then a few live ones.
  const std::string digits =
      "(SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL "
      "SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 "
      "UNION ALL SELECT 9)";
  fixture.db().session() << "INSERT INTO job_queue (queue, status, attempts, payload, "
                            "finished_at) SELECT 'work', 2, 1, '{}', " +
                                std::string(is_mysql() ? "NOW(6)" : "now()") + " FROM " + digits +
                                " a, " + digits + " b, " + digits + " c, " + digits + " d";
  REQUIRE(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 10000);
  for (int i = 0; i < 6; ++i) enqueue(url, "work");
  for (int i = 0; i < 3; ++i) enqueue(url, "other");
  REQUIRE(claim(url, "work", {"--limit", "2", "--lease", "1h"}).size() == 2);
  if (is_mysql()) {
    // (It returns a result set, which is read to the end.)
    for_each_row(fixture.db().session(), "ANALYZE TABLE job_queue", [](const soci::row&) {});
  } else {
    fixture.db().session() << "ANALYZE job_queue";
  }

  for (const bool scaled_job : {false, true}) {
    CAPTURE(scaled_job);
    json doc = keda_json(
        url, "work",
        scaled_job ? std::vector<std::string>{"--scaled-job"} : std::vector<std::string>{});
    const std::string sql = doc["query"];
    const Plan plan = explain(fixture.db(), sql);
    INFO("the plan:\n" << plan.text);
    if (is_postgresql()) {
      // Ready jobs from the claim index (status = 0), processing ones from an index of
      // processing rows only; never a scan of the table, where the done rows are.
      CHECK(contains(plan.text, "job_queue_claim"));
      if (!scaled_job)
        CHECK((contains(plan.text, "job_queue_processing_groups") ||
               contains(plan.text, "job_queue_leases")));
      CHECK_FALSE(contains(plan.text, "Seq Scan on job_queue"));
      CHECK_FALSE(contains(plan.text, "job_queue_dedupe"));
    } else {
      // Each count one lookup of (queue, status) in the claim index.
      CHECK(plan.job_queue_reads.size() == (scaled_job ? 1u : 2u));
      for (const auto& [type, key] : plan.job_queue_reads) {
        CHECK(key == "ix_job_queue_claim");
        CHECK((type == "ref" || type == "range"));
      }
    }
    CHECK(scalar(fixture.db(), sql) == (scaled_job ? 4 : 6));
  }
}

TEST_CASE("cli: keda: SQLite is refused with one line, and nothing is created") {
  TempDir dir;
  const std::string file = dir.path() + "/queue.db";
  check_usage_error(queuectl("sqlite://" + file, {"keda", "work"}), "SQLite");
  check_usage_error(queuectl("sqlite://" + file, {"keda", "work", "--scaled-job"}), "SQLite");
  // The default database, an SQLite file, too.
  RunResult r = run_process({QUEUECTL_BINARY, "keda", "work"}, "",
                            {{"QUEUECTL_DB", ""}, {"XDG_DATA_HOME", dir.path()}});
  check_usage_error(r, "KEDA has no SQLite scaler");
  CHECK_FALSE(std::filesystem::exists(file));
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/queuectl"));
}

TEST_CASE("cli: keda: a bad queue name or --per-pod is exit 2 with one line") {
  const std::string url = "postgresql://app@db.example.com/jobs";
  for (const std::string bad : {"bad name", "x'; DROP TABLE job_queue;--", "it's", ""}) {
    CAPTURE(bad);
    RunResult r = queuectl(url, {"keda", bad});
    check_usage_error(r, bad.empty() ? "queue" : "queue name");
  }
  for (const char* per_pod : {"0", "-1", "abc", "1.5", "99999999999"}) {
    CAPTURE(per_pod);
    check_usage_error(queuectl(url, {"keda", "work", "--per-pod", per_pod}), "--per-pod");
  }
  check_usage_error(queuectl(url, {"keda"}), "QUEUE");
  // Bad input comes first, even where the database would be refused.
  check_usage_error(queuectl("sqlite::memory:", {"keda", "bad name"}), "queue name");
}

TEST_CASE("cli: keda: the trigger has the URL's connection and never its password") {
  const std::string secret = "s3cret-Pw";
  SUBCASE("PostgreSQL") {
    const std::string url =
        "postgresql://app:" + secret + "@db.example.com:5433/jobs?sslmode=require";
    RunResult r = ok(url, {"keda", "work", "--per-pod", "4"});
    CHECK(r.err.empty());
    CHECK_FALSE(contains(r.out, secret));
    for (const char* line :
         {"triggers:", "  - type: postgresql", "    metadata:", "      host: \"db.example.com\"",
          "      port: \"5433\"", "      userName: \"app\"", "      dbName: \"jobs\"",
          "      sslmode: \"require\"", "      passwordFromEnv: \"QUEUECTL_DB_PASSWORD\"",
          "      targetQueryValue: \"4\"", "      activationTargetQueryValue: \"0\"",
          "      query: |-"})
      CHECK_MESSAGE(contains(r.out, std::string("\n") + line + "\n"), line << "\n" << r.out);
    CHECK_FALSE(contains(r.out, "scalingStrategy"));
    json doc = keda_json(url, "work", {"--per-pod", "4"});
    CHECK_FALSE(contains(doc.dump(), secret));
    CHECK(doc["kind"] == "ScaledObject");
    CHECK(doc["type"] == "postgresql");
    CHECK(doc["target"] == 4);
    CHECK(doc["activation"] == 0);
    CHECK(doc["scaling_strategy"].is_null());
    CHECK(doc["metadata"]["query"] == doc["query"]);
    CHECK(doc["metadata"]["targetQueryValue"] == "4");
    CHECK(doc["metadata"]["passwordFromEnv"] == "QUEUECTL_DB_PASSWORD");
    CHECK(yaml_query(r.out) == doc["query"].get<std::string>());
    // A ScaledJob: ready jobs only, and KEDA's accurate strategy.
    RunResult j = ok(url, {"keda", "work", "--scaled-job"});
    CHECK(contains(j.out, "\nscalingStrategy:\n  strategy: accurate\ntriggers:\n"));
    CHECK_FALSE(contains(j.out, "status = 1"));
    CHECK(contains(r.out, "status = 1"));
    CHECK(keda_json(url, "work", {"--scaled-job"})["scaling_strategy"] == "accurate");
    // The password from ?password=, QUEUECTL_DB_PASSWORD or a file: never printed either.
    TempDir dir;
    const std::string file = dir.write("pw", secret + "\n");
    for (const RunResult& other :
         {queuectl("postgresql://app@db.example.com/jobs?password=" + secret, {"keda", "q"}),
          queuectl("postgresql://app@db.example.com/jobs", {"keda", "q"}, "",
                   {{"QUEUECTL_DB_PASSWORD", secret}}),
          queuectl("postgresql://app@db.example.com/jobs",
                   {"--db-password-file", file, "keda", "q", "-o", "json"})}) {
      INFO(dump(other));
      CHECK(other.exit_code == 0);
      CHECK_FALSE(contains(other.out + other.err, secret));
    }
  }
  SUBCASE("MySQL/MariaDB") {
    const std::string url = "mariadb://app:" + secret + "@db.example.com/jobs";
    RunResult r = ok(url, {"keda", "work"});
    CHECK_FALSE(contains(r.out, secret));
    for (const char* line :
         {"  - type: mysql", "      host: \"db.example.com\"", "      port: \"3306\"",
          "      username: \"app\"", "      dbName: \"jobs\"",
          "      passwordFromEnv: \"QUEUECTL_DB_PASSWORD\"", "      queryValue: \"1\"",
          "      activationQueryValue: \"0\""})
      CHECK_MESSAGE(contains(r.out, std::string("\n") + line + "\n"), line << "\n" << r.out);
    CHECK_FALSE(contains(r.out, "sslmode"));
    CHECK(contains(r.out, "FORCE INDEX (ix_job_queue_claim)"));
  }
  SUBCASE("a URL through a transaction pooler") {
    RunResult pooled =
        ok("postgresql://app@pgbouncer:6432/jobs?pooling=transaction", {"keda", "q"});
    CHECK(contains(pooled.out, "needs PgBouncer 1.21 or"));
    CHECK(contains(pooled.out, "      port: \"6432\"\n"));
    RunResult direct = ok("postgresql://app@db:5432/jobs", {"keda", "q"});
    CHECK_FALSE(contains(direct.out, "PgBouncer"));
    CHECK_FALSE(contains(direct.out, "TLS files"));
  }
  SUBCASE("the URL's TLS files are said to be left out, not dropped silently") {
    RunResult pg =
        ok("postgresql://app@db/jobs?sslmode=verify-full&sslrootcert=/etc/ca.pem", {"keda", "q"});
    CHECK(contains(pg.out, "# The URL's TLS files (sslrootcert) are not in this trigger"));
    CHECK(contains(pg.out, "      sslmode: \"verify-full\"\n"));
    CHECK_FALSE(contains(pg.out, "/etc/ca.pem"));
    RunResult my = ok("mysql://app@db/jobs?sslca=/etc/ca.pem&sslcert=/etc/c.pem", {"keda", "q"});
    CHECK(contains(my.out, "# The URL's TLS files (sslcert, sslca) are not in this trigger"));
  }
  SUBCASE("hosts KEDA cannot reach as written, and several hosts") {
    RunResult local = ok("postgresql://app@localhost/jobs", {"keda", "work"});
    CHECK(contains(local.out, "      # host: KEDA connects from its own pod"));
    RunResult several =
        ok("postgresql://app@pg1.example.com:5432,pg2.example.com/jobs", {"keda", "work"});
    CHECK(contains(several.out, "      host: \"pg1.example.com,pg2.example.com\"\n"));
    CHECK(contains(several.out, "      port: \"5432,5432\"\n"));
  }
}

TEST_CASE("cli: keda: the queue is one SQL literal, whatever characters the name may have") {
  const std::string url = "postgresql://app@db.example.com/jobs";
  json doc = keda_json(url, "mail:high.v2-B_1");
  const std::string sql = doc["query"];
  CHECK(contains(sql, "queue = 'mail:high.v2-B_1' AND status = 0"));
  CHECK(contains(sql, "queue = 'mail:high.v2-B_1' AND status = 1"));
  CHECK(contains(sql, "p.queue = 'mail:high.v2-B_1' AND p.paused_at IS NOT NULL"));
  // Exactly six quotes: three literals, nothing else quoted.
  CHECK(std::count(sql.begin(), sql.end(), '\'') == 6);
}

}  // namespace queuectl::testing::cli
