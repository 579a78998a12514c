#include "cli/app.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include <soci/soci.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/help_format.hpp"
#include "core/display_text.hpp"
#include "core/errors.hpp"
#include "core/job_fields.hpp"
#include "core/nearest.hpp"

namespace queuectl {

namespace {

constexpr const char* kDescription =
    "queuectl: run and administer a job queue kept in an SQL table (PostgreSQL,\n"
    "MySQL/MariaDB, SQLite). Workers claim jobs with SKIP LOCKED, each with a lease\n"
    "and a lock token; only the token's holder may ack, fail, extend or release.";

constexpr const char* kFooter =
    "Database: --db URL, else $QUEUECTL_DB, else sqlite at $XDG_DATA_HOME/queuectl/queue.db.\n"
    "URLs: postgresql://user@host:5432/db, mysql://user@host:3306/db, sqlite:///path/queue.db.\n"
    "Passwords: $QUEUECTL_DB_PASSWORD or --db-password-file keep them out of `ps`.\n"
    "Exit codes: 0 ok, 1 error, 2 bad input (nothing written), 3 lease lost, 4 not found,\n"
    "5 lock busy, 75 temporary (database unreachable or contention).\n"
    "Run `queuectl help COMMAND` (or `queuectl COMMAND --help`) for a command's options and\n"
    "examples.";

// The command given and its subcommand, if it has one given: `cron add` is {cron, add}.
std::vector<const CLI::App*> given_commands(const CLI::App& app) {
  std::vector<const CLI::App*> chain;
  for (const CLI::App* at = &app;;) {
    const auto chosen = at->get_subcommands();
    if (chosen.empty()) return chain;
    at = chosen.front();
    chain.push_back(at);
  }
}

// The long options a command takes, its own and the global ones ("--priority", ...).
std::vector<std::string> long_options(const CLI::App& app) {
  std::vector<std::string> names;
  auto add = [&names](const CLI::App* a) {
    for (const CLI::Option* opt : a->get_options())
      for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
  };
  add(&app);
  for (const CLI::App* sub : given_commands(app)) add(sub);
  return names;
}

// " (did you mean --priority?)" for an unexpected option near one the command takes.
std::string option_hint(const CLI::App& app, const std::string& given) {
  const std::string name = given.substr(0, given.find('='));
  if (name.rfind("--", 0) != 0) return "";
  if (auto near = nearest(name, long_options(app))) return "; did you mean " + *near + "?";
  return "";
}

// The options CLI11 converts to integers: those of its own type names for integers, and of
// the names queuectl's commands give them, except the few whose text queuectl reads itself
// (with their ranges in their messages).
bool holds_whole_number(const CLI::Option& opt) {
  static const std::set<std::string> names = {"INT", "UINT", "N", "ID", "CODE", "BYTES"};
  static const std::set<std::string> read_by_queuectl = {"max-processing", "burst", "progress"};
  const std::string type = opt.get_type_name();
  if (!names.count(type.substr(0, type.find(':')))) return false;
  for (const std::string& name : opt.get_lnames())
    if (read_by_queuectl.count(name)) return false;
  return true;
}

// CLI11 reads an integer as C does (strtoll with base 0): 010 is eight, 0x10 sixteen and
// `true` one. A number on queuectl's command line is decimal everywhere, as the options that
// queuectl parses itself read it: leading zeros are dropped (010 is ten), and anything but
// an optional sign and digits is refused by name.
std::string decimal_whole_number(std::string& value) {
  std::size_t digits = value.empty() || (value[0] != '-' && value[0] != '+') ? 0 : 1;
  const std::string sign = digits && value[0] == '-' ? "-" : "";
  if (value.size() == digits || value.find_first_not_of("0123456789", digits) != std::string::npos)
    return "'" + value + "' is not a whole number" +
           (value.size() > digits && std::isdigit(static_cast<unsigned char>(value[digits]))
                ? " (write it in decimal digits)"
                : "");
  const std::size_t first = value.find_first_not_of('0', digits);
  value = first == std::string::npos ? "0" : sign + value.substr(first);
  return "";
}

// Every whole-number option of `app` and its subcommands, at any depth, reads decimal.
void read_numbers_as_decimal(CLI::App& app) {
  for (CLI::Option* opt : app.get_options())
    if (holds_whole_number(*opt)) opt->transform(CLI::Validator(decimal_whole_number, ""));
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    read_numbers_as_decimal(*sub);
}

// CLI11's message for a parse error, said for people: which option or argument, what was
// wrong with it, and the help to read (the command's own when one was given).
std::string parse_error_line(const CLI::App& app, const CLI::ParseError& e) {
  std::string what = e.what();
  const std::string convert = "Could not convert: ";
  if (what.rfind(convert, 0) == 0) {  // "Could not convert: --limit = 99999999999"
    // The value is decimal digits by then (read_numbers_as_decimal): too large a number.
    const std::string rest = what.substr(convert.size());
    const std::size_t eq = rest.find(" = ");
    if (eq != std::string::npos)
      what = rest.substr(0, eq) + ": '" + rest.substr(eq + 3) + "' is out of range";
  }
  const std::string unexpected = "The following argument was not expected: ";
  const std::string unexpected_many = "The following arguments were not expected: ";
  if (what.rfind(unexpected, 0) == 0)
    what = "unexpected argument '" + what.substr(unexpected.size()) + "'" +
           option_hint(app, what.substr(unexpected.size()));
  else if (what.rfind(unexpected_many, 0) == 0) {
    const std::string rest = what.substr(unexpected_many.size());
    std::string hint;
    std::istringstream words(rest);
    for (std::string w; hint.empty() && words >> w;) hint = option_hint(app, w);
    what = "unexpected arguments: " + rest + hint;
  }
  if (what == "A subcommand is required") {
    what = "no command given";
    // `cron frobnicate`: the word left over names the subcommand that does not exist.
    const auto chosen = app.get_subcommands();
    if (!chosen.empty()) {
      const CLI::App* cmd = chosen.front();
      std::vector<std::string> left = cmd->remaining(true);
      if (left.empty()) left = app.remaining(true);
      std::vector<std::string> names;
      for (const CLI::App* sub : cmd->get_subcommands({})) names.push_back(sub->get_name());
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      if (!left.empty()) {
        what = "unknown " + cmd->get_name() + " subcommand '" + left.front() + "'";
        if (auto near = nearest(left.front(), names))
          what += "; did you mean " + *near + "?";
        else
          what += " (one of " + list + ")";
      } else if (!names.empty()) {
        what = cmd->get_name() + " needs a subcommand: one of " + list;
      }
    }
  }
  // An option of two values (batch create --on-success QUEUE PAYLOAD) given too few or too
  // many: CLI11 says "--on-success: At least 2 required but received 1". (It reads a value
  // of `[]` as an empty list, so `--on-success q '[]'` is one value short.)
  for (const char* count : {": At least ", ": At Most "}) {
    const std::size_t at = what.find(count);
    const std::size_t required = what.find(" required but received ");
    if (at != std::string::npos && required != std::string::npos && required > at) {
      const std::string wanted =
          what.substr(at + std::strlen(count), required - at - std::strlen(count));
      const std::string got = what.substr(required + std::strlen(" required but received "));
      what = what.substr(0, at) + " takes " + wanted + (wanted == "1" ? " value" : " values") +
             ", not " + got +
             (std::string(count) == ": At least "
                  ? " (a value of [] counts as none)"
                  : " (given more than once, or a word after its values: quote a value with "
                    "spaces)");
      break;
    }
  }
  if (what.size() > 12 && what.compare(what.size() - 12, 12, " is required") == 0)
    what = what.substr(0, what.size() - 12) + " is missing";
  // The help of the command given, down to its subcommand (`queuectl cron add --help`).
  std::string help = "queuectl";
  for (const CLI::App* cmd : given_commands(app)) help += " " + cmd->get_name();
  help += " --help";
  return "queuectl: error: " + what + " (see " + help + ")";
}

}  // namespace

namespace {

int run(int argc, char** argv, std::ostream& out, std::ostream& err, Database* lent) {
  Context ctx(out, err);
  if (lent) ctx.lend(*lent);
  CLI::App app(kDescription, "queuectl");
  // Before any command is added: each takes its parent's formatter when it is created.
  app.formatter(std::make_shared<HelpFormatter>());
  app.footer(kFooter);
  app.set_version_flag("--version", std::string("queuectl ") + QUEUECTL_VERSION);
  app.require_subcommand(1);
  app.fallthrough();
  app.add_option("--db", ctx.options.db, "Database URL (default: $QUEUECTL_DB or local SQLite)")
      ->type_name("URL");
  app.add_option("--db-password-file", ctx.options.password_file,
                 "Read the database password from this file")
      ->type_name("FILE");
  // Checked while parsing, so that a bad -o stops a command before it writes anything.
  app.add_option("-o,--output", ctx.options.format,
                 "Output: table (default), wide, json, ndjson; prometheus for stats")
      ->type_name("FORMAT")
      ->check(CLI::IsMember(output_format_names()));
  app.add_flag("-q,--quiet", ctx.options.quiet, "Print only data; no diagnostics");
  // Checked while parsing, so that a mistyped field stops `claim` before it takes a job.
  app.add_option("--field", ctx.options.fields,
                 "Print only these fields of each job, tab-separated (e.g. id,lock_token; the "
                 "names `show` prints)")
      ->delimiter(',')
      // One word a --field (`show --field status 1`: 1 is the id, not a field).
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("NAME[,NAME...]")
      // (The names are left out of the help's type column, which they would fill.)
      ->check(CLI::IsMember(job_field_names()).description(""));
  app.add_flag("-v,--verbose", ctx.options.verbose, "More diagnostics on stderr");
  app.add_option("--max-payload", ctx.options.max_payload,
                 "Largest payload accepted, in bytes (default 1048576)")
      ->type_name("BYTES")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1073741824}));
  register_commands(app, ctx);
  read_numbers_as_decimal(app);
  // --field picks fields of jobs: a command that prints no jobs (stats, groups, a report of
  // ids) is refused before it runs, rather than printing blank lines with exit 0.
  app.parse_complete_callback([&app, &ctx] {
    if (ctx.options.verbose && ctx.options.quiet)
      throw UsageError("-q (--quiet) and -v (--verbose) exclude each other: give one");
    if (ctx.options.fields.empty()) return;
    static const std::set<std::string> job_commands = {"claim", "list",   "show",    "enqueue",
                                                       "fail",  "extend", "release", "leases"};
    for (const CLI::App* sub : app.get_subcommands())
      if (!job_commands.count(sub->get_name()))
        throw UsageError("--field picks fields of jobs, and `" + sub->get_name() +
                         "` prints no jobs: use -o json (or -o ndjson) to pick from its rows");
  });
  ctx.arguments.assign(argv + std::min(argc, 1), argv + argc);
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      ctx.after_separator = std::vector<std::string>(argv + i + 1, argv + argc);
      break;
    }
  // Bare `queuectl`: the overview, as git and kubectl print it.
  if (argc <= 1) {
    out << app.help();
    return 0;
  }
  // `queuectl version`, as kubectl and docker users type it: the same as --version.
  if (argc == 2 && std::string(argv[1]) == "version") {
    out << "queuectl " << QUEUECTL_VERSION << "\n";
    return 0;
  }
  const auto started = std::chrono::steady_clock::now();
  try {
    app.parse(argc, argv);
    // -v: what the command took in all (each connection and the schema check are said as
    // they happen).
    if (const auto given = app.get_subcommands(); !given.empty())
      ctx.debug(given.front()->get_name() + " took " + elapsed_ms(started));
    return 0;
  } catch (const CLI::CallForHelp& e) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp& e) {
    out << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      app.exit(e, out, err);
      return 0;
    }
    // CLI11 reports a mistyped command as "A subcommand is required": name it instead.
    const auto extras = app.remaining();
    if (app.get_subcommands().empty() && !extras.empty() && extras.front().rfind("-", 0) != 0) {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        names.push_back(sub->get_name());
      const auto near = nearest(extras.front(), names);
      err << "queuectl: error: unknown command '" << extras.front() << "'"
          << (near ? "; did you mean '" + *near + "'?" : std::string()) +
                 " (see queuectl --help for the list)\n";
      return static_cast<int>(ExitCode::usage);
    }
    // `work -- CMD`, CMD one word: CLI11 took it for the QUEUE, and then found no command.
    if (std::string(e.what()) == "COMMAND is required" && ctx.after_separator &&
        !ctx.after_separator->empty()) {
      err << "queuectl: error: QUEUE is missing (queuectl work QUEUE -- CMD [ARG...]): every "
             "word after -- belongs to the command\n";
      return static_cast<int>(ExitCode::usage);
    }
    err << parse_error_line(app, e) << "\n";
    return static_cast<int>(ExitCode::usage);
  } catch (const CommandExit& e) {
    return e.code();
  } catch (const Error& e) {
    err << "queuectl: error: " << visible_text(e.what()) << "\n";
    return static_cast<int>(e.code());
  } catch (const soci::soci_error& e) {
    err << "queuectl: error: database: " << visible_text(e.get_error_message()) << "\n";
    return static_cast<int>(ExitCode::error);
  } catch (const std::exception& e) {
    err << "queuectl: error: " << visible_text(e.what()) << "\n";
    return static_cast<int>(ExitCode::error);
  }
}

}  // namespace

int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  return run(argc, argv, out, err, nullptr);
}

int run_cli_on(Database& db, const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err) {
  std::vector<std::string> words{"queuectl"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return run(static_cast<int>(words.size()), argv.data(), out, err, &db);
}

}  // namespace queuectl
