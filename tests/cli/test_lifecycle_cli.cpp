// The job lifecycle through the real binary: migrate, enqueue, claim, ack, fail, extend,
// release, show. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include <set>

#include "cli/cli_helpers.hpp"
#include "db/migrations.hpp"

namespace queuectl::testing::cli {

namespace {

const char* const kJobColumns[] = {
    "id",           "queue",        "status",     "priority",      "run_at",
    "attempts",     "max_attempts", "payload",    "result",        "last_error",
    "locked_by",    "lock_token",   "locked_at",  "lock_until",    "dedupe_key",
    "group_key",    "created_at",   "updated_at", "finished_at",   "dead_from",
    "trace_parent", "trace_state",  "progress",   "progress_note", "checkpoint"};

void check_all_columns(const json& job, std::set<std::string> extra = {}) {
  INFO(job.dump());
  REQUIRE(job.is_object());
  std::set<std::string> keys, expected(std::begin(kJobColumns), std::end(kJobColumns));
  expected.insert(extra.begin(), extra.end());
  for (const auto& [key, value] : job.items()) keys.insert(key);
  CHECK(keys == expected);
}

}  // namespace

TEST_CASE("cli: migrate applies once, is idempotent, reports status and prints SQL") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  drop_schema(fixture);
  const std::vector<Migration> embedded = migrations_for(backend_under_test());
  REQUIRE_FALSE(embedded.empty());

  SUBCASE("--print shows the SQL without applying it") {
    RunResult r = ok(url, {"migrate", "--print"});
    CHECK(r.out.find("CREATE TABLE") != std::string::npos);
    CHECK(r.out.find("job_queue") != std::string::npos);
    json status = ok_json(url, {"migrate", "--status"});
    INFO(status.dump());
    REQUIRE(status.size() == embedded.size());
    for (std::size_t i = 0; i < embedded.size(); ++i) {
      CHECK(status[i]["version"] == embedded[i].version);
      CHECK(status[i]["name"] == embedded[i].name);
      CHECK(status[i]["applied"] == false);
    }
  }

  SUBCASE("migrate, migrate again, --status") {
    RunResult first = ok(url, {"-o", "json", "migrate"});
    json applied = parse(first.out);
    INFO(first.out);
    REQUIRE(applied.size() == embedded.size());
    for (std::size_t i = 0; i < embedded.size(); ++i) {
      CHECK(applied[i]["version"] == embedded[i].version);
      CHECK(applied[i]["applied"] == true);
    }
    CHECK(first.err.find("applied " + std::to_string(embedded.size()) + " migration") !=
          std::string::npos);

    RunResult again = ok(url, {"-o", "json", "migrate"});
    CHECK(parse(again.out) == json::array());
    CHECK(again.err.find("up to date") != std::string::npos);
    CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_schema_migrations") ==
          static_cast<long long>(embedded.size()));

    json status = ok_json(url, {"migrate", "--status"});
    INFO(status.dump());
    REQUIRE(status.size() == embedded.size());
    for (std::size_t i = 0; i < embedded.size(); ++i) {
      CHECK(status[i]["version"] == embedded[i].version);
      CHECK(status[i]["applied"] == true);
      CHECK(status[i]["applied_at"].is_string());
    }

    RunResult table = ok(url, {"migrate", "--status"});
    CHECK(table.out.find("VERSION") != std::string::npos);
    CHECK(table.out.find("applied") != std::string::npos);

    // The schema works.
    enqueue(url, "after-migrate");
    CHECK(job_rows(fixture) == 1);
  }
}

TEST_CASE("cli: enqueue prints every column; table and json") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string payload =
      R"({"to":"a@example.com","n":[1,2.5,{"x":null}],"s":"h\u00e9llo \"q\""})";

  json job = enqueue(url, "emails", payload);
  check_all_columns(job, {"deduplicated"});
  CHECK(job["id"].is_number_integer());
  CHECK(job["id"].get<long long>() > 0);
  CHECK(job["queue"] == "emails");
  CHECK(job["status"] == "ready");
  CHECK(job["priority"] == 0);
  CHECK(job["attempts"] == 0);
  CHECK(job["max_attempts"] == 25);
  CHECK(job["payload"] == parse(payload));
  for (const char* key : {"result", "last_error", "locked_by", "lock_token", "locked_at",
                          "lock_until", "dedupe_key", "group_key", "finished_at", "dead_from"})
    CHECK_MESSAGE(job[key].is_null(), key);
  for (const char* key : {"run_at", "created_at", "updated_at"})
    CHECK_MESSAGE(is_rfc3339_us(job[key]), key << " = " << job[key].dump());
  CHECK(job["deduplicated"] == false);

  json with_options = enqueue(url, "emails", "[1,2,3]",
                              {"--priority", "7", "--max-attempts", "3", "--group-key", "g1"});
  CHECK(with_options["priority"] == 7);
  CHECK(with_options["max_attempts"] == 3);
  CHECK(with_options["group_key"] == "g1");
  CHECK(with_options["payload"] == json::array({1, 2, 3}));
  CHECK(with_options["id"].get<long long>() > job["id"].get<long long>());

  // No payload: {}.
  json empty = enqueue(url, "emails", "{}");
  RunResult r = ok(url, {"-o", "json", "enqueue", "emails"});
  CHECK(parse(r.out)["payload"] == json::object());

  // The default table output is for people: field names and values.
  RunResult table = ok(url, {"enqueue", "emails", R"({"k":1})"});
  CHECK(table.out.find("status") != std::string::npos);
  CHECK(table.out.find("ready") != std::string::npos);
  CHECK(table.out.find("emails") != std::string::npos);
  CHECK(job_rows(fixture) == 5);

  // show prints the same columns as enqueue.
  json shown = show(url, job["id"]);
  check_all_columns(shown);
  CHECK(shown["payload"] == parse(payload));
  CHECK(shown["created_at"] == job["created_at"]);
}

TEST_CASE("cli: claim takes a lease with a fresh token") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "work", R"({"n":1})");

  json claimed = claim_one(url, "work", {"--worker", "w-1", "--lease", "5m"});
  check_all_columns(claimed);
  CHECK(claimed["id"] == job["id"]);
  CHECK(claimed["status"] == "processing");
  CHECK(claimed["attempts"] == 1);
  CHECK(claimed["locked_by"] == "w-1");
  CHECK(is_uuid(claimed["lock_token"]));
  CHECK(is_rfc3339_us(claimed["locked_at"]));
  CHECK(is_rfc3339_us(claimed["lock_until"]));
  double lease = seconds_between(claimed["locked_at"], claimed["lock_until"]);
  CHECK(lease == doctest::Approx(300).epsilon(0.01));
  CHECK(claimed["payload"] == json{{"n", 1}});

  // A claimed job is not claimed twice.
  CHECK(claim(url, "work") == json::array());

  // Default lease: 30s; default worker: host:pid.
  enqueue(url, "work");
  json second = claim_one(url, "work");
  CHECK(seconds_between(second["locked_at"], second["lock_until"]) ==
        doctest::Approx(30).epsilon(0.05));
  CHECK(second["locked_by"].get<std::string>().find(':') != std::string::npos);
  CHECK(second["lock_token"] != claimed["lock_token"]);
}

TEST_CASE("cli: ack under the token; again is already done; a wrong token is a lost lease") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "work");
  json claimed = claim_one(url, "work");
  std::string id = id_text(claimed);
  std::string token = claimed["lock_token"];

  SUBCASE("wrong token: exit 3, job unchanged") {
    json before = show(url, claimed["id"]);
    RunResult r = queuectl(url, {"ack", id, "--token", "00000000-0000-4000-8000-000000000000"});
    check_error(r, 3, "lease");
    CHECK(show(url, claimed["id"]) == before);
    // The right token still works afterwards.
    ok(url, {"ack", id, "--token", token});
  }

  SUBCASE("ack, then ack again") {
    RunResult r = ok(url, {"ack", id, "--token", token, "--result", R"({"ok":true,"n":[1]})"});
    CHECK(r.out.find("done") != std::string::npos);
    json done = show(url, claimed["id"]);
    CHECK(done["status"] == "done");
    CHECK(done["result"] == json{{"ok", true}, {"n", json::array({1})}});
    CHECK(done["attempts"] == 1);
    CHECK(is_rfc3339_us(done["finished_at"]));

    // The same ack again (a CI step retried after a timeout): exit 0, and it says so.
    RunResult again = ok(url, {"ack", id, "--token", token});
    CHECK(again.out.find("already done") != std::string::npos);
    CHECK(show(url, claimed["id"]) == done);
  }

  SUBCASE("ack -o json") {
    json r = ok_json(url, {"ack", id, "--token", token});
    CHECK(r["id"] == claimed["id"]);
    CHECK(r["status"] == "done");
    CHECK(show(url, claimed["id"])["result"].is_null());
  }
}

TEST_CASE("cli: fail retries after a backoff, or fails for good") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();

  SUBCASE("fail: back to ready with run_at in the future; attempts stays") {
    enqueue(url, "work");
    json claimed = claim_one(url, "work");
    json failed =
        ok_json(url, {"fail", id_text(claimed), "--token", claimed["lock_token"].get<std::string>(),
                      "--error", "smtp timeout"});
    CHECK(failed["status"] == "ready");
    CHECK(failed["attempts"] == 1);
    CHECK(failed["last_error"] == "smtp timeout");
    CHECK(epoch_us(failed["run_at"]) > epoch_us(claimed["locked_at"]));
    CHECK(epoch_us(failed["run_at"]) > epoch_us(failed["updated_at"]));
    CHECK(failed["finished_at"].is_null());
    // Not due yet.
    CHECK(claim(url, "work") == json::array());
    // The old token is dead.
    RunResult again = queuectl(
        url, {"fail", id_text(claimed), "--token", claimed["lock_token"].get<std::string>()});
    check_error(again, 3, "lease");
  }

  SUBCASE("fail --permanent: failed") {
    enqueue(url, "work");
    json claimed = claim_one(url, "work");
    json failed =
        ok_json(url, {"fail", id_text(claimed), "--token", claimed["lock_token"].get<std::string>(),
                      "--error", "bad address", "--permanent"});
    CHECK(failed["status"] == "failed");
    CHECK(failed["last_error"] == "bad address");
    CHECK(is_rfc3339_us(failed["finished_at"]));
    CHECK(show(url, claimed["id"])["status"] == "failed");
  }

  SUBCASE("fail --retry-in 0s, then claim again: attempts 2") {
    enqueue(url, "work");
    json first = claim_one(url, "work");
    json failed = ok_json(url, {"fail", id_text(first), "--token",
                                first["lock_token"].get<std::string>(), "--retry-in", "0s"});
    CHECK(failed["status"] == "ready");
    json second = claim_one(url, "work");
    CHECK(second["id"] == first["id"]);
    CHECK(second["attempts"] == 2);
    CHECK(second["lock_token"] != first["lock_token"]);
  }

  SUBCASE("max_attempts 1: the first fail is final") {
    enqueue(url, "work", "{}", {"--max-attempts", "1"});
    json claimed = claim_one(url, "work");
    json failed = ok_json(url, {"fail", id_text(claimed), "--token",
                                claimed["lock_token"].get<std::string>(), "--error", "boom"});
    CHECK(failed["status"] == "failed");
    CHECK(failed["attempts"] == 1);
    CHECK(failed["last_error"] == "boom");
  }
}

TEST_CASE("cli: extend moves the lease; release gives the job back") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "work");
  json claimed = claim_one(url, "work", {"--lease", "10s"});
  std::string id = id_text(claimed);
  std::string token = claimed["lock_token"];

  SUBCASE("extend") {
    json extended = ok_json(url, {"extend", id, "--token", token, "--lease", "1h"});
    CHECK(extended["status"] == "processing");
    CHECK(extended["lock_token"] == token);
    CHECK(epoch_us(extended["lock_until"]) > epoch_us(claimed["lock_until"]));
    CHECK(seconds_between(claimed["lock_until"], extended["lock_until"]) > 3000);
    CHECK(show(url, claimed["id"])["lock_until"] == extended["lock_until"]);

    RunResult wrong = queuectl(url, {"extend", id, "--token", "not-the-token", "--lease", "1h"});
    check_error(wrong, 3, "lease");
    CHECK(show(url, claimed["id"])["lock_until"] == extended["lock_until"]);
  }

  SUBCASE("release") {
    RunResult wrong = queuectl(url, {"release", id, "--token", "not-the-token"});
    check_error(wrong, 3, "lease");
    CHECK(show(url, claimed["id"])["status"] == "processing");

    json released = ok_json(url, {"release", id, "--token", token});
    CHECK(released["status"] == "ready");
    CHECK(released["attempts"] == 0);
    CHECK(released["lock_token"].is_null());
    // Claimable again at once, with a new token.
    json again = claim_one(url, "work");
    CHECK(again["id"] == claimed["id"]);
    CHECK(again["attempts"] == 1);
    CHECK(again["lock_token"] != claimed["lock_token"]);
    // The released token is dead.
    check_error(queuectl(url, {"ack", id, "--token", token}), 3, "lease");
  }
}

TEST_CASE("cli: show of a missing job is not found") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "work");
  check_error(queuectl(url, {"show", "999999"}), 4, "999999");
  check_error(queuectl(url, {"-o", "json", "show", "999999"}), 4, "999999");
}

TEST_CASE("cli: dedupe key returns the existing job") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json first = enqueue(url, "reports", R"({"m":11})", {"--dedupe-key", "report-2026-11"});
  CHECK(first["deduplicated"] == false);
  CHECK(first["dedupe_key"] == "report-2026-11");
  RunResult r = ok(
      url, {"-o", "json", "enqueue", "reports", R"({"m":12})", "--dedupe-key", "report-2026-11"});
  json second = parse(r.out);
  CHECK(second["id"] == first["id"]);
  CHECK(second["deduplicated"] == true);
  CHECK(second["payload"] == json{{"m", 11}});
  CHECK(r.err.find("dedupe") != std::string::npos);
  CHECK(job_rows(fixture) == 1);

  // The key is per queue.
  json other = enqueue(url, "other", "{}", {"--dedupe-key", "report-2026-11"});
  CHECK(other["id"] != first["id"]);
  CHECK(other["deduplicated"] == false);
  // And holds across statuses: a done job still dedupes.
  json claimed = claim_one(url, "reports");
  ok(url, {"ack", id_text(claimed), "--token", claimed["lock_token"].get<std::string>()});
  json third = enqueue(url, "reports", "{}", {"--dedupe-key", "report-2026-11"});
  CHECK(third["id"] == first["id"]);
  CHECK(third["deduplicated"] == true);
  CHECK(job_rows(fixture) == 2);
}

TEST_CASE("cli: delays and run_at decide what is claimable; priority decides the order") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();

  SUBCASE("--delay 1h is not claimable") {
    json job = enqueue(url, "later", "{}", {"--delay", "1h"});
    CHECK(seconds_between(job["created_at"], job["run_at"]) == doctest::Approx(3600).epsilon(0.01));
    CHECK(claim(url, "later") == json::array());
    CHECK(show(url, job["id"])["status"] == "ready");
  }

  SUBCASE("--run-at in the past is claimable; in the future is not") {
    json past = enqueue(url, "at", "{}", {"--run-at", "2001-02-03T04:05:06Z"});
    CHECK(past["run_at"] == "2001-02-03T04:05:06.000000Z");
    json offset = enqueue(url, "at", "{}", {"--run-at", "2001-02-03T06:05:06.5+02:00"});
    CHECK(offset["run_at"] == "2001-02-03T04:05:06.500000Z");
    json future = enqueue(url, "at", "{}", {"--run-at", "2037-12-01T00:00:00Z"});
    json claimed = claim(url, "at", {"--limit", "10"});
    REQUIRE(claimed.size() == 2);
    std::set<long long> ids{claimed[0]["id"].get<long long>(), claimed[1]["id"].get<long long>()};
    CHECK(ids == std::set<long long>{past["id"].get<long long>(), offset["id"].get<long long>()});
    CHECK(show(url, future["id"])["status"] == "ready");
  }

  SUBCASE("priority DESC, then run_at, then id") {
    json low = enqueue(url, "p", R"({"p":1})", {"--priority", "1"});
    json high = enqueue(url, "p", R"({"p":10})", {"--priority", "10"});
    json mid = enqueue(url, "p", R"({"p":5})", {"--priority", "5"});
    json mid2 = enqueue(url, "p", R"({"p":5})", {"--priority", "5"});
    json negative = enqueue(url, "p", R"({"p":-3})", {"--priority", "-3"});
    json old =
        enqueue(url, "p", R"({"p":5})", {"--priority", "5", "--run-at", "2001-01-01T00:00:00Z"});
    CHECK(negative["priority"] == -3);
    for (const json& expected : {high, old, mid, mid2, low, negative})
      CHECK(claim_one(url, "p")["id"] == expected["id"]);
    CHECK(claim(url, "p") == json::array());
  }

  SUBCASE("queues are separate") {
    enqueue(url, "a");
    CHECK(claim(url, "b") == json::array());
    CHECK(claim(url, "a").size() == 1);
  }
}

TEST_CASE("cli: claim on an empty queue exits 0 with an empty result") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();

  RunResult as_json = ok(url, {"-o", "json", "claim", "nothing"});
  CHECK(parse(as_json.out) == json::array());
  RunResult as_ndjson = ok(url, {"-o", "ndjson", "claim", "nothing"});
  CHECK(as_ndjson.out.empty());
  RunResult quiet = ok(url, {"-q", "-o", "json", "claim", "nothing"});
  CHECK(parse(quiet.out) == json::array());
  CHECK(quiet.err.empty());
  CHECK(job_rows(fixture) == 0);
}

TEST_CASE("cli: enqueue --from and ack --from move many jobs at once") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string lines =
      "{\"queue\":\"bulk\",\"payload\":{\"n\":1}}\n"
      "{\"queue\":\"bulk\",\"payload\":{\"n\":2},\"priority\":5}\n"
      "{\"queue\":\"bulk\",\"payload\":{\"n\":3},\"delay\":\"1h\",\"dedupe_key\":\"three\"}\n";

  SUBCASE("from a file") {
    std::string file = dir.write("jobs.ndjson", lines);
    json r = ok_json(url, {"enqueue", "--from", file});
    CHECK(r["enqueued"] == 3);
    CHECK(job_rows(fixture) == 3);
    json listed = ok_json(url, {"list", "bulk"});
    REQUIRE(listed.size() == 3);
    CHECK(listed[0]["payload"] == json{{"n", 1}});
    CHECK(listed[1]["priority"] == 5);
    CHECK(listed[2]["dedupe_key"] == "three");
    CHECK(seconds_between(listed[2]["created_at"], listed[2]["run_at"]) > 3000);
  }

  SUBCASE("from stdin, then ack --from the claim's ndjson") {
    json r = ok_json(url, {"enqueue", "--from", "-"}, lines);
    CHECK(r["enqueued"] == 3);
    CHECK(job_rows(fixture) == 3);

    RunResult claimed = ok(url, {"-o", "ndjson", "claim", "bulk", "--limit", "10"});
    std::vector<json> jobs = parse_lines(claimed.out);
    REQUIRE(jobs.size() == 2);  // the third is delayed
    for (const json& j : jobs) CHECK(j["status"] == "processing");

    RunResult acked = ok(url, {"-o", "json", "ack", "--from", "-"}, claimed.out);
    CHECK(parse(acked.out)["acked"] == 2);
    for (const json& j : jobs) CHECK(show(url, j["id"])["status"] == "done");

    // Feeding the same lines again: each is already done under its own token, exit 0.
    RunResult again = queuectl(url, {"-o", "json", "ack", "--from", "-"}, claimed.out);
    INFO(dump(again));
    CHECK(again.exit_code == 0);
    CHECK(parse(again.out)["acked"] == 0);
    CHECK(parse(again.out)["already_done"] == 2);
  }

  SUBCASE("ack --from a file with results") {
    enqueue(url, "bulk");
    json job = claim_one(url, "bulk");
    std::string file = dir.write(
        "acks.ndjson",
        json{{"id", job["id"]}, {"token", job["lock_token"]}, {"result", {{"sent", true}}}}.dump() +
            "\n");
    ok(url, {"ack", "--from", file});
    json done = show(url, job["id"]);
    CHECK(done["status"] == "done");
    CHECK(done["result"] == json{{"sent", true}});
  }
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// Migrations may land out of order (on branches): a schema with the latest version but not
// an earlier one is out of date, not current.
TEST_CASE("cli: a schema missing an earlier migration is refused until migrate applies it") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"stats"});
  fixture.db().session() << "DELETE FROM queuectl_schema_migrations WHERE version = 3";
  RunResult r = queuectl(url, {"stats"});
  check_error(r, 1, "out of date");
  json status = ok_json(url, {"migrate", "--status"});
  bool pending = false;
  for (const json& m : status)
    if (m["version"] == 3) pending = m["applied"] == false;
  CHECK(pending);
}

}  // namespace queuectl::testing::cli
