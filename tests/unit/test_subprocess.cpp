// Subprocess, the one process type behind `lock` and `work`, and the helper threads of
// core/process: exit codes, a command that cannot be run, captured output, the signal state
// a command starts with, a waitpid error that must not become an exit code, and a fork
// while another thread holds the C library's environment lock.
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/errors.hpp"
#include "core/subprocess.hpp"
#include "unit_helpers.hpp"

using queuectl::Subprocess;
using queuectl::test::contains;

namespace {

std::unique_ptr<Subprocess> start(std::vector<std::string> argv, bool capture = false,
                                  std::string input = "") {
  Subprocess::Options o;
  o.argv = std::move(argv);
  o.capture = capture;
  o.input = std::move(input);
  return Subprocess::start(std::move(o));
}

// Drives a captured command's pipes until it has ended and both are drained.
void run_captured(Subprocess& p) {
  while (!p.finished()) {
    std::vector<pollfd> fds;
    p.poll_fds(fds);
    poll(fds.data(), fds.size(), 20);
    for (const pollfd& f : fds)
      if (f.revents) p.handle(f.fd, f.revents);
    p.reap();
  }
}

// A signal mask line of a /proc status text ("SigBlk:", "SigIgn:"), as a bit set.
std::uint64_t mask_of(const std::string& status, const std::string& field) {
  const std::size_t at = status.find(field);
  REQUIRE_MESSAGE(at != std::string::npos, "no " << field << " in " << status);
  return std::stoull(status.substr(at + field.size()), nullptr, 16);
}

bool has_signal(std::uint64_t mask, int sig) {
  return (mask >> (sig - 1)) & 1U;
}

// A folder with files for one test, removed at the end.
class Scratch {
 public:
  Scratch() {
    char tmpl[] = "/tmp/queuectl-unit-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name, const std::string& text, mode_t mode) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    chmod(p.c_str(), mode);
    return p;
  }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("Subprocess: exit codes, signals, and commands that cannot be run") {
  CHECK(start({"true"})->wait() == 0);
  CHECK(start({"sh", "-c", "exit 7"})->wait() == 7);
  CHECK(start({"sh", "-c", "kill -TERM $$"})->wait() == 128 + SIGTERM);

  auto missing = start({"/nonexistent/queuectl-cmd", "x"});
  CHECK(missing->reaped());  // it never ran: nothing to wait for
  CHECK(missing->exit_code() == 127);
  CHECK(missing->exec_error() == ENOENT);
  CHECK(missing->exec_error_text() ==
        "cannot run '/nonexistent/queuectl-cmd': No such file or directory");
  CHECK(start({"queuectl-no-such-command-anywhere"})->exec_error() == ENOENT);

  Scratch dir;
  const std::string plain = dir.file("plain", "exit 3\n", 0644);
  CHECK(start({plain})->exec_error() == EACCES);
  // A script without #! runs with /bin/sh, as execvp does it.
  const std::string script = dir.file("script", "exit \"$1\"\n", 0755);
  auto ran = start({script, "5"});
  CHECK(ran->exec_error() == 0);
  CHECK(ran->wait() == 5);
}

TEST_CASE("Subprocess: captured: input on stdin, stdout kept, the tail of stderr, environment") {
  Subprocess::Options o;
  o.argv = {"sh", "-c",
            "cat; printf '%s' \"$QUEUECTL_UNIT_A|$QUEUECTL_UNIT_B\"; echo oops >&2; exit 4"};
  o.capture = true;
  o.input = "payload;";
  o.env = {{"QUEUECTL_UNIT_A", "one"}, {"QUEUECTL_UNIT_B", "two words"}};
  auto p = Subprocess::start(std::move(o));
  run_captured(*p);
  CHECK(p->exit_code() == 4);
  CHECK(p->out() == "payload;one|two words");
  CHECK(p->err_tail() == "oops");

  // A command that cannot be run says why in its stderr tail, which becomes last_error.
  Subprocess::Options m;
  m.argv = {"/nonexistent/queuectl-cmd"};
  m.capture = true;
  auto missing = Subprocess::start(std::move(m));
  run_captured(*missing);
  CHECK(missing->exit_code() == 127);
  CHECK(missing->err_tail() == "cannot run '/nonexistent/queuectl-cmd': No such file or directory");
}

// queuectl's own handlers and its ignored SIGPIPE must not reach the command, and no signal
// it blocks either; a signal asked to start ignored is.
TEST_CASE("Subprocess: the command starts with default handlers and nothing blocked") {
  struct sigaction handler {
  }, old_usr1{};
  handler.sa_handler = [](int) {};
  sigemptyset(&handler.sa_mask);
  sigaction(SIGUSR1, &handler, &old_usr1);
  signal(SIGPIPE, SIG_IGN);
  sigset_t term, old_mask;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old_mask);

  Subprocess::Options o;
  o.argv = {"cat", "/proc/self/status"};
  o.capture = true;
  o.to_default = {SIGPIPE};
  o.to_ignore = {SIGUSR2};
  auto p = Subprocess::start(std::move(o));
  run_captured(*p);

  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);
  signal(SIGPIPE, SIG_DFL);

  REQUIRE(p->exit_code() == 0);
  CHECK(mask_of(p->out(), "SigBlk:") == 0);
  CHECK(mask_of(p->out(), "SigCgt:") == 0);
  const std::uint64_t ignored = mask_of(p->out(), "SigIgn:");
  CHECK_FALSE(has_signal(ignored, SIGPIPE));
  CHECK(has_signal(ignored, SIGUSR2));
}

// With SIGCHLD ignored the kernel reaps children unasked, and waitpid fails with ECHILD.
// That is an error: the command's exit status is unknown, and must not be made up.
TEST_CASE("Subprocess: a waitpid error is an error, never a made-up exit status") {
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGCHLD, &ignore, &old);
  auto blocking = start({"false"});
  CHECK_THROWS_AS(blocking->wait(), queuectl::Error);
  auto polled = start({"false"});
  bool threw = false;
  for (int i = 0; i < 500 && !threw; ++i) {
    try {
      if (polled->reap()) break;
    } catch (const queuectl::Error& e) {
      threw = true;
      CHECK(contains(e.what(), "waitpid"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sigaction(SIGCHLD, &old, nullptr);
  CHECK(threw);
  CHECK(polled->exit_code() == -1);
}

// The child between fork and exec must not take a lock another thread may hold: here a
// thread keeps the C library's environment lock busy, as any thread of queuectl could (an
// unsetenv of a name that is not set takes the lock, reads the environment and changes
// nothing). A child that called setenv itself would wait for that lock forever, and this
// test would hang.
TEST_CASE("Subprocess: starts while another thread holds the environment lock") {
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop) ::unsetenv("QUEUECTL_UNIT_NEVER_SET");
  });
  int ok = 0;
  for (int i = 0; i < 200; ++i) {
    Subprocess::Options o;
    o.argv = {"true"};
    o.env = {{"QUEUECTL_JOB_ID", std::to_string(i)}};
    ok += Subprocess::start(std::move(o))->wait() == 0;
  }
  stop = true;
  churn.join();
  CHECK(ok == 200);
}

// A child runs on a stack its thread keeps from one child to the next (core/subprocess.cpp,
// ChildStack). Threads that start children at the same time must each have their own: two
// children on one stack would overwrite each other's plan (argv, environment, descriptors)
// before they exec, and run the wrong command, with the wrong output, or crash.
TEST_CASE("Subprocess: threads starting commands at the same time each run their own command") {
  constexpr int kThreads = 4;
  constexpr int kEach = 40;
  std::vector<int> right(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &right] {
      for (int i = 0; i < kEach; ++i) {
        const std::string mark = std::to_string(t) + "." + std::to_string(i);
        Subprocess::Options o;
        o.argv = {"sh", "-c",
                  "printf '%s' \"$QUEUECTL_UNIT_MARK\"; exit " + std::to_string(10 + t)};
        o.env = {{"QUEUECTL_UNIT_MARK", mark}};
        o.capture = true;
        auto p = Subprocess::start(std::move(o));
        run_captured(*p);
        right[t] += p->exit_code() == 10 + t && p->out() == mark;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) CHECK_MESSAGE(right[t] == kEach, "thread " << t);
}

TEST_CASE("start_helper_thread: the thread blocks every signal; its creator's mask is kept") {
  sigset_t before, after, inside;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  std::thread t =
      queuectl::start_helper_thread([&inside] { pthread_sigmask(SIG_SETMASK, nullptr, &inside); });
  t.join();
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE}) {
    CAPTURE(sig);
    CHECK(sigismember(&inside, sig) == 1);
    CHECK(sigismember(&after, sig) == sigismember(&before, sig));
  }
}
