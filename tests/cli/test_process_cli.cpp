// The process layer through the real binary: exit codes that survive an inherited
// SIGCHLD disposition, signal masks of queuectl's helper threads and of the commands it
// starts, the number of database connections `lock` and `work` hold while a command runs,
// and a worker that keeps going (and still releases its other jobs) when the database
// refuses to release a job it could not start.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <set>
#include <thread>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

// The signals queuectl handles in its main thread (lock forwards the first six, work stops
// on three of them and listens for SIGCHLD).
const std::vector<int> kHandled = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD};

// A signal mask line ("SigBlk:", "SigIgn:") of a /proc status file, as a bit set.
std::uint64_t mask_of(const std::string& status, const std::string& field) {
  const std::size_t at = status.find("\n" + field);
  REQUIRE_MESSAGE(at != std::string::npos, "no " << field << " in " << status);
  return std::stoull(status.substr(at + 1 + field.size()), nullptr, 16);
}

// The signals a command blocks, as it started them. The shell blocks every signal for a
// moment while it forks (dash does, around each `sleep` of its wait loop), so a reading
// during one of those moments is read again: a mask that stays set is what fails.
std::uint64_t blocked_mask(int pid) {
  std::uint64_t blocked = 0;
  for (int i = 0; i < 50; ++i) {
    blocked = mask_of(read_text("/proc/" + std::to_string(pid) + "/status"), "SigBlk:");
    if (blocked == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return blocked;
}

bool has_signal(std::uint64_t mask, int sig) {
  return (mask >> (sig - 1)) & 1U;
}

// Thread ids of a running process, from /proc/PID/task.
std::vector<int> threads_of(int pid) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec))
    out.push_back(std::stoi(e.path().filename().string()));
  return out;
}

// Requires every thread of `pid` but the main one to block every signal in kHandled, so
// that a signal sent to queuectl runs its handler in the main thread. Requires at least one
// such helper thread to exist.
void check_helper_threads(int pid) {
  std::vector<int> helpers;
  REQUIRE(wait_until([&] {
    helpers.clear();
    for (int tid : threads_of(pid))
      if (tid != pid) helpers.push_back(tid);
    return !helpers.empty();
  }));
  for (int tid : helpers) {
    const std::string status =
        read_text("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/status");
    const std::uint64_t blocked = mask_of(status, "SigBlk:");
    for (int sig : kHandled) {
      CAPTURE(tid);
      CAPTURE(sig);
      CHECK(has_signal(blocked, sig));
    }
  }
}

// How many connections the server has from the queuectl runs of a test: PostgreSQL counts
// those with the test's application_name; MariaDB those on the test database other than
// the fixture's own (the tests of one backend run one at a time).
long long server_connections(FreshDatabase& fixture, const std::string& app) {
  if (is_mysql())
    return scalar(fixture.db(),
                  "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                  "WHERE DB = DATABASE() AND ID <> CONNECTION_ID()");
  return scalar(fixture.db(),
                "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = '" + app + "'");
}

// The fixture's URL with an application_name of its own (PostgreSQL), so that only the
// connections of the queuectl runs below are counted.
std::string counted_url(const std::string& url, const std::string& app) {
  if (is_mysql()) return url;
  return with_application_name(url, app);
}

// The lowest descriptor number `pid` does not have open.
int lowest_free_fd(int pid) {
  std::set<int> open;
  std::error_code ec;
  for (const auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
    open.insert(std::stoi(e.path().filename().string()));
  int fd = 0;
  while (open.count(fd)) ++fd;
  return fd;
}

// A trigger (with its function, on PostgreSQL) that the test installs on job_queue and
// that is removed at the end of the test, whatever happens.
class Trap {
 public:
  Trap(FreshDatabase& fixture, const std::string& sql_body_pg, const std::string& trigger)
      : fixture_(fixture) {
    if (backend_under_test() == Backend::postgresql)
      fixture_.db().session() << "CREATE OR REPLACE FUNCTION queuectl_test_trap() RETURNS trigger "
                                 "LANGUAGE plpgsql AS $$ BEGIN " +
                                     sql_body_pg + " END $$";
    fixture_.db().session() << trigger;
  }
  ~Trap() { remove(); }
  Trap(const Trap&) = delete;
  Trap& operator=(const Trap&) = delete;

  void remove() {
    try {
      if (backend_under_test() == Backend::postgresql) {
        fixture_.db().session() << "DROP TRIGGER IF EXISTS queuectl_test_trap ON job_queue";
        fixture_.db().session() << "DROP FUNCTION IF EXISTS queuectl_test_trap()";
      } else {
        fixture_.db().session() << "DROP TRIGGER IF EXISTS queuectl_test_trap";
      }
    } catch (...) {
    }
  }

 private:
  FreshDatabase& fixture_;
};

// A worker runs job A (a command that waits); job B is then made due while the worker
// cannot open one more descriptor, so B's command cannot start and B must be given back.
// `trap` makes giving B back go wrong (the test installs it once B's id is known). The
// worker must log that, drop B, keep running, and at SIGTERM still release A.
void give_back_goes_wrong(FreshDatabase& fixture,
                          const std::function<std::unique_ptr<Trap>(std::int64_t)>& trap,
                          const std::string& logged) {
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::int64_t a = id_of(enqueue(url, "q"));
  const std::int64_t b = id_of(enqueue(url, "q", "{}", {"--delay", "1h"}));
  const std::string pid_file = dir.path() + "/a.pid", log = dir.path() + "/worker.log";
  int worker = cleanup.child(
      spawn_queuectl(url,
                     {"work", "q", "--concurrency", "2", "--lease", "3s", "--grace", "300ms",
                      "--poll-interval", "100ms", "--", "sh", "-c",
                      "echo $$ > '" + pid_file + "'; " + wait_for_file(dir.path() + "/never")},
                     log));
  const int a_pid = read_pid(pid_file);
  REQUIRE_MESSAGE(a_pid > 0, "job A never started: " << read_text(log));
  cleanup.group(a_pid);
  // The heartbeat has its connection once it has extended A's lease: from then on the
  // worker opens no descriptor until it starts another command.
  const json claimed = show(url, a);
  REQUIRE(wait_until([&] { return show(url, a)["lock_until"] != claimed["lock_until"]; }));

  auto installed = trap(b);
  rlimit old_limit{};
  REQUIRE(prlimit(worker, RLIMIT_NOFILE, nullptr, &old_limit) == 0);
  rlimit tight = old_limit;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free_fd(worker) + 1);  // one descriptor: no pipe
  REQUIRE(prlimit(worker, RLIMIT_NOFILE, &tight, nullptr) == 0);
  make_due(fixture, b);

  int code = -1;
  const bool outcome = wait_until([&] {
    return !lines_with(read_text(log), "job " + std::to_string(b) + ":").empty() ||
           try_wait(worker, code);
  });
  if (code == -1)
    prlimit(worker, RLIMIT_NOFILE, &old_limit, nullptr);
  else
    cleanup.forget(worker);  // reaped by try_wait
  installed.reset();
  INFO(read_text(log));
  REQUIRE(outcome);
  REQUIRE_MESSAGE(code == -1, "the worker exited (" << code << ") instead of going on");
  const auto b_lines = lines_with(read_text(log), "job " + std::to_string(b) + ":");
  REQUIRE(b_lines.size() == 1);
  CHECK(contains(b_lines[0], logged));

  // A is still running, and is released as usual at shutdown.
  CHECK(!process_gone(a_pid));
  kill(worker, SIGTERM);
  CHECK(wait_child(cleanup, worker) == 0);
  CHECK(contains(read_text(log), "1 released, 1 lost"));
  json a_job = show(url, a);
  INFO(a_job.dump());
  CHECK(a_job["status"] == "ready");
  CHECK(a_job["attempts"] == 0);
}

}  // namespace

// With SIGCHLD ignored, the kernel reaps children by itself and waitpid fails with ECHILD:
// queuectl must not read an exit status it never got. It resets SIGCHLD at start-up, so the
// command's own code still comes through, for `lock` and for `work` alike.
TEST_CASE("cli: process: exit codes come through when queuectl starts with SIGCHLD ignored") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  auto ignoring = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "--ignore-signal=CHLD", QUEUECTL_BINARY, "--db", url};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
  };
  CHECK(ignoring({"lock", "x", "--", "false"}).exit_code == 1);
  CHECK(ignoring({"lock", "x", "--", "sh", "-c", "exit 7"}).exit_code == 7);
  CHECK(ignoring({"lock", "x", "--", "sh", "-c", "kill -TERM $$"}).exit_code == 128 + SIGTERM);
  CHECK(ignoring({"lock", "x", "--", "true"}).exit_code == 0);

  const std::int64_t good = id_of(enqueue(url, "good"));
  const std::int64_t bad = id_of(enqueue(url, "bad"));
  RunResult g = ignoring({"-o", "json", "work", "good", "--drain", "--", "true"});
  RunResult f = ignoring({"-o", "json", "work", "bad", "--drain", "--", "sh", "-c", "exit 3"});
  INFO(dump(g));
  INFO(dump(f));
  CHECK(g.exit_code == 0);
  CHECK(f.exit_code == 1);  // --drain: a job failed
  CHECK(status_of(url, good) == "done");
  json failed = show(url, bad);
  CHECK(failed["status"] == "ready");
  CHECK(contains(failed["last_error"].get<std::string>(), "exit code 3"));
}

// Signals sent to queuectl must run its handlers in the main thread (the one that forwards
// them, or wakes the worker's loop): every helper thread blocks them. The command starts
// with nothing blocked and, under `work`, with SIGPIPE at its default (the worker itself
// ignores it).
TEST_CASE("cli: process: helper threads block queuectl's signals; commands start clean") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Cleanup cleanup;
  const std::string go = dir.path() + "/go";
  const std::string body = "echo $$ > \"$0\"; " + wait_for_file(go);

  SUBCASE("lock: the named-lock thread") {
    const std::string pid_file = dir.path() + "/lock.pid";
    int holder = cleanup.child(spawn_queuectl(
        url, {"lock", "masks", "--", "sh", "-c", body, pid_file}, dir.path() + "/lock.log"));
    const int cmd = read_pid(pid_file);
    REQUIRE_MESSAGE(cmd > 0, read_text(dir.path() + "/lock.log"));
    check_helper_threads(holder);
    CHECK(blocked_mask(cmd) == 0);
    touch(go);
    CHECK(wait_child(cleanup, holder) == 0);
  }
  SUBCASE("work: the heartbeat thread") {
    enqueue(url, "q");
    const std::string pid_file = dir.path() + "/job.pid";
    int worker = cleanup.child(spawn_queuectl(
        url, {"work", "q", "--drain", "--lease", "900ms", "--", "sh", "-c", body, pid_file},
        dir.path() + "/work.log"));
    const int cmd = read_pid(pid_file);
    REQUIRE_MESSAGE(cmd > 0, read_text(dir.path() + "/work.log"));
    check_helper_threads(worker);
    CHECK(blocked_mask(cmd) == 0);
    const std::string status = read_text("/proc/" + std::to_string(cmd) + "/status");
    CHECK_FALSE(has_signal(mask_of(status, "SigIgn:"), SIGPIPE));
    touch(go);
    CHECK(wait_child(cleanup, worker) == 0);
  }
}

// With PostgreSQL's default of 100 connections, every connection a worker holds counts.
// `lock` holds one (its lock lives in that session); `work` one to claim and finish, one
// for the heartbeat and, on PostgreSQL, one that LISTENs, but not with --drain. The
// connection opened to check the schema is the one handed on, not a fourth.
TEST_CASE("cli: process: lock holds one connection, work one each to claim, beat and listen" *
          doctest::skip(backend_under_test() == Backend::sqlite || through_pooler())) {
  FreshDatabase fixture;
  TempDir dir;
  Cleanup cleanup;
  const std::string app = "queuectl-conn-" + std::to_string(getpid());
  const std::string url = counted_url(fixture.url(), app);
  // Connections of earlier tests' processes are gone before counting starts.
  REQUIRE(wait_until([&] { return server_connections(fixture, app) == 0; }));

  const std::string go = dir.path() + "/go", ready = dir.path() + "/ready";
  {
    int holder = cleanup.child(spawn_queuectl(
        url, {"lock", "counted", "--", "sh", "-c", "touch '" + ready + "'; " + wait_for_file(go)},
        dir.path() + "/lock.log"));
    REQUIRE_MESSAGE(wait_until([&] { return file_exists(ready); }),
                    read_text(dir.path() + "/lock.log"));
    CHECK(server_connections(fixture, app) == 1);
    touch(go);
    CHECK(wait_child(cleanup, holder) == 0);
  }
  REQUIRE(wait_until([&] { return server_connections(fixture, app) == 0; }));

  // Everything but the counted runs goes through the fixture's own connection: a queuectl
  // run that has just ended may still be listed by the server for a moment.
  for (const bool drain : {false, true}) {
    CAPTURE(drain);
    std::remove(go.c_str());
    std::remove(ready.c_str());
    const std::int64_t id = id_of(enqueue(fixture.url(), "q"));
    REQUIRE(wait_until([&] { return server_connections(fixture, app) == 0; }));
    int worker = cleanup.child(
        spawn_queuectl(url,
                       {"work", "q", drain ? "--drain" : "--max-jobs=1", "--lease", "900ms", "--",
                        "sh", "-c", "touch '" + ready + "'; " + wait_for_file(go)},
                       dir.path() + "/work.log"));
    REQUIRE_MESSAGE(wait_until([&] { return file_exists(ready); }),
                    read_text(dir.path() + "/work.log"));
    // Once the lease was extended (past the 900ms it got at the claim), the heartbeat has
    // its connection too.
    const std::string extended =
        "SELECT COUNT(*) FROM job_queue WHERE id = " + std::to_string(id) + " AND lock_until > " +
        (is_mysql() ? "locked_at + INTERVAL 1 SECOND" : "locked_at + interval '1 second'");
    REQUIRE(wait_until([&] { return scalar(fixture.db(), extended) == 1; }));
    const long long expected = backend_under_test() == Backend::postgresql && !drain ? 3 : 2;
    CHECK(server_connections(fixture, app) == expected);
    touch(go);
    CHECK(wait_child(cleanup, worker) == 0);
    CHECK(status_of(fixture.url(), id) == "done");
  }
}

// Giving back a job whose command could not start (out of descriptors here) meets a write the
// database refuses: the worker logs it, leaves the job to the reaper and carries on.
TEST_CASE("cli: work: a refused release of a job that could not start is logged; work goes on") {
  FreshDatabase fixture;
  give_back_goes_wrong(
      fixture,
      [&](std::int64_t b) {
        const std::string id = std::to_string(b);
        switch (backend_under_test()) {
          case Backend::postgresql:
            return std::make_unique<Trap>(
                fixture, "RAISE EXCEPTION 'release refused by the test';",
                "CREATE TRIGGER queuectl_test_trap BEFORE UPDATE ON job_queue FOR EACH ROW WHEN "
                "(NEW.id = " +
                    id +
                    " AND OLD.status = 1 AND NEW.status = 0) EXECUTE FUNCTION "
                    "queuectl_test_trap()");
          case Backend::mysql:
            return std::make_unique<Trap>(
                fixture, "",
                "CREATE TRIGGER queuectl_test_trap BEFORE UPDATE ON job_queue FOR EACH ROW BEGIN "
                "IF NEW.id = " +
                    id +
                    " AND OLD.status = 1 AND NEW.status = 0 THEN SIGNAL SQLSTATE '45000' SET "
                    "MESSAGE_TEXT = "
                    "'release refused by the test'; END IF; END");
          default:
            return std::make_unique<Trap>(
                fixture, "",
                "CREATE TRIGGER queuectl_test_trap BEFORE UPDATE ON job_queue WHEN NEW.id = " + id +
                    " AND OLD.status = 1 AND NEW.status = 0 BEGIN SELECT RAISE(ABORT, 'release "
                    "refused by the test'); "
                    "END");
        }
      },
      "could not be released");
}

// The same when the job is gone by the time it is given back (deleted in the statement that
// claimed it, by a trigger; MariaDB's triggers cannot change their own table).
TEST_CASE("cli: work: a job deleted before it could be given back is logged; work goes on" *
          doctest::skip(backend_under_test() == Backend::mysql)) {
  FreshDatabase fixture;
  give_back_goes_wrong(
      fixture,
      [&](std::int64_t b) {
        const std::string id = std::to_string(b);
        if (backend_under_test() == Backend::postgresql)
          return std::make_unique<Trap>(
              fixture, "DELETE FROM job_queue WHERE id = NEW.id; RETURN NULL;",
              "CREATE TRIGGER queuectl_test_trap AFTER UPDATE ON job_queue FOR EACH ROW WHEN "
              "(NEW.id = " +
                  id + " AND NEW.status = 1) EXECUTE FUNCTION queuectl_test_trap()");
        return std::make_unique<Trap>(
            fixture, "",
            "CREATE TRIGGER queuectl_test_trap AFTER UPDATE ON job_queue WHEN NEW.id = " + id +
                " AND NEW.status = 1 BEGIN DELETE FROM job_queue WHERE id = NEW.id; END");
      },
      "gone");
}

// The harness itself: a command that never ends, or prints without end, fails the test case
// that ran it, naming the command, instead of holding the suite until ctest's timeout.
TEST_CASE(
    "cli: the test harness kills a command past its deadline or its output cap, and "
    "caps queuectl's memory") {
  SUBCASE("deadline") {
    setenv("QUEUECTL_TEST_COMMAND_TIMEOUT", "1", 1);
    const auto started = std::chrono::steady_clock::now();
    CHECK_THROWS_WITH(run_process({"sleep", "30"}),
                      doctest::Contains("still running after 1 s, killed: sleep 30"));
    unsetenv("QUEUECTL_TEST_COMMAND_TIMEOUT");
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
  }
  SUBCASE("output cap") {
    CHECK_THROWS_WITH(run_process({"yes", "a line that never ends"}),
                      doctest::Contains("printed over 256 MiB, killed: yes"));
  }
  SUBCASE("queuectl gets 8 GiB of address space, what it starts as much") {
    FreshDatabase fixture;
    const auto r = queuectl(
        fixture.url(), {"lock", "harness", "--", "grep", "Max address space", "/proc/self/limits"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.find("8589934592") != std::string::npos);
  }
  SUBCASE("an ordinary command is untouched") {
    const auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"});
    CHECK(r.exit_code == 3);
    CHECK(r.out == "out\n");
    CHECK(r.err == "err\n");
  }
}

}  // namespace queuectl::testing::cli
