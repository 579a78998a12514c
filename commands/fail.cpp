// queuectl fail: give a claimed job back for a retry after backoff, or fail it for good.
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

constexpr std::size_t kMaxErrorText = 64 * 1024 - 1;  // MySQL's TEXT holds 65535 bytes

struct FailOptions {
  std::string id;
  std::string token;
  std::string error;
  std::string retry_in;
  bool permanent = false;
};

Output run_fail(Context& ctx, const FailOptions& o) {
  FailRequest r;
  r.id = parse_job_id(o.id);
  if (o.token.empty()) throw UsageError("fail needs --token (the lock_token from claim)");
  validate_token(o.token);
  r.token = o.token;
  validate_text(o.error, "--error", kMaxErrorText);
  r.error = o.error.empty() ? "failed without a message" : o.error;
  if (!o.retry_in.empty() && o.permanent)
    throw UsageError("--retry-in and --permanent exclude each other");
  if (!o.retry_in.empty()) {
    r.retry_in = Duration::parse(o.retry_in, "--retry-in");
    if (r.retry_in->ms() < 0) throw UsageError("--retry-in must not be negative");
  }
  r.permanent = o.permanent;
  Job job = JobRepository(ctx.migrated_db()).fail(r);
  if (job.dead_from && job.status == Status::ready && job.attempts == 0)
    ctx.note("job " + std::to_string(job.id) + " gave up in " + *job.dead_from +
             " and moved to its dead-letter queue " + job.queue);
  else if (job.status == Status::failed)
    ctx.note("job " + std::to_string(job.id) + " failed for good after " +
             std::to_string(job.attempts) + " attempt(s)");
  else
    ctx.note("job " + std::to_string(job.id) + " will be retried at " + job.run_at);
  return job_view(job);
}

}  // namespace

void setup_fail(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<FailOptions>();
  auto* sub = app.add_subcommand("fail", "Record a failed attempt: retry after backoff or fail");
  sub->add_option("ID", o->id, "Job id")->required();
  sub->add_option("--token", o->token, "The lock_token claim returned")->required();
  sub->add_option("--error", o->error, "What went wrong (kept as last_error)");
  sub->add_option("--retry-in", o->retry_in, "Retry after exactly DUR instead of the backoff")
      ->type_name("DUR");
  sub->add_flag("--permanent", o->permanent, "Fail now, whatever attempts remain");
  sub->footer(
      "Backoff: min(1h, 5s * 2^(attempts-1)), jittered. A job out of attempts ends failed.\n"
      "Examples:\n"
      "  queuectl fail 42 --token T --error 'smtp timeout'\n"
      "  queuectl fail 42 --token T --error 'bad address' --permanent");
  sub->callback([&ctx, o] { ctx.print_report(run_fail(ctx, *o)); });
}

}  // namespace queuectl
