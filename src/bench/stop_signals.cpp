#include "bench/stop_signals.hpp"

#include <atomic>

namespace queuectl::bench {
namespace {

// Written by the handler: a lock-free atomic is safe there, in whichever thread it runs.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free atomics");

void on_signal(int sig) {
  int none = 0;
  g_signal.compare_exchange_strong(none, sig);
}

}  // namespace

StopSignals::StopSignals() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &sa, &old_[i]);
}

StopSignals::~StopSignals() {
  for (int i = 0; i < kCount; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

int StopSignals::received() {
  return g_signal.load();
}

}  // namespace queuectl::bench
