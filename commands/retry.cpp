// queuectl retry: failed or canceled jobs back to ready, by id or by queue.
#include <cctype>
#include <memory>

#include "cli/commands.hpp"
#include "cli/id_outcome.hpp"
#include "core/errors.hpp"

namespace queuectl {
namespace {

struct RetryOptions {
  std::vector<std::string> args;
  std::string queue;
  std::string status;
  std::string older_than;
};

bool all_digits(const std::string& s) {
  for (unsigned char c : s)
    if (!std::isdigit(c)) return false;
  return !s.empty();
}

void run_retry(Context& ctx, const RetryOptions& o) {
  if (o.args.empty() && o.queue.empty()) throw UsageError("retry needs job ids, or --queue QUEUE");
  if (!o.args.empty() && !o.queue.empty())
    throw UsageError("retry takes job ids or --queue QUEUE, not both");
  // Ids only: a queue named 2024 is `--queue 2024`, never mistaken for job 2024.
  for (const auto& arg : o.args)
    if (!all_digits(arg))
      throw UsageError("'" + arg.substr(0, 64) +
                       "' is not a job id (for a queue's jobs: " + "queuectl retry --queue QUEUE)");
  if (!o.queue.empty()) {
    // Queue mode: every failed (or canceled) job of the queue.
    FinishedFilter f;
    validate_queue_name(o.queue);
    f.queue = o.queue;
    f.statuses =
        o.status.empty() ? std::vector<Status>{Status::failed} : parse_status_list(o.status);
    for (Status s : f.statuses)
      if (s != Status::failed && s != Status::canceled)
        throw UsageError("retry takes --status failed or canceled, not " +
                         std::string(status_name(s)));
    f.older_than =
        o.older_than.empty() ? Duration() : Duration::parse(o.older_than, "--older-than");
    if (f.older_than.ms() < 0) throw UsageError("--older-than must not be negative");
    auto ids = AdminRepository(ctx.migrated_db()).retry_matching(f);
    report_outcome(ctx, IdOutcome{ids, {}, {}}, "retried", "");
    return;
  }
  if (!o.status.empty() || !o.older_than.empty())
    throw UsageError("--status and --older-than go with --queue, not with job ids");
  auto ids = parse_job_ids(o.args);
  auto outcome = AdminRepository(ctx.migrated_db()).retry(ids);
  report_outcome(ctx, outcome, "retried", "only failed or canceled jobs can be retried");
}

}  // namespace

void setup_retry(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<RetryOptions>();
  auto* sub = app.add_subcommand("retry", "Put failed or canceled jobs back to ready");
  sub->add_option("ID", o->args, "Job ids");
  sub->add_option("--queue", o->queue, "Every failed job of this queue, instead of ids");
  sub->add_option("--status", o->status, "With --queue: failed (default) and/or canceled");
  sub->add_option("--older-than", o->older_than, "With --queue: only jobs finished over DUR ago")
      ->type_name("DUR");
  sub->footer(
      "Attempts start again from 0 and the job is due at once. With ids, every id that was\n"
      "not retried is named on stderr: exit 1 when some were in another state (with or\n"
      "without missing ones), else 4 when some do not exist.\n"
      "Examples:\n"
      "  queuectl retry 42 43\n"
      "  queuectl retry --queue emails\n"
      "  queuectl retry --queue emails --status failed,canceled --older-than 1h");
  sub->callback([&ctx, o] { run_retry(ctx, *o); });
}

}  // namespace queuectl
