// queuectl bench: seed 001's experiment (no lock, FOR UPDATE, FOR UPDATE SKIP LOCKED) and
// queuectl's own claim, each with several clients in a scratch table of its own.
#include <cmath>
#include <cstdio>
#include <memory>

#include "bench/bench.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/terminal.hpp"
#include "core/errors.hpp"
#include "core/human_time.hpp"
#include "core/signal_scope.hpp"

namespace queuectl {
namespace {

using bench::Strategy;
using bench::StrategyResult;

struct BenchCliOptions {
  std::string strategy;
  int clients = 4;
  long long jobs = 200;
  int batch = 1;
  std::string work, duration;
};

constexpr int kMaxClients = 128;
constexpr long long kMaxJobs = 1000000;
constexpr int kMaxBatch = 1000;

bench::BenchOptions validate(const BenchCliOptions& c) {
  bench::BenchOptions o;
  o.strategies = c.strategy.empty() ? bench::all_strategies() : bench::parse_strategies(c.strategy);
  validate_positive(c.clients, "--clients");
  if (c.clients > kMaxClients)
    throw UsageError("--clients " + std::to_string(c.clients) + " is over " +
                     std::to_string(kMaxClients));
  o.clients = c.clients;
  validate_positive(c.jobs, "--jobs");
  if (c.jobs > kMaxJobs)
    throw UsageError("--jobs " + std::to_string(c.jobs) + " is over " + std::to_string(kMaxJobs));
  o.jobs = c.jobs;
  validate_positive(c.batch, "--batch");
  if (c.batch > kMaxBatch)
    throw UsageError("--batch " + std::to_string(c.batch) + " is over " +
                     std::to_string(kMaxBatch));
  o.batch = c.batch;
  o.work = duration_option(c.work, "--work", o.work);
  if (o.work.ms() < 0) throw UsageError("--work must not be negative");
  if (o.work.ms() > 3600 * 1000) throw UsageError("--work " + o.work.str() + " is over 1h");
  o.duration = duration_option(c.duration, "--duration", o.duration);
  if (!o.duration.positive()) throw UsageError("--duration must be positive");
  return o;
}

double rounded(double value, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

std::string fixed(double value, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

nlohmann::ordered_json result_json(const StrategyResult& r) {
  nlohmann::ordered_json j;
  j["strategy"] = std::string(bench::strategy_name(r.strategy));
  if (!r.skipped.empty()) {
    j["status"] = "skipped";
    j["reason"] = r.skipped;
    return j;
  }
  j["status"] = r.complete ? "complete" : "stopped";
  j["seconds"] = rounded(r.seconds, 3);
  j["jobs"] = r.jobs;
  j["processed"] = r.processed;
  j["runs"] = r.runs;
  j["duplicates"] = r.duplicates;
  // Lost only means something when the run ended by itself; cut short by --duration, the
  // jobs left were simply not reached.
  j["lost"] = r.complete ? nlohmann::ordered_json(r.unfinished) : nlohmann::ordered_json();
  j["not_reached"] = r.complete ? 0 : r.unfinished;
  j["jobs_per_second"] = rounded(r.jobs_per_second(), 1);
  j["claims"] = r.claims;
  j["claim_latency_ms"] = {
      {"p50", rounded(r.p50_ms, 3)}, {"p99", rounded(r.p99_ms, 3)}, {"max", rounded(r.max_ms, 3)}};
  j["retries"] = r.retries;
  j["lease_lost"] = r.lease_lost;
  j["errors"] = r.errors;
  j["first_error"] =
      r.first_error.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(r.first_error);
  return j;
}

Output bench_view(const DbUrl& url, const bench::BenchOptions& o,
                  const std::vector<StrategyResult>& results) {
  Output out;
  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const StrategyResult& r : results) items.push_back(result_json(r));
  out.document = {{"backend", std::string(backend_name(url.backend))},
                  {"clients", o.clients},
                  {"jobs", o.jobs},
                  {"batch", o.batch},
                  {"work_ms", o.work.ms()},
                  {"duration_ms", o.duration.ms()},
                  {"strategies", items}};
  out.items = items;
  Table t;
  t.headers = {"STRATEGY",   "JOBS/S", "P50 MS",  "P99 MS", "PROCESSED",
               "DUPLICATES", "LOST",   "RETRIES", "ERRORS"};
  for (const StrategyResult& r : results) {
    const std::string name(bench::strategy_name(r.strategy));
    if (!r.skipped.empty()) {
      out.lines.push_back(name + ": skipped: " + r.skipped);
      continue;
    }
    t.rows.push_back({name, fixed(r.jobs_per_second(), 1), fixed(r.p50_ms, 2), fixed(r.p99_ms, 2),
                      std::to_string(r.processed), std::to_string(r.duplicates),
                      r.complete ? std::to_string(r.unfinished) : "-", std::to_string(r.retries),
                      std::to_string(r.errors + r.lease_lost)});
    if (!r.complete)
      out.lines.push_back(name + ": stopped by --duration after " + human_duration(r.seconds) +
                          "; " + std::to_string(r.unfinished) + " job(s) not reached");
    if (!r.first_error.empty()) out.lines.push_back(name + ": error: " + r.first_error);
    if (r.lease_lost > 0)
      out.lines.push_back(name + ": " + std::to_string(r.lease_lost) + " ack(s) lost the lease");
  }
  if (!t.rows.empty()) out.table = t;
  out.lines.insert(out.lines.begin(),
                   std::string(backend_name(url.backend)) + ", " + std::to_string(o.clients) +
                       " client(s), " + std::to_string(o.jobs) + " job(s) per strategy, batch " +
                       std::to_string(o.batch) + ", " + o.work.str() + " of work per job");
  return out;
}

void run_bench_command(Context& ctx, const BenchCliOptions& c) {
  bench::BenchOptions o = validate(c);
  const DbUrl url = ctx.url();
  if (url.backend == Backend::sqlite && url.database == ":memory:")
    throw UsageError(
        "bench needs a database file or a server: sqlite::memory: gives each client a "
        "database of its own");
  std::vector<std::string> skipped;
  std::size_t runnable = 0;
  for (Strategy s : o.strategies) {
    const std::string why = bench::skip_reason(s, url.backend);
    if (why.empty())
      ++runnable;
    else
      skipped.push_back(std::string(bench::strategy_name(s)) + " (" + why + ")");
  }
  if (runnable == 0)
    throw UsageError("--strategy: none of these runs on " + std::string(backend_name(url.backend)) +
                     ": " + skipped.front());
  for (const std::string& s : skipped) ctx.note("queuectl: bench: skipping " + s);

  SignalScope signals({SIGINT, SIGTERM, SIGHUP});
  bench::BenchHooks hooks;
  hooks.stop_signal = [] { return SignalScope::first_stop(); };
  hooks.warn = [&ctx](const std::string& line) { ctx.say("queuectl: error: " + line); };
  ProgressLine line = ctx.progress_line();
  if (ctx.interactive_stderr()) {
    // One line rewritten in place (processed of total, rate, time left), cleared when a
    // strategy ends: the table at the end reports every strategy once.
    hooks.progress = [&line](Strategy s, std::int64_t runs, std::int64_t jobs, double secs,
                             bool done) {
      if (done)
        line.finish();
      else
        line.show(progress_text(std::string(bench::strategy_name(s)) + ": processed", runs, jobs,
                                "job(s)", secs));
    };
  }
  const auto results = bench::run_bench(url, o, hooks);
  if (const int sig = SignalScope::first_stop()) {
    ctx.note("queuectl: bench: stopped by signal " + std::to_string(sig) +
             "; scratch tables dropped");
    throw CommandExit(128 + sig);
  }
  ctx.print(bench_view(url, o, results));
}

}  // namespace

void setup_bench(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<BenchCliOptions>();
  auto* sub = app.add_subcommand(
      "bench", "Compare ways of taking jobs with several clients, in scratch tables");
  sub->add_option("--strategy", o->strategy,
                  "Comma list of naive, for-update, skip-locked, claim (default all)");
  sub->add_option("--clients", o->clients,
                  "Clients at once, each its own connection (4, at most 128)");
  sub->add_option("--jobs", o->jobs, "Jobs per strategy (200, at most 1000000)");
  sub->add_option("--batch", o->batch, "Jobs per claim (1, at most 1000)");
  sub->add_option("--work", o->work, "Simulated work per job, a sleep (20ms; 0 for none)")
      ->type_name("DUR");
  sub->add_option("--duration", o->duration, "Longest run per strategy (60s)")->type_name("DUR");
  sub->footer(
      "Several clients take jobs from one table, each sleeping --work per job, four ways:\n"
      "  naive        SELECT the first unassigned jobs, work, then UPDATE: no lock, so\n"
      "               clients may process the same job\n"
      "  for-update   the same SELECT ... FOR UPDATE, held through the work: correct, but\n"
      "               clients wait in line for the same first row\n"
      "  skip-locked  SELECT ... FOR UPDATE SKIP LOCKED: correct and parallel\n"
      "  claim        queuectl's own claim and ack, on a scratch copy of its schema\n"
      "Each strategy runs in scratch tables of its own (queuectl_bench_<pid>_*), dropped at\n"
      "the end, on error and on Ctrl-C; job_queue is never touched. Every client writes the\n"
      "ids it processed to a ledger: duplicates and lost jobs are counted from it. SQLite\n"
      "has no row locks and skips for-update and skip-locked.\n"
      "Examples:\n"
      "  queuectl bench\n"
      "  queuectl bench --clients 8 --jobs 1000 --work 5ms -o json\n"
      "  queuectl bench --strategy skip-locked,claim --batch 10 --duration 30s");
  sub->callback([&ctx, o] { run_bench_command(ctx, *o); });
}

}  // namespace queuectl
