// queuectl pause: stop handing out a queue's jobs (claim and work get nothing).
#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "core/nearest.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {

void setup_pause(CLI::App& app, Context& ctx) {
  auto queue = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("pause", "Pause a queue: claims get nothing until resume");
  sub->add_option("QUEUE", *queue, "Queue name")->required();
  sub->footer(
      "Jobs can still be enqueued; running jobs finish normally. `stats` shows it paused.\n"
      "A queue with no jobs and no settings yet is paused too (ahead of a deploy, say), with\n"
      "a warning on stderr in case the name is mistyped. A queue already paused is left as it\n"
      "is: stderr says so, and exit 0.\n"
      "Example:\n  queuectl pause emails");
  sub->callback([&ctx, queue] {
    validate_queue_name(*queue);
    AdminRepository admin(ctx.migrated_db());
    // Only for the warning: a typo pauses a queue nobody uses and the real one keeps going.
    const auto known = admin.queue_names();
    const bool is_new = std::find(known.begin(), known.end(), *queue) == known.end();
    // Only for the report: pausing a paused queue changes nothing, and says so, as resume
    // of a queue that is not paused does.
    const bool was_paused = !is_new && admin.settings(*queue).paused;
    admin.pause(*queue);
    if (is_new) {
      const auto near = nearest(*queue, known);
      ctx.note("queuectl: warning: queue " + *queue + " has no jobs yet; paused anyway (check " +
               (near ? "the name: did you mean " + *near + "?)" : std::string("the name)")));
    }
    Output out;
    out.document = {{"queue", *queue}, {"paused", true}, {"changed", !was_paused}};
    if (was_paused)
      ctx.note("queue " + *queue + " was already paused");
    else
      out.lines.push_back("queue " + *queue + " paused");
    ctx.print_report(out);
  });
}

}  // namespace queuectl
