#include "cli/child.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/process.hpp"

namespace queuectl {
namespace {

volatile sig_atomic_t g_child = 0;

volatile sig_atomic_t g_pending = 0;  // a signal that came before the command's pid was known

// To the command's whole process group, as timeout(1) does: a shell script and what it
// started hear the signal alike.
void forward(int sig) {
  if (g_child > 0)
    kill(-static_cast<pid_t>(g_child), sig);
  else
    g_pending = sig;  // only the main thread blocks them: another thread may take one early
}

// Makes process group `pgid` the terminal's foreground group (called only when queuectl's
// group had the terminal): a command in a process group of its own can then read the
// terminal, and Ctrl-C reaches it; afterwards queuectl takes the terminal back.
void give_terminal(pid_t pgid) {
  // tcsetpgrp from a background group would stop us with SIGTTOU.
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, pgid);
  sigprocmask(SIG_SETMASK, &old, nullptr);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
constexpr std::size_t kForwardedCount = sizeof kForwarded / sizeof kForwarded[0];

}  // namespace

int run_forwarding_signals(const std::vector<std::string>& argv,
                           const std::function<bool()>& keep_going, int kill_after_ms) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // Signals are blocked from before fork until g_child is set, so that none sent in
  // between is lost: it is delivered, and forwarded, once they are unblocked.
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  for (int sig : kForwarded) sigaddset(&forwarded, sig);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);

  g_pending = 0;
  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  struct sigaction old[kForwardedCount];
  for (std::size_t i = 0; i < kForwardedCount; ++i) sigaction(kForwarded[i], &sa, &old[i]);

  std::fflush(nullptr);
  // The command gets a process group of its own, so that the guard can kill all of it if
  // queuectl dies; the terminal (if queuectl holds it) goes to that group while it runs.
  GroupGuard guard;
  const bool had_terminal = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (had_terminal) give_terminal(getpid());
    for (std::size_t i = 0; i < kForwardedCount; ++i) sigaction(kForwarded[i], &old[i], nullptr);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    die_with_parent(parent);
    execvp(args[0], args.data());
    exec_failed(args[0], errno);
  }
  int code = 127;
  if (pid > 0) {
    setpgid(pid, pid);  // also here, so that signals to the group work at once
    guard.watch(pid);
    if (had_terminal) give_terminal(pid);
    g_child = pid;
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (g_pending) kill(-pid, g_pending);
    int status = 0;
    bool stopping = false;
    auto kill_at = std::chrono::steady_clock::time_point::max();
    while (true) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR)) break;
      if (!stopping && keep_going && !keep_going()) {
        stopping = true;
        kill(-pid, SIGTERM);
        kill_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(kill_after_ms);
      }
      if (stopping && std::chrono::steady_clock::now() >= kill_at) {
        kill(-pid, SIGKILL);
        kill_at = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    g_child = 0;
    guard.unwatch(pid);
    if (had_terminal) give_terminal(getpgrp());
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    std::fprintf(stderr, "queuectl: error: cannot start '%s': %s\n", args[0], std::strerror(errno));
  }
  for (std::size_t i = 0; i < kForwardedCount; ++i) sigaction(kForwarded[i], &old[i], nullptr);
  return code;
}

}  // namespace queuectl
