// queuectl extend: keep a live lease alive (the heartbeat).
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "core/job_report.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct ExtendOptions {
  std::string id;
  std::string token;
  std::string lease;
  std::string progress;
  std::string note;
  std::string checkpoint;
  bool progress_given = false, note_given = false, checkpoint_given = false;
};

Output run_extend(Context& ctx, const ExtendOptions& o) {
  std::int64_t id = parse_job_id(o.id);
  if (o.token.empty()) throw UsageError("extend needs --token (the lock_token from claim)");
  validate_token(o.token);
  Duration lease = duration_option(o.lease, "--lease", Duration::seconds(30));
  if (!lease.positive()) throw UsageError("--lease must be positive");
  JobReport report;
  if (o.progress_given) report.progress = parse_progress(o.progress, "--progress");
  if (o.note_given) report.note = checked_note(o.note, "--note");
  if (o.checkpoint_given) {
    const std::string text = o.checkpoint == "-" ? read_input("-") : o.checkpoint;
    report.checkpoint = checked_checkpoint(text, "--checkpoint", ctx.options.max_payload);
  }
  return job_view(JobRepository(ctx.migrated_db()).extend(id, o.token, lease, report));
}

}  // namespace

void setup_extend(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ExtendOptions>();
  auto* sub = app.add_subcommand("extend", "Push a live lease to now + DUR (heartbeat)");
  sub->add_option("ID", o->id, "Job id")->required();
  sub->add_option("--token", o->token, "The lock_token claim returned")->required();
  sub->add_option("--lease", o->lease, "New lease from now (default 30s)")->type_name("DUR");
  auto* progress =
      sub->add_option("--progress", o->progress, "How far the job is, 0-100")->type_name("N");
  auto* note =
      sub->add_option("--note", o->note, "A line saying what the job is doing (at most 1 KiB)")
          ->type_name("TEXT");
  auto* checkpoint =
      sub->add_option(
             "--checkpoint", o->checkpoint,
             "JSON to resume from, at most 64 KiB (- reads stdin); kept for the next attempt")
          ->type_name("JSON");
  sub->footer(
      "An expired lease cannot be extended (exit 3): the reaper may already have handed\n"
      "the job to someone else. Extend well before lock_until, e.g. every third of the lease.\n"
      "--progress, --note and --checkpoint are written by the same statement, under the same\n"
      "token check: a stale token writes nothing. Each replaces what was stored; the others\n"
      "are kept. The checkpoint outlives the attempt: a retried or reaped job's next claim\n"
      "returns it (and `work` gives it in QUEUECTL_CHECKPOINT). Under `work`, a command\n"
      "reports without the token on descriptor 3 (see queuectl help work).\n"
      "Examples:\n"
      "  queuectl extend 42 --token T --lease 5m\n"
      "  queuectl extend 42 --token T --progress 40 --note 'table 3 of 8'\n"
      "  queuectl extend 42 --token T --checkpoint '{\"offset\":120000}'");
  sub->callback([&ctx, o, progress, note, checkpoint] {
    o->progress_given = progress->count() > 0;
    o->note_given = note->count() > 0;
    o->checkpoint_given = checkpoint->count() > 0;
    ctx.print_report(run_extend(ctx, *o));
  });
}

}  // namespace queuectl
