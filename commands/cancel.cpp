// queuectl cancel: stop jobs from running, by id or every job a filter names.
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/id_outcome.hpp"
#include "cli/job_filter.hpp"
#include "core/errors.hpp"

namespace queuectl {
namespace {

struct CancelOptions {
  std::vector<std::string> ids;
  bool force = false;
  std::string queue;
  std::string status;
  std::optional<std::string> group;
  std::optional<std::string> error;
  int batch = 1000;
  bool batch_given = false;
};

// Filter mode: every job of the queue that the filter names, a page at a time, each page
// through the same cancel as ids (so a job that a worker took meanwhile is left alone
// without --force).
void cancel_matching(Context& ctx, const CancelOptions& o) {
  ListFilter f;
  validate_queue_name(o.queue);
  f.queue = o.queue;
  const std::string taken = "cancel takes --status ready, waiting, failed or processing";
  apply_job_filter(
      JobFilterText{o.status.empty() ? "ready,waiting,failed" : o.status, o.group, o.error, taken},
      f);
  for (Status s : f.statuses) {
    if (s == Status::done || s == Status::canceled)
      throw UsageError(taken + ", not " + std::string(status_name(s)));
    if (s == Status::processing && !o.force)
      throw UsageError("--status processing needs --force (their workers' ack then exits 3)");
  }
  validate_positive(o.batch, "--batch");
  // Each id of a batch is one bound value, and PostgreSQL takes at most 65535 of them.
  if (o.batch > 10000) throw UsageError("--batch " + std::to_string(o.batch) + " is over 10000");
  const Force force = o.force ? Force::yes : Force::no;
  AdminRepository admin(ctx.migrated_db());
  const IdOutcome outcome = change_matching(
      ctx, f, o.batch, "canceled",
      [&](const std::vector<std::int64_t>& ids) { return admin.cancel(ids, force); });
  report_matching(ctx, outcome, "canceled");
}

void run_cancel(Context& ctx, const CancelOptions& o) {
  if (o.ids.empty() && o.queue.empty())
    throw UsageError(
        "cancel needs job ids, or --queue QUEUE (with --status, --group-key, --error)");
  if (!o.ids.empty() && !o.queue.empty())
    throw UsageError("cancel takes job ids or --queue QUEUE, not both");
  if (!o.queue.empty()) return cancel_matching(ctx, o);
  if (!o.status.empty() || o.group || o.error || o.batch_given)
    throw UsageError(
        "--status, --group-key, --error and --batch go with --queue, not with job ids");
  auto ids = parse_job_ids(o.ids);
  auto outcome = AdminRepository(ctx.migrated_db()).cancel(ids, o.force ? Force::yes : Force::no);
  report_outcome(ctx, outcome, "canceled",
                 o.force
                     ? "only ready, failed or processing jobs can be canceled"
                     : "only ready or failed jobs can be canceled (processing ones with --force)");
}

}  // namespace

void setup_cancel(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<CancelOptions>();
  auto* sub =
      app.add_subcommand("cancel", "Cancel ready or failed jobs (processing ones with --force)");
  sub->add_option("ID", o->ids, "Job ids");
  sub->add_flag("--force", o->force,
                "Also cancel processing jobs: their workers' ack, fail and extend then exit 3");
  sub->add_option("--queue", o->queue, "Every matching job of this queue, instead of ids");
  sub->add_option("--status", o->status,
                  "With --queue: ready, waiting, failed, processing (with --force); "
                  "default ready,waiting,failed");
  add_filter_options(*sub, o->group, o->error, "With --queue: ");
  sub->add_option("--batch", o->batch,
                  "With --queue: jobs canceled per transaction (default 1000, at most 10000)");
  sub->footer(
      "With ids, every id that was not canceled is named on stderr: exit 1 when some were in\n"
      "another state, else 4 when some do not exist. With --queue, the matching jobs are\n"
      "canceled a batch at a time, oldest first; a job that changed state meanwhile (a worker\n"
      "took it) is left as it is and counted on stderr, and the exit code stays 0.\n"
      "Examples:\n"
      "  queuectl cancel 42\n"
      "  queuectl cancel 42 43 --force\n"
      "  queuectl cancel --queue exports --group-key acct-42   (ready, waiting and failed)\n"
      "  queuectl cancel --queue emails --status failed --error 'mailbox full'");
  sub->callback([&ctx, o, sub] {
    o->batch_given = sub->count("--batch") > 0;
    run_cancel(ctx, *o);
  });
}

}  // namespace queuectl
