#include "bench/bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "bench/client.hpp"
#include "bench/latency.hpp"
#include "bench/scratch.hpp"
#include "core/errors.hpp"
#include "core/process.hpp"
#include "db/job_repository.hpp"

namespace queuectl::bench {
namespace {

constexpr std::int64_t kSeedRows = 500;   // rows per INSERT into seed 001's table
constexpr std::int64_t kSeedJobs = 5000;  // jobs per enqueue_many into the copy
constexpr const char* kQueue = "bench";   // the copy's one queue

// The clients of one run, joined before anything else is undone: their transactions and
// locks end before the tables are dropped.
class ClientPool {
 public:
  explicit ClientPool(std::size_t n) : stats(n) {}
  ~ClientPool() { join(); }
  ClientPool(const ClientPool&) = delete;
  ClientPool& operator=(const ClientPool&) = delete;

  void start(std::vector<ClientPlan> plans) {
    plans_ = std::move(plans);
    // Every signal blocked in the clients: the main thread takes them (core/process.hpp).
    for (std::size_t i = 0; i < plans_.size(); ++i)
      threads_.push_back(
          start_helper_thread([this, i] { run_client(plans_[i], control, stats[i]); }));
  }
  void join() {
    control.stop = true;
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
  }
  std::size_t size() const { return stats.size(); }

  RunControl control;
  std::vector<ClientStats> stats;

 private:
  std::vector<ClientPlan> plans_;
  std::vector<std::thread> threads_;
};

int stop_signal(const BenchHooks& hooks) {
  return hooks.stop_signal ? hooks.stop_signal() : 0;
}

// One lock held across the work can keep a client waiting behind every other one (FOR
// UPDATE): the lock wait covers that line, so that only a real stall ends in a timeout.
std::chrono::milliseconds lock_wait(const BenchOptions& o) {
  const std::int64_t line = 2LL * o.clients * o.batch * o.work.ms();
  return kLockWait + std::chrono::milliseconds(std::min<std::int64_t>(line, 600000));
}

long long count(Database& db, const std::string& sql) {
  long long n = 0;
  db.retrying([&] { db.session() << sql, soci::into(n); });
  return n;
}

// Fills seed 001's table (no job ids are bound: every row is "(0)"). False when a signal
// came first.
bool seed_table(Database& db, const BenchSql& sql, const ScratchTables& t, std::int64_t jobs,
                const BenchHooks& hooks) {
  for (std::int64_t done = 0; done < jobs;) {
    if (stop_signal(hooks)) return false;
    const std::int64_t n = std::min(kSeedRows, jobs - done);
    std::string text = t.render(sql.seed_prefix);
    for (std::int64_t i = 0; i < n; ++i) text += (i ? ", " : "") + sql.seed_row;
    db.retrying([&] { db.session() << text; });
    done += n;
  }
  return true;
}

// Fills the copy of job_queue through queuectl's own bulk enqueue.
bool seed_copy(const DbUrl& url, const Statements& statements, std::int64_t jobs,
               const BenchHooks& hooks) {
  Database db(url, statements);
  JobRepository repo(db);
  for (std::int64_t done = 0; done < jobs;) {
    if (stop_signal(hooks)) return false;
    const std::int64_t n = std::min(kSeedJobs, jobs - done);
    NewJob job;
    job.queue = kQueue;
    repo.enqueue_many(std::vector<NewJob>(static_cast<std::size_t>(n), job));
    done += n;
  }
  return true;
}

// Reads the figures of a finished run from its tables.
void count_results(Database& db, const BenchSql& sql, const ScratchTables& t, Strategy s,
                   StrategyResult& r) {
  db.retrying([&] {
    long long rows = 0, distinct = 0;
    db.session() << t.render(sql.ledger_counts), soci::into(rows), soci::into(distinct);
    r.runs = rows;
    r.processed = distinct;
  });
  r.duplicates = count(db, t.render(sql.duplicates));
  r.unfinished = count(db, t.render(s == Strategy::claim ? sql.unfinished_claim : sql.unfinished));
}

StrategyResult run_strategy(Database& db, const DbUrl& url, Strategy s, const BenchOptions& o,
                            const BenchHooks& hooks) {
  const BenchSql& sql = bench_sql(url.backend);
  StrategyResult r;
  r.strategy = s;
  r.jobs = o.jobs;
  ScratchSchema schema(db, sql, scratch_tables(static_cast<long>(getpid()), s), hooks.warn);
  const ScratchTables& t = schema.tables();
  Statements claim_sql;
  if (s == Strategy::claim) {
    claim_sql = claim_statements(db.sql(), t);
    schema.create_schema_copy();
  } else {
    schema.create_seed_table();
  }
  const bool seeded = s == Strategy::claim ? seed_copy(url, claim_sql, o.jobs, hooks)
                                           : seed_table(db, sql, t, o.jobs, hooks);
  if (!seeded) {
    r.interrupted = true;
    return r;
  }

  ClientPool pool(static_cast<std::size_t>(o.clients));
  std::vector<ClientPlan> plans;
  for (int i = 0; i < o.clients; ++i) {
    ClientPlan p;
    p.url = url;
    p.strategy = s;
    p.sql = &sql;
    p.tables = t;
    p.claim_sql = s == Strategy::claim ? &claim_sql : nullptr;
    p.number = i + 1;
    p.batch = o.batch;
    p.work = o.work;
    p.lock_wait = lock_wait(o);
    p.lease = std::max(Duration::seconds(30), Duration(o.work.chrono() * o.batch * 10));
    plans.push_back(p);
  }
  pool.start(std::move(plans));
  RunControl& control = pool.control;
  const int n = o.clients;
  while (control.connected < n) {
    if (stop_signal(hooks)) control.stop = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (const ClientStats& c : pool.stats) {
    if (c.connect_error) {
      pool.join();
      std::rethrow_exception(c.connect_error);
    }
  }
  if (stop_signal(hooks)) {
    r.interrupted = true;
    return r;
  }

  const auto t0 = Clock::now();
  control.go = true;
  auto next_progress = t0;
  bool cut = false;
  while (control.finished < n) {
    const auto now = Clock::now();
    if (stop_signal(hooks) && !control.stop) {
      control.stop = true;
      r.interrupted = true;
    }
    if (now - t0 >= o.duration.chrono() && !control.stop) {
      control.stop = true;
      cut = true;
    }
    if (hooks.progress && now >= next_progress) {
      hooks.progress(s, control.runs, o.jobs, std::chrono::duration<double>(now - t0).count(),
                     false);
      next_progress = now + std::chrono::milliseconds(250);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  pool.join();

  Clock::time_point end = t0;
  std::vector<double> latencies;
  for (const ClientStats& c : pool.stats) {
    end = std::max(end, c.ended);
    latencies.insert(latencies.end(), c.latencies_ms.begin(), c.latencies_ms.end());
    r.retries += c.retries;
    r.lease_lost += c.lease_lost;
    if (!c.error.empty()) {
      ++r.errors;
      if (r.first_error.empty()) r.first_error = c.error;
    }
  }
  r.seconds = std::chrono::duration<double>(end - t0).count();
  if (hooks.progress) hooks.progress(s, control.runs, o.jobs, r.seconds, true);
  if (r.interrupted) return r;
  r.complete = !cut;
  r.claims = static_cast<std::int64_t>(latencies.size());
  r.p50_ms = percentile(latencies, 50);
  r.p99_ms = percentile(latencies, 99);
  r.max_ms = latencies.empty() ? 0 : latencies.back();
  count_results(db, sql, t, s, r);
  // Dropped now, before the next strategy starts; a table left behind is an error.
  const std::vector<std::string> problems = schema.drop();
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
    throw Error(all);
  }
  return r;
}

}  // namespace

std::string skip_reason(Strategy strategy, Backend backend) {
  const BenchSql& sql = bench_sql(backend);
  if (needs_row_locks(strategy) && !sql.row_locks) return sql.no_row_locks_reason;
  return {};
}

std::vector<StrategyResult> run_bench(const DbUrl& url, const BenchOptions& options,
                                      const BenchHooks& hooks) {
  Database db(url);
  std::vector<StrategyResult> results;
  for (Strategy s : options.strategies) {
    if (stop_signal(hooks)) break;
    if (std::string why = skip_reason(s, url.backend); !why.empty()) {
      StrategyResult r;
      r.strategy = s;
      r.skipped = why;
      results.push_back(r);
      continue;
    }
    results.push_back(run_strategy(db, url, s, options, hooks));
    if (results.back().interrupted) break;
  }
  return results;
}

}  // namespace queuectl::bench
