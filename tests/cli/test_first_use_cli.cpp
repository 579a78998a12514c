// What a new user met on a first try (a walkthrough of the README and the docs): numbers read
// as octal, a password in an error, a report -q did not silence, messages that named the
// wrong thing. Each case runs the real binary on every backend.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli/cli_helpers.hpp"
#include "core/db_url.hpp"

namespace queuectl::testing::cli {

// CLI11 read whole numbers as C does (base 0): --priority 010 stored 8, 0x10 16, `true` 1.
// A number is decimal everywhere now, as the options queuectl reads itself read it.
TEST_CASE("cli: numbers on the command line are decimal; 0x10, true and 1e3 are refused") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const json job = enqueue(url, "dec", "{}", {"--priority", "010", "--max-attempts", "025"});
  CHECK(job["priority"] == 10);
  CHECK(job["max_attempts"] == 25);
  CHECK(enqueue(url, "dec", "{}", {"--priority", "-007"})["priority"] == -7);
  CHECK(enqueue(url, "dec", "{}", {"--priority", "+5"})["priority"] == 5);
  for (int i = 0; i < 10; ++i) enqueue(url, "many");
  CHECK(claim(url, "many", {"--limit", "08"}).size() == 8);  // 08 is no octal to refuse
  ok(url, {"cron", "add", "dec", "@daily", "dec", "--priority", "010"});
  CHECK(ok_json(url, {"cron", "show", "dec"})["priority"] == 10);

  for (const char* bad : {"0x10", "true", "1e3", "1.5", "10abc", "--", "-"}) {
    CAPTURE(bad);
    rejects(fixture, {"enqueue", "dec", "{}", std::string("--priority=") + bad},
            "--priority: '" + std::string(bad) + "' is not a whole number");
  }
  rejects(fixture, {"enqueue", "dec", "{}", "--priority", "2147483648"},
          "--priority: '2147483648' is out of range");
  rejects(fixture, {"claim", "dec", "--limit", "99999999999"},
          "--limit: '99999999999' is out of range");
  rejects(fixture, {"cron", "add", "other", "@daily", "dec", "--misfire-limit", "0x5"},
          "--misfire-limit: '0x5' is not a whole number (write it in decimal digits)");
  rejects(fixture, {"lock", "name", "-E", "0x5", "--", "true"}, "'0x5' is not a whole number");
  rejects(fixture, {"work", "dec", "--concurrency", "010x", "--", "true"},
          "--concurrency: '010x' is not a whole number");
  // Options whose text queuectl reads itself keep their own messages, with the range.
  rejects(fixture, {"queue", "dec", "--max-processing", "none"}, "from 0 (no limit) to 1000000");
  ok(url, {"queue", "dec", "--max-processing", "007"});
  CHECK(ok_json(url, {"queue", "dec"})["max_processing"] == 7);
  // 0 is not "the default" when it is given: it is not a positive number of jobs a claim.
  rejects(fixture, {"work", "dec", "--batch", "0", "--drain", "--", "true"}, "--batch 0");
}

TEST_CASE("cli: a sqlite:// URL with a user and password is refused without the password") {
  FreshDatabase fixture;
  for (const char* url : {"sqlite://app:s3cret@dbhost/jobs.db", "sqlite://s3cret@dbhost",
                          "sqlite://app:s3cret@dbhost"}) {
    CAPTURE(url);
    RunResult r = queuectl(url, {"enqueue", "q", "{}"});
    check_usage_error(r, "names a user and a host, but SQLite opens a file");
    CHECK(r.err.find("s3cret") == std::string::npos);
    RunResult env = run_process({QUEUECTL_BINARY, "stats"}, "", {{"QUEUECTL_DB", url}});
    check_usage_error(env, "sqlite://***@dbhost");
    CHECK(env.err.find("s3cret") == std::string::npos);
  }
}

// enqueue --from prints counts: --field printed nothing there, with exit 0, and a script
// reading ids got none. -q left the counts, and `queue`'s report of a change, on stdout.
TEST_CASE("cli: enqueue --from refuses --field; -q silences the reports of queue and --from") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::string line = "{\"queue\":\"imports\",\"payload\":{}}\n";
  rejects(fixture, {"enqueue", "--from", "-", "--field", "id"}, "prints only counts", line);

  RunResult quiet = ok(url, {"-q", "enqueue", "--from", "-"}, line);
  CHECK(quiet.out.empty());
  CHECK(quiet.err.empty());
  CHECK(job_rows(fixture) == 1);
  CHECK(ok(url, {"enqueue", "--from", "-"}, line).out == "enqueued 1 job(s)\n");
  CHECK(parse(ok(url, {"-q", "-o", "json", "enqueue", "--from", "-"}, line).out)["enqueued"] == 1);
  CHECK(job_rows(fixture) == 3);

  RunResult set = ok(url, {"-q", "queue", "imports", "--max-processing", "5", "--retain", "14d"});
  CHECK(set.out.empty());
  CHECK(ok(url, {"queue", "imports", "--max-processing", "4"}).out ==
        "queue imports: max processing 4\n");
  const json settings = ok_json(url, {"-q", "queue", "imports", "--retain", "7d"});
  CHECK(settings["max_processing"] == 4);
  CHECK(settings["retain"] == "7d");
  // Showing the settings is data, not a report: -q prints them.
  CHECK(ok(url, {"-q", "queue", "imports"}).out.find("max_processing") != std::string::npos);
  // A migrate that applies nothing prints no table header over no rows.
  CHECK(ok(url, {"migrate"}).out.empty());
}

// Each command says which statuses it takes; `waiting` is a status where jobs are listed,
// and not "unknown" where it is not taken.
TEST_CASE("cli: a status a command does not take is named with the ones it does") {
  FreshDatabase fixture;
  enqueue(fixture.url(), "test");
  rejects(fixture, {"list", "--status", "finished"},
          "unknown status 'finished': expected ready, waiting, processing, done, failed or "
          "canceled");
  rejects(fixture, {"retry", "--queue", "test", "--status", "waiting"},
          "retry takes --status failed or canceled, not waiting");
  rejects(fixture, {"retry", "--queue", "test", "--status", "bogus"},
          "unknown status 'bogus': retry takes --status failed or canceled");
  rejects(fixture, {"purge", "--status", "waiting", "--older-than", "1d"},
          "purge takes --status done, failed or canceled, not waiting");
  rejects(fixture, {"purge", "--status", "ready", "--older-than", "1d"},
          "purge takes --status done, failed or canceled, not ready");
  rejects(fixture, {"cancel", "--queue", "test", "--status", "bogus"},
          "unknown status 'bogus': cancel takes --status ready, waiting, failed or processing");
  rejects(fixture, {"cancel", "--queue", "test", "--status", "done"},
          "cancel takes --status ready, waiting, failed or processing, not done");
}

// A subcommand's mistake points to the subcommand's own help, and a mistyped option of it
// gets the nearest of its own options (`cron tick --queu` was offered --quiet).
TEST_CASE("cli: a mistake in a subcommand names its help and the nearest of its options") {
  FreshDatabase fixture;
  rejects(fixture, {"cron", "add", "nightly", "@daily", "reports", "--priorty", "5"},
          "did you mean --priority? (see queuectl cron add --help)");
  rejects(fixture, {"cron", "tick", "--queu", "reports"},
          "did you mean --queue? (see queuectl cron tick --help)");
  rejects(fixture, {"cron", "show", "nightly", "--nxt", "3"},
          "did you mean --next? (see queuectl cron show --help)");
  rejects(fixture, {"cron", "add", "nightly", "@daily", "reports", "--tz", ""},
          "(see queuectl cron add --help)");
  rejects(fixture, {"batch", "create", "--on-sucess", "q", "{}"},
          "did you mean --on-success? (see queuectl batch create --help)");
  rejects(fixture, {"cron", "frob"}, "(see queuectl cron --help)");
}

// Messages that named the wrong problem: an over-long duration called malformed, a
// checkpoint told to raise a limit that cannot be raised, an NDJSON line's key called by its
// command-line option.
TEST_CASE("cli: messages name the real problem: durations, checkpoints, NDJSON keys") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  rejects(fixture, {"enqueue", "q", "{}", "--delay", "36501d"},
          "'36501d': longer than 36500d (100 years)");
  rejects(fixture, {"enqueue", "q", "{}", "--delay", "1y"}, "expected e.g. 250ms");
  // 36500d itself is taken (purge reads it and stores nothing: MySQL's TIMESTAMP ends in 2038).
  CHECK(ok_json(url, {"purge", "--older-than", "36500d", "--dry-run"})["would_purge"] == 0);

  enqueue(url, "cp");
  const json job = claim_one(url, "cp");
  const std::string big = "{\"rows\":\"" + std::string(70000, 'x') + "\"}";
  for (const char* limit : {"1048576", "10485760"}) {
    CAPTURE(limit);
    RunResult r = queuectl(url,
                           {"--max-payload", limit, "extend", id_text(job), "--token",
                            job["lock_token"].get<std::string>(), "--checkpoint", "-"},
                           big);
    check_usage_error(r, "over the limit of 65536 for a checkpoint");
    CHECK(r.err.find("--max-payload") == std::string::npos);
  }
  // Below 64 KiB, --max-payload is the limit, and raising it is the advice.
  check_usage_error(queuectl(url,
                             {"--max-payload", "1000", "extend", id_text(job), "--token",
                              job["lock_token"].get<std::string>(), "--checkpoint", "-"},
                             big),
                    "over the limit of 1000 (raise it with --max-payload)");

  rejects(fixture, {"enqueue", "--from", "-"}, "line 1: invalid \"max_attempts\" 0",
          "{\"queue\":\"jobs\",\"max_attempts\":0}\n");
  rejects(fixture, {"enqueue", "--from", "-"},
          "line 1: \"delay\" and \"run_at\" exclude each other",
          "{\"queue\":\"jobs\",\"delay\":\"5m\",\"run_at\":\"2030-01-01T00:00:00Z\"}\n");
  rejects(fixture, {"enqueue", "--from", "-"}, "line 1: invalid \"dedupe_key\"",
          "{\"queue\":\"jobs\",\"dedupe_key\":\"a\\tb\"}\n");
  // The options given with --from are checked first, and named as options.
  rejects(fixture, {"enqueue", "--from", "-", "--max-attempts", "0"}, "invalid --max-attempts 0",
          "{\"queue\":\"jobs\"}\n");
  rejects(fixture, {"cron", "apply", "-"}, "-: line 1: invalid \"misfire_limit\" 0",
          "{\"name\":\"n1\",\"schedule\":\"@daily\",\"queue\":\"q\",\"misfire\":\"all\","
          "\"misfire_limit\":0}\n");
}

// The RUN_AT of a job waiting for other jobs is a stand-in (9999-12-31): the table showed
// "in 7978y". It is `-` there, as `show` has it; JSON keeps the stored value.
TEST_CASE("cli: list shows a waiting job's RUN_AT as -") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const json parent = enqueue(url, "build");
  const json child = enqueue(url, "test", "{}", {"--after", id_text(parent)});
  for (const char* format : {"table", "wide"}) {
    CAPTURE(format);
    RunResult r = ok(url, {"-o", format, "list", "test"});
    std::istringstream lines(r.out);
    std::string header, row;
    std::getline(lines, header);
    std::getline(lines, row);
    std::istringstream h(header), cells(row);
    std::vector<std::string> names, values;
    for (std::string w; h >> w;) names.push_back(w);
    for (std::string w; cells >> w;) values.push_back(w);
    const auto at = std::find(names.begin(), names.end(), "RUN_AT") - names.begin();
    REQUIRE(at < static_cast<long>(values.size()));
    CHECK(values[2] == "waiting");
    CHECK(values[at] == "-");
  }
  // JSON keeps the stored stand-in (9999-12-31; 2038-01-19 on MySQL), a time like any other.
  const std::string stored = show(url, child["id"])["run_at"].get<std::string>();
  CHECK((stored.rfind("9999-12-31", 0) == 0 || stored.rfind("2038-01-19", 0) == 0));
}

// -v was taken by every command and said something only in work, lock and serve.
TEST_CASE("cli: -v says where each command connected and what it took, without a password") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult r = ok(url, {"-v", "stats"});
  CHECK(r.err.find("queuectl: connected to " + DbUrl::parse(url).redacted() + " in ") !=
        std::string::npos);
  CHECK(r.err.find("queuectl: the schema is current (checked in ") != std::string::npos);
  CHECK(r.err.find("queuectl: stats took ") != std::string::npos);
  if (const auto password = DbUrl::parse(url).password; password && !password->empty())
    CHECK(r.err.find(":" + *password + "@") == std::string::npos);
  // Without -v, none of it.
  CHECK(ok(url, {"stats"}).err.empty());
}

// A second walkthrough (workers, schedules, dead letters, completions, help).

// `lock -- CMD` and `work -- CMD` without the NAME or QUEUE: CLI11 took the command's first
// word for it, and `lock -- env echo hi` ran `echo hi` under a lock named env, exit 0.
TEST_CASE("cli: lock and work without a NAME or QUEUE before -- are refused, nothing run") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  const json waiting = enqueue(url, "env");
  rejects(fixture, {"lock", "--", "touch", marker}, "NAME is missing");
  rejects(fixture, {"lock", "--", "sh", "-c", "touch " + marker}, "NAME is missing");
  rejects(fixture, {"work", "--drain", "--", "env", "cat"}, "QUEUE is missing");
  rejects(fixture, {"work", "--drain", "--", "./send.sh"}, "QUEUE is missing");
  CHECK_FALSE(std::ifstream(marker).good());
  CHECK(show(url, waiting["id"])["status"] == "ready");
  // With the name, the same command line runs.
  ok(url, {"lock", "name", "--", "touch", marker});
  CHECK(std::ifstream(marker).good());
}

// `work --drain` ended at its first empty claim, before the housekeeping's first turn: a
// schedule already due made no job, and the drain reported nothing to do.
TEST_CASE("cli: work --drain fires the queue's due schedules before it drains") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  ok(url, {"cron", "add", "nightly", "@hourly", "reports"});
  fixture.db().session() << "UPDATE queuectl_schedules SET next_fire = next_fire - 7200";
  RunResult r = ok(url, {"work", "reports", "--drain", "--", "true"});
  // One job for the missed tick two hours back, and one more for this hour's tick when the
  // test runs within --misfire-after (60s) of the hour: as many jobs as fires said, all done.
  std::size_t fires = 0;
  for (std::size_t at = 0; (at = r.err.find("schedule nightly: job ", at)) != std::string::npos;
       ++at)
    ++fires;
  CHECK(fires >= 1);
  const json jobs = ok_json(url, {"list", "reports"});
  CHECK(jobs.size() == fires);
  for (const json& job : jobs) CHECK(job["status"] == "done");
  // --no-housekeeping leaves schedules to others.
  fixture.db().session() << "UPDATE queuectl_schedules SET next_fire = next_fire - 7200";
  CHECK(ok(url, {"work", "reports", "--drain", "--no-housekeeping", "--", "true"})
            .err.find("schedule nightly") == std::string::npos);
}

TEST_CASE("cli: cron show -o json has the last job's status; cron add -o json says what changed") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  CHECK(ok_json(url, {"cron", "add", "digest", "@daily", "emails"})["change"] == "added");
  CHECK(ok_json(url, {"cron", "add", "digest", "@daily", "emails"})["change"] == "unchanged");
  CHECK(ok_json(url, {"cron", "add", "digest", "@hourly", "emails"})["change"] == "replaced");
  ok(url, {"cron", "trigger", "digest"});
  const json shown = ok_json(url, {"cron", "show", "digest"});
  CHECK(shown["last_job_status"] == "ready");
  json listed;
  for (const json& s : ok_json(url, {"cron", "list"}))
    if (s["name"] == "digest") listed = s;
  CHECK(listed["last_job_status"] == shown["last_job_status"]);
  CHECK(listed["last_job_id"] == shown["last_job_id"]);
}

// --batch with ids was taken and ignored while --status, --dry-run and the rest were refused;
// a move into the queue the dead letters are in only forgot where they came from.
TEST_CASE("cli: cancel and move refuse --batch with ids, and a move into the same queue") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const json job = enqueue(url, "c");
  rejects(fixture, {"cancel", id_text(job), "--batch", "10"}, "--batch go with --queue");
  rejects(fixture, {"move", id_text(job), "--batch", "5"},
          "--batch goes with --from or --all, not with job ids");
  rejects(fixture, {"move", "--from", "orders-dead", "--to", "orders-dead"},
          "--to orders-dead is the queue the dead letters are in");
  CHECK(show(url, job["id"])["status"] == "ready");
}

// batch create's two-value options got CLI11's own words ("At Most 2 required but received
// 3"), and a payload that was no object did not say whose it was.
TEST_CASE("cli: batch create names the option whose values or payload are wrong") {
  FreshDatabase fixture;
  rejects(fixture, {"batch", "create", "--on-success", "report", "[]"},
          "--on-success takes 2 values, not 1 (a value of [] counts as none)");
  rejects(fixture, {"batch", "create", "--on-success", "report", "{}", "extra"},
          "--on-success takes 2 values, not 3");
  rejects(fixture, {"batch", "create", "--on-success", "report", "\"x\""},
          "--on-success payload: not a JSON object");
  rejects(fixture,
          {"batch", "create", "--on-success", "report", "{}", "--on-failure", "alert", "[1]"},
          "--on-failure payload: not a JSON object");
}

// A second pause said "paused" again, as if it had changed something.
TEST_CASE("cli: pausing a paused queue says so, as resuming a running one does") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "emails");
  RunResult first = ok(url, {"pause", "emails"});
  CHECK(first.out == "queue emails paused\n");
  RunResult again = ok(url, {"pause", "emails"});
  CHECK(again.out.empty());
  CHECK(again.err == "queue emails was already paused\n");
  CHECK(ok_json(url, {"pause", "emails"})["changed"] == false);
  CHECK(ok_json(url, {"resume", "emails"})["changed"] == true);
  CHECK(ok_json(url, {"resume", "emails"})["changed"] == false);
  CHECK(ok_json(url, {"pause", "emails"})["changed"] == true);
}

}  // namespace queuectl::testing::cli
