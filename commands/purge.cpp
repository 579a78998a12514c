// queuectl purge: delete old finished jobs in short batches.
#include <algorithm>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/id_outcome.hpp"
#include "cli/terminal.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {
namespace {

constexpr const char* kPurgeTakes = "purge takes --status done, failed or canceled";

struct PurgeOptions {
  std::string queue;
  std::string older_than;
  std::string status;
  int batch = 1000;
  bool dry_run = false;
};

void run_purge(Context& ctx, const PurgeOptions& o) {
  FinishedFilter f;
  if (!o.queue.empty()) {
    validate_queue_name(o.queue);
    f.queue = o.queue;
  }
  if (o.older_than.empty()) throw UsageError("purge needs --older-than DUR (e.g. 7d)");
  f.older_than = Duration::parse(o.older_than, "--older-than");
  if (f.older_than.ms() < 0) throw UsageError("--older-than must not be negative");
  f.statuses = o.status.empty()
                   ? std::vector<Status>{Status::done, Status::failed, Status::canceled}
                   : parse_status_list(o.status, kPurgeTakes);
  for (Status s : f.statuses)
    if (s == Status::ready || s == Status::processing)
      throw UsageError(std::string(kPurgeTakes) + ", not " + std::string(status_name(s)));
  validate_positive(o.batch, "--batch");
  // Each id of a batch is one bound value, and PostgreSQL takes at most 65535 of them.
  if (o.batch > 10000) throw UsageError("--batch " + std::to_string(o.batch) + " is over 10000");
  f.batch = o.batch;
  DryRun dry = o.dry_run ? DryRun::yes : DryRun::no;
  // On a terminal: a line that rewrites itself after each batch ("purged 3000 of 120000
  // job(s), 9000/s, 13s left"), cleared at the end so that the report below takes its
  // place. The total is one count first, only then: a count is a small part of deleting
  // those rows, and a cron run (no terminal) does not pay it. Jobs that pass the cutoff
  // meanwhile are purged too, so the total is a floor.
  AdminRepository repo(ctx.migrated_db());
  const bool shown = ctx.interactive_stderr();
  ProgressLine line = ctx.progress_line();
  const std::optional<std::int64_t> total =
      shown && !o.dry_run ? std::optional<std::int64_t>(repo.count_finished(f)) : std::nullopt;
  auto progress = [&](std::int64_t n) {
    line.update(o.dry_run ? "counted" : "purged", n,
                total ? std::optional<std::int64_t>(std::max(*total, n)) : std::nullopt, "job(s)");
  };
  std::vector<std::int64_t> dependents;
  std::int64_t n = repo.purge(f, dry, progress, &dependents);
  line.finish();
  Output out;
  out.document = {{"dry_run", o.dry_run}, {o.dry_run ? "would_purge" : "purged", n}};
  out.lines.push_back((o.dry_run ? "would purge " : "purged ") + std::to_string(n) + " job(s)");
  ctx.print_report(out);
  note_dependents_canceled(ctx, dependents, "a job purged before it was done");
}

}  // namespace

void setup_purge(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<PurgeOptions>();
  auto* sub = app.add_subcommand("purge", "Delete finished jobs older than a cutoff");
  sub->add_option("QUEUE", o->queue, "Only this queue");
  sub->add_option("--older-than", o->older_than, "Finished more than DUR ago")
      ->type_name("DUR")
      ->required();
  sub->add_option("--status", o->status, "Which finished jobs: done,failed,canceled (default all)");
  sub->add_option("--batch", o->batch,
                  "Rows deleted per transaction (default 1000, at most 10000)");
  sub->add_flag("--dry-run", o->dry_run, "Count what would be deleted; delete nothing");
  sub->footer(
      "Deletes walk the primary key in batches, each its own short transaction, so a purge\n"
      "of millions of rows never holds a long lock. Dedupe keys of purged jobs are free again.\n"
      "Examples:\n"
      "  queuectl purge --older-than 7d\n"
      "  queuectl purge emails --older-than 30d --status failed --dry-run");
  sub->callback([&ctx, o] { run_purge(ctx, *o); });
}

}  // namespace queuectl
