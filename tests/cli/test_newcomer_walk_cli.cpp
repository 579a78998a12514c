// What a fifth walkthrough found in cron.md, workers.md, named-locks.md and the command
// reference: each case runs the real binary on every backend and failed on the binary
// before its fix.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

// `lock n echo -v hello` ran `echo hello` verbosely: CLI11 took -v, among the command's
// words, for queuectl's own. Without `--` the command must be the line's last words as typed.
TEST_CASE("cli: lock and work refuse a command whose options queuectl would take, without --") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  rejects(fixture, {"lock", "n", "echo", "-v", "hello"}, "put -- before the command");
  rejects(fixture, {"lock", "n", "true", "--wait", "5s"}, "put -- before the command");
  enqueue(url, "wq");
  rejects(fixture, {"work", "wq", "--drain", "echo", "-q"}, "put -- before the command");
  // With --, every word is the command's; without it, a plain command still runs.
  const RunResult with = queuectl(url, {"lock", "n", "--", "echo", "-v", "hello"});
  CHECK(with.exit_code == 0);
  CHECK(with.out == "-v hello\n");
  const RunResult plain = queuectl(url, {"-q", "lock", "n", "echo", "hello"});
  CHECK(plain.exit_code == 0);
  CHECK(plain.out == "hello\n");
}

// A --run-at on 9999-12-31 was taken for the "waiting for other jobs" stand-in (status
// waiting, counted so by stats), and 23:59:59.999999 failed with a driver error (exit 1).
TEST_CASE(
    "cli: enqueue refuses a run_at on the last day of 9999, and a local time that does "
    "not exist") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (const char* at :
       {"9999-12-31T00:00:00Z", "9999-12-31T23:59:59.999999Z", "9999-12-30T23:00:00-02:00"}) {
    CAPTURE(at);
    rejects(fixture, {"enqueue", "q", "{}", "--run-at", at}, "outside 1000-01-01 to 9999-12-30");
  }
  rejects(fixture, {"enqueue", "--from", "-"}, "line 2: time '9999-12-31T12:00:00Z' is outside",
          "{\"queue\":\"q\"}\n{\"queue\":\"q\",\"run_at\":\"9999-12-31T12:00:00Z\"}\n");
  // The day before is a plain scheduled job (MariaDB's TIMESTAMP columns end in 2038).
  if (backend_under_test() != Backend::mysql) {
    const json last = enqueue(url, "q", "{}", {"--run-at", "9999-12-30T23:59:59Z"});
    CHECK(last["status"] == "ready");
    CHECK(last["run_at"] == "9999-12-30T23:59:59.000000Z");
    const json stats = ok_json(url, {"stats", "q"});
    CHECK(stats[0]["scheduled"] == 1);
    CHECK(stats[0]["waiting"] == 0);
  }
  // 02:30 on the night Berlin's clocks go from 02:00 to 03:00 does not exist: date(1)
  // refuses it, and so does enqueue (it was moved to 01:30 UTC).
  const std::string before = db_fingerprint(fixture);
  const RunResult gap = queuectl(url, {"enqueue", "q", "{}", "--run-at", "2027-03-28 02:30"}, "",
                                 {{"TZ", "Europe/Berlin"}});
  check_usage_error(gap, "does not exist in the local time zone");
  CHECK(db_fingerprint(fixture) == before);
  // The hour after the change exists.
  const RunResult after =
      queuectl(url, {"enqueue", "q", "{}", "--run-at", "2027-03-28 03:30", "--field", "run_at"}, "",
               {{"TZ", "Europe/Berlin"}});
  CHECK(after.exit_code == 0);
  CHECK(after.out == "2027-03-28T01:30:00.000000Z\n");
}

// `{"name":"a",...,"schedule":"@hourly"}` after `"schedule":"@daily"` was taken silently, the
// last value winning; so were repeated keys in enqueue --from and ack --from.
TEST_CASE("cli: a key given twice in a line of input is refused") {
  FreshDatabase fixture;
  rejects(fixture, {"cron", "apply", "-"}, "line 1: \"schedule\" is given twice",
          "{\"name\":\"a\",\"schedule\":\"@daily\",\"queue\":\"q\",\"schedule\":\"@hourly\"}\n");
  rejects(fixture, {"enqueue", "--from", "-"}, "line 2: \"queue\" is given twice",
          "{\"queue\":\"q\"}\n{\"queue\":\"q\",\"payload\":{},\"queue\":\"r\"}\n");
  const json job = enqueue(fixture.url(), "q");
  const json claimed = ok_json(fixture.url(), {"claim", "q"});
  REQUIRE(claimed.size() == 1);
  const std::string line = "{\"id\":" + id_text(job) + ",\"token\":\"" +
                           claimed[0]["lock_token"].get<std::string>() +
                           "\",\"id\":" + id_text(job) + "}\n";
  rejects(fixture, {"ack", "--from", "-"}, "\"id\" is given twice", line);
  // A key repeated inside the payload is the payload's own.
  ok(fixture.url(), {"enqueue", "--from", "-"},
     "{\"queue\":\"q\",\"payload\":{\"a\":1,\"a\":2}}\n");
}

// `cron resume` of a schedule whose stored zone this host lacks said `unknown time zone` with
// exit 2, as if the command line were wrong, and did not name the schedule.
TEST_CASE("cli: cron resume of a schedule that cannot fire names it and what to do") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"cron", "add", "mr", "0 3 * * *", "q", "--tz", "Europe/Berlin"});
  ok(url, {"cron", "pause", "mr"});
  fixture.db().session()
      << "UPDATE queuectl_schedules SET time_zone = 'Moon/Tranquility' WHERE name = 'mr'";
  const RunResult r = queuectl(url, {"cron", "resume", "mr"});
  check_error(r, 1, "schedule mr cannot fire: unknown time zone \"Moon/Tranquility\"");
  CHECK(contains(r.err, "queuectl cron add mr"));
  CHECK(ok_json(url, {"cron", "show", "mr"})["paused"] == true);
}

// `cron show --next` of an `@every 36500d` schedule went on past 9999 into negative years.
TEST_CASE("cli: cron show --next stops before the year 10000") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"cron", "add", "big", "@every 36500d", "q"});
  const RunResult r = queuectl(url, {"-o", "json", "cron", "show", "big", "--next", "1000"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json shown = json::parse(r.out);
  const json& next = shown["next_runs"];
  REQUIRE(next.is_array());
  CHECK(next.size() >= 70);
  CHECK(next.size() <= 80);
  for (const json& t : next) {
    const std::string utc = t["at"].get<std::string>();
    CAPTURE(utc);
    CHECK(utc.size() == 20);
    CHECK(utc < "9999-12-31T23:59:59Z");
    CHECK(utc.front() != '-');
  }
  CHECK(contains(r.err, "schedule big fires no more before the year 10000"));
}

// `show --field status 1` took the 1 for a field name: --field takes one word, its names
// separated by commas; given twice, both count.
TEST_CASE("cli: --field takes one word, and may be given twice") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const json job = enqueue(url, "emails");
  const RunResult r = queuectl(url, {"show", "--field", "status", id_text(job)});
  CHECK(r.exit_code == 0);
  CHECK(r.out == "ready\n");
  const RunResult listed = queuectl(url, {"list", "--field", "id", "emails"});
  CHECK(listed.exit_code == 0);
  CHECK(listed.out == id_text(job) + "\n");
  const RunResult both = queuectl(url, {"show", id_text(job), "--field", "id", "--field", "queue"});
  CHECK(both.exit_code == 0);
  CHECK(both.out == id_text(job) + "\temails\n");
}

// A lock name that is not UTF-8 was shown with U+FFFD replacement characters; every other
// error shows such bytes as \xHH.
TEST_CASE("cli: an invalid lock name's bytes are shown as \\xHH") {
  FreshDatabase fixture;
  rejects(fixture, {"lock", "\xff\xfe", "--", "true"}, "invalid lock name '\\xff\\xfe'");
}

// `--db sqlite:DIR/` failed with the driver's "unable to open database file", exit 1.
TEST_CASE("cli: an SQLite URL naming a folder is refused with exit 2" *
          doctest::skip(backend_under_test() != Backend::sqlite)) {
  TempDir dir;
  for (const std::string& url : {"sqlite:" + dir.path() + "/", "sqlite:" + dir.path()}) {
    CAPTURE(url);
    const RunResult r = queuectl(url, {"migrate"});
    check_usage_error(r, "names a folder: give the path of a file in it");
    CHECK(std::filesystem::is_empty(dir.path()));
  }
}

}  // namespace queuectl::testing::cli
