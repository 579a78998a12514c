// queuectl migrate: create or upgrade the schema; --status lists, --print shows the SQL.
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/duration.hpp"
#include "core/errors.hpp"
#include "db/migrations.hpp"

namespace queuectl {
namespace {

struct MigrateOptions {
  bool status = false;
  bool print = false;
  std::string lock_wait;
};

Output run_migrate(Context& ctx, const MigrateOptions& o) {
  const Duration lock_wait =
      duration_option(o.lock_wait, "--lock-wait", Duration(kMigrationLockWait));
  if (lock_wait.ms() < 1000) throw UsageError("--lock-wait must be at least 1s");
  if (o.print && o.status) throw UsageError("--status and --print exclude each other: give one");
  if (!o.lock_wait.empty() && (o.print || o.status))
    throw UsageError("--lock-wait applies to migrating, not to --status or --print");
  if (o.print) {
    // For DBAs applying the schema by hand: needs the backend, not a connection.
    Output out;
    out.document = nlohmann::ordered_json::array();
    for (const Migration& m : migrations_for(ctx.url().backend)) {
      out.document.push_back({{"version", m.version}, {"name", m.name}, {"sql", m.sql}});
      out.lines.push_back("-- migration " + std::to_string(m.version) + ": " + m.name);
      out.lines.push_back(m.sql);
    }
    out.elements = true;
    return out;
  }
  // Only applying creates an SQLite file; --status reads.
  if (o.status) ctx.access = Access::read;
  Migrator migrator(ctx.db(o.status ? CreateFile::no : CreateFile::yes), lock_wait.chrono());
  if (o.status) return migrations_view(migrator.status(), false);
  auto applied = migrator.apply();
  // What was applied is a report: -q prints nothing on every deploy.
  if (applied.empty())
    ctx.note("schema of " + ctx.db().url().redacted() + " is up to date");
  else
    ctx.note("applied " + std::to_string(applied.size()) + " migration(s) to " +
             ctx.db().url().redacted());
  Output out = migrations_view(applied, true);
  out.report = true;
  // Nothing applied: no table, rather than its header over no rows (stderr said why).
  if (applied.empty()) out.table.reset();
  return out;
}

}  // namespace

void setup_migrate(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<MigrateOptions>();
  auto* sub = app.add_subcommand("migrate", "Create or upgrade the queue schema (idempotent)");
  sub->add_flag("--status", o->status, "List the migrations and whether each is applied");
  sub->add_flag("--print", o->print, "Print the SQL of every migration instead of applying it");
  sub->add_option("--lock-wait", o->lock_wait,
                  "How long, in all, to wait for locks (default 15s): another migrate, or an "
                  "open transaction on job_queue that a migration's DDL must wait for; then "
                  "exit 75 with nothing of the waiting migration applied")
      ->type_name("DUR");
  sub->footer(
      "Examples:\n"
      "  queuectl migrate\n"
      "  queuectl migrate --lock-wait 5m      # a deploy that may wait for long transactions\n"
      "  queuectl --db postgresql://app@db/jobs migrate --status\n"
      "  queuectl --db mysql://app@db/jobs migrate --print > schema.sql");
  sub->callback([&ctx, o] { ctx.print(run_migrate(ctx, *o)); });
}

}  // namespace queuectl
