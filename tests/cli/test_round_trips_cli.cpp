// Issue 13: the statements a one-job claim and a one-job ack send to PostgreSQL, counted by
// the server itself (pg_stat_statements, which scripts/test-servers.sh preloads), so that
// setup round trips cannot creep back unseen. PostgreSQL only: MariaDB and SQLite have no
// per-database statement counter that a test can reset.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// What a one-job claim and ack send today, settings and schema check included; lower them
// when a change saves round trips, never raise them without a reason in the commit.
constexpr long long kClaimStatements = 4;
// An ack: the same three as a claim, whether any queue keeps no done job (`queue
// --keep-done off`: then the ack deletes such a queue's job; asked once a repository, then
// once a minute), then its one UPDATE, in autocommit (no BEGIN and COMMIT around a single
// statement: 6 before).
constexpr long long kAckStatements = 5;

// Resets the server's statement counters, runs `args`, and returns the statements the
// server counted in this database since, one "calls: query" line each (the test's own
// pg_stat_statements queries left out); `total` gets their sum.
std::vector<std::string> statements_of(FreshDatabase& fixture, const std::vector<std::string>& args,
                                       long long& total) {
  soci::session& s = fixture.db().session();
  s << "SELECT pg_stat_statements_reset()";
  RunResult r = queuectl(fixture.url(), args);
  INFO(dump(r));
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> out;
  total = 0;
  soci::rowset<soci::row> rows = s.prepare << R"(
      SELECT calls, query FROM pg_stat_statements
       WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
         AND query NOT ILIKE '%pg_stat_statements%'
       ORDER BY query)";
  for (const soci::row& row : rows) {
    const long long calls = row.get<long long>(0);
    total += calls;
    out.push_back(std::to_string(calls) + ": " + row.get<std::string>(1));
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& l : lines) text += l + "\n";
  return text;
}

}  // namespace

TEST_CASE("cli: a one-job claim and ack send at most their counted statements (PostgreSQL)" *
          doctest::skip(backend_under_test() != Backend::postgresql || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  soci::session& s = fixture.db().session();
  std::string preload;
  s << "SHOW shared_preload_libraries", soci::into(preload);
  REQUIRE_MESSAGE(preload.find("pg_stat_statements") != std::string::npos,
                  "the PostgreSQL test server must preload pg_stat_statements "
                  "(scripts/test-servers.sh does; restart servers started before it did)");
  s << "CREATE EXTENSION IF NOT EXISTS pg_stat_statements";
  json job = enqueue(url, "rt");

  long long claim_total = 0;
  std::vector<std::string> claim = statements_of(
      fixture, {"-o", "json", "claim", "rt", "--worker", "w-rt", "--lease", "1m"}, claim_total);
  INFO("claim sent:\n" << joined(claim));
  // Connection settings, the schema check, and the claim statement itself.
  CHECK(claim_total <= kClaimStatements);
  CHECK(claim_total >= 2);  // the counter sees queuectl at all: the check has teeth

  std::string token;
  long long id = id_of(job);
  s << "SELECT lock_token FROM job_queue WHERE id = :id", soci::use(id, "id"), soci::into(token);
  long long ack_total = 0;
  std::vector<std::string> ack =
      statements_of(fixture, {"ack", id_text(job), "--token", token}, ack_total);
  INFO("ack sent:\n" << joined(ack));
  CHECK(ack_total <= kAckStatements);
  CHECK(status_of(url, id_of(job)) == "done");
}

}  // namespace queuectl::testing::cli
