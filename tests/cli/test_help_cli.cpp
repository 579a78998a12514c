// `queuectl help [COMMAND]` and how help reads (issue 14, point 23): arguments named for
// people (QUEUE, ID..., NAME, COMMAND...), required options marked, and each command's
// help listing the global options it takes.
#include <regex>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

std::vector<std::string> command_names() {
  RunResult r = run_process({QUEUECTL_BINARY, "__complete", "commands"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> names = lines_of(r.out);
  REQUIRE(names.size() >= 20);
  return names;
}

RunResult help_of(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {QUEUECTL_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = run_process(argv);
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  return r;
}

}  // namespace

TEST_CASE("cli: help: `queuectl help` is the overview, `queuectl help CMD` is CMD --help") {
  const std::string overview = help_of({"--help"}).out;
  CHECK(help_of({"help"}).out == overview);
  CHECK(overview.find("queuectl help COMMAND") != std::string::npos);
  for (const std::string& cmd : command_names()) {
    CAPTURE(cmd);
    const std::string own = help_of({cmd, "--help"}).out;
    CHECK(help_of({"help", cmd}).out == own);
    CHECK(own.find("Usage: queuectl " + cmd + " ") != std::string::npos);
  }
  CHECK(help_of({"help", "help"}).out == help_of({"help", "--help"}).out);
}

TEST_CASE("cli: help: an unknown command is exit 2, naming it") {
  check_usage_error(run_process({QUEUECTL_BINARY, "help", "clam"}), "unknown command 'clam'");
  check_usage_error(run_process({QUEUECTL_BINARY, "help", "__complete"}), "unknown command");
  check_usage_error(run_process({QUEUECTL_BINARY, "help", "claim", "list"}), "'list'");
  check_usage_error(run_process({QUEUECTL_BINARY, "help", "cron", "frob"}),
                    "unknown cron subcommand 'frob'");
}

TEST_CASE("cli: help: `queuectl help cron add` is `queuectl cron add --help`") {
  for (const char* part :
       {"add", "remove", "pause", "resume", "list", "show", "trigger", "apply", "tick"}) {
    CAPTURE(part);
    const std::string own = help_of({"cron", part, "--help"}).out;
    CHECK(own.find(std::string("Usage: queuectl cron ") + part + " ") != std::string::npos);
    CHECK(help_of({"help", "cron", part}).out == own);
  }
}

TEST_CASE("cli: help: arguments are named for people, in usage, help and errors") {
  struct Expect {
    std::string command;
    std::string usage;  // after "Usage: queuectl COMMAND [OPTIONS] "
  };
  for (const Expect& e : {Expect{"claim", "QUEUE"},
                          {"enqueue", "[QUEUE] [PAYLOAD]"},
                          {"show", "ID"},
                          {"ack", "[ID]"},
                          {"retry", "[ID...]"},
                          {"cancel", "[ID...]"},
                          {"stats", "[QUEUE...]"},
                          {"list", "[QUEUE]"},
                          {"lock", "NAME [COMMAND...]"},
                          {"work", "QUEUE COMMAND..."},
                          {"help", "[COMMAND] [SUBCOMMAND]"}}) {
    CAPTURE(e.command);
    const std::string text = help_of({"help", e.command}).out;
    CHECK(text.find("Usage: queuectl " + e.command + " [OPTIONS] " + e.usage + "\n") !=
          std::string::npos);
  }
  // No argument shown by a variable name or with CLI11's TEXT/REQUIRED decoration.
  static const std::regex lowercase_positional(
      R"(^  \[?[a-z_]+(\.\.\.)?\]?\s+[A-Z]*\s*(TEXT|INT))");
  for (const std::string& cmd : command_names()) {
    CAPTURE(cmd);
    const std::string text = help_of({cmd, "--help"}).out;
    for (const std::string& line : lines_of(text)) {
      CAPTURE(line);
      CHECK_FALSE(std::regex_search(line, lowercase_positional));
      CHECK(line.find("TEXT REQUIRED") == std::string::npos);
      CHECK(line.find(" REQUIRED") == std::string::npos);
    }
  }
  check_usage_error(run_process({QUEUECTL_BINARY, "claim"}), "QUEUE is missing");
  check_usage_error(run_process({QUEUECTL_BINARY, "lock"}), "NAME is missing");
}

TEST_CASE("cli: help: options that must be given are marked (required)") {
  for (const std::string cmd : {"fail", "extend", "release"}) {
    CAPTURE(cmd);
    static const std::regex token(R"(\n  --token \S+ \(required\)\s)");
    CHECK(std::regex_search(help_of({cmd, "--help"}).out, token));
  }
  static const std::regex older_than(R"(\n  --older-than DUR \(required\)\s)");
  CHECK(std::regex_search(help_of({"purge", "--help"}).out, older_than));
  // ack takes --from instead: not required there.
  CHECK(help_of({"ack", "--help"}).out.find("(required)") == std::string::npos);
}

TEST_CASE("cli: help: each command's help lists the global options") {
  for (const std::string& cmd : command_names()) {
    CAPTURE(cmd);
    const std::string text = help_of({"help", cmd}).out;
    const auto at = text.find("\nGlobal options (before or after the command):\n");
    REQUIRE(at != std::string::npos);
    const std::string globals = text.substr(at);
    for (const char* line :
         {"\n  --db URL ", "\n  --db-password-file FILE ", "\n  -o,--output FORMAT",
          "\n  -q,--quiet ", "\n  -v,--verbose ", "\n  --field ", "\n  --max-payload BYTES"})
      CHECK_MESSAGE(globals.find(line) != std::string::npos, "no line" << line);
    CHECK(globals.find("--version") == std::string::npos);
    CHECK(globals.find("--help") == std::string::npos);
  }
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// Help is folded at words to 80 columns: a terminal (and help2man, for the man page) would
// otherwise cut an option's long description mid-word. Every line of every command's help,
// and of the overview, fits; an option's description goes on under itself. An indented
// line other than an option's (an example command) is left whole, to be copied as it is.
TEST_CASE("cli: help: every line fits 80 columns, folded at words") {
  std::vector<std::vector<std::string>> helps = {{"--help"}};
  for (const std::string& name : command_names()) helps.push_back({name, "--help"});
  for (const auto& args : helps) {
    CAPTURE(args[0]);
    const RunResult r = help_of(args);
    for (const std::string& line : lines_of(r.out)) {
      CAPTURE(line);
      const bool option = line.rfind("  ", 0) == 0 && line.size() > 30 &&
                          line.compare(28, 2, "  ") == 0 && line[30] != ' ';
      if (line.rfind(" ", 0) != 0 || option) CHECK(line.size() <= 80);
    }
  }
  const std::string field = help_of({"list", "--help"}).out;
  // One word a --field (without the "..." of an option that takes the next words too).
  CHECK(field.find("  --field NAME[,NAME...]      Print only these fields of each job, "
                   "tab-separated\n                              (e.g. id,lock_token") !=
        std::string::npos);
}

}  // namespace queuectl::testing::cli
