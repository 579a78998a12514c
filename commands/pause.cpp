// queuectl pause: stop handing out a queue's jobs (claim and work get nothing).
#include <memory>

#include "cli/commands.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {

void setup_pause(CLI::App& app, Context& ctx) {
  auto queue = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("pause", "Pause a queue: claims get nothing until resume");
  sub->add_option("queue", *queue, "Queue name")->required();
  sub->footer(
      "Jobs can still be enqueued; running jobs finish normally. `stats` shows it paused.\n"
      "Example:\n  queuectl pause emails");
  sub->callback([&ctx, queue] {
    validate_queue_name(*queue);
    AdminRepository(ctx.migrated_db()).pause(*queue);
    Output out;
    out.document = {{"queue", *queue}, {"paused", true}};
    out.lines.push_back("queue " + *queue + " paused");
    ctx.print(out);
  });
}

}  // namespace queuectl
