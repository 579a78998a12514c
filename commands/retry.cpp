// queuectl retry: failed or canceled jobs back to ready, by id or by queue.
#include <cctype>
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/id_outcome.hpp"
#include "cli/job_filter.hpp"
#include "core/errors.hpp"

namespace queuectl {
namespace {

struct RetryOptions {
  std::vector<std::string> args;
  std::string queue;
  std::string status;
  std::string older_than;
  std::optional<std::string> group;
  std::optional<std::string> error;
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
    const std::string taken = "retry takes --status failed or canceled";
    f.statuses =
        o.status.empty() ? std::vector<Status>{Status::failed} : parse_status_list(o.status, taken);
    for (Status s : f.statuses)
      if (s != Status::failed && s != Status::canceled)
        throw UsageError(taken + ", not " + std::string(status_name(s)));
    f.older_than =
        o.older_than.empty() ? Duration() : Duration::parse(o.older_than, "--older-than");
    if (f.older_than.ms() < 0) throw UsageError("--older-than must not be negative");
    if (o.group || o.error) {
      // By group key or error text: the jobs `list` finds with the same filter, a page at a
      // time, each page retried as ids are.
      if (!o.older_than.empty())
        throw UsageError("--older-than does not go with --group-key or --error yet");
      ListFilter matching;
      matching.queue = o.queue;
      apply_job_filter(
          JobFilterText{o.status.empty() ? "failed" : o.status, o.group, o.error, taken}, matching);
      AdminRepository admin(ctx.migrated_db());
      const IdOutcome outcome =
          change_matching(ctx, matching, 1000, "retried",
                          [&](const std::vector<std::int64_t>& ids) { return admin.retry(ids); });
      report_matching(ctx, outcome, "retried");
      return;
    }
    auto ids = AdminRepository(ctx.migrated_db()).retry_matching(f);
    report_outcome(ctx, IdOutcome{ids, {}, {}}, "retried", "");
    return;
  }
  if (!o.status.empty() || !o.older_than.empty() || o.group || o.error)
    throw UsageError(
        "--status, --older-than, --group-key and --error go with --queue, not with job ids");
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
  add_filter_options(*sub, o->group, o->error, "With --queue: ");
  sub->footer(
      "Attempts start again from 0 and the job is due at once. With ids, every id that was\n"
      "not retried is named on stderr: exit 1 when some were in another state (with or\n"
      "without missing ones), else 4 when some do not exist.\n"
      "Examples:\n"
      "  queuectl retry 42 43\n"
      "  queuectl retry --queue emails\n"
      "  queuectl retry --queue emails --status failed,canceled --older-than 1h\n"
      "  queuectl retry --queue emails --error 'SMTP 421'     (a downstream outage is over)");
  sub->callback([&ctx, o] { run_retry(ctx, *o); });
}

}  // namespace queuectl
