// queuectl lock: run a command while holding a database named lock.
#include <memory>

#include "cli/child.hpp"
#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "core/errors.hpp"
#include "core/validate.hpp"
#include "db/named_lock.hpp"

namespace queuectl {
namespace {

struct LockOptions {
  std::string name;
  std::string wait;
  bool print_key = false;
  // -E: the exit code for "the lock is held elsewhere" (flock's -E), so that it cannot be
  // mistaken for the command's own exit code 5.
  int conflict_code = static_cast<int>(ExitCode::lock_busy);
  bool conflict_code_given = false;
  std::vector<std::string> command;
};

// 1 to 255 bytes of UTF-8: what every backend can key a lock by (PostgreSQL's text refuses
// other bytes; longer names than MySQL/MariaDB take get their stand-in key).
void validate_lock_name(const std::string& name) {
  if (name.empty() || name.size() > 255)
    throw UsageError("invalid lock name '" + name.substr(0, 40) + "': use 1 to 255 bytes");
  if (!is_valid_utf8(name))
    throw UsageError("invalid lock name '" + name.substr(0, 40) + "': not valid UTF-8");
}

// How an application takes the lock whose key --print-key prints.
const char* taken_with(Database& db) {
  if (db.named_lock_kind() == NamedLockKind::row) return "a queuectl_locks row named key";
  switch (db.url().backend) {
    case Backend::postgresql:
      return "pg_try_advisory_lock(key)";
    case Backend::mysql:
      return "GET_LOCK(key, timeout)";
    case Backend::sqlite:
      break;
  }
  return "a queuectl_locks row named key";
}

// --print-key: what the database locks for NAME, without taking it, for an application
// that takes the same lock with its own SQL.
Output key_view(Context& ctx, const std::string& name) {
  ctx.access = Access::read;
  Database& db = ctx.db();
  const std::string key = NamedLock::shown_key(db, name);
  Output out;
  out.document = {{"name", name}, {"key", key}, {"taken_with", taken_with(db)}};
  out.lines.push_back(key);
  return out;
}

// Returns CMD's exit code; throws LockBusy when the lock stays taken.
int run_lock(Context& ctx, const LockOptions& o) {
  validate_lock_name(o.name);
  if (o.print_key) {
    if (!o.command.empty() || !o.wait.empty() || o.conflict_code_given)
      throw UsageError("--print-key takes only a lock name: queuectl lock --print-key NAME");
    ctx.print(key_view(ctx, o.name));
    return 0;
  }
  ctx.require_before_separator(o.command, "NAME", "queuectl lock NAME -- CMD [ARG...]");
  if (o.command.empty())
    throw UsageError("lock needs a command: queuectl lock NAME -- CMD [ARG...]");
  if (o.conflict_code < 0 || o.conflict_code > 255)
    throw UsageError("invalid --conflict-exit-code " + std::to_string(o.conflict_code) +
                     ": use 0 to 255");
  Duration wait = duration_option(o.wait, "--wait", Duration());
  if (wait.ms() < 0) throw UsageError("--wait must not be negative");
  // The connection that checked the schema, held for the whole run and used for nothing
  // else: if queuectl dies, the server ends the session and frees the lock (SQLite: the row
  // expires without its heartbeat).
  std::unique_ptr<Database> db = ctx.take_migrated_db();
  auto lock = NamedLock::acquire(*db, o.name, wait);
  if (!lock) {
    LockBusy busy("lock '" + o.name + "' is held by someone else" +
                  (wait.positive() ? " (waited " + wait.str() + ")" : "") +
                  "; try again later or pass --wait DUR");
    if (o.conflict_code == static_cast<int>(ExitCode::lock_busy)) throw busy;
    // Said on stderr all the same (silenced by -q), then the code the caller chose.
    ctx.note(std::string("queuectl: ") + busy.what());
    throw CommandExit(o.conflict_code);
  }
  ctx.debug("holding lock '" + o.name + "'" +
            (lock->key() != o.name ? " under the key '" + lock->key() + "'" : ""));
  // Should the lock be lost while CMD runs (the server session dropped, or a SQLite row
  // that could not be refreshed expired), CMD is stopped: it no longer runs alone.
  int code = run_forwarding_signals(o.command, [&] { return lock->held(); });
  // Exit 75: the lock is gone (the server's session with it, or a failover took the
  // primary that held it), so another host may take it now; running again later is right.
  if (!lock->held())
    throw TemporaryError("lost the named lock '" + o.name +
                         "' while the command ran (connection to " + db->url().redacted() +
                         " lost?); the command was stopped, exit code " + std::to_string(code));
  return code;
}

}  // namespace

void setup_lock(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<LockOptions>();
  auto* sub = app.add_subcommand("lock", "Run a command while holding a database named lock");
  sub->add_option("NAME", o->name, "Lock name")->required();
  sub->add_option("--wait", o->wait, "Wait up to DUR for the lock (default: do not wait)")
      ->type_name("DUR");
  auto* conflict =
      sub->add_option("-E,--conflict-exit-code", o->conflict_code,
                      "Exit code when the lock is busy (default 5), as flock -E; 0 to 255")
          ->type_name("CODE");
  sub->add_flag("--print-key", o->print_key,
                "Print the key the database locks for NAME (for your own SQL); take nothing");
  sub->add_option("COMMAND", o->command, "The command to run, after --");
  sub->footer(
      "PostgreSQL: pg_try_advisory_xact_lock(hashtextextended(NAME, 0)), in a transaction\n"
      "kept open while CMD runs (so it holds behind PgBouncer in transaction mode too).\n"
      "MySQL/MariaDB: GET_LOCK(NAME, 0), NAME as it is (a name the server refuses, such as\n"
      "one over 64 characters on MySQL 8 or 192 bytes on MariaDB, is locked under a\n"
      "stand-in key that --print-key shows). SQLite: a lock row with a heartbeat. An\n"
      "application's own SQL taking the same lock excludes queuectl, and the reverse.\n"
      "The command's exit code becomes queuectl's; exit 5 when the lock is busy, or the\n"
      "code given with -E (choose one the command never exits with).\n"
      "Signals sent to queuectl are passed on to the command, and the command is killed if\n"
      "queuectl dies. If the lock is lost while it runs (the database connection dropped,\n"
      "a failover), the command is stopped and queuectl exits 75.\n"
      "Examples:\n"
      "  queuectl lock nightly-report -- ./make-report.sh --month 2026-11\n"
      "  queuectl lock billing --wait 5m -- php artisan billing:run\n"
      "  queuectl lock -E 99 nightly-report -- ./make-report.sh   # 99: skipped, busy\n"
      "  queuectl lock --print-key nightly-report");
  sub->callback([&ctx, o, conflict] {
    o->conflict_code_given = conflict->count() > 0;
    int code = run_lock(ctx, *o);
    if (code != 0) throw CommandExit(code);
  });
}

}  // namespace queuectl
