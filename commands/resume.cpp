// queuectl resume: hand out a paused queue's jobs again.
#include <memory>

#include "cli/commands.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {

void setup_resume(CLI::App& app, Context& ctx) {
  auto queue = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("resume", "Resume a paused queue");
  sub->add_option("queue", *queue, "Queue name")->required();
  sub->footer("Example:\n  queuectl resume emails");
  sub->callback([&ctx, queue] {
    validate_queue_name(*queue);
    bool was_paused = AdminRepository(ctx.migrated_db()).resume(*queue);
    if (!was_paused) ctx.note("queue " + *queue + " was not paused");
    Output out;
    out.document = {{"queue", *queue}, {"paused", false}};
    out.lines.push_back("queue " + *queue + " resumed");
    ctx.print(out);
  });
}

}  // namespace queuectl
