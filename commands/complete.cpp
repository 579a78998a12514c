// queuectl __complete: hidden helper that feeds the shell completions.
#include <filesystem>
#include <memory>

#include "cli/commands.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {

void setup_complete(CLI::App& app, Context& ctx) {
  auto what = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("__complete", "Completion helper (queues | statuses | commands)");
  sub->group("");  // hidden from --help
  sub->add_option("what", *what, "queues, statuses or commands")->required();
  sub->callback([&ctx, what, &app] {
    if (*what == "statuses") {
      for (const char* s : {"ready", "processing", "done", "failed", "canceled"})
        *ctx.out << s << "\n";
    } else if (*what == "commands") {
      for (const auto* c : app.get_subcommands({}))
        if (!c->get_group().empty()) *ctx.out << c->get_name() << "\n";
    } else if (*what == "queues") {
      // Completion must never print errors into the shell: stay silent on failure.
      try {
        // Never create an SQLite file just because someone pressed Tab after a typo.
        DbUrl url = ctx.url();
        if (url.backend == Backend::sqlite && url.database != ":memory:" &&
            !std::filesystem::exists(url.database))
          return;
        for (const auto& q : AdminRepository(ctx.migrated_db()).queue_names())
          *ctx.out << q << "\n";
      } catch (...) {
      }
    }
  });
}

}  // namespace queuectl
