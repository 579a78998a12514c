// The job's fields agree everywhere a user meets them: every field `show` prints (as JSON
// and as its table) is accepted by --field and offered by the completions, which ask the
// binary (`queuectl __complete fields`) instead of keeping a list of their own. Before,
// show printed dead_from, zsh and fish completed it, and --field refused it.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: fields: every field show prints works with --field and is completed") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  // A dead letter with trace context and a report, so that every field has a value
  // (dead_from, the trace and the report are shown only when set).
  ok(url, {"queue", "q", "--dead-letter", "q.dead"});
  json job = parse(
      ok(url, {"-o", "json", "enqueue", "q", R"({"n":1})", "--group-key", "g", "--dedupe-key", "d"},
         "",
         {{"TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
          {"TRACESTATE", "a=b"}})
          .out);
  json claimed = claim_one(url, "q");
  ok(url, {"extend", id_text(claimed), "--token", claimed["lock_token"].get<std::string>(),
           "--progress", "10", "--note", "n", "--checkpoint", "{\"c\":1}"});
  ok(url, {"fail", id_text(claimed), "--token", claimed["lock_token"].get<std::string>(),
           "--permanent", "--error", "boom"});
  const json shown = show(url, job["id"]);
  REQUIRE(shown["dead_from"] == "q");

  const RunResult listed = run_process({QUEUECTL_BINARY, "__complete", "fields"});
  REQUIRE(listed.exit_code == 0);
  std::vector<std::string> completed;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) completed.push_back(line);

  const std::string table = ok(url, {"show", id_text(job)}).out;
  std::vector<std::string> keys;
  for (const auto& [key, value] : shown.items()) {
    CAPTURE(key);
    keys.push_back(key);
    RunResult one = queuectl(url, {"show", id_text(job), "--field", key});
    INFO(dump(one));
    CHECK(one.exit_code == 0);
    CHECK(table.find(key + ":") != std::string::npos);  // the table has its line too
  }
  // The same names (the test's JSON keeps keys sorted, so compared sorted).
  std::sort(completed.begin(), completed.end());
  std::sort(keys.begin(), keys.end());
  CHECK(completed == keys);
  // Each completion script asks the binary for them.
  for (const char* script : {"queuectl.bash", "_queuectl", "queuectl.fish"}) {
    CAPTURE(script);
    std::ifstream in(std::string(QUEUECTL_SOURCE_DIR) + "/completions/" + script);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str().find("__complete fields") != std::string::npos);
    CHECK(text.str().find("lock_until dedupe_key") == std::string::npos);  // no list by hand
  }
}

}  // namespace queuectl::testing::cli
