// The one list of commands, in the order and groups `queuectl --help` shows.
#include "cli/commands.hpp"

namespace queuectl {

namespace {

struct CommandEntry {
  const char* group;
  void (*setup)(CLI::App&, Context&);
};

const CommandEntry kCommands[] = {
    {"Schema", setup_migrate},
    {"Producing", setup_enqueue},
    {"Producing", setup_cron},
    {"Producing", setup_batch},
    {"Consuming", setup_claim},
    {"Consuming", setup_ack},
    {"Consuming", setup_fail},
    {"Consuming", setup_extend},
    {"Consuming", setup_release},
    {"Consuming", setup_work},
    {"Inspecting", setup_show},
    {"Inspecting", setup_list},
    {"Inspecting", setup_stats},
    {"Inspecting", setup_leases},
    {"Inspecting", setup_groups},
    {"Inspecting", setup_top},
    {"Inspecting", setup_bench},
    {"Inspecting", setup_serve},
    {"Operating", setup_retry},
    {"Operating", setup_cancel},
    {"Operating", setup_purge},
    {"Operating", setup_move},
    {"Operating", setup_pause},
    {"Operating", setup_resume},
    {"Operating", setup_queue},
    {"Operating", setup_reap},
    {"Operating", setup_lock},
    {"Operating", setup_keda},
    {"", setup_help},
    {"", setup_complete},
};

// An option given an empty value ('--delay ""', '--db ""') is a mistake, not "not given":
// refused while parsing (exit 2, before anything runs). The command after -- of work and
// lock may have empty arguments, and fail --error may be empty. A positional's message
// names it too ("queue: must not be empty").
void refuse_empty_values(CLI::App& app) {
  static const CLI::Validator non_empty(
      [](std::string& value) {
        return value.empty() ? std::string("must not be empty") : std::string();
      },
      "", "NON-EMPTY");
  for (CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0) continue;  // a flag
    const std::string name = opt->get_name(false, true);
    // (lock's NAME has its own check, whose message names the lock name; help's COMMAND
    // is named in its own error.)
    if (name == "COMMAND" || name == "--error" || name == "NAME") continue;
    opt->check(non_empty);
  }
  for (CLI::App* sub : app.get_subcommands({})) refuse_empty_values(*sub);
}

}  // namespace

void register_commands(CLI::App& app, Context& ctx) {
  for (const auto& entry : kCommands) {
    std::size_t before = app.get_subcommands({}).size();
    entry.setup(app, ctx);
    auto subs = app.get_subcommands({});
    for (std::size_t i = before; i < subs.size(); ++i) subs[i]->group(entry.group);
  }
  refuse_empty_values(app);
}

}  // namespace queuectl
