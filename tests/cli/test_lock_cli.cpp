// `queuectl lock NAME -- CMD` through the real binary: mutual exclusion, --wait, exit
// codes, a holder killed with SIGKILL, signals passed on to CMD. Runs unchanged on every
// backend (PostgreSQL advisory locks, MySQL GET_LOCK, SQLite lock rows).
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// A shell snippet that appends `start` to `log`, waits until `go` exists (at most ~30s),
// then appends `end`.
std::string gated(const std::string& log, const std::string& go) {
  return "echo start >> '" + log + "'; i=0; while [ ! -e '" + go +
         "' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; echo end >> '" + log + "'";
}

}  // namespace

TEST_CASE("cli: lock: two holders started together: one runs, the other exits 5") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string log = dir.path() + "/log", go = dir.path() + "/go";

  auto a = queuectl_async(url, {"lock", "nightly", "--", "sh", "-c", gated(log, go)});
  auto b = queuectl_async(url, {"lock", "nightly", "--", "sh", "-c", gated(log, go)});
  // The loser gives up at once; the winner holds the lock until we let it go.
  bool one_done = wait_until([&] { return is_ready(a) || is_ready(b); }, 30000, 20);
  REQUIRE(one_done);
  const bool a_lost = is_ready(a);
  RunResult loser = a_lost ? a.get() : b.get();
  check_error(loser, 5, "nightly");
  CHECK(contains(loser.err, "held by someone else"));
  CHECK(read_lines(log) == std::vector<std::string>{"start"});  // its command never ran

  touch(go);
  RunResult winner = a_lost ? b.get() : a.get();
  INFO(dump(winner));
  CHECK(winner.exit_code == 0);
  CHECK(read_lines(log) == std::vector<std::string>{"start", "end"});

  // Released when the command ended: the next one gets it at once.
  RunResult next = queuectl(url, {"lock", "nightly", "--", "sh", "-c", "echo next"});
  INFO(dump(next));
  CHECK(next.exit_code == 0);
  CHECK(next.out == "next\n");  // CMD's output passes through
}

TEST_CASE("cli: lock --wait: both run, one after the other, never overlapping") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string log = dir.path() + "/log";
  const std::string body = "echo start >> '" + log + "'; sleep 1; echo end >> '" + log + "'";

  auto a = queuectl_async(url, {"lock", "report", "--wait", "30s", "--", "sh", "-c", body});
  auto b = queuectl_async(url, {"lock", "report", "--wait", "30s", "--", "sh", "-c", body});
  RunResult ra = a.get(), rb = b.get();
  INFO(dump(ra));
  INFO(dump(rb));
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(read_lines(log) == std::vector<std::string>{"start", "end", "start", "end"});

  // A different name is a different lock.
  TempDir other;
  const std::string go = other.path() + "/go", olog = other.path() + "/log";
  auto holder = queuectl_async(url, {"lock", "report", "--", "sh", "-c", gated(olog, go)});
  REQUIRE(wait_until([&] { return file_exists(olog); }));
  RunResult unrelated = queuectl(url, {"lock", "report-2", "--", "true"});
  CHECK(unrelated.exit_code == 0);
  // ... while the same name, with a short wait, still gives up with 5.
  RunResult busy = queuectl(url, {"lock", "report", "--wait", "300ms", "--", "true"});
  check_error(busy, 5, "report");
  touch(go);
  CHECK(holder.get().exit_code == 0);
}

TEST_CASE("cli: lock: CMD's exit code becomes queuectl's") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  CHECK(queuectl(url, {"lock", "codes", "--", "sh", "-c", "exit 7"}).exit_code == 7);
  CHECK(queuectl(url, {"lock", "codes", "--", "false"}).exit_code == 1);
  CHECK(queuectl(url, {"lock", "codes", "--", "true"}).exit_code == 0);
  // A command that cannot run: 127, as a shell would say.
  RunResult missing = queuectl(url, {"lock", "codes", "--", "/nonexistent/queuectl-cmd"});
  CHECK(missing.exit_code == 127);
  CHECK(contains(missing.err, "/nonexistent/queuectl-cmd"));
  // The lock was released after each of them.
  CHECK(queuectl(url, {"lock", "codes", "--", "true"}).exit_code == 0);
}

TEST_CASE("cli: lock: a holder killed with SIGKILL frees the lock") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::string pid_file = dir.path() + "/cmd.pid";
  int holder = cleanup.child(
      spawn_queuectl(url,
                     {"lock", "crashy", "--", "sh", "-c", "echo $$ > '" + pid_file + "'; exec sleep 60"},
                     dir.path() + "/holder.log"));
  int cmd = read_pid(pid_file);
  REQUIRE_MESSAGE(cmd > 0, "the command never ran: " << read_text(dir.path() + "/holder.log"));
  cleanup.pid(cmd);  // CMD outlives a SIGKILLed queuectl; it is killed at the end

  // While it is held: busy.
  check_error(queuectl(url, {"lock", "crashy", "--", "true"}), 5, "crashy");

  kill(holder, SIGKILL);
  CHECK(wait_child(cleanup, holder) == 128 + SIGKILL);
  kill(cmd, SIGKILL);

  if (is_sqlite()) {
    // No session holds a SQLite lock: the row outlives its dead holder until it expires
    // (30s after the last heartbeat), so right after the kill the lock is still taken...
    check_error(queuectl(url, {"lock", "crashy", "--", "true"}), 5, "crashy");
    // ...and it comes free by itself, without anyone cleaning up.
    RunResult later = queuectl(url, {"lock", "crashy", "--wait", "45s", "--", "true"});
    INFO(dump(later));
    CHECK(later.exit_code == 0);
  } else {
    // The server ended the dead holder's session, and its lock with it. (A short wait
    // only covers the server noticing the closed connection; the lock of a live session
    // would never come free.)
    RunResult after = queuectl(url, {"lock", "crashy", "--wait", "10s", "--", "true"});
    INFO(dump(after));
    CHECK(after.exit_code == 0);
  }
  // Held and released normally again afterwards.
  CHECK(queuectl(url, {"lock", "crashy", "--", "true"}).exit_code == 0);
}

TEST_CASE("cli: lock passes SIGTERM on to CMD and exits with CMD's code") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::string ready = dir.path() + "/ready", sleeper = dir.path() + "/sleeper.pid";
  int holder = cleanup.child(spawn_queuectl(
      url,
      {"lock", "graceful", "--", "sh", "-c",
       "trap 'exit 42' TERM; sleep 30 & echo $! > '" + sleeper + "'; echo $$ > '" + ready +
           "'; wait"},
      dir.path() + "/holder.log"));
  int shell = read_pid(ready);
  REQUIRE_MESSAGE(shell > 0, "the command never ran: " << read_text(dir.path() + "/holder.log"));
  cleanup.pid(read_pid(sleeper));  // the background sleep outlives its shell

  kill(holder, SIGTERM);
  int code = wait_child(cleanup, holder);
  INFO(read_text(dir.path() + "/holder.log"));
  CHECK(code == 42);
  // The lock went with it.
  CHECK(queuectl(url, {"lock", "graceful", "--", "true"}).exit_code == 0);
}

TEST_CASE("cli: lock: bad usage is refused before anything runs") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  check_usage_error(queuectl(url, {"lock", "x", "--wait", "soon", "--", "touch", marker}),
                    "--wait");
  check_usage_error(
      queuectl(url, {"lock", std::string(256, 'n'), "--", "touch", marker}), "lock name");
  CHECK(!file_exists(marker));
}

}  // namespace queuectl::testing::cli
