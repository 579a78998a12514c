#include "cli/child.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace queuectl {
namespace {

volatile sig_atomic_t g_child = 0;

void forward(int sig) {
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

}  // namespace

int run_forwarding_signals(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  struct sigaction sa {};
  sa.sa_handler = forward;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  struct sigaction old[sizeof kForwarded / sizeof kForwarded[0]];
  for (std::size_t i = 0; i < sizeof kForwarded / sizeof kForwarded[0]; ++i)
    sigaction(kForwarded[i], &sa, &old[i]);

  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    for (std::size_t i = 0; i < sizeof kForwarded / sizeof kForwarded[0]; ++i)
      sigaction(kForwarded[i], &old[i], nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "queuectl: error: cannot run '%s': %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  int code = 127;
  if (pid > 0) {
    g_child = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
    code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  } else {
    std::fprintf(stderr, "queuectl: error: cannot start '%s': %s\n", args[0], std::strerror(errno));
  }
  for (std::size_t i = 0; i < sizeof kForwarded / sizeof kForwarded[0]; ++i)
    sigaction(kForwarded[i], &old[i], nullptr);
  return code;
}

}  // namespace queuectl
