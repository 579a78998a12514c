// What every command shares: the global options, the lazily opened database, and the one
// way to stdout and stderr: commands hand their results and diagnostics to its methods and
// never write to a stream themselves.
#pragma once

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "cli/terminal.hpp"
#include "core/db_url.hpp"
#include "core/validate.hpp"
#include "db/database.hpp"

namespace queuectl {

struct GlobalOptions {
  std::string db;
  std::string password_file;
  std::string format = "table";
  bool quiet = false;
  int verbose = 0;
  std::size_t max_payload = kDefaultMaxPayload;
  // --field: print these fields of each job, tab-separated, a line a job (no header).
  std::vector<std::string> fields;
};

// The time since `since`, for people: "12.3 ms".
std::string elapsed_ms(std::chrono::steady_clock::time_point since);

class Context {
 public:
  // Prints to `out` (stdout) and `err` (stderr): run_cli passes the streams it was given.
  explicit Context(std::ostream& out = std::cout, std::ostream& err = std::cerr)
      : out_(&out), err_(&err) {}

  GlobalOptions options;
  // Set by the commands that have a Prometheus view (stats); any other command refuses
  // -o prometheus before it opens the database, so that nothing is written.
  bool prometheus_view = false;
  // Set to read by the commands that only read (list, show, stats, ...), before they open
  // the database: they may run on a standby, which a command that writes refuses.
  Access access = Access::write;

  // The words after the command line's first `--` (the command `work` and `lock` run), when
  // it has one.
  std::optional<std::vector<std::string>> after_separator;
  // Every word of the command line after the program's name.
  std::vector<std::string> arguments;
  // `lock -- CMD` or `work -- CMD`, without the NAME or QUEUE: CLI11 fills that positional
  // with the first word after `--`, which would then run CMD's arguments as the command.
  // Throws UsageError naming `missing` (usage shows where it goes) unless `command` is every
  // word after `--`. Without `--`, the command must be the command line's last words as
  // typed: CLI11 takes an option among them (`lock n echo -v hi`) for queuectl's own.
  void require_before_separator(const std::vector<std::string>& command, const std::string& missing,
                                const std::string& usage) const;

  // The -o format, parsed.
  Format format() const { return parse_format(options.format); }
  // Runs the command on `db` (opened and checked by the caller, who keeps it) instead of
  // opening a connection of its own: `queuectl serve`'s requests, each on its thread's
  // connection.
  void lend(Database& db) { lent_ = &db; }

  // The URL the options point at (parsed, password resolved); throws UsageError.
  DbUrl url() const;
  // Opens the database on first use. Commands validate all input before calling it. Only
  // `migrate` passes CreateFile::yes (the first call decides).
  Database& db(CreateFile create = CreateFile::no);
  // Opens the database and checks the schema is migrated.
  Database& migrated_db();
  // The same, handing the connection over to a command that keeps one open for its whole
  // run (lock, work), so that it does not stay open, unused, beside the command's own.
  std::unique_ptr<Database> take_migrated_db();

  // Prints a command's result on stdout in the chosen format.
  // With -q and the table view, data only: nothing for a report, no header for no rows.
  void print(const Output& out) const;
  // Prints `out` as a report of what was done (Output::report).
  void print_report(Output out) const;
  // A diagnostic line on stderr, silenced by -q.
  void note(const std::string& line) const;
  // A diagnostic line on stderr shown only with -v.
  void debug(const std::string& line) const;
  // A line on stderr that -q does not silence, written at once: a job's own stderr under
  // `work`, what `bench` could not clean up.
  void say(const std::string& line) const;
  // The result of a command whose stdout is not its own to fill (`work`): -o json and
  // ndjson on stdout, as print does; the table view's lines on stderr, even with -q.
  void print_summary(const Output& out) const;
  // Text on stdout exactly as given, whatever -o says: help, completion candidates, a plain
  // frame of `top`. Returns false once stdout takes no more output (a closed pipe).
  bool print_text(const std::string& text) const;
  // True when stderr is a terminal and -q is off: progress lines are welcome.
  bool interactive_stderr() const;
  // A progress line on stderr, shown only when interactive_stderr().
  ProgressLine progress_line() const;
  // True when stdout is the process's own and a terminal: a full-screen view (`top`) may
  // take it over.
  bool stdout_is_terminal() const;

 private:
  std::ostream* out_;
  std::ostream* err_;
  std::unique_ptr<Database> db_;
  Database* lent_ = nullptr;
  bool schema_checked_ = false;
};

}  // namespace queuectl
