// queuectl help [COMMAND]: the overview, or a command's help (as COMMAND --help).
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace queuectl {

void setup_help(CLI::App& app, Context& ctx) {
  auto topic = std::make_shared<std::string>();
  auto subtopic = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("help", "Show the overview, or a command's help");
  sub->add_option("COMMAND", *topic, "The command to explain (default: the overview)");
  sub->add_option("SUBCOMMAND", *subtopic, "One of its subcommands (cron add)");
  sub->footer(
      "`queuectl help COMMAND` is `queuectl COMMAND --help`; `queuectl help cron add` is\n"
      "`queuectl cron add --help`.\n"
      "Examples:\n"
      "  queuectl help\n"
      "  queuectl help claim\n"
      "  queuectl help cron add");
  sub->callback([&app, &ctx, topic, subtopic, sub] {
    if (topic->empty()) {
      // (app.help() would describe the command chosen on this line: help itself.)
      ctx.print_text(
          app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal));
      return;
    }
    for (const CLI::App* cmd : app.get_subcommands({})) {
      if (cmd->get_name() == *topic && !cmd->get_group().empty()) {
        if (subtopic->empty()) {
          ctx.print_text(cmd->help(app.get_name()));
          return;
        }
        std::vector<std::string> names;
        for (const CLI::App* part : cmd->get_subcommands({})) {
          if (part->get_name() == *subtopic) {
            ctx.print_text(part->help(app.get_name() + " " + cmd->get_name()));
            return;
          }
          names.push_back(part->get_name());
        }
        if (names.empty())
          throw UsageError("queuectl " + *topic + " has no subcommands, so no '" + *subtopic +
                           "' (see queuectl help " + *topic + ")");
        throw UsageError("unknown " + *topic + " subcommand '" + *subtopic +
                         "' (see queuectl help " + *topic + ")");
      }
    }
    if (*topic == "help") {
      ctx.print_text(sub->help(app.get_name()));
      return;
    }
    throw UsageError("unknown command '" + *topic + "' (see queuectl --help for the list)");
  });
}

}  // namespace queuectl
