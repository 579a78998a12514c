#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "core/signal_scope.hpp"

using queuectl::SignalScope;

namespace {
std::atomic<int> g_outer{0};
void outer_handler(int sig) {
  g_outer = sig;
}
}  // namespace

TEST_CASE("core::SignalScope counts stop signals, wakes its pipe, and puts handlers back") {
  struct sigaction outer {
  }, before{};
  outer.sa_handler = outer_handler;
  sigemptyset(&outer.sa_mask);
  sigaction(SIGUSR1, &outer, &before);
  sigaction(SIGHUP, &outer, nullptr);
  {
    SignalScope scope({SIGHUP, SIGUSR1});
    CHECK(SignalScope::stops() == 0);
    raise(SIGUSR1);
    raise(SIGHUP);
    raise(SIGHUP);
    CHECK(SignalScope::stops() == 2);  // SIGUSR1 wakes, but is no stop
    CHECK(SignalScope::first_stop() == SIGHUP);
    scope.wake();  // another thread's wake-up reads back as no signal
    CHECK(scope.take() == std::vector<int>{SIGUSR1, SIGHUP, SIGHUP});
    CHECK(scope.take().empty());
    CHECK(g_outer == 0);
  }
  raise(SIGUSR1);
  CHECK(g_outer == SIGUSR1);  // the handler from before is back
  sigaction(SIGUSR1, &before, nullptr);
  signal(SIGHUP, SIG_DFL);
}

TEST_CASE("core::SignalScope::forwarding holds a signal until the group is known") {
  SignalScope scope = SignalScope::forwarding({SIGUSR2});
  raise(SIGUSR2);  // blocked: pending, not lost
  CHECK(scope.take().empty());
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    signal(SIGUSR2, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    setpgid(0, 0);
    for (;;) pause();
  }
  setpgid(child, child);    // the child's own group, whichever of the two calls runs first
  scope.forward_to(child);  // the pending signal arrives now, and goes on to the child
  CHECK(scope.take() == std::vector<int>{SIGUSR2});
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGUSR2);
}
