// Every subcommand's setup function. commands/registry.cpp calls them in the order
// `--help` shows them, grouped.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/context.hpp"

namespace queuectl {

// Schema
void setup_migrate(CLI::App& app, Context& ctx);
// Producing
void setup_enqueue(CLI::App& app, Context& ctx);
void setup_cron(CLI::App& app, Context& ctx);
void setup_batch(CLI::App& app, Context& ctx);
// Consuming
void setup_claim(CLI::App& app, Context& ctx);
void setup_ack(CLI::App& app, Context& ctx);
void setup_fail(CLI::App& app, Context& ctx);
void setup_extend(CLI::App& app, Context& ctx);
void setup_release(CLI::App& app, Context& ctx);
void setup_work(CLI::App& app, Context& ctx);
// Inspecting
void setup_show(CLI::App& app, Context& ctx);
void setup_list(CLI::App& app, Context& ctx);
void setup_stats(CLI::App& app, Context& ctx);
void setup_leases(CLI::App& app, Context& ctx);
void setup_groups(CLI::App& app, Context& ctx);
void setup_top(CLI::App& app, Context& ctx);
void setup_bench(CLI::App& app, Context& ctx);
// Operating
void setup_reap(CLI::App& app, Context& ctx);
void setup_lock(CLI::App& app, Context& ctx);
void setup_retry(CLI::App& app, Context& ctx);
void setup_cancel(CLI::App& app, Context& ctx);
void setup_purge(CLI::App& app, Context& ctx);
void setup_move(CLI::App& app, Context& ctx);
void setup_pause(CLI::App& app, Context& ctx);
void setup_resume(CLI::App& app, Context& ctx);
void setup_queue(CLI::App& app, Context& ctx);
void setup_keda(CLI::App& app, Context& ctx);
void setup_serve(CLI::App& app, Context& ctx);
// Hidden from the list (the footer names it): help [COMMAND].
void setup_help(CLI::App& app, Context& ctx);
// Hidden: feeds the shell completions.
void setup_complete(CLI::App& app, Context& ctx);

// Adds every command to `app`.
void register_commands(CLI::App& app, Context& ctx);

}  // namespace queuectl
