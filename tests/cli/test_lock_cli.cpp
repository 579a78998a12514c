// `queuectl lock NAME -- CMD` through the real binary: mutual exclusion, --wait, exit
// codes, a holder killed with SIGKILL (its CMD dies too), signals passed on to CMD, and
// the reaper backing off while its lock is held. Runs unchanged on every backend
// (PostgreSQL advisory locks, MySQL GET_LOCK, SQLite lock rows).
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// A shell snippet that appends `start` to `log`, waits until `go` exists (at most ~30s),
// then appends `end`.
std::string gated(const std::string& log, const std::string& go) {
  return "echo start >> '" + log + "'; " + wait_for_file(go) + "; echo end >> '" + log + "'";
}

}  // namespace

// Both are spawned from this thread, outputs to files: holders started through
// queuectl_async can inherit each other's output pipes (run_process forks from several
// threads and its pipes are not close-on-exec), so the loser's run would not end before
// the winner's.
TEST_CASE("cli: lock: two holders started together: one runs, the other exits 5") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::string log = dir.path() + "/log", go = dir.path() + "/go";
  std::map<int, std::string> out_of;
  for (const char* who : {"a", "b"}) {
    const std::string out = dir.path() + "/" + who;
    out_of[cleanup.child(spawn_queuectl_split(
        url, {"lock", "nightly", "--", "sh", "-c", gated(log, go)}, out + ".out", out + ".err"))] =
        out;
  }
  // The loser gives up at once; the winner holds the lock until we let it go.
  int loser = 0, code = -1;
  REQUIRE(wait_until(
      [&] {
        for (const auto& [pid, out] : out_of)
          if (try_wait(pid, code)) return (loser = pid) > 0;
        return false;
      },
      30000, 20));
  cleanup.forget(loser);
  RunResult lost{code, read_text(out_of[loser] + ".out"), read_text(out_of[loser] + ".err")};
  check_error(lost, 5, "nightly");
  CHECK(contains(lost.err, "held by someone else"));
  REQUIRE(wait_until([&] { return !read_lines(log).empty(); }));
  CHECK(read_lines(log) == std::vector<std::string>{"start"});  // the loser's CMD never ran

  touch(go);
  const int winner =
      out_of.begin()->first == loser ? out_of.rbegin()->first : out_of.begin()->first;
  CHECK(wait_child(cleanup, winner) == 0);
  CHECK(read_lines(log) == std::vector<std::string>{"start", "end"});

  // Released when the command ended: the next one gets it at once.
  RunResult next = queuectl(url, {"lock", "nightly", "--", "sh", "-c", "echo next"});
  INFO(dump(next));
  CHECK(next.exit_code == 0);
  CHECK(next.out == "next\n");  // CMD's output passes through
}

// Holders of one name take turns: the first keeps the lock until released; three more,
// started meanwhile with --wait, run one at a time after it. Each command claims a
// directory that only one may hold, so any overlap is recorded, even a brief one.
TEST_CASE("cli: lock --wait: holders of one name take turns, never overlapping") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string log = dir.path() + "/log", go = dir.path() + "/go";
  auto body = [&](const std::string& middle) {
    return "mkdir '" + dir.path() + "/inside' 2>/dev/null || echo overlap >> '" + log +
           "'; echo start >> '" + log + "'; " + middle + "; echo end >> '" + log + "'; rmdir '" +
           dir.path() + "/inside'";
  };
  auto first = queuectl_async(url, {"lock", "report", "--", "sh", "-c", body(wait_for_file(go))});
  REQUIRE(wait_until([&] { return !read_lines(log).empty(); }));
  std::vector<std::future<RunResult>> waiters;
  for (int i = 0; i < 3; ++i)
    waiters.push_back(queuectl_async(
        url, {"lock", "report", "--wait", "60s", "--", "sh", "-c", body("sleep 0.2")}));
  // While the first holds it, none of them runs (they get time to show it if they could).
  CHECK_FALSE(wait_until([&] { return read_lines(log).size() > 1; }, 1500));

  touch(go);
  RunResult r = first.get();
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  for (auto& w : waiters) {
    RunResult rw = w.get();
    INFO(dump(rw));
    CHECK(rw.exit_code == 0);
  }
  std::vector<std::string> expected;
  for (int i = 0; i < 4; ++i) expected.insert(expected.end(), {"start", "end"});
  CHECK(read_lines(log) == expected);
}

TEST_CASE("cli: lock --wait: exit 5 when still busy after the wait; other names are free") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string go = dir.path() + "/go", log = dir.path() + "/log";
  const std::string marker = dir.path() + "/ran";
  auto holder = queuectl_async(url, {"lock", "report", "--", "sh", "-c", gated(log, go)});
  REQUIRE(wait_until([&] { return file_exists(log); }));
  // A different name is a different lock.
  RunResult unrelated = queuectl(url, {"lock", "report-2", "--", "true"});
  INFO(dump(unrelated));
  CHECK(unrelated.exit_code == 0);
  // The same name, with a wait that runs out: exit 5, and its command never ran.
  RunResult busy = queuectl(url, {"lock", "report", "--wait", "1s", "--", "touch", marker});
  check_error(busy, 5, "report");
  CHECK(!file_exists(marker));
  touch(go);
  CHECK(holder.get().exit_code == 0);
  // Free again: the same command now runs.
  RunResult later = queuectl(url, {"lock", "report", "--wait", "1s", "--", "touch", marker});
  INFO(dump(later));
  CHECK(later.exit_code == 0);
  CHECK(file_exists(marker));
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

// A holder killed with SIGKILL: its command goes with it (it must not run on without
// the lock), and the lock comes free.
TEST_CASE("cli: lock: a holder killed with SIGKILL takes its command along and frees the lock") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  // CMD is a shell script with a child of its own: the kernel's parent-death signal reaches
  // only the script; the child must die too, or it would run on without the lock.
  const std::string pid_file = dir.path() + "/cmd.pid", child_file = dir.path() + "/child.pid";
  int holder = cleanup.child(spawn_queuectl(
      url,
      {"lock", "crashy", "--", "sh", "-c",
       "echo $$ > '" + pid_file + "'; sleep 60 & echo $! > '" + child_file + "'; wait"},
      dir.path() + "/holder.log"));
  int cmd = read_pid(pid_file);
  REQUIRE_MESSAGE(cmd > 0, "the command never ran: " << read_text(dir.path() + "/holder.log"));
  cleanup.pid(cmd);  // only if it outlives queuectl, which is the failure tested for
  int child = read_pid(child_file);
  REQUIRE(child > 0);
  cleanup.pid(child);

  // While it is held: busy.
  check_error(queuectl(url, {"lock", "crashy", "--", "true"}), 5, "crashy");

  kill(holder, SIGKILL);
  CHECK(wait_child(cleanup, holder) == 128 + SIGKILL);
  const bool cmd_gone = wait_until([&] { return process_gone(cmd); }, 10000);
  CHECK_MESSAGE(cmd_gone, "CMD (pid " << cmd << ") outlived its SIGKILLed queuectl lock");
  if (cmd_gone) cleanup.gone(cmd);
  const bool child_gone = wait_until([&] { return process_gone(child); }, 10000);
  CHECK_MESSAGE(child_gone, "CMD's child (pid " << child << ") outlived the SIGKILLed lock");
  if (child_gone) cleanup.gone(child);

  if (uses_lock_rows()) {
    // No session holds a lock row: the row outlives its dead holder until it expires
    // (30s after the last heartbeat, which came at most 10s ago), so right after the kill
    // the lock is still taken...
    check_error(queuectl(url, {"lock", "crashy", "--", "true"}), 5, "crashy");
    const std::string left =
        is_postgresql() ? "CAST(EXTRACT(EPOCH FROM expires_at - now()) AS bigint)"
        : is_mysql()    ? "TIMESTAMPDIFF(SECOND, NOW(6), expires_at)"
                        : "CAST((julianday(expires_at) - julianday('now')) * 86400 AS INTEGER)";
    const long long seconds_left =
        scalar(fixture.db(), "SELECT " + left + " FROM queuectl_locks WHERE name = 'crashy'");
    CHECK(seconds_left >= 15);
    CHECK(seconds_left <= 30);
    // ...and once that time has passed (the row's expiry moved into the past here, rather
    // than waited for), it comes free by itself, without anyone cleaning up.
    fixture.db().session() << "UPDATE queuectl_locks SET expires_at = " + hours_ago_sql(1) +
                                  " WHERE name = 'crashy'";
    RunResult later = queuectl(url, {"lock", "crashy", "--", "true"});
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

// SIGTERM, SIGINT and SIGHUP sent to queuectl reach CMD as themselves (CMD records which
// one it got), and CMD's exit code from its handler becomes queuectl's.
TEST_CASE("cli: lock passes SIGTERM, SIGINT and SIGHUP on to CMD") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  struct Case {
    int sig;
    const char* name;
    int code;
  };
  for (const Case& c :
       {Case{SIGTERM, "TERM", 42}, Case{SIGINT, "INT", 43}, Case{SIGHUP, "HUP", 44}}) {
    CAPTURE(c.name);
    TempDir dir;
    Cleanup cleanup;
    const std::string ready = dir.path() + "/ready", got = dir.path() + "/got",
                      sleeper = dir.path() + "/sleeper.pid";
    std::string traps;
    for (const Case& t :
         {Case{SIGTERM, "TERM", 42}, Case{SIGINT, "INT", 43}, Case{SIGHUP, "HUP", 44}})
      traps += std::string("trap 'echo ") + t.name + " >> \"" + got + "\"; kill $s; exit " +
               std::to_string(t.code) + "' " + t.name + "; ";
    // env --default-signal: a signal ignored by whoever started the tests (nohup, CI)
    // would stay ignored in sh, and sh cannot trap a signal ignored on entry.
    int holder = cleanup.child(spawn_queuectl(
        url,
        {"lock", "graceful", "--", "env", "--default-signal=TERM,INT,HUP", "sh", "-c",
         traps + "sleep 30 & s=$!; echo $s > '" + sleeper + "'; echo $$ > '" + ready + "'; wait"},
        dir.path() + "/holder.log"));
    REQUIRE_MESSAGE(read_pid(ready) > 0,
                    "the command never ran: " << read_text(dir.path() + "/holder.log"));
    const int sleep_pid = read_pid(sleeper);
    cleanup.pid(sleep_pid);  // the background sleep, should its shell not kill it

    kill(holder, c.sig);
    REQUIRE_MESSAGE(wait_until([&] { return !read_lines(got).empty(); }),
                    "CMD never saw SIG" << c.name << ": " << read_text(dir.path() + "/holder.log"));
    int code = wait_child(cleanup, holder);
    INFO(read_text(dir.path() + "/holder.log"));
    CHECK(read_lines(got) == std::vector<std::string>{c.name});
    CHECK(code == c.code);
    if (wait_until([&] { return process_gone(sleep_pid); }, 5000)) cleanup.gone(sleep_pid);
    // The lock went with it.
    CHECK(queuectl(url, {"lock", "graceful", "--", "true"}).exit_code == 0);
  }
}

// The reaper's named lock (queuectl:reap, or queuectl:reap:QUEUE), held by `queuectl lock`
// standing in for another reaper.

TEST_CASE("cli: reap while another reaper holds queuectl:reap does nothing; --no-lock works") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  for (int i = 0; i < 2; ++i) enqueue(url, "q");
  REQUIRE(claim(url, "q", {"--limit", "2", "--lease", "300ms", "--worker", "w-dead"}).size() == 2);

  // Another reaper, as far as the lock goes: it holds queuectl:reap until we let it go.
  const std::string go = dir.path() + "/go";
  int holder = hold_lock(url, "queuectl:reap", dir.path(), go, cleanup);
  wait_expired(url, 2);

  json before = ok_json(url, {"list", "q"});
  auto first = queuectl_async(url, {"-o", "json", "reap"});
  auto second = queuectl_async(url, {"reap"});
  const RunResult as_json = first.get(), as_table = second.get();
  for (const RunResult& r : {as_json, as_table}) {
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(contains(r.err, "another reaper holds the lock"));
  }
  // The table run prints nothing on stdout; -o json still prints its (empty) report.
  CHECK(as_table.out.empty());
  json skipped = parse(as_json.out);
  CHECK(skipped["skipped"] == true);
  CHECK(skipped["lock"] == "queuectl:reap");
  CHECK(skipped["requeued"] == 0);
  CHECK(skipped["failed"] == 0);
  CHECK(ok_json(url, {"list", "q"}) == before);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 1") == 2);

  // -q: silent, still exit 0.
  RunResult quiet = queuectl(url, {"-q", "reap"});
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  CHECK(quiet.out.empty());

  // --dry-run does not need the lock.
  json dry = ok_json(url, {"reap", "--dry-run"});
  CHECK(dry["requeued"] == 2);
  CHECK(ok_json(url, {"list", "q"}) == before);

  // --no-lock reaps anyway.
  json forced = ok_json(url, {"reap", "--no-lock"});
  INFO(forced.dump());
  CHECK(forced["requeued"] == 2);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE status = 0") == 2);

  touch(go);
  CHECK(wait_child(cleanup, holder) == 0);
  // The lock is free again: a normal reap runs (and finds nothing left).
  RunResult after = ok(url, {"reap"});
  CHECK(contains(after.out, "returned 0"));
  CHECK(!contains(after.err, "another reaper"));
}

// With a queue, the lock is queuectl:reap:QUEUE: held, `reap QUEUE` backs off; another
// queue's reaper takes its own lock and works.
TEST_CASE("cli: reap QUEUE backs off while queuectl:reap:QUEUE is held; other queues reap") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  std::set<std::int64_t> q1, q2;
  for (int i = 0; i < 2; ++i) {
    q1.insert(id_of(enqueue(url, "q1")));
    q2.insert(id_of(enqueue(url, "q2")));
  }
  claim(url, "q1", {"--limit", "2", "--lease", "300ms", "--worker", "w-dead"});
  claim(url, "q2", {"--limit", "2", "--lease", "300ms", "--worker", "w-dead"});

  const std::string go = dir.path() + "/go";
  int holder = hold_lock(url, "queuectl:reap:q1", dir.path(), go, cleanup);
  wait_expired(url, 4);

  RunResult blocked = queuectl(url, {"-o", "json", "reap", "q1"});
  INFO(dump(blocked));
  CHECK(blocked.exit_code == 0);
  CHECK(contains(blocked.err, "another reaper holds the lock"));
  CHECK(contains(blocked.err, "queuectl:reap:q1"));
  CHECK(parse(blocked.out)["requeued"] == 0);
  CHECK(parse(blocked.out)["skipped"] == true);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE queue = 'q1' AND status = 1") ==
        2);

  json other = ok_json(url, {"reap", "q2"});
  INFO(other.dump());
  CHECK(id_set(other["requeued_ids"]) == q2);
  CHECK(scalar(fixture.db(), "SELECT COUNT(*) FROM job_queue WHERE queue = 'q1' AND status = 1") ==
        2);

  touch(go);
  CHECK(wait_child(cleanup, holder) == 0);
  json freed = ok_json(url, {"reap", "q1"});
  CHECK(id_set(freed["requeued_ids"]) == q1);
}

TEST_CASE("cli: lock: bad usage is refused before anything runs") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  check_usage_error(queuectl(url, {"lock", "x", "--wait", "soon", "--", "touch", marker}),
                    "--wait");
  check_usage_error(queuectl(url, {"lock", std::string(256, 'n'), "--", "touch", marker}),
                    "lock name");
  CHECK(!file_exists(marker));
}

}  // namespace queuectl::testing::cli
