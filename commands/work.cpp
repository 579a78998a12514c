// queuectl work: run any command as a queue worker.
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "core/errors.hpp"
#include "core/subprocess.hpp"
#include "worker/worker.hpp"

namespace queuectl {
namespace {

struct WorkCliOptions {
  std::string queue;
  std::vector<std::string> command;
  int concurrency = 1;
  int batch = 0;  // 0: the default (only when --batch is not given)
  bool batch_given = false;
  std::string lease, timeout, grace, worker, poll_interval;
  long long max_jobs = 0;  // 0: no limit (only when --max-jobs is not given)
  bool max_jobs_given = false;
  bool drain = false;
  bool no_housekeeping = false;
};

void run_work(Context& ctx, const WorkCliOptions& c) {
  WorkerOptions o;
  ctx.require_before_separator(c.command, "QUEUE", "queuectl work QUEUE -- CMD [ARG...]");
  validate_queue_name(c.queue);
  o.queue = c.queue;
  if (c.command.empty())
    throw UsageError("work needs a command: queuectl work QUEUE -- CMD [ARG...]");
  o.command = c.command;
  // A command that cannot run would spend an attempt of every job (exit 127 each).
  if (const std::string why = Subprocess::why_not_runnable(c.command.front()); !why.empty())
    throw UsageError("command '" + c.command.front() + "' " + why + ": nothing was claimed");
  validate_positive(c.concurrency, "--concurrency");
  if (c.concurrency > 256)
    throw UsageError("--concurrency " + std::to_string(c.concurrency) + " is over 256");
  o.concurrency = c.concurrency;
  if (c.batch_given) validate_positive(c.batch, "--batch");
  o.batch = c.batch;
  o.lease = duration_option(c.lease, "--lease", Duration::seconds(30));
  if (o.lease.ms() < 300) throw UsageError("--lease must be at least 300ms");
  if (!c.timeout.empty()) {
    o.timeout = Duration::parse(c.timeout, "--timeout");
    if (!o.timeout->positive()) throw UsageError("--timeout must be positive");
  }
  o.grace = duration_option(c.grace, "--grace", Duration::seconds(30));
  if (o.grace.ms() < 0) throw UsageError("--grace must not be negative");
  o.idle_max = duration_option(c.poll_interval, "--poll-interval", Duration::seconds(5));
  if (o.idle_max.ms() < 10) throw UsageError("--poll-interval must be at least 10ms");
  // 0 is not "no limit" (that is leaving the option out): like --limit 0, refused.
  if (c.max_jobs_given) validate_positive(c.max_jobs, "--max-jobs");
  o.max_jobs = c.max_jobs;
  o.drain = c.drain;
  o.housekeeping = !c.no_housekeeping;
  o.max_checkpoint = ctx.options.max_payload;
  o.worker = c.worker.empty() ? default_worker_id() : c.worker;
  validate_worker(o.worker);
  // Fails early, with the usual message, when unmigrated; then the worker claims on this
  // connection rather than open another beside it.
  std::unique_ptr<Database> db = ctx.take_migrated_db();
  // The start line names the database, so that a lost QUEUECTL_DB that fell back to a
  // leftover local file shows at once.
  const DbUrl& url = db->url();
  const std::string where =
      url.embedded_default ? "the default SQLite file at " + url.database : url.redacted();
  ctx.note("queuectl: worker " + o.worker + " on queue " + o.queue + " of " + where +
           " (concurrency " + std::to_string(o.concurrency) + ", lease " + o.lease.str() + ")");
  auto log = [&ctx](const std::string& line) { ctx.note("queuectl: " + line); };
  auto debug = [&ctx](const std::string& line) { ctx.debug(line); };
  // The jobs' own stderr is theirs, not queuectl's diagnostics: -q does not silence it.
  auto job_stderr = [&ctx](const std::string& line) { ctx.say(line); };
  WorkerSummary s = run_worker(std::move(db), o, log, debug, job_stderr);
  Output out;
  out.document = {{"worker", o.worker},       {"done", s.done},         {"failed", s.failed},
                  {"timed_out", s.timed_out}, {"released", s.released}, {"lost", s.lost}};
  out.lines.push_back("queuectl: worker " + o.worker + " stopped after " +
                      std::to_string(s.total()) + " job(s): " + std::to_string(s.done) + " done, " +
                      std::to_string(s.failed) + " failed, " + std::to_string(s.timed_out) +
                      " timed out, " + std::to_string(s.released) + " released, " +
                      std::to_string(s.lost) + " lost");
  // The summary is work's result: in the table view on stderr (stdout belongs to nobody
  // here), even with -q, which only silences the per-job lines.
  ctx.print_summary(out);
  if (!s.error.empty())
    throw Error("--drain stopped: the claim failed: " + s.error +
                " (it would fail the same at every try; see the error)");
  // A CI step that drains a queue fails when a job did.
  if (o.drain && s.failed + s.timed_out > 0)
    throw Error(std::to_string(s.failed + s.timed_out) + " of " + std::to_string(s.total()) +
                " job(s) failed or timed out while draining queue " + o.queue);
}

}  // namespace

void setup_work(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<WorkCliOptions>();
  auto* sub = app.add_subcommand("work", "Run a command once per job, as a queue worker");
  sub->add_option("QUEUE", o->queue, "Queue name")->required();
  sub->add_option("--concurrency", o->concurrency, "Jobs run at once (default 1, at most 256)");
  auto* batch = sub->add_option("--batch", o->batch,
                                "Jobs per claim at most (default: the free slots, plus up to twice "
                                "--concurrency claimed ahead once jobs run short)");
  sub->add_option("--lease", o->lease,
                  "Lease per job, kept alive while it runs (default 30s, at least 300ms)")
      ->type_name("DUR");
  sub->add_option(
         "--timeout", o->timeout,
         "Stop a job after DUR (SIGTERM, then SIGKILL 5 s later) and fail it (default: no limit)")
      ->type_name("DUR");
  auto* max_jobs = sub->add_option("--max-jobs", o->max_jobs,
                                   "Exit after claiming N jobs (N >= 1; default: no limit)");
  sub->add_flag("--drain", o->drain,
                "Exit once nothing is due: 0, or 1 when a job failed or timed out");
  sub->add_option("--grace", o->grace, "On SIGTERM/SIGINT, let running jobs finish this long (30s)")
      ->type_name("DUR");
  sub->add_option("--worker", o->worker, "Worker identity (default host:pid)");
  sub->add_flag("--no-housekeeping", o->no_housekeeping,
                "Do not fire the queue's schedules, reap its expired leases or delete its "
                "finished jobs past retention (cron tick, reap and purge then must)");
  sub->add_option("--poll-interval", o->poll_interval,
                  "Longest pause between claims when idle (default 5s, at least 10ms)")
      ->type_name("DUR");
  // Required: `work -- CMD` with CMD one word leaves it missing, once CLI11 has taken CMD for
  // the QUEUE; run() says the QUEUE is missing then.
  sub->add_option("COMMAND", o->command, "The command to run, after --")->required();
  sub->footer(
      "Each job's payload arrives on the command's stdin, with QUEUECTL_JOB_ID, QUEUECTL_QUEUE,\n"
      "QUEUECTL_ATTEMPT, QUEUECTL_MAX_ATTEMPTS, QUEUECTL_LOCK_TOKEN and, for a job of an\n"
      "ordered group, QUEUECTL_GROUP_KEY in its environment; QUEUECTL_CHECKPOINT holds the\n"
      "checkpoint an earlier attempt saved, if any.\n"
      "Progress: the command may write lines to descriptor 3 (QUEUECTL_REPORT_FD): `progress\n"
      "N` (0-100), `note TEXT`, `checkpoint JSON`. The worker writes them with the lease's\n"
      "extend (a few statements a second at most), and the last ones before the job's\n"
      "outcome; show, list, leases and top show them. A bad line is logged and ignored.\n"
      "Tracing: a job enqueued with TRACEPARENT gets it (and TRACESTATE) on its first\n"
      "attempt; a retry gets a new trace, with the first in QUEUECTL_TRACE_LINK.\n"
      "Exit 0 acks the job (stdout is kept as the result when it is JSON); any other exit\n"
      "fails it with the tail of stderr. On SIGTERM/SIGINT the worker stops claiming, waits\n"
      "--grace for running jobs, then stops them and releases their jobs; a second signal\n"
      "stops at once (SIGHUP counts as SIGTERM). One line per job on stderr unless -q; the\n"
      "summary at exit always (-o json: on stdout).\n"
      "When idle it polls with a short first pause growing to --poll-interval; on PostgreSQL\n"
      "it also listens (LISTEN/NOTIFY) and wakes as soon as a job is enqueued (-v shows it),\n"
      "except with --drain.\n"
      "Housekeeping, unless --no-housekeeping: every second it fires the queue's due schedules\n"
      "(queuectl cron); from 15s after it starts, every half --lease (1s to 15s), it returns\n"
      "up to 500 of the queue's expired leases; every tenth of `queue QUEUE --retain DUR` (1s\n"
      "to 1m) it deletes up to 1000 of its finished jobs past that retention. Any number of\n"
      "workers may do this at once; a fleet of workers needs no system cron.\n"
      "Examples:\n"
      "  queuectl work emails -- ./send-email.sh\n"
      "  queuectl work outbox --concurrency 4 --timeout 2m -- ./publish.sh\n"
      "  queuectl work reports --drain --max-jobs 100 -- python3 report.py");
  sub->callback([&ctx, o, batch, max_jobs] {
    o->batch_given = batch->count() > 0;
    o->max_jobs_given = max_jobs->count() > 0;
    run_work(ctx, *o);
  });
}

}  // namespace queuectl
