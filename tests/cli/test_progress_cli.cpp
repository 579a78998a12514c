// queuectl on a terminal. Progress lines on long work: `purge` and `reap` report each batch
// on stderr when it is a terminal, and stay silent when it is not (a pipe, a log file) or
// with -q. And `lock` hands the terminal to its command's process group, so the command can
// read it. The terminal comes from util-linux's `script`, which runs the command on a
// pseudo-terminal.
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// Runs queuectl ARGS on a pseudo-terminal; returns what the terminal showed (stdout and
// stderr together, newlines as the terminal writes them) and the exit code.
// `typed` is what is typed on the terminal. (A command stopped for reading a terminal it
// does not own would hang script; timeout(1) turns that into a failure.)
RunResult on_terminal(const std::string& url, const std::vector<std::string>& args,
                      const std::string& typed = "") {
  std::string command = "'" + std::string(QUEUECTL_BINARY) + "' --db '" + url + "'";
  for (const auto& a : args) command += " '" + a + "'";
  return run_process({"timeout", "60", "script", "-qec", command, "/dev/null"}, typed);
}

// `n` done jobs in queue `queue`, finished through the CLI.
void done_jobs(const std::string& url, const std::string& queue, int n) {
  for (int i = 0; i < n; ++i) enqueue(url, queue);
  RunResult claimed = ok(url, {"-o", "ndjson", "claim", queue, "--limit", std::to_string(n)});
  CHECK(count_lines(claimed.out) == static_cast<std::size_t>(n));
  ok(url, {"ack", "--from", "-"}, claimed.out);
}

}  // namespace

TEST_CASE("cli: purge shows its progress on a terminal, batch by batch, and only there") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  done_jobs(url, "q", 5);

  SUBCASE("on a terminal") {
    RunResult r = on_terminal(url, {"purge", "--older-than", "0s", "--batch", "2"});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    // With the total counted first, and the time left while there is some.
    CHECK(contains(r.out, "\rpurged 2 of 5 job(s), "));
    CHECK(contains(r.out, "\rpurged 4 of 5 job(s), "));
    CHECK(contains(r.out, "\rpurged 5 of 5 job(s)"));
    CHECK(contains(r.out, " left"));
    CHECK(job_rows(fixture) == 0);
  }
  SUBCASE("a dry run counts the same way") {
    RunResult r = on_terminal(url, {"purge", "--older-than", "0s", "--batch", "2", "--dry-run"});
    INFO(dump(r));
    CHECK(contains(r.out, "\rcounted 4 job(s)"));
    CHECK(contains(r.out, "would purge 5 job(s)"));
    CHECK(job_rows(fixture) == 5);
  }
  SUBCASE("-q on a terminal: no progress, and no report (a daily cron mails nothing)") {
    RunResult r = on_terminal(url, {"-q", "purge", "--older-than", "0s", "--batch", "2"});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(!contains(r.out, "purged"));
    CHECK(job_rows(fixture) == 0);
  }
  SUBCASE("not a terminal: no progress on stderr") {
    RunResult r = ok(url, {"purge", "--older-than", "0s", "--batch", "2"});
    CHECK(r.err.empty());
    CHECK(r.out == "purged 5 job(s)\n");
  }
}

TEST_CASE("cli: reap shows its progress on a terminal") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "q");
  claim(url, "q", {"--limit", "3", "--lease", "300ms"});
  REQUIRE(wait_until([&] { return ok_json(url, {"leases", "--expired"}).size() == 3; }));

  RunResult r = on_terminal(url, {"reap", "--batch", "1"});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "\rreaped 1 of 3 job(s) in 1 batch(es)"));
  CHECK(contains(r.out, "\rreaped 3 of 3 job(s) in 3 batch(es)"));
  CHECK(contains(r.out, "returned 3 expired job(s) to ready"));
}

TEST_CASE("cli: lock on a terminal: the command owns the terminal and can read it") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult r =
      on_terminal(url, {"lock", "tty", "--", "sh", "-c", "read x; echo \"got $x\""}, "hello\n");
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "got hello"));
}

}  // namespace queuectl::testing::cli
