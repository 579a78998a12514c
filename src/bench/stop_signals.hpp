// SIGINT, SIGTERM and SIGHUP while `bench` runs: the handler only records the signal; the
// run sees it, stops its clients, drops its scratch tables and exits 128 + the signal.
#pragma once

#include <signal.h>

namespace queuectl::bench {

// Installs the handler for its lifetime and restores the previous one after.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The first signal received (0: none yet).
  static int received();

 private:
  static constexpr int kCount = 3;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[kCount];
};

}  // namespace queuectl::bench
