// queuectl help [COMMAND]: the overview, or a command's help (as COMMAND --help).
#include <memory>

#include "cli/commands.hpp"
#include "core/errors.hpp"

namespace queuectl {

void setup_help(CLI::App& app, Context& ctx) {
  auto topic = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("help", "Show the overview, or a command's help");
  sub->add_option("COMMAND", *topic, "The command to explain (default: the overview)");
  sub->footer(
      "`queuectl help COMMAND` is `queuectl COMMAND --help`.\n"
      "Examples:\n"
      "  queuectl help\n"
      "  queuectl help claim");
  sub->callback([&app, &ctx, topic, sub] {
    if (topic->empty()) {
      // (app.help() would describe the command chosen on this line: help itself.)
      ctx.print_text(
          app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal));
      return;
    }
    for (const CLI::App* cmd : app.get_subcommands({})) {
      if (cmd->get_name() == *topic && !cmd->get_group().empty()) {
        ctx.print_text(cmd->help(app.get_name()));
        return;
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
