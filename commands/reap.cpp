// queuectl reap: return jobs whose leases expired (their workers died), for cron; with
// --unleased, processing rows that other code left without a lease, once old enough.
#include <algorithm>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/id_outcome.hpp"
#include "cli/terminal.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"
#include "db/lease_repository.hpp"
#include "db/named_lock.hpp"

namespace queuectl {
namespace {

struct ReapCliOptions {
  std::string queue;
  int batch = 1000;
  bool dry_run = false;
  bool no_lock = false;
  bool unleased = false;
  std::string older_than;
};

// `lock`: the named lock this run took (null with --no-lock or --dry-run). `skipped`: the
// run did nothing because another reaper held that lock.
// `unleased`: the run returned rows without a lease (--unleased), not expired ones.
Output reap_view(const ReapResult& r, DryRun dry_run, bool unleased, const std::string& lock = "",
                 bool skipped = false) {
  auto optional_text = [](const std::optional<std::string>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
  };
  nlohmann::ordered_json counts = nlohmann::ordered_json::array();
  Table table{{"QUEUE", "FORMER_WORKER", dry_run == DryRun::yes ? "WOULD_READY" : "READY",
               dry_run == DryRun::yes ? "WOULD_FAIL" : "FAILED"},
              {}};
  for (const ReapCount& c : r.counts) {
    counts.push_back({{"queue", c.queue},
                      {"worker", optional_text(c.worker)},
                      {"requeued", c.requeued},
                      {"failed", c.failed}});
    table.rows.push_back(
        {c.queue, c.worker.value_or("-"), std::to_string(c.requeued), std::to_string(c.failed)});
  }
  Output out;
  out.document = {{"dry_run", dry_run == DryRun::yes},
                  {"unleased", unleased},
                  {"requeued", r.requeued.size()},
                  {"failed", r.failed.size()},
                  {"requeued_ids", r.requeued},
                  {"failed_ids", r.failed},
                  {"dead_lettered", r.dead_lettered.size()},
                  {"dead_lettered_ids", r.dead_lettered},
                  {"counts", counts},
                  {"batches", r.batches},
                  {"lock", lock.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(lock)},
                  {"skipped", skipped}};
  // The table counts by queue and former worker: who died, and where.
  if (!table.rows.empty()) out.table = std::move(table);
  std::string verb = dry_run == DryRun::yes ? "would return " : "returned ";
  out.lines.push_back(verb + std::to_string(r.requeued.size()) +
                      (unleased ? " job(s) without a lease" : " expired job(s)") +
                      " to ready and " + (dry_run == DryRun::yes ? "fail " : "failed ") +
                      std::to_string(r.failed.size()) + " out of attempts" +
                      (r.dead_lettered.empty()
                           ? ""
                           : " (" + std::to_string(r.dead_lettered.size()) +
                                 (dry_run == DryRun::yes ? " would move" : " moved") +
                                 " to a dead-letter queue)"));
  if (!r.requeued.empty()) out.lines.push_back("ready:  " + first_ids(r.requeued));
  if (!r.failed.empty()) out.lines.push_back("failed: " + first_ids(r.failed));
  if (!r.dead_lettered.empty()) out.lines.push_back("dead-lettered: " + first_ids(r.dead_lettered));
  return out;
}

void run_reap(Context& ctx, const ReapCliOptions& o) {
  ReapOptions r;
  if (!o.queue.empty()) {
    validate_queue_name(o.queue);
    r.queue = o.queue;
  }
  validate_positive(o.batch, "--batch");
  // Each id of a batch is one bound value, and PostgreSQL takes at most 65535 of them.
  if (o.batch > 10000) throw UsageError("--batch " + std::to_string(o.batch) + " is over 10000");
  r.batch = o.batch;
  r.dry_run = o.dry_run ? DryRun::yes : DryRun::no;
  if (o.unleased) {
    // A row without a lease may be in the middle of its work: only its age tells a stuck
    // one, and only the operator knows how long its work may take.
    if (o.older_than.empty())
      throw UsageError(
          "--unleased needs --older-than DUR: how long a job may stay processing without a "
          "lease before it counts as stuck");
    Duration older = Duration::parse(o.older_than, "--older-than");
    if (older.ms() < 0) throw UsageError("--older-than must not be negative");
    r.unleased_older_than = older;
  } else if (!o.older_than.empty()) {
    throw UsageError("--older-than applies only with --unleased (expired leases are due at once)");
  }
  const bool unleased = o.unleased;
  Database& db = ctx.migrated_db();

  // The lock lives on a connection of its own, so that the reaper's transactions never
  // touch it; two reapers started together by cron do not both work.
  std::unique_ptr<Database> lock_db;
  std::unique_ptr<NamedLock> lock;
  std::string lock_name;
  if (!o.no_lock && r.dry_run == DryRun::no) {
    lock_name = "queuectl:reap" + (r.queue ? ":" + *r.queue : std::string());
    lock_db = std::make_unique<Database>(db.url());
    lock = NamedLock::acquire(*lock_db, lock_name, Duration());
    if (!lock) {
      ctx.note("queuectl: another reaper holds the lock " + lock_name + "; nothing to do");
      // Scripts asked for a document get one: zero counts, "skipped": true. The table
      // view stays empty, so that `-q reap` from cron prints nothing.
      if (ctx.format() != Format::table)
        ctx.print(reap_view(ReapResult(), r.dry_run, unleased, lock_name, true));
      return;
    }
  }
  // On a terminal: done of total, rate and time left, rewritten after each batch and
  // cleared at the end, so that the report takes its place. The total is what was reaped by
  // the first batch plus what still matched after it (one count, on a terminal only).
  ProgressLine line = ctx.progress_line();
  std::optional<std::int64_t> total;
  auto progress = [&](const ReapResult& so_far) {
    if (lock && !lock->held())
      throw Error("lost the named lock " + lock->name() + " after " +
                  std::to_string(so_far.batches) + " batch(es); stopped (run reap again)");
    if (!ctx.interactive_stderr()) return;
    const std::int64_t done = so_far.requeued.size() + so_far.failed.size();
    if (!total) {
      LeaseFilter left;
      left.queue = r.queue;
      left.kind = r.unleased_older_than ? LeaseKind::unleased : LeaseKind::expired;
      left.older_than = r.unleased_older_than;
      total = done;
      for (const WorkerLeases& w : LeaseRepository(db).lease_summary(left)) *total += w.leases;
    }
    line.update("reaped", done, std::max(*total, done),
                "job(s) in " + std::to_string(so_far.batches) + " batch(es)");
  };
  ReapResult result = LeaseRepository(db).reap(r, progress);
  line.finish();
  // `-q reap` from cron: a run that found nothing prints nothing, so cron mails only
  // when leases did expire (a worker died) or something failed.
  const bool nothing = result.requeued.empty() && result.failed.empty();
  // A queue name nobody has used (a typo): said, with the nearest known name, as claim does.
  if (nothing && r.queue) {
    if (auto note = AdminRepository(db).unknown_queue_note(*r.queue)) ctx.note(*note);
  }
  if (ctx.options.quiet && nothing && ctx.format() == Format::table) return;
  ctx.print(reap_view(result, r.dry_run, unleased, lock_name));
}

}  // namespace

void setup_reap(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ReapCliOptions>();
  auto* sub = app.add_subcommand("reap", "Return jobs whose leases expired (for cron)");
  sub->add_option("QUEUE", o->queue, "Only this queue");
  sub->add_option("--batch", o->batch, "Jobs per transaction (default 1000, at most 10000)");
  sub->add_flag("--dry-run", o->dry_run, "Show what would happen; change nothing");
  sub->add_flag("--no-lock", o->no_lock, "Do not take the queuectl:reap named lock");
  sub->add_flag("--unleased", o->unleased,
                "Return processing jobs without a lease (lock_until NULL) instead; needs "
                "--older-than");
  sub->add_option("--older-than", o->older_than,
                  "With --unleased: only jobs in processing for more than DUR (since locked_at, "
                  "else updated_at)")
      ->type_name("DUR");
  sub->footer(
      "Expired jobs go back to ready with backoff, or to failed on their last attempt. Each\n"
      "batch re-checks status and expiry, so a job acked meanwhile is never touched. While it\n"
      "runs, reap holds the named lock queuectl:reap (queuectl:reap:QUEUE with a queue); when\n"
      "another reaper holds it, reap says so on stderr and exits 0 (-o json/ndjson still print\n"
      "the report, with zero counts and \"skipped\": true; \"lock\" names the lock).\n"
      "A job that other code set to processing without a lease (lock_until NULL) never\n"
      "expires: --unleased --older-than DUR returns those in processing for more than DUR\n"
      "(since locked_at, else updated_at) the same way, and only those.\n"
      "The table counts the jobs by queue and former worker, then lists the first ids of\n"
      "each kind (\"... and N more\"); -o json has every id.\n"
      "Examples:\n"
      "  queuectl reap\n"
      "  queuectl reap emails --dry-run -o json\n"
      "  queuectl reap --unleased --older-than 2h --dry-run\n"
      "  * * * * *  queuectl -q reap    (crontab: prints only when it returned jobs, or fails)");
  sub->callback([&ctx, o] { run_reap(ctx, *o); });
}

}  // namespace queuectl
