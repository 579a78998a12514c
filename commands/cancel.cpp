// queuectl cancel: stop jobs from running.
#include <memory>

#include "cli/commands.hpp"
#include "cli/id_outcome.hpp"

namespace queuectl {

void setup_cancel(CLI::App& app, Context& ctx) {
  struct CancelOptions {
    std::vector<std::string> ids;
    bool force = false;
  };
  auto o = std::make_shared<CancelOptions>();
  auto* sub =
      app.add_subcommand("cancel", "Cancel ready or failed jobs (processing ones with --force)");
  sub->add_option("ID", o->ids, "Job ids")->required();
  sub->add_flag("--force", o->force,
                "Also cancel processing jobs: their workers' ack, fail and extend then exit 3");
  sub->footer(
      "Examples:\n"
      "  queuectl cancel 42\n"
      "  queuectl cancel 42 43 --force");
  sub->callback([&ctx, o] {
    auto ids = parse_job_ids(o->ids);
    auto outcome =
        AdminRepository(ctx.migrated_db()).cancel(ids, o->force ? Force::yes : Force::no);
    report_outcome(
        ctx, outcome, "canceled",
        o->force ? "only ready, failed or processing jobs can be canceled"
                 : "only ready or failed jobs can be canceled (processing ones with --force)");
  });
}

}  // namespace queuectl
