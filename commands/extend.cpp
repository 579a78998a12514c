// queuectl extend: keep a live lease alive (the heartbeat).
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct ExtendOptions {
  std::string id;
  std::string token;
  std::string lease;
};

Output run_extend(Context& ctx, const ExtendOptions& o) {
  std::int64_t id = parse_job_id(o.id);
  if (o.token.empty()) throw UsageError("extend needs --token (the lock_token from claim)");
  validate_token(o.token);
  Duration lease = duration_option(o.lease, "--lease", Duration::seconds(30));
  if (!lease.positive()) throw UsageError("--lease must be positive");
  return job_view(JobRepository(ctx.migrated_db()).extend(id, o.token, lease));
}

}  // namespace

void setup_extend(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ExtendOptions>();
  auto* sub = app.add_subcommand("extend", "Push a live lease to now + DUR (heartbeat)");
  sub->add_option("ID", o->id, "Job id")->required();
  sub->add_option("--token", o->token, "The lock_token claim returned")->required();
  sub->add_option("--lease", o->lease, "New lease from now (default 30s)")->type_name("DUR");
  sub->footer(
      "An expired lease cannot be extended (exit 3): the reaper may already have handed\n"
      "the job to someone else. Extend well before lock_until, e.g. every third of the lease.\n"
      "Example:\n"
      "  queuectl extend 42 --token T --lease 5m");
  sub->callback([&ctx, o] { ctx.print_report(run_extend(ctx, *o)); });
}

}  // namespace queuectl
