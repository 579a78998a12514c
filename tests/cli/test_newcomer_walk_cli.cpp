// What a fifth walkthrough found in cron.md, workers.md, named-locks.md and the command
// reference, and a sixth in the job operations (ack --from, move, reap, extend): each case
// runs the real binary on every backend and failed on the binary before its fix.
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

// One job named twice in `ack --from`, with its token and a stale one: the report counted
// both lines by the last token (lost twice and exit 3 though the job was acked, or already
// done twice and exit 0 though a wrong token was given).
TEST_CASE("cli: ack --from counts each line of a job named twice by its own token") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string stale = "00000000-0000-4000-8000-000000000000";
  for (const bool good_first : {true, false}) {
    CAPTURE(good_first);
    enqueue(url, "q");
    const json job = claim_one(url, "q");
    const std::string id = id_text(job);
    const std::string good =
        "{\"id\":" + id + ",\"token\":\"" + job["lock_token"].get<std::string>() + "\"}\n";
    const std::string bad = "{\"id\":" + id + ",\"token\":\"" + stale + "\"}\n";
    const RunResult r =
        queuectl(url, {"-o", "json", "ack", "--from", "-"}, good_first ? good + bad : bad + good);
    CHECK(r.exit_code == 3);
    const json report = json::parse(r.out);
    CHECK(report["acked_ids"] == json::array({job["id"]}));
    CHECK(report["lost_ids"] == json::array({job["id"]}));
    CHECK(report["already_done"] == 0);
    CHECK(show(url, job["id"])["status"] == "done");
  }
}

// `move 3 --to Q` and `move --all --to Q`, Q the dead letters' own queue, cleared their
// dead_from and left them stranded there; `--from Q --to Q` was refused.
TEST_CASE("cli: move refuses to send dead letters to the queue they are in") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "w", "--dead-letter", "w-dead"});
  enqueue(url, "w", "{}", {"--max-attempts", "1"});
  const json job = claim_one(url, "w");
  ok(url, {"fail", id_text(job), "--token", job["lock_token"].get<std::string>(), "--error", "x"});
  REQUIRE(show(url, job["id"])["queue"] == "w-dead");
  rejects(fixture, {"move", id_text(job), "--to", "w-dead"}, "is a dead letter in w-dead already");
  rejects(fixture, {"move", "--all", "--to", "w-dead"}, "--to w-dead holds dead letters itself");
  // `--from` the queue they gave up in moves nothing, and says where they are.
  const RunResult from_source = queuectl(url, {"move", "--from", "w"});
  CHECK(from_source.exit_code == 0);
  CHECK(contains(from_source.err, "w's dead letters go to w-dead: queuectl move --from w-dead"));
  // Elsewhere, or back where it gave up, it still moves.
  ok(url, {"move", id_text(job)});
  CHECK(show(url, job["id"])["queue"] == "w");
  CHECK(show(url, job["id"])["dead_from"].is_null());
}

// `reap --dry-run` counted a job out of attempts in a queue with a dead-letter queue as
// failed only; the reap itself moved it there.
TEST_CASE("cli: reap --dry-run says which jobs would go to a dead-letter queue") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"queue", "r", "--dead-letter", "r-dead"});
  enqueue(url, "r", "{}", {"--max-attempts", "1"});
  const json job = claim_one(url, "r");
  age_job(fixture, job, "lock_until");
  const json dry = ok_json(url, {"reap", "r", "--dry-run"});
  CHECK(dry["dead_lettered_ids"] == json::array({job["id"]}));
  CHECK(contains(ok(url, {"reap", "r", "--dry-run"}).out, "(1 would move to a dead-letter queue)"));
  const json real = ok_json(url, {"reap", "r"});
  CHECK(real["dead_lettered_ids"] == dry["dead_lettered_ids"]);
  CHECK(real["failed_ids"] == dry["failed_ids"]);
}

// `extend` with a wrong token on a live lease, or of a finished job, blamed an expired lease.
TEST_CASE("cli: a lost lease says whether the job finished, the token is wrong, or it expired") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "e");
  const json job = claim_one(url, "e", {"--lease", "10m"});
  const std::string id = id_text(job), token = job["lock_token"].get<std::string>();
  const std::string stale = "00000000-0000-4000-8000-000000000000";
  check_error(queuectl(url, {"extend", id, "--token", stale}), 3,
              "the token does not match (the job is processing under another claim)");
  age_job(fixture, job, "lock_until");
  check_error(queuectl(url, {"extend", id, "--token", token}), 3, "its lease ended at ");
  CHECK(contains(queuectl(url, {"extend", id, "--token", token}).err,
                 "an expired lease cannot be extended: claim it again"));
  ok(url, {"reap", "e"});
  check_error(queuectl(url, {"release", id, "--token", token}), 3,
              "the job is ready, no longer processing");
}

// `purge` and `cancel` canceled the jobs waiting for what they removed or canceled (as
// dependencies.md says) without a word: they now name them on stderr.
TEST_CASE("cli: purge and cancel name the waiting jobs they canceled with their parents") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const json parent = enqueue(url, "p");
  const json child = enqueue(url, "c", "{}", {"--after", id_text(parent)});
  const json grandchild = enqueue(url, "c", "{}", {"--after", id_text(child)});
  const RunResult canceled = ok(url, {"cancel", id_text(parent)});
  CHECK(canceled.out == "canceled 1 job(s): " + id_text(parent) + "\n");
  CHECK(contains(canceled.err, "also canceled 2 job(s) that waited for them (enqueue --after): " +
                                   id_text(child) + " " + id_text(grandchild)));
  CHECK(show(url, grandchild["id"])["status"] == "canceled");
  // A failed parent purged while a job waits for it (policy wait).
  enqueue(url, "f", "{}", {"--max-attempts", "1"});
  const json failing = claim_one(url, "f");
  ok(url, {"fail", id_text(failing), "--token", failing["lock_token"].get<std::string>(), "--error",
           "x"});
  const json waiter =
      enqueue(url, "w", "{}", {"--after", id_text(failing), "--on-parent-failure", "wait"});
  CHECK(show(url, waiter["id"])["status"] == "waiting");
  const RunResult dry = ok(url, {"purge", "--older-than", "0s", "--status", "failed", "--dry-run"});
  CHECK(!contains(dry.err, "also canceled"));
  const RunResult purged = ok(url, {"purge", "--older-than", "0s", "--status", "failed"});
  CHECK(contains(purged.err,
                 "also canceled 1 job(s) that waited for a job purged before it was "
                 "done (enqueue --after): " +
                     id_text(waiter)));
  CHECK(show(url, waiter["id"])["status"] == "canceled");
  // -q keeps stderr quiet, the cancel still done.
  enqueue(url, "f", "{}", {"--max-attempts", "1"});
  const json failing2 = claim_one(url, "f");
  ok(url, {"fail", id_text(failing2), "--token", failing2["lock_token"].get<std::string>(),
           "--error", "x"});
  const json waiter2 =
      enqueue(url, "w", "{}", {"--after", id_text(failing2), "--on-parent-failure", "wait"});
  CHECK(ok(url, {"-q", "purge", "--older-than", "0s", "--status", "failed"}).err.empty());
  CHECK(show(url, waiter2["id"])["status"] == "canceled");
}

}  // namespace queuectl::testing::cli
