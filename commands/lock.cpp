// queuectl lock: run a command while holding a database named lock.
#include <memory>

#include "cli/child.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "core/errors.hpp"
#include "db/named_lock.hpp"

namespace queuectl {
namespace {

struct LockOptions {
  std::string name;
  std::string wait;
  std::vector<std::string> command;
};

// Returns CMD's exit code; throws LockBusy when the lock stays taken.
int run_lock(Context& ctx, const LockOptions& o) {
  if (o.name.empty() || o.name.size() > 255)
    throw UsageError("invalid lock name '" + o.name.substr(0, 40) + "': use 1 to 255 characters");
  if (o.command.empty())
    throw UsageError("lock needs a command: queuectl lock NAME -- CMD [ARG...]");
  Duration wait = duration_option(o.wait, "--wait", Duration());
  if (wait.ms() < 0) throw UsageError("--wait must not be negative");
  // The connection that checked the schema, held for the whole run and used for nothing
  // else: if queuectl dies, the server ends the session and frees the lock (SQLite: the row
  // expires without its heartbeat).
  std::unique_ptr<Database> db = ctx.take_migrated_db();
  auto lock = NamedLock::acquire(*db, o.name, wait);
  if (!lock)
    throw LockBusy("lock '" + o.name + "' is held by someone else" +
                   (wait.positive() ? " (waited " + wait.str() + ")" : "") +
                   "; try again later or pass --wait DUR");
  ctx.debug("holding lock '" + o.name + "'");
  // Should the lock be lost while CMD runs (the server session dropped, or a SQLite row
  // that could not be refreshed expired), CMD is stopped: it no longer runs alone.
  int code = run_forwarding_signals(o.command, [&] { return lock->held(); });
  if (!lock->held())
    throw Error("lost the named lock '" + o.name + "' while the command ran (connection to " +
                db->url().redacted() + " lost?); the command was stopped, exit code " +
                std::to_string(code));
  return code;
}

}  // namespace

void setup_lock(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<LockOptions>();
  auto* sub = app.add_subcommand("lock", "Run a command while holding a database named lock");
  sub->add_option("name", o->name, "Lock name")->required();
  sub->add_option("--wait", o->wait, "Wait up to DUR for the lock (default: do not wait)");
  sub->add_option("command", o->command, "The command to run, after --")->required();
  sub->footer(
      "PostgreSQL: pg_try_advisory_lock; MySQL/MariaDB: GET_LOCK; SQLite: a lock row with a\n"
      "heartbeat. The command's exit code becomes queuectl's; exit 5 when the lock is busy.\n"
      "Signals sent to queuectl are passed on to the command, and the command is killed if\n"
      "queuectl dies. If the lock is lost while it runs (the database connection dropped),\n"
      "the command is stopped and queuectl exits 1.\n"
      "Examples:\n"
      "  queuectl lock nightly-report -- ./make-report.sh --month 2026-11\n"
      "  queuectl lock billing --wait 5m -- php artisan billing:run");
  sub->callback([&ctx, o] {
    int code = run_lock(ctx, *o);
    if (code != 0) throw CommandExit(code);
  });
}

}  // namespace queuectl
