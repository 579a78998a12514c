// queuectl migrate: create or upgrade the schema; --status lists, --print shows the SQL.
#include <memory>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "db/migrations.hpp"

namespace queuectl {
namespace {

struct MigrateOptions {
  bool status = false;
  bool print = false;
};

Output run_migrate(Context& ctx, const MigrateOptions& o) {
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
  Migrator migrator(ctx.db(o.status ? CreateFile::no : CreateFile::yes));
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
  return out;
}

}  // namespace

void setup_migrate(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<MigrateOptions>();
  auto* sub = app.add_subcommand("migrate", "Create or upgrade the queue schema (idempotent)");
  sub->add_flag("--status", o->status, "List the migrations and whether each is applied");
  sub->add_flag("--print", o->print, "Print the SQL of every migration instead of applying it");
  sub->footer(
      "Examples:\n"
      "  queuectl migrate\n"
      "  queuectl --db postgresql://app@db/jobs migrate --status\n"
      "  queuectl --db mysql://app@db/jobs migrate --print > schema.sql");
  sub->callback([&ctx, o] { ctx.print(run_migrate(ctx, *o)); });
}

}  // namespace queuectl
