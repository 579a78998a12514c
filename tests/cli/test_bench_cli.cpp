// `queuectl bench` through the real binary, on every backend: what it finds (the naive
// strategy processes jobs twice, the locking ones and claim never), that it leaves nothing
// behind (every table and index listed before and after, also after SIGINT and SIGTERM),
// and that bad input is refused before anything is created.
#include <doctest/doctest.h>

#include <algorithm>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

std::vector<std::string> strings(FreshDatabase& fixture, const std::string& sql) {
  std::vector<std::string> out;
  std::string value;
  soci::statement st = statement_once(fixture.db().session(), sql, soci::into(value));
  for (bool got = st.execute(true); got; got = st.fetch()) out.push_back(value);
  return out;
}

// Every table, index, sequence, trigger and function of the fixture's database
// (PostgreSQL: of its schema), sorted.
std::vector<std::string> objects(FreshDatabase& fixture) {
  std::vector<std::string> out;
  switch (backend_under_test()) {
    case Backend::postgresql:
      out = strings(fixture,
                    "SELECT CAST(c.relname AS text) FROM pg_class c"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = current_schema()");
      for (const std::string& f : strings(fixture,
                                          "SELECT CAST(p.proname AS text) || '()' FROM pg_proc p"
                                          " JOIN pg_namespace n ON n.oid = p.pronamespace"
                                          " WHERE n.nspname = current_schema()"))
        out.push_back(f);
      for (const std::string& t :
           strings(fixture, "SELECT CAST(tgname AS text) FROM pg_trigger WHERE NOT tgisinternal"))
        out.push_back("trigger " + t);
      break;
    case Backend::mysql: {
      out = strings(fixture,
                    "SELECT CAST(table_name AS CHAR) FROM information_schema.tables"
                    " WHERE table_schema = DATABASE()");
      auto indexes = strings(fixture,
                             "SELECT CAST(CONCAT(table_name, '.', index_name) AS CHAR)"
                             " FROM information_schema.statistics WHERE table_schema = DATABASE()");
      out.insert(out.end(), indexes.begin(), indexes.end());
      for (const std::string& t : strings(fixture,
                                          "SELECT CAST(trigger_name AS CHAR) FROM"
                                          " information_schema.triggers"
                                          " WHERE trigger_schema = DATABASE()"))
        out.push_back("trigger " + t);
      break;
    }
    case Backend::sqlite:
      out = strings(fixture, "SELECT name FROM sqlite_master");
      break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool any_scratch_table(FreshDatabase& fixture) {
  auto all = objects(fixture);
  return std::any_of(all.begin(), all.end(),
                     [](const std::string& n) { return n.rfind("queuectl_bench_", 0) == 0; });
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += n + "\n";
  return out;
}

// The result of one strategy in `bench -o json` output.
json strategy(const json& doc, const std::string& name) {
  for (const json& s : doc["strategies"])
    if (s["strategy"] == name) return s;
  FAIL("no result for strategy " << name << " in " << doc.dump());
  return {};
}

// A run that went to the end and lost nothing.
void check_complete(const json& s, long long jobs) {
  INFO(s.dump());
  CHECK(s["status"] == "complete");
  CHECK(s["jobs"] == jobs);
  CHECK(s["processed"] == jobs);
  CHECK(s["lost"] == 0);
  CHECK(s["not_reached"] == 0);
  CHECK(s["errors"] == 0);
  CHECK(s["first_error"].is_null());
  CHECK(s["jobs_per_second"].get<double>() > 0);
  CHECK(s["claims"].get<long long>() > 0);
  CHECK(s["claim_latency_ms"]["p50"].get<double>() <= s["claim_latency_ms"]["p99"].get<double>());
}

// queuectl ARGS on a pseudo-terminal (util-linux `script`): stdout and stderr together.
RunResult on_terminal(const std::string& url, const std::vector<std::string>& args) {
  std::string command = "'" + std::string(QUEUECTL_BINARY) + "' --db '" + url + "'";
  for (const auto& a : args) command += " '" + a + "'";
  return run_process({"timeout", "60", "script", "-qec", command, "/dev/null"});
}

}  // namespace

// 4 clients start together; a pick takes well under a millisecond and the work 40ms, so
// the clients read the same first row before any of them marks it: every round of the
// naive strategy processes one job several times. Zero duplicates over 12 jobs would need
// every round's clients to start 40ms apart.
TEST_CASE("cli: bench: naive processes jobs twice; for-update, skip-locked and claim never") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "real");  // the real queue, which bench must not touch
  const std::string before = db_fingerprint(fixture);
  const auto objects_before = objects(fixture);

  RunResult r =
      queuectl(url, {"-o", "json", "bench", "--clients", "4", "--jobs", "12", "--work", "40ms"});
  INFO(dump(r));
  REQUIRE(r.exit_code == 0);
  const json doc = parse(r.out);
  CHECK(doc["backend"] == std::string(backend_name(backend_under_test())));
  CHECK(doc["clients"] == 4);
  CHECK(doc["work_ms"] == 40);
  REQUIRE(doc["strategies"].size() == 4);

  const json naive = strategy(doc, "naive");
  check_complete(naive, 12);
  CHECK(naive["duplicates"].get<long long>() > 0);
  CHECK(naive["runs"].get<long long>() > 12);

  for (const char* name : {"for-update", "skip-locked"}) {
    CAPTURE(name);
    const json s = strategy(doc, name);
    if (is_sqlite()) {
      CHECK(s["status"] == "skipped");
      CHECK(contains(s["reason"].get<std::string>(), "SQLite has no FOR UPDATE"));
      CHECK(contains(r.err, std::string("queuectl: bench: skipping ") + name + " (SQLite"));
    } else {
      check_complete(s, 12);
      CHECK(s["duplicates"] == 0);
      CHECK(s["runs"] == 12);
    }
  }
  const json claim = strategy(doc, "claim");
  check_complete(claim, 12);
  CHECK(claim["duplicates"] == 0);
  CHECK(claim["runs"] == 12);
  CHECK(claim["lease_lost"] == 0);

  CHECK(joined(objects(fixture)) == joined(objects_before));
  CHECK(db_fingerprint(fixture) == before);
}

TEST_CASE("cli: bench: a table for people, one line per strategy in NDJSON") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const auto objects_before = objects(fixture);
  SUBCASE("table") {
    RunResult r = ok(url, {"bench", "--clients", "2", "--jobs", "6", "--work", "0"});
    CHECK(contains(r.out, "STRATEGY"));
    CHECK(contains(r.out, "JOBS/S"));
    CHECK(contains(r.out, "DUPLICATES"));
    CHECK(contains(r.out, "\nnaive "));
    CHECK(contains(r.out, "\nclaim "));
    CHECK(contains(r.out, " 2 client(s), 6 job(s) per strategy, batch 1, 0s of work per job"));
    if (is_sqlite()) {
      CHECK(contains(r.out, "for-update: skipped: SQLite has no FOR UPDATE"));
      CHECK(contains(r.err, "skipping skip-locked"));
    } else {
      CHECK(contains(r.out, "\nfor-update "));
      CHECK(contains(r.out, "\nskip-locked "));
      CHECK(r.err.empty());  // not a terminal: no progress line
    }
  }
  SUBCASE("ndjson") {
    RunResult r = ok(url, {"-o", "ndjson", "bench", "--strategy", "claim,naive", "--clients", "2",
                           "--jobs", "5", "--batch", "2", "--work", "0"});
    auto lines = parse_lines(r.out);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0]["strategy"] == "claim");
    CHECK(lines[1]["strategy"] == "naive");
    check_complete(lines[0], 5);
    check_complete(lines[1], 5);
    CHECK(r.err.empty());
  }
  CHECK(joined(objects(fixture)) == joined(objects_before));
}

TEST_CASE("cli: bench: --duration ends a strategy early; what it did not reach is not lost") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const auto objects_before = objects(fixture);
  json doc = ok_json(url, {"bench", "--strategy", is_sqlite() ? "naive" : "for-update", "--clients",
                           "2", "--jobs", "500", "--work", "50ms", "--duration", "300ms"});
  const json s = doc["strategies"][0];
  INFO(s.dump());
  CHECK(s["status"] == "stopped");
  CHECK(s["lost"].is_null());
  CHECK(s["not_reached"].get<long long>() > 0);
  CHECK(s["processed"].get<long long>() < 500);
  CHECK(s["processed"].get<long long>() + s["not_reached"].get<long long>() == 500);
  CHECK(s["seconds"].get<double>() < 5);
  CHECK(joined(objects(fixture)) == joined(objects_before));
}

TEST_CASE("cli: bench: SIGINT and SIGTERM stop it, drop its tables, exit 130 and 143") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const auto objects_before = objects(fixture);
  for (int sig : {SIGINT, SIGTERM}) {
    CAPTURE(sig);
    const std::string out = dir.path() + "/out." + std::to_string(sig),
                      err = dir.path() + "/err." + std::to_string(sig);
    int pid = cleanup.child(spawn_queuectl_split(
        url,
        {"bench", "--strategy", is_sqlite() ? "naive" : "for-update,skip-locked", "--clients", "2",
         "--jobs", "1000", "--work", "100ms"},
        out, err));
    // The scratch tables exist while it runs...
    REQUIRE_MESSAGE(wait_until([&] { return any_scratch_table(fixture); }),
                    "no scratch table appeared: " << read_text(err));
    sleep_ms(300);  // clients at work, holding locks on the servers
    kill(pid, sig);
    const int code = wait_child(cleanup, pid);
    INFO(read_text(err));
    CHECK(code == 128 + sig);
    CHECK(read_text(out).empty());
    CHECK(contains(read_text(err), "stopped by signal " + std::to_string(sig)));
    // ... and are gone after.
    CHECK(joined(objects(fixture)) == joined(objects_before));
  }
}

TEST_CASE("cli: bench needs no migrated schema and creates none of queuectl's tables") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  drop_schema(fixture);
  const auto objects_before = objects(fixture);
  json doc = ok_json(
      url, {"bench", "--strategy", "claim", "--clients", "2", "--jobs", "5", "--work", "0"});
  check_complete(doc["strategies"][0], 5);
  CHECK(joined(objects(fixture)) == joined(objects_before));
}

TEST_CASE("cli: bench: bad input is refused before anything is created (exit 2)") {
  FreshDatabase fixture;
  const auto objects_before = objects(fixture);
  rejects(fixture, {"bench", "--clients", "0"}, "--clients");
  rejects(fixture, {"bench", "--clients", "-3"}, "--clients");
  rejects(fixture, {"bench", "--clients", "129"}, "--clients");
  rejects(fixture, {"bench", "--jobs", "0"}, "--jobs");
  rejects(fixture, {"bench", "--jobs", "1000001"}, "--jobs");
  rejects(fixture, {"bench", "--batch", "0"}, "--batch");
  rejects(fixture, {"bench", "--strategy", "nolock"}, "--strategy 'nolock'");
  rejects(fixture, {"bench", "--strategy", "naive,"}, "--strategy");
  rejects(fixture, {"bench", "--strategy", ""}, "--strategy");
  rejects(fixture, {"bench", "--work", "-1s"}, "--work");
  rejects(fixture, {"bench", "--work", "fast"}, "--work");
  rejects(fixture, {"bench", "--duration", "0"}, "--duration");
  rejects(fixture, {"bench", "--duration", "-5s"}, "--duration");
  rejects(fixture, {"-o", "prometheus", "bench"}, "prometheus");
  CHECK(joined(objects(fixture)) == joined(objects_before));
}

TEST_CASE("cli: bench on SQLite: only row-lock strategies asked for is bad usage" *
          doctest::skip(backend_under_test() != Backend::sqlite)) {
  FreshDatabase fixture;
  rejects(fixture, {"bench", "--strategy", "for-update,skip-locked"},
          "none of these runs on sqlite");
  check_usage_error(queuectl("sqlite::memory:", {"bench"}), "sqlite::memory:");
}

TEST_CASE("cli: bench shows its progress on a terminal, and only there") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult r = on_terminal(url, {"bench", "--strategy", "naive,claim", "--clients", "2", "--jobs",
                                  "10", "--work", "30ms"});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "\rnaive: "));
  CHECK(contains(r.out, "\rclaim: "));
  CHECK(contains(r.out, ": processed 0 of 10 job(s)\x1b[K"));
  // Each strategy's line is cleared when it ends: the table reports each once.
  CHECK(contains(r.out, "\r\x1b[KSTRATEGY"));
  RunResult quiet = on_terminal(
      url, {"-q", "bench", "--strategy", "claim", "--clients", "2", "--jobs", "4", "--work", "0"});
  INFO(dump(quiet));
  CHECK(quiet.exit_code == 0);
  CHECK(!contains(quiet.out, "\rclaim: "));
}

}  // namespace queuectl::testing::cli
