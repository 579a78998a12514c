// What got in the way of operators and scripts in a first week (issue 14), each checked on
// the real binary.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: ack --from takes the JSON array that claim -o json prints") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "arr", "{\"n\":" + std::to_string(i) + "}");
  RunResult claimed = ok(url, {"-o", "json", "claim", "arr", "--limit", "3"});
  REQUIRE(parse(claimed.out).size() == 3);
  json acked = ok_json(url, {"ack", "--from", "-"}, claimed.out);
  CHECK(acked["acked"] == 3);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2") == 3);
  // An empty array acks nothing, as empty NDJSON does.
  CHECK(ok_json(url, {"ack", "--from", "-"}, "[]\n")["acked"] == 0);
}

TEST_CASE("cli: ack --from refuses a broken array and names the element at fault") {
  FreshDatabase fixture;
  json job = enqueue(fixture.url(), "arr", "{}");
  json held = claim_one(fixture.url(), "arr");
  const std::string token = held["lock_token"].get<std::string>();
  rejects(fixture, {"ack", "--from", "-"}, "not a JSON array", "[{\"id\":1,");
  rejects(fixture, {"ack", "--from", "-"}, "element 2: no \"token\"",
          "[{\"id\":" + id_text(held) + ",\"token\":\"" + token + "\"},\n {\"id\":2}]\n");
  // Nothing was acked: the whole input is checked first.
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 1") == 1);
}

TEST_CASE("cli: claim and work on a paused queue say that it is paused and how to resume") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "held", "{}");
  ok(url, {"pause", "held"});
  RunResult claimed = ok(url, {"claim", "held"});
  CHECK(claimed.err.find("queue held is paused") != std::string::npos);
  CHECK(claimed.err.find("queuectl resume held") != std::string::npos);
  RunResult worked = ok(url, {"work", "held", "--drain", "--", "true"});
  CHECK(worked.err.find("queue held is paused") != std::string::npos);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 1);
  // A queue that is only empty says so, not "paused".
  RunResult empty = ok(url, {"claim", "other"});
  CHECK(empty.err.find("paused") == std::string::npos);
  CHECK(empty.err.find("no job due in queue other") != std::string::npos);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: --run-at without an offset is local time in TZ; with one, TZ does not matter") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult local = ok(url, {"-o", "json", "enqueue", "tz", "{}", "--run-at", "2026-11-23 10:00"},
                       "", {{"TZ", "KST-9"}});
  CHECK(parse(local.out)["run_at"] == "2026-11-23T01:00:00.000000Z");
  RunResult utc = ok(url, {"-o", "json", "enqueue", "tz", "{}", "--run-at", "2026-11-23T10:00Z"},
                     "", {{"TZ", "KST-9"}});
  CHECK(parse(utc.out)["run_at"] == "2026-11-23T10:00:00.000000Z");
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: bare queuectl prints the overview; parse errors name the option and its help") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult bare = run_process({QUEUECTL_BINARY}, "", {{"QUEUECTL_DB", url}});
  INFO(dump(bare));
  CHECK(bare.exit_code == 0);
  CHECK(bare.out.find("Consuming") != std::string::npos);
  CHECK(bare.out.find("claim") != std::string::npos);
  CHECK(bare.err.empty());

  RunResult limit = queuectl(url, {"claim", "q", "--limit", "abc"});
  check_usage_error(limit, "--limit: 'abc' is not a whole number (see queuectl claim --help)");
  RunResult missing = queuectl(url, {"claim"});
  check_usage_error(missing, "QUEUE is missing (see queuectl claim --help)");
  RunResult extra = queuectl(url, {"claim", "q", "extra"});
  check_usage_error(extra, "unexpected argument 'extra' (see queuectl claim --help)");
  RunResult none = queuectl(url, {"-v"});
  check_usage_error(none, "no command given (see queuectl --help)");
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: list --newest-first pages from the newest job down with --before") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(enqueue(url, "pages", "{}")["id"].get<std::int64_t>());
  RunResult first = ok(url, {"-o", "json", "list", "pages", "--newest-first", "--limit", "2"});
  json page = parse(first.out);
  REQUIRE(page.size() == 2);
  CHECK(page[0]["id"] == ids[4]);
  CHECK(page[1]["id"] == ids[3]);
  CHECK(first.err.find("add --before " + std::to_string(ids[3])) != std::string::npos);
  json next = ok_json(
      url, {"list", "pages", "--newest-first", "--limit", "2", "--before", std::to_string(ids[3])});
  REQUIRE(next.size() == 2);
  CHECK(next[0]["id"] == ids[2]);
  CHECK(next[1]["id"] == ids[1]);
  // Each bound is a bound in either order: --before oldest first stops there, --after
  // newest first stops there.
  json below = ok_json(url, {"list", "pages", "--before", std::to_string(ids[2])});
  CHECK(below == json::array({show(url, ids[0]), show(url, ids[1])}));
  json above = ok_json(url, {"list", "pages", "--newest-first", "--after", std::to_string(ids[2])});
  REQUIRE(above.size() == 2);
  CHECK(above[0]["id"] == ids[4]);
  CHECK(above[1]["id"] == ids[3]);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: -q prints data only, and nothing when there is none") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto quiet = [&](std::vector<std::string> args) {
    args.insert(args.begin(), "-q");
    RunResult r = ok(url, args);
    CHECK(r.err.empty());
    return r.out;
  };
  // Nothing to report, nothing asked for that exists: silence.
  CHECK(quiet({"migrate"}).empty());
  CHECK(quiet({"claim", "q"}).empty());
  CHECK(quiet({"list"}).empty());
  CHECK(quiet({"purge", "--older-than", "1h"}).empty());
  // Reports of what was done: silence too.
  enqueue(url, "q", "{}");
  json job = claim_one(url, "q");
  const std::string id = id_text(job), token = job["lock_token"].get<std::string>();
  CHECK(quiet({"extend", id, "--token", token, "--lease", "1m"}).empty());
  CHECK(quiet({"pause", "q"}).empty());
  CHECK(quiet({"resume", "q"}).empty());
  CHECK(quiet({"ack", id, "--token", token}).empty());
  // Data is still printed, and -o json is always printed.
  enqueue(url, "q", "{\"n\":2}");
  CHECK(quiet({"list", "q"}).find("\"n\"") != std::string::npos);
  CHECK(parse(quiet({"-o", "json", "pause", "q"}))["paused"] == true);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// The node_exporter line of the guide (docs/operating.md, "Metrics"), run as cron would run
// it (sh -c), with the textfile folder in a temporary one: a failed stats leaves nothing
// behind, a good one the file.
TEST_CASE("cli: the README's textfile-collector line leaves no temporary file when stats fails") {
  std::ifstream readme(QUEUECTL_SOURCE_DIR "/docs/operating.md");
  std::string line, recipe;
  while (std::getline(readme, line))
    if (line.rfind("* * * * *  d=/var/lib/node_exporter/textfile;", 0) == 0) recipe = line;
  REQUIRE_MESSAGE(!recipe.empty(), "docs/operating.md's textfile-collector line is gone");
  recipe = recipe.substr(std::string("* * * * *  ").size());
  TempDir dir;
  recipe.replace(recipe.find("/var/lib/node_exporter/textfile"),
                 std::string("/var/lib/node_exporter/textfile").size(), dir.path());
  recipe.replace(recipe.find("queuectl -q"), std::string("queuectl").size(),
                 std::string("'") + QUEUECTL_BINARY + "'");
  auto files = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
      names.push_back(e.path().filename().string());
    return names;
  };
  // Database down (here: a file in a folder that does not exist).
  RunResult down = run_process({"sh", "-c", recipe}, "",
                               {{"QUEUECTL_DB", "sqlite:///nonexistent-dir/queue.db"}});
  INFO(dump(down));
  CHECK(down.err.find("queuectl: error") != std::string::npos);  // cron mails it
  CHECK(files().empty());
  FreshDatabase fixture;
  enqueue(fixture.url(), "metrics", "{}");
  RunResult up = run_process({"sh", "-c", recipe}, "", {{"QUEUECTL_DB", fixture.url()}});
  INFO(dump(up));
  CHECK(up.exit_code == 0);
  CHECK(files() == std::vector<std::string>{"queuectl.prom"});
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: --field prints the named fields of each job; an unknown field claims nothing") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  json job = enqueue(url, "f", "{\"a\":\"x\\ty\"}");
  rejects(fixture, {"claim", "f", "--field", "id,token"}, "--field");
  RunResult r = ok(url, {"claim", "f", "--field", "id,lock_token,attempts"});
  json held = show(url, job["id"].get<std::int64_t>());
  CHECK(r.out == id_text(job) + "\t" + held["lock_token"].get<std::string>() + "\t1\n");
  CHECK(ok(url, {"list", "f", "--field", "status,result,payload"}).out ==
        "processing\t\t{\"a\":\"x\\ty\"}\n");
}

// The guide's lifecycle example (docs/jobs.md, "The job lifecycle"), run as written (each
// "$ " line, in one bash).
TEST_CASE("cli: the README's lifecycle example runs as written") {
  FreshDatabase fixture;
  std::ifstream readme(QUEUECTL_SOURCE_DIR "/docs/jobs.md");
  std::string line, script = "set -euo pipefail\nqueuectl() { '" + std::string(QUEUECTL_BINARY) +
                             "' --db '" + fixture.url() + "' \"$@\"; }\n";
  bool in_section = false, in_block = false;
  int commands = 0;
  while (std::getline(readme, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## The job lifecycle";
    if (!in_section) continue;
    if (line.rfind("```", 0) == 0) in_block = line == "```sh" && !in_block;
    if (in_block && line.rfind("$ ", 0) == 0) {
      script += line.substr(2) + "\n";
      ++commands;
    }
  }
  REQUIRE(commands >= 5);
  RunResult r = run_process({"bash", "-c", script});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 2 AND attempts = 2") ==
        1);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// URL parameters: every keyword the client library knows is passed through, a typo is bad
// input (exit 2) before anything connects.
TEST_CASE("cli: libpq's keywords and SOCI's MySQL options are accepted in the URL" *
          doctest::skip(is_sqlite())) {
  FreshDatabase fixture;
  const std::string sep = fixture.url().find('?') == std::string::npos ? "?" : "&";
  const std::string extra =
      backend_under_test() == Backend::postgresql
          ? "fallback_application_name=qc-test&client_encoding=UTF8&krbsrvname=postgres&"
            "sslsni=1&ssl_min_protocol_version=TLSv1.2&sslmode=disable"
          : "local_infile=0&reconnect=1";
  RunResult r = queuectl(fixture.url() + sep + extra, {"stats"});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  check_usage_error(queuectl(fixture.url() + sep + "no_such_keyword=1", {"stats"}),
                    "unknown query parameter 'no_such_keyword'");
  if (backend_under_test() == Backend::mysql)
    check_usage_error(queuectl(fixture.url() + sep + "reconnect=yes", {"stats"}),
                      "'reconnect' must be 0 or 1");
  else
    check_usage_error(queuectl(fixture.url() + sep + "dbname=other", {"stats"}),
                      "unknown query parameter 'dbname'");
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// The guide's scripting idiom, taken from docs/jobs.md and run by bash with queuectl on the
// PATH: an empty queue is exit 0 with a word on stderr, a job is claimed and acked, and an
// unreachable database is exit 75, not 1 (the `read ... < <(...)` idiom turned both into 1).
TEST_CASE("cli: the README's claim-one.sh keeps queuectl's exit codes under set -euo pipefail") {
  std::ifstream readme(QUEUECTL_SOURCE_DIR "/docs/jobs.md");
  std::string line, script;
  bool in = false;
  while (std::getline(readme, line)) {
    if (line.rfind("# claim-one.sh:", 0) == 0) in = true;
    if (in && line == "```") break;
    if (in) script += line + "\n";
  }
  REQUIRE_MESSAGE(script.find("set -euo pipefail") != std::string::npos,
                  "docs/jobs.md's claim-one.sh is gone");
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string file = dir.write("claim-one.sh", script);
  const std::string bin = std::filesystem::path(QUEUECTL_BINARY).parent_path().string();
  const std::string path = bin + ":" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "");
  auto run = [&](const std::string& db) {
    return run_process({"bash", file}, "", {{"QUEUECTL_DB", db}, {"PATH", path}});
  };

  RunResult empty = run(url);
  INFO(dump(empty));
  CHECK(empty.exit_code == 0);
  CHECK(empty.out.empty());
  CHECK(empty.err.size() >= 11);
  CHECK(empty.err.compare(empty.err.size() - 11, 11, "no job due\n") == 0);

  const std::string id = id_text(enqueue(url, "emails"));
  RunResult one = run(url);
  INFO(dump(one));
  CHECK(one.exit_code == 0);
  CHECK(one.out.find("claimed job " + id + "\n") == 0);
  CHECK(show(url, std::stoll(id))["status"] == "done");

  RunResult down =
      run("postgresql://nobody:secret-pw@127.0.0.1:" + std::to_string(closed_port()) + "/none");
  INFO(dump(down));
  CHECK(down.exit_code == 75);
  CHECK(down.err.find("queuectl: error: cannot connect") != std::string::npos);
}

}  // namespace queuectl::testing::cli
