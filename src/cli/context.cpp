#include "cli/context.hpp"

#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <cstdio>

#include "cli/terminal.hpp"
#include "core/errors.hpp"
#include "db/dialects/pg_notices.hpp"
#include "db/migrations.hpp"

namespace queuectl {

DbUrl Context::url() const {
  if (format() == Format::prometheus && !prometheus_view)
    throw UsageError("-o prometheus is only for `stats`; use -o table, json or ndjson here");
  return resolve_db_url({options.db, options.password_file});
}

Database& Context::db(CreateFile create) {
  if (lent_) return *lent_;
  if (!db_) {
    // -q silences diagnostics, a PostgreSQL server's notices among them. Set before the
    // first connection: connections deliver notices on their own threads.
    if (options.quiet) set_server_notice_log([](const std::string&) {});
    const DbUrl where = url();
    const auto started = std::chrono::steady_clock::now();
    db_ = std::make_unique<Database>(where, create, access);
    debug("connected to " + where.redacted() + " in " + elapsed_ms(started));
  }
  return *db_;
}

std::string elapsed_ms(std::chrono::steady_clock::time_point since) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ms);
  return text;
}

Database& Context::migrated_db() {
  Database& database = db();
  if (!schema_checked_ && !lent_) {
    const auto started = std::chrono::steady_clock::now();
    Migrator(database).require_current();
    schema_checked_ = true;
    debug("the schema is current (checked in " + elapsed_ms(started) + ")");
  }
  return database;
}

std::unique_ptr<Database> Context::take_migrated_db() {
  if (lent_) throw UsageError("this command keeps a connection of its own: run it from a shell");
  migrated_db();
  schema_checked_ = false;  // a later db() opens (and checks) a connection of its own
  return std::move(db_);
}

void Context::require_before_separator(const std::vector<std::string>& command,
                                       const std::string& missing, const std::string& usage) const {
  if (after_separator && command != *after_separator)
    throw UsageError(missing + " is missing (" + usage +
                     "): every word after -- belongs to the command");
  if (after_separator || command.empty()) return;
  const bool as_typed =
      command.size() <= arguments.size() &&
      std::equal(command.begin(), command.end(), arguments.end() - command.size());
  if (!as_typed)
    throw UsageError("put -- before the command (" + usage +
                     "): without it, queuectl takes the options among the command's words, or "
                     "after them, for its own");
}

void Context::print(const Output& out) const {
  if (!options.fields.empty()) {
    print_fields(*out_, out, options.fields);
    return;
  }
  if (options.quiet && format() == Format::table) {
    if (out.report) return;
    if (out.table && out.table->rows.empty()) {
      for (const auto& line : out.lines) *out_ << line << "\n";
      out_->flush();
      return;
    }
  }
  // Tables fit the terminal on stdout (or $COLUMNS); piped or redirected, rows are whole.
  print_output(*out_, out, format(),
               TableStyle{is_wide_format(options.format), output_width(STDOUT_FILENO)});
}

void Context::print_report(Output out) const {
  out.report = true;
  print(out);
}

void Context::note(const std::string& line) const {
  if (!options.quiet) *err_ << line << "\n";
}

void Context::debug(const std::string& line) const {
  if (options.verbose > 0 && !options.quiet) *err_ << "queuectl: " << line << "\n";
}

void Context::say(const std::string& line) const {
  // One write of the whole line: a job's stderr lines do not break into another's.
  *err_ << line + "\n" << std::flush;
}

void Context::print_summary(const Output& out) const {
  if (format() != Format::table) {
    print(out);
    return;
  }
  for (const std::string& line : out.lines) say(line);
}

bool Context::print_text(const std::string& text) const {
  *out_ << text;
  out_->flush();
  return static_cast<bool>(*out_);
}

bool Context::interactive_stderr() const {
  // A command run for `queuectl serve` (a lent connection) writes into a buffer, whatever
  // the server's own stderr is.
  return !options.quiet && !lent_ && isatty(STDERR_FILENO);
}

ProgressLine Context::progress_line() const {
  return ProgressLine(*err_, interactive_stderr());
}

bool Context::stdout_is_terminal() const {
  return out_ == &std::cout && isatty(STDOUT_FILENO);
}

}  // namespace queuectl
