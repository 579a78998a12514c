// queuectl queue: a queue's settings, shown or changed in one place (pausing has its own
// commands, pause and resume, and is shown here too).
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {
namespace {

struct QueueOptions {
  std::string queue;
  std::string strict_groups;
};

Output run_queue(Context& ctx, const QueueOptions& o) {
  validate_queue_name(o.queue);
  // "on" or "off": CLI11 has checked it while parsing.
  std::optional<bool> strict;
  if (!o.strict_groups.empty()) strict = o.strict_groups == "on";
  if (!strict) ctx.access = Access::read;
  AdminRepository admin(ctx.migrated_db());
  if (strict) admin.set_strict_groups(o.queue, *strict);
  const QueueSettings s = admin.settings(o.queue);
  Output out =
      object_view({{"queue", s.queue}, {"paused", s.paused}, {"strict_groups", s.strict_groups}});
  if (strict) {
    out.table.reset();
    out.lines.push_back("queue " + o.queue + ": strict groups " + (*strict ? "on" : "off"));
  }
  return out;
}

}  // namespace

void setup_queue(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<QueueOptions>();
  auto* sub = app.add_subcommand("queue", "Show or change a queue's settings (strict groups)");
  sub->add_option("QUEUE", o->queue, "Queue name")->required();
  sub->add_option("--strict-groups", o->strict_groups,
                  "on: a failed job blocks the rest of its group until it is retried, "
                  "canceled or purged; off (default): the group moves on")
      ->check(CLI::IsMember({"on", "off"}));
  sub->footer(
      "Without an option, prints the settings: paused (see pause and resume) and\n"
      "strict_groups. `stats` shows both for every queue; `groups QUEUE --blocked` lists the\n"
      "groups a failed head blocks.\n"
      "Examples:\n"
      "  queuectl queue orders\n"
      "  queuectl queue orders --strict-groups on");
  sub->callback([&ctx, o] { ctx.print(run_queue(ctx, *o)); });
}

}  // namespace queuectl
