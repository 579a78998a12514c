// queuectl move: dead letters back to the queue they gave up in (or elsewhere), by id, by
// dead-letter queue, or all of them (SQS calls it a redrive).
#include <memory>

#include "cli/commands.hpp"
#include "cli/id_outcome.hpp"
#include "cli/terminal.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct MoveOptions {
  std::vector<std::string> ids;
  std::string from;
  bool all = false;
  std::string to;
  int batch = 1000;
  bool batch_given = false;
  bool dry_run = false;
};

void run_move(Context& ctx, const MoveOptions& o) {
  const int modes = (o.ids.empty() ? 0 : 1) + (o.from.empty() ? 0 : 1) + (o.all ? 1 : 0);
  if (modes == 0) throw UsageError("move needs job ids, --from QUEUE (its dead letters) or --all");
  if (modes > 1) throw UsageError("move takes one of: job ids, --from QUEUE, --all");
  std::optional<std::string> to;
  if (!o.to.empty()) {
    validate_queue_name(o.to);
    to = o.to;
  }
  if (!o.ids.empty()) {
    if (o.dry_run || o.batch_given)
      throw UsageError(std::string(o.dry_run ? "--dry-run" : "--batch") +
                       " goes with --from or --all, not with job ids");
    auto ids = parse_job_ids(o.ids);
    // A dead letter already in --to would stay where it is and only forget where it gave up
    // (dead_from): refused, as `--from Q --to Q` is, before anything is written.
    if (to) {
      JobRepository jobs(ctx.migrated_db());
      for (const std::int64_t id : ids) {
        const auto job = jobs.find(id);
        if (job && job->dead_from && job->queue == *to)
          throw UsageError("job " + std::to_string(id) + " is a dead letter in " + *to +
                           " already: --to " + *to +
                           " would only forget where it gave up; give another --to, or leave "
                           "--to out to send it back to " +
                           *job->dead_from);
      }
    }
    auto outcome = AdminRepository(ctx.migrated_db()).move(ids, to);
    report_outcome(ctx, outcome, "moved",
                   "only dead letters (ready or failed, with dead_from set) can be moved");
    return;
  }
  std::optional<std::string> from;
  if (!o.from.empty()) {
    validate_queue_name(o.from);
    from = o.from;
    // They are there already: the move would only forget where they gave up (dead_from).
    if (to && *to == *from)
      throw UsageError("--to " + *to +
                       " is the queue the dead letters are in (--from): give "
                       "the queue to send them to, or leave --to out for the queues they "
                       "gave up in");
  }
  validate_positive(o.batch, "--batch");
  // Each id of a batch is one bound value, and PostgreSQL takes at most 65535 of them.
  if (o.batch > 10000) throw UsageError("--batch " + std::to_string(o.batch) + " is over 10000");
  ProgressLine line = ctx.progress_line();
  auto progress = [&](std::int64_t n) {
    line.update(o.dry_run ? "found" : "moved", n, std::nullopt, "dead letter(s)");
  };
  const DryRun dry = o.dry_run ? DryRun::yes : DryRun::no;
  // `--all --to Q` where Q holds dead letters itself: those would only forget where they
  // gave up. Refused before anything moves; `--from` each other queue does the rest.
  if (o.all && to) {
    if (const auto held = AdminRepository(ctx.migrated_db()).first_dead_letter(*to))
      throw UsageError("--to " + *to + " holds dead letters itself (job " + std::to_string(*held) +
                       "): --all would only make them forget where they gave up; move the "
                       "others with --from QUEUE --to " +
                       *to);
  }
  auto moved = AdminRepository(ctx.migrated_db()).move_matching(from, to, dry, o.batch, progress);
  line.finish();
  Output out;
  out.document = {{"dry_run", o.dry_run},
                  {"from", from ? nlohmann::ordered_json(*from) : nlohmann::ordered_json()},
                  {"to", to ? nlohmann::ordered_json(*to) : nlohmann::ordered_json()},
                  {o.dry_run ? "would_move" : "moved", moved.size()},
                  {o.dry_run ? "would_move_ids" : "moved_ids", moved}};
  std::string where = to ? " to " + *to : " back to the queues they came from";
  out.lines.push_back((o.dry_run ? "would move " : "moved ") + std::to_string(moved.size()) +
                      " dead letter(s)" + where);
  if (!moved.empty()) out.lines.push_back("ids: " + first_ids(moved));
  ctx.print_report(out);
  // `--from` the queue the jobs gave up in, not the one they went to.
  if (moved.empty() && from)
    if (const auto dlq = AdminRepository(ctx.migrated_db()).settings(*from).dead_letter)
      ctx.note("queuectl: " + *from + "'s dead letters go to " + *dlq + ": queuectl move --from " +
               *dlq);
}

}  // namespace

void setup_move(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<MoveOptions>();
  auto* sub = app.add_subcommand("move", "Send dead letters back to their queue (or elsewhere)");
  sub->add_option("ID", o->ids, "Dead letters by job id");
  sub->add_option("--from", o->from, "Every dead letter in this (dead-letter) queue")
      ->type_name("QUEUE");
  sub->add_flag("--all", o->all, "Every dead letter of every queue");
  sub->add_option("--to", o->to, "Into this queue instead of the queue each gave up in")
      ->type_name("QUEUE");
  sub->add_option("--batch", o->batch, "Jobs moved per transaction (default 1000, at most 10000)")
      ->type_name("N");
  sub->add_flag("--dry-run", o->dry_run, "List what would move; change nothing");
  sub->footer(
      "A dead letter is a job that gave up in a queue with a dead-letter queue (see `queuectl\n"
      "queue QUEUE --dead-letter`): ready or failed in that queue, with dead_from naming where\n"
      "it came from. Moved, it is ready at once with attempts from 0, its payload, group key\n"
      "and last_error kept, dead_from cleared. One held by a worker of the dead-letter queue\n"
      "is left alone. With ids, every id not moved is named on stderr: exit 1 when some were\n"
      "not dead letters, else 4 when some do not exist.\n"
      "Examples:\n"
      "  queuectl move 42 43\n"
      "  queuectl move --from orders-dead --dry-run\n"
      "  queuectl move --from orders-dead\n"
      "  queuectl move --all --to triage");
  sub->callback([&ctx, o, sub] {
    o->batch_given = sub->count("--batch") > 0;
    run_move(ctx, *o);
  });
}

}  // namespace queuectl
