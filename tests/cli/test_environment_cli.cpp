// The binary's surroundings: help text, an unmigrated database, and passwords that
// come from the environment or a file instead of the URL.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// The URL with its password removed, and the password ("" when it had none).
std::pair<std::string, std::string> split_password(const std::string& url) {
  auto scheme_end = url.find("://");
  REQUIRE(scheme_end != std::string::npos);
  auto at = url.find('@', scheme_end);
  auto slash = url.find('/', scheme_end + 3);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return {url, ""};
  auto colon = url.find(':', scheme_end + 3);
  if (colon == std::string::npos || colon > at) return {url, ""};
  return {url.substr(0, colon) + url.substr(at), url.substr(colon + 1, at - colon - 1)};
}

}  // namespace

TEST_CASE("cli: --help lists the command groups; every command has examples") {
  RunResult top = run_process({QUEUECTL_BINARY, "--help"});
  INFO(dump(top));
  CHECK(top.exit_code == 0);
  std::size_t last = 0;
  for (const char* group : {"Schema", "Producing", "Consuming", "Inspecting"}) {
    std::size_t at = top.out.find(group);
    CHECK_MESSAGE(at != std::string::npos, group);
    CHECK_MESSAGE(at >= last, group << " out of order");
    last = at == std::string::npos ? last : at;
  }
  for (const char* command :
       {"migrate", "enqueue", "claim", "ack", "fail", "extend", "release", "show", "list", "stats"})
    CHECK_MESSAGE(top.out.find(command) != std::string::npos, command);

  for (const char* command : {"migrate", "enqueue", "claim", "ack", "fail", "extend", "release",
                              "show", "list", "stats"}) {
    CAPTURE(command);
    RunResult r = run_process({QUEUECTL_BINARY, command, "--help"});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("Example") != std::string::npos);
  }
  RunResult claim = run_process({QUEUECTL_BINARY, "claim", "--help"});
  CHECK(claim.out.find("--lease") != std::string::npos);
  CHECK(claim.out.find("--limit") != std::string::npos);
  CHECK(claim.err.empty());
}

TEST_CASE("cli: commands before migrate say to run queuectl migrate") {
  FreshDatabase fixture;
  std::string url = fixture.url();
  TempDir dir;
  if (is_sqlite())
    url = "sqlite://" + dir.path() + "/never-migrated.db";
  else
    drop_schema(fixture);

  for (std::vector<std::string> args : {std::vector<std::string>{"enqueue", "q", "{}"},
                                        {"claim", "q"},
                                        {"list"},
                                        {"show", "1"},
                                        {"stats"},
                                        {"ack", "1", "--token", "t"}}) {
    CAPTURE(args[0]);
    RunResult r = queuectl(url, args);
    check_error(r, 1, "run `queuectl migrate`");
    if (!is_sqlite()) {
      // The URL is shown redacted.
      auto [bare, password] = split_password(url);
      if (!password.empty()) CHECK(r.err.find(":" + password + "@") == std::string::npos);
    }
  }
  ok(url, {"migrate"});
  enqueue(url, "q");
}

TEST_CASE("cli: the password may come from QUEUECTL_DB_PASSWORD or --db-password-file") {
  if (is_sqlite()) return;  // SQLite has no passwords
  FreshDatabase fixture;
  auto [bare, password] = split_password(fixture.url());
  REQUIRE_MESSAGE(!password.empty(), "the test URL should carry a password: " << fixture.url());
  TempDir dir;

  SUBCASE("from the environment") {
    RunResult r = queuectl(bare, {"-o", "json", "enqueue", "q", "{}"}, "",
                           {{"QUEUECTL_DB_PASSWORD", password}});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(job_rows(fixture) == 1);
  }

  SUBCASE("from a file, which wins over the environment") {
    std::string file = dir.write("pw", password + "\n");
    RunResult r = queuectl(bare, {"--db-password-file", file, "enqueue", "q", "{}"}, "",
                           {{"QUEUECTL_DB_PASSWORD", "wrong-password"}});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(job_rows(fixture) == 1);
  }

  SUBCASE("through QUEUECTL_DB as well") {
    RunResult r = run_process({QUEUECTL_BINARY, "-o", "json", "stats"}, "",
                              {{"QUEUECTL_DB", bare}, {"QUEUECTL_DB_PASSWORD", password}});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
  }

  SUBCASE("a wrong password fails and is never printed") {
    RunResult r =
        queuectl(bare, {"enqueue", "q", "{}"}, "", {{"QUEUECTL_DB_PASSWORD", "hunter2-wrong"}});
    INFO(dump(r));
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("queuectl: error:", 0) == 0);
    CHECK(r.err.find("hunter2-wrong") == std::string::npos);
    CHECK(job_rows(fixture) == 0);
  }

  SUBCASE("a missing password file is bad usage") {
    RunResult r =
        queuectl(bare, {"--db-password-file", dir.path() + "/nope", "enqueue", "q", "{}"});
    check_usage_error(r, "--db-password-file");
    CHECK(job_rows(fixture) == 0);
  }
}

}  // namespace queuectl::testing::cli
