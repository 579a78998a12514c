// Helpers for the fault tests (reaper, named locks, workers): background queuectl runs,
// polling with generous deadlines, and clean-up of processes a test started.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

inline void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Polls `done` every `step_ms` until it holds or `timeout_ms` has passed; returns whether
// it held. Deadlines are generous: this waits for something to happen, it never asserts
// how long that took.
inline bool wait_until(const std::function<bool()>& done, int timeout_ms = 20000,
                       int step_ms = 50) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    sleep_ms(step_ms);
  }
}

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool file_exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

inline void touch(const std::string& path) {
  std::ofstream(path, std::ios::app);
}

// Lines of a text file, without their newlines.
inline std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// A pid written by a script (`echo $$ > FILE`), once the file holds a whole line.
inline int read_pid(const std::string& path, int timeout_ms = 20000) {
  int pid = 0;
  wait_until(
      [&] {
        std::string text = read_text(path);
        if (text.empty() || text.back() != '\n') return false;
        pid = std::stoi(text);
        return pid > 0;
      },
      timeout_ms);
  return pid;
}

// Runs queuectl in a thread of its own, so that several runs overlap; stdout and stderr
// are kept apart, as with queuectl().
inline std::future<RunResult> queuectl_async(const std::string& url,
                                             const std::vector<std::string>& args,
                                             const std::string& input = "") {
  return std::async(std::launch::async, [url, args, input] { return queuectl(url, args, input); });
}

inline bool is_ready(std::future<RunResult>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// Starts queuectl in the background (stdout and stderr to `log`); returns its pid.
inline int spawn_queuectl(const std::string& url, const std::vector<std::string>& args,
                          const std::string& log) {
  std::vector<std::string> argv = {QUEUECTL_BINARY, "--db", url};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_process(argv, log);
}

// Starts queuectl in the background with stdout to `out` and stderr to `err` (kept apart,
// so that -o json output can be parsed); returns its pid.
inline int spawn_queuectl_split(const std::string& url, const std::vector<std::string>& args,
                                const std::string& out, const std::string& err) {
  std::vector<std::string> argv = {
      "sh", "-c", "f=$1; shift; exec \"$@\" 2>\"$f\"", "sh", err, QUEUECTL_BINARY, "--db", url};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_process(argv, out);
}

// Whether a process is gone: no such pid, or a zombie that its new parent (an orphan's
// adopter) has not reaped yet.
inline bool process_gone(int pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
}

// Whether a child process has ended and its parent has reaped it (waited for it): no such pid
// any more, not even a zombie. For a command queuectl runs, queuectl has seen it end.
inline bool process_reaped(int pid) {
  return kill(pid, 0) != 0 && errno == ESRCH;
}

// Whether signal `sig` sent to process `pid` is still pending, not yet taken by one of its
// threads (the SigPnd and ShdPnd masks of /proc/PID/status). Two signals sent before the
// first is taken arrive as one: wait until this is false before sending the second.
inline bool signal_pending(int pid, int sig) {
  std::istringstream status(read_text("/proc/" + std::to_string(pid) + "/status"));
  const unsigned long long bit = 1ULL << (sig - 1);
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigPnd:", 0) == 0 || line.rfind("ShdPnd:", 0) == 0)
      if (std::stoull(line.substr(7), nullptr, 16) & bit) return true;
  return false;
}

// CPU time (user + system, all threads) that a process has used so far, in seconds, from
// fields 14 and 15 of /proc/PID/stat.
inline double cpu_seconds(int pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t paren = stat.rfind(')');
  REQUIRE_MESSAGE(paren != std::string::npos, "no /proc/" << pid << "/stat");
  std::istringstream fields(stat.substr(paren + 1));
  std::vector<std::string> f;
  for (std::string s; fields >> s;) f.push_back(s);
  REQUIRE(f.size() > 12);  // f[0] is field 3 (state), so utime is f[11], stime f[12]
  return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Waits (generously) until `done` holds while `pid` keeps running, and returns the share of
// one CPU that `pid` used meanwhile. A worker that waits in poll() uses next to nothing; one
// that spins uses most of a core.
inline double cpu_share_until(int pid, const std::function<bool()>& done) {
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_seconds(pid);
  REQUIRE(wait_until(done, 30000, 50));
  const double c1 = cpu_seconds(pid);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("worker used " << (c1 - c0) << "s of CPU in " << wall << "s");
  return (c1 - c0) / wall;
}

// Makes the ack of job `id` wait: an open transaction on `holder` locks the job's row
// (SQLite: takes the database's write lock, so that no other connection can write). The
// caller rolls it back to let go.
inline void hold_ack_lock(soci::session& holder, std::int64_t id) {
  if (is_sqlite()) {
    holder << "BEGIN IMMEDIATE";
  } else {
    holder.begin();
    holder << "SELECT id FROM job_queue WHERE id = " + std::to_string(id) + " FOR UPDATE";
  }
}

// Waits until some connection waits for a row lock, such as the one hold_ack_lock holds:
// on PostgreSQL a lock in pg_locks not granted, on MySQL/MariaDB an InnoDB transaction in
// LOCK WAIT (information_schema.innodb_trx, which needs the PROCESS privilege the test
// servers grant). SQLite shows no waiter (a writer retries in its busy handler, seen by no
// one): there it returns at once, and the caller's wait for what led to the write is all.
// How many connections wait for a lock: on PostgreSQL those of this database only (other
// suites run beside on databases of their own); the MariaDB suites run one at a time.
inline std::string lock_waiters_sql() {
  return is_postgresql()
             ? "SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
               "WHERE NOT l.granted AND a.datname = current_database()"
             : "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT'";
}

inline void wait_for_lock_waiter(FreshDatabase& fixture, const std::string& what) {
  if (is_sqlite()) return;
  std::unique_ptr<Database> observer = fixture.connect();
  const std::string sql = lock_waiters_sql();
  REQUIRE_MESSAGE(wait_until([&] { return scalar(*observer, sql) > 0; }, 30000),
                  what << " never waited for the lock");
}

// Reaps a spawned child if it has exited: returns true and its exit code (128 + signal).
inline bool try_wait(int pid, int& code) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r != pid) return false;
  code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

// Waits for a spawned child with a generous deadline; SIGKILLs it and returns -1 if it is
// still running after `timeout_ms`.
inline int wait_exit(int pid, int timeout_ms = 30000) {
  int code = -1;
  if (wait_until([&] { return try_wait(pid, code); }, timeout_ms, 20)) return code;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// Kills what a test started when the test ends, whether it passed or not: spawned
// children (killed and reaped unless already waited for) and process groups or pids
// left behind by killed parents.
class Cleanup {
 public:
  Cleanup() = default;
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;
  ~Cleanup() {
    for (int pid : children_) {
      int code = 0;
      if (!try_wait(pid, code)) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
    for (int pgid : groups_) kill(-pgid, SIGKILL);
    for (int pid : pids_) kill(pid, SIGKILL);
  }
  // A child from spawn_process; call forget() once it was waited for.
  int child(int pid) {
    children_.insert(pid);
    return pid;
  }
  void forget(int pid) { children_.erase(pid); }
  void group(int pgid) {
    if (pgid > 0) groups_.insert(pgid);
  }
  void pid(int pid) {
    if (pid > 0) pids_.insert(pid);
  }
  // Once a pid or group is known to be gone, so that a reused pid is never killed.
  void gone(int pid) {
    pids_.erase(pid);
    groups_.erase(pid);
  }

 private:
  std::set<int> children_, groups_, pids_;
};

// Waits for a child registered with `cleanup`, then forgets it.
inline int wait_child(Cleanup& cleanup, int pid, int timeout_ms = 30000) {
  int code = wait_exit(pid, timeout_ms);
  cleanup.forget(pid);
  return code;
}

// The job's status name as `show` prints it.
inline std::string status_of(const std::string& url, std::int64_t id) {
  return show(url, id)["status"].get<std::string>();
}

// Leases that have expired, as `leases --expired -o json` prints them.
inline json expired_leases(const std::string& url) {
  json leases = ok_json(url, {"leases", "--expired"});
  REQUIRE(leases.is_array());
  return leases;
}

// Waits until `count` leases have expired (the database clock decides); REQUIREs it.
inline json wait_expired(const std::string& url, std::size_t count = 1, int timeout_ms = 20000) {
  json leases;
  bool got = wait_until(
      [&] {
        leases = expired_leases(url);
        return leases.size() >= count;
      },
      timeout_ms, 100);
  INFO("leases --expired: " << leases.dump());
  REQUIRE_MESSAGE(got, "the lease(s) never expired");
  return leases;
}

// Makes a job due now (after a reap or fail put run_at in the future), for tests where
// the backoff wait is not what is tested. created_at is in the past and of the same type.
inline void make_due(FreshDatabase& fixture, std::int64_t id) {
  long long v = id;
  fixture.db().session() << "UPDATE job_queue SET run_at = created_at WHERE id = :id",
      soci::use(v, "id");
}

// Enqueues `count` jobs ({"n": i}) into `queue` with one `enqueue --from -`.
inline void enqueue_many(const std::string& url, const std::string& queue, int count) {
  std::string lines;
  for (int i = 0; i < count; ++i)
    lines += "{\"queue\":\"" + queue + "\",\"payload\":{\"n\":" + std::to_string(i) + "}}\n";
  json r = ok_json(url, {"enqueue", "--from", "-"}, lines);
  REQUIRE(r["enqueued"] == count);
}

// Rows of job_queue with this status (0 ready, 1 processing, 2 done, 3 failed).
inline long long jobs_with_status(FreshDatabase& fixture, int status) {
  return scalar(fixture.db(),
                "SELECT COUNT(*) FROM job_queue WHERE status = " + std::to_string(status));
}

// SQLite only: whether no connection holds the database's write lock right now, i.e. no
// write transaction is open (BEGIN IMMEDIATE succeeds without waiting).
inline bool sqlite_write_lock_free(FreshDatabase& fixture) {
  soci::session& s = fixture.db().session();
  int busy_timeout = 0;
  s << "PRAGMA busy_timeout", soci::into(busy_timeout);
  s << "PRAGMA busy_timeout = 0";
  bool free = true;
  try {
    s << "BEGIN IMMEDIATE";
    s << "ROLLBACK";
  } catch (const soci::soci_error&) {
    free = false;
  }
  s << ("PRAGMA busy_timeout = " + std::to_string(busy_timeout));
  return free;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A PostgreSQL URL with an application_name of its own, so that pg_stat_activity (or a
// pg_terminate_backend) can pick out the connections of the queuectl runs that use it.
inline std::string with_application_name(const std::string& url, const std::string& app) {
  return url + (contains(url, "?") ? "&" : "?") + "application_name=" + app;
}

inline std::int64_t id_of(const json& job) {
  return job["id"].get<std::int64_t>();
}

inline std::set<std::int64_t> id_set(const json& ids) {
  std::set<std::int64_t> out;
  for (const auto& v : ids) out.insert(v.get<std::int64_t>());
  return out;
}

// Lines of `text` that contain `needle`.
inline std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (contains(line, needle)) out.push_back(line);
  return out;
}

// A shell loop that waits until `path` exists (at most ~30s).
inline std::string wait_for_file(const std::string& path) {
  return "i=0; while [ ! -e '" + path + "' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done";
}

// Another process holding the named lock `name` (say, another reaper): `queuectl lock` around
// a command that waits for the file `go`. Returns its pid once it holds the lock; touch `go`
// to let it finish. Its output goes to `dir`/holder.log.
inline int hold_lock(const std::string& url, const std::string& name, const std::string& dir,
                     const std::string& go, Cleanup& cleanup) {
  const std::string held = dir + "/held", log = dir + "/holder.log";
  int pid = cleanup.child(spawn_queuectl(
      url, {"lock", name, "--", "sh", "-c", "touch '" + held + "'; " + wait_for_file(go)}, log));
  REQUIRE_MESSAGE(wait_until([&] { return file_exists(held); }),
                  "the lock holder never started: " << read_text(log));
  return pid;
}

}  // namespace queuectl::testing::cli
