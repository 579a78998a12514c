// One client of a strategy's run: a thread with a connection of its own that takes jobs
// the strategy's way, simulates the work, writes what it processed to the ledger and marks
// it done, until no job is left or it is told to stop.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "bench/bench_sql.hpp"
#include "bench/scratch.hpp"
#include "bench/strategy.hpp"
#include "core/duration.hpp"
#include "db/dialect.hpp"

namespace queuectl::bench {

using Clock = std::chrono::steady_clock;

// Shared by the clients of one run and the thread that watches them.
struct RunControl {
  std::atomic<bool> stop{false};      // finish now: roll back, record nothing more
  std::atomic<bool> go{false};        // every client is connected: start
  std::atomic<int> connected{0};      // clients that connected (or failed to)
  std::atomic<int> finished{0};       // clients that ended
  std::atomic<std::int64_t> runs{0};  // jobs processed so far, duplicates included
};

struct ClientPlan {
  DbUrl url;
  Strategy strategy = Strategy::naive;
  const BenchSql* sql = nullptr;
  ScratchTables tables;
  const Statements* claim_sql = nullptr;  // claim: queuectl's statements on the copy
  int number = 1;                         // written to the ledger
  int batch = 1;
  Duration work;
  std::chrono::milliseconds lock_wait{0};
  Duration lease;  // claim
};

struct ClientStats {
  std::vector<double> latencies_ms;  // one per claim that returned jobs
  std::int64_t retries = 0;
  std::int64_t lease_lost = 0;
  std::exception_ptr connect_error;  // it never started
  std::string error;                 // why it stopped early (empty: no job left, or told to)
  Clock::time_point ended;
};

// Connects, waits for control.go, then takes jobs until none is left or control.stop.
// Never throws: what went wrong is in `stats`.
void run_client(const ClientPlan& plan, RunControl& control, ClientStats& stats);

}  // namespace queuectl::bench
