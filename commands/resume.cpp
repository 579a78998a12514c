// queuectl resume: hand out a paused queue's jobs again.
#include <memory>

#include "cli/commands.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {

void setup_resume(CLI::App& app, Context& ctx) {
  auto queue = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("resume", "Resume a paused queue");
  sub->add_option("QUEUE", *queue, "Queue name")->required();
  sub->footer(
      "A queue that was not paused is left as it is: stderr says so, and exit 0.\n"
      "Example:\n  queuectl resume emails");
  sub->callback([&ctx, queue] {
    validate_queue_name(*queue);
    bool was_paused = AdminRepository(ctx.migrated_db()).resume(*queue);
    Output out;
    out.document = {{"queue", *queue}, {"paused", false}, {"changed", was_paused}};
    if (was_paused)
      out.lines.push_back("queue " + *queue + " resumed");
    else
      ctx.note("queue " + *queue + " was not paused");
    ctx.print_report(out);
  });
}

}  // namespace queuectl
