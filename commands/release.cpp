// queuectl release: give a claimed job back untouched, ready at once.
#include <memory>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct ReleaseOptions {
  std::string id;
  std::string token;
};

Output run_release(Context& ctx, const ReleaseOptions& o) {
  std::int64_t id = parse_job_id(o.id);
  if (o.token.empty()) throw UsageError("release needs --token (the lock_token from claim)");
  validate_token(o.token);
  return job_view(JobRepository(ctx.migrated_db()).release(id, o.token));
}

}  // namespace

void setup_release(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ReleaseOptions>();
  auto* sub = app.add_subcommand("release", "Give a claimed job back: ready now, attempt returned");
  sub->add_option("ID", o->id, "Job id")->required();
  sub->add_option("--token", o->token, "The lock_token claim returned")->required();
  sub->footer("Example:\n  queuectl release 42 --token T");
  sub->callback([&ctx, o] { ctx.print_report(run_release(ctx, *o)); });
}

}  // namespace queuectl
