// Fault-battery findings on input: an empty value is a mistake, not "not given"; a NUL
// byte is not JSON; a token must be printable UTF-8; --max-jobs 0 is no limit of its own.
// Each is exit 2 with one line naming the problem, and nothing written.
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: an empty option value is refused, not taken for a missing option") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  json held = claim_one(url, "q");
  enqueue(url, "q");
  const std::string id = id_text(held), token = held["lock_token"];
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"enqueue", "q", "{}", "--dedupe-key", ""}, "--dedupe-key"},
      {{"enqueue", "q", "{}", "--group-key", ""}, "--group-key"},
      {{"enqueue", "q", "{}", "--delay", ""}, "--delay"},
      {{"enqueue", "q", "{}", "--run-at", ""}, "--run-at"},
      {{"claim", "q", "--lease", ""}, "--lease"},
      {{"claim", "q", "--worker", ""}, "--worker"},
      {{"extend", id, "--token", token, "--lease", ""}, "--lease"},
      {{"--db", "", "stats"}, "--db"},
      {{"work", "q", "--worker", "", "--", "true"}, "--worker"},
      {{"work", "q", "--max-jobs", "0", "--", "true"}, "--max-jobs"},
      {{"ack", id, "--token", ""}, "--token"},
  };
  for (const auto& [args, needle] : cases) rejects(fixture, args, needle);
  // In NDJSON lines too.
  rejects(fixture, {"enqueue", "q", "--from", "-"}, "line 1",
          R"({"dedupe_key":""})"
          "\n");
  rejects(fixture, {"enqueue", "q", "--from", "-"}, "line 1",
          R"({"delay":""})"
          "\n");
  // --db '' must not fall back to $QUEUECTL_DB or the default file either.
  RunResult r = run_process({QUEUECTL_BINARY, "--db", "", "stats"}, "", {{"QUEUECTL_DB", url}});
  check_usage_error(r, "--db");
  // The command after -- may have empty arguments, and --error may be empty.
  ok(url, {"fail", id, "--token", token, "--error", ""});
}

TEST_CASE("cli: a NUL byte ends no JSON document: the payload is refused") {
  FreshDatabase fixture;
  ok(fixture.url(), {"migrate"});
  rejects(fixture, {"enqueue", "nul", "-"}, "NUL", std::string("{\"a\":1}\0GARBAGE", 15));
  rejects(fixture, {"enqueue", "nul", "--from", "-"}, "NUL",
          std::string("{\"payload\":{\"a\":1}}\0x\n", 22));
}

TEST_CASE("cli: a token that is not printable UTF-8 is bad input, not a database error") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  enqueue(url, "q");
  const std::string id = id_text(claim_one(url, "q"));
  for (const std::string& bad : {std::string("\xff"), std::string("a\tb"), std::string(256, 't')}) {
    rejects(fixture, {"ack", id, "--token", bad}, "--token");
    rejects(fixture, {"fail", id, "--token", bad}, "--token");
    rejects(fixture, {"extend", id, "--token", bad}, "--token");
    rejects(fixture, {"release", id, "--token", bad}, "--token");
  }
  json line = {{"id", std::stoll(id)},
               {"token",
                "a\x01"
                "b"}};
  rejects(fixture, {"ack", "--from", "-"}, "token", line.dump() + "\n");
}

}  // namespace queuectl::testing::cli
