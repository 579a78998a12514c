// `queuectl bench`: seed 001's experiment against the configured database. Several clients
// (threads, each with a connection of its own) take jobs from one scratch table per
// strategy, simulate work on each, and write every job they processed to a ledger; the
// figures (throughput, claim latency, duplicates, lost jobs, retries and errors) are
// counted from the tables afterwards, not assumed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/strategy.hpp"
#include "core/db_url.hpp"
#include "core/duration.hpp"

namespace queuectl::bench {

struct BenchOptions {
  std::vector<Strategy> strategies;
  int clients = 4;
  std::int64_t jobs = 200;
  int batch = 1;                                            // jobs per claim
  Duration work = Duration(std::chrono::milliseconds(20));  // per job
  Duration duration = Duration::seconds(60);                // per strategy, at most
};

struct StrategyResult {
  Strategy strategy = Strategy::naive;
  std::string skipped;          // why it did not run here; empty when it ran
  bool complete = false;        // ran until no job was left, not cut short by --duration
  bool interrupted = false;     // stopped by a signal: the other figures are partial
  std::int64_t jobs = 0;        // in the table at the start
  std::int64_t processed = 0;   // distinct jobs in the ledger
  std::int64_t runs = 0;        // ledger rows: processed + the extra runs of duplicates
  std::int64_t duplicates = 0;  // jobs processed more than once
  // Jobs not finished (not marked done, or never in the ledger): lost when complete, else
  // not reached before --duration ended.
  std::int64_t unfinished = 0;
  double seconds = 0;       // from the common start to the last client's end
  std::int64_t claims = 0;  // claims that returned jobs
  // From asking for work to holding it, including waits for locks and empty retries.
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
  // Deadlocks, lock-wait timeouts, serialization failures and SQLite BUSY, each retried.
  std::int64_t retries = 0;
  std::int64_t lease_lost = 0;  // claim: acks refused because the lease was gone
  std::int64_t errors = 0;      // clients that stopped on an error
  std::string first_error;

  double jobs_per_second() const { return seconds > 0 ? processed / seconds : 0; }
};

struct BenchHooks {
  // Nonzero once a signal asked to stop (its number).
  std::function<int()> stop_signal;
  // While a strategy runs, a few times a second; `done` once at its end.
  std::function<void(Strategy, std::int64_t runs, std::int64_t jobs, double seconds, bool done)>
      progress;
  // A line for stderr (a table that could not be dropped).
  std::function<void(const std::string&)> warn;
};

// Why `strategy` does not run on `backend`; empty when it does.
std::string skip_reason(Strategy strategy, Backend backend);

// Runs each strategy in turn, each in tables of its own that are dropped before the next
// starts. Stops early when hooks.stop_signal says so (the last result is then marked
// interrupted). Throws Error when the database cannot be used, after dropping what it made.
std::vector<StrategyResult> run_bench(const DbUrl& url, const BenchOptions& options,
                                      const BenchHooks& hooks);

}  // namespace queuectl::bench
