// queuectl show: one job, every column.
#include <memory>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "db/job_repository.hpp"

namespace queuectl {

void setup_show(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("show", "Show one job with every column");
  sub->add_option("id", *id, "Job id")->required();
  sub->footer("Exit 4 when no job has that id.\nExample:\n  queuectl show 42 -o json");
  sub->callback([&ctx, id] {
    std::int64_t job_id = parse_job_id(*id);
    ctx.print(job_view(JobRepository(ctx.migrated_db()).get(job_id)));
  });
}

}  // namespace queuectl
