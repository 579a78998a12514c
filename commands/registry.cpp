// The one list of commands, in the order and groups `queuectl --help` shows.
#include "cli/commands.hpp"

namespace queuectl {

namespace {

struct CommandEntry {
  const char* group;
  void (*setup)(CLI::App&, Context&);
};

const CommandEntry kCommands[] = {
    {"Schema", setup_migrate},    {"Producing", setup_enqueue}, {"Consuming", setup_claim},
    {"Consuming", setup_ack},     {"Consuming", setup_fail},    {"Consuming", setup_extend},
    {"Consuming", setup_release}, {"Consuming", setup_work},    {"Inspecting", setup_show},
    {"Inspecting", setup_list},   {"Inspecting", setup_stats},  {"Inspecting", setup_leases},
    {"Inspecting", setup_groups}, {"Operating", setup_retry},   {"Operating", setup_cancel},
    {"Operating", setup_purge},   {"Operating", setup_pause},   {"Operating", setup_resume},
    {"Operating", setup_queue},   {"Operating", setup_reap},    {"Operating", setup_lock},
    {"", setup_complete},
};

}  // namespace

void register_commands(CLI::App& app, Context& ctx) {
  for (const auto& entry : kCommands) {
    std::size_t before = app.get_subcommands({}).size();
    entry.setup(app, ctx);
    auto subs = app.get_subcommands({});
    for (std::size_t i = before; i < subs.size(); ++i) subs[i]->group(entry.group);
  }
}

}  // namespace queuectl
