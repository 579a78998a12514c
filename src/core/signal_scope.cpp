#include "core/signal_scope.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "core/errors.hpp"

namespace queuectl {
namespace {

// Written by the handler: lock-free atomics are safe there, in whichever thread it runs
// (queuectl's own helper threads block the signals, a library's might not).
std::atomic<int> g_wake_fd{-1};
std::atomic<int> g_stops{0};
std::atomic<int> g_first_stop{0};
std::atomic<pid_t> g_group{0};
std::atomic<int> g_pending{0};  // caught by another thread before the group was known
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free,
              "the signal handler needs lock-free atomics");

bool is_stop(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
}

void on_signal(int sig) {
  const int saved = errno;
  if (is_stop(sig)) {
    g_stops.fetch_add(1);
    int none = 0;
    g_first_stop.compare_exchange_strong(none, sig);
  }
  // To the whole process group, as timeout(1) does: a shell script and what it started
  // hear the signal alike.
  if (const pid_t group = g_group.load(); group > 0)
    kill(-group, sig);
  else
    g_pending.store(sig);
  const unsigned char byte = static_cast<unsigned char>(sig);
  if (const int fd = g_wake_fd.load(); fd >= 0) (void)!write(fd, &byte, 1);
  errno = saved;
}

}  // namespace

SignalScope::SignalScope(std::vector<int> signals, std::vector<int> ignore)
    : SignalScope(std::move(signals), std::move(ignore), false) {}

SignalScope SignalScope::forwarding(std::vector<int> signals) {
  return SignalScope(std::move(signals), {}, true);
}

SignalScope::SignalScope(std::vector<int> signals, std::vector<int> ignore, bool forward)
    : signals_(std::move(signals)), ignore_(std::move(ignore)) {
  if (pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) throw Error("cannot create a pipe for signals");
  g_stops = 0;
  g_first_stop = 0;
  g_group = 0;
  g_pending = 0;
  g_wake_fd = pipe_[1];
  if (forward) {
    sigset_t caught;
    sigemptyset(&caught);
    for (int sig : signals_) sigaddset(&caught, sig);
    pthread_sigmask(SIG_BLOCK, &caught, &mask_);
    blocked_ = true;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  old_.resize(signals_.size());
  for (std::size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &sa, &old_[i]);
  struct sigaction ignored {};
  ignored.sa_handler = SIG_IGN;
  sigemptyset(&ignored.sa_mask);
  old_ignored_.resize(ignore_.size());
  for (std::size_t i = 0; i < ignore_.size(); ++i)
    sigaction(ignore_[i], &ignored, &old_ignored_[i]);
}

SignalScope::~SignalScope() {
  g_group = 0;
  if (blocked_) pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
  for (std::size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &old_[i], nullptr);
  for (std::size_t i = 0; i < ignore_.size(); ++i) sigaction(ignore_[i], &old_ignored_[i], nullptr);
  g_wake_fd = -1;
  close(pipe_[0]);
  close(pipe_[1]);
}

void SignalScope::wake() const {
  const unsigned char byte = 0;
  (void)!write(pipe_[1], &byte, 1);
}

std::vector<int> SignalScope::take() {
  std::vector<int> out;
  unsigned char buf[64];
  for (;;) {
    const ssize_t n = read(pipe_[0], buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i)
      if (buf[i] != 0) out.push_back(buf[i]);
  }
  return out;
}

int SignalScope::stops() {
  return g_stops.load();
}

int SignalScope::first_stop() {
  return g_first_stop.load();
}

void SignalScope::forward_to(pid_t group) {
  g_group = group;
  if (const int sig = g_pending.exchange(0); sig != 0) kill(-group, sig);
  if (blocked_) {
    blocked_ = false;
    pthread_sigmask(SIG_SETMASK, &mask_, nullptr);  // those that came meanwhile arrive now
  }
}

std::vector<int> SignalScope::ignored_before() const {
  std::vector<int> out;
  for (std::size_t i = 0; i < signals_.size(); ++i)
    if (!(old_[i].sa_flags & SA_SIGINFO) && old_[i].sa_handler == SIG_IGN)
      out.push_back(signals_[i]);
  return out;
}

}  // namespace queuectl
