// The guide's examples, run as written: every runnable shell example of README.md and
// docs/*.md is run against a fresh SQLite database and must print what the page says, so
// that the guide cannot drift from the program.
//
// A runnable example is a fenced block whose info string is `console`:
//
//   ```console
//   $ queuectl enqueue emails '{}' --field id       a command: the text after "$ "
//   1                                               what it prints, stdout and stderr
//   $ queuectl ack 1 --token 00000000-0000-4000-8000-000000000000
//   queuectl: error: lease lost on job 1: [..]      [..]: any text within the line
//   [exit 3]                                        its exit code, when it is not 0
//   ```
//
// A "> " line continues the command above it (a here-document, a long command). A line that
// is "..." alone matches any number of lines (none too). Trailing blanks and trailing empty
// lines are not compared. A block marked `console not-run` is only shown: it needs a
// server, a terminal or a host (PostgreSQL examples, systemd units). A block marked
// `console continued` goes on where the page's previous console block stopped, in the same
// shell and folder (a tour told in steps, with prose between them).
//
// Each block runs in one bash, so that variables and files carry from one command to the
// next, in a fresh temporary folder, with QUEUECTL_DB=sqlite:queue.db (a file in that
// folder, migrated beforehand), the queuectl under test first on PATH, HOME and
// XDG_DATA_HOME in the folder, TZ=UTC and no COLUMNS (tables are never cut). A block that
// starts processes in the background must stop them; what is left is killed at its end.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

namespace fs = std::filesystem;

struct DocCommand {
  int line = 0;                       // of the "$ " line, 1-based
  std::string text;                   // what bash runs ("> " lines joined with newlines)
  std::vector<std::string> expected;  // the lines after it, up to the next command
  int exit_code = 0;                  // from "[exit N]"
};

struct DocBlock {
  std::string file;  // as shown in messages: README.md, docs/workers.md
  int line = 0;      // of the opening fence
  bool run = true;   // false: `console not-run`
  std::vector<DocCommand> commands;
  std::vector<int> fences;  // its opening fence and those of the `continued` blocks after it
};

struct DocPage {
  std::vector<DocBlock> blocks;
  std::vector<std::string> errors;  // malformed blocks, each naming file and line
};

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string ltrim(const std::string& s) {
  std::size_t i = s.find_first_not_of(' ');
  return i == std::string::npos ? "" : s.substr(i);
}

// The console blocks of one Markdown file. `shown` names it in messages.
DocPage read_page(const std::string& path, const std::string& shown) {
  DocPage page;
  std::ifstream in(path);
  if (!in) {
    page.errors.push_back(shown + ": cannot be read");
    return page;
  }
  std::string raw;
  int number = 0;
  bool in_fence = false;  // any fenced block
  std::size_t indent = 0;
  DocBlock* block = nullptr;  // the console block being read, if any
  DocCommand* command = nullptr;
  bool output_started = false;  // the current command has expected lines (or an exit line)
  bool exit_seen = false;
  bool block_error = false;           // the block being read was found malformed
  std::size_t commands_at_fence = 0;  // the block's commands before its latest fence
  auto error = [&](const std::string& what) {
    page.errors.push_back(shown + ":" + std::to_string(number) + ": " + what);
  };
  while (std::getline(in, raw)) {
    ++number;
    const std::string line = rstrip(raw);
    const std::string trimmed = ltrim(line);
    if (trimmed.rfind("```", 0) == 0) {
      if (!in_fence) {
        in_fence = true;
        indent = line.size() - trimmed.size();
        std::istringstream info(trimmed.substr(3));
        std::string language, flag;
        info >> language >> flag;
        if (language == "console") {
          block_error = false;
          command = nullptr;
          commands_at_fence = page.blocks.empty() ? 0 : page.blocks.back().commands.size();
          if (flag == "continued" && !page.blocks.empty() && page.blocks.back().run) {
            block = &page.blocks.back();  // the same shell and folder as the block before
            block->fences.push_back(number);
          } else {
            if (flag == "continued")
              error("a `console continued` block without a runnable block before it");
            else if (!flag.empty() && flag != "not-run")
              error("unknown console block flag '" + flag + "'");
            page.blocks.push_back({shown, number, flag != "not-run", {}, {number}});
            block = &page.blocks.back();
            commands_at_fence = 0;
          }
        }
        continue;
      }
      if (trimmed == "```") {
        in_fence = false;
        if (block && block->commands.size() == commands_at_fence && !block_error)
          error("a console block without a \"$ \" command");
        block = nullptr;
        continue;
      }
    }
    if (!block) continue;
    // Lines of a block inside a list item carry the item's indentation.
    std::string text = line.size() >= indent && ltrim(line.substr(0, indent)).empty()
                           ? line.substr(indent)
                           : trimmed;
    if (text.rfind("$ ", 0) == 0) {
      block->commands.push_back({number, text.substr(2), {}, 0});
      command = &block->commands.back();
      output_started = exit_seen = false;
    } else if (!command) {
      if (!block_error) error("a console block must start with a \"$ \" command");
      block_error = true;
    } else if (text.rfind("> ", 0) == 0 && !output_started) {
      command->text += "\n" + text.substr(2);
    } else if (exit_seen) {
      error("\"[exit N]\" must be the last line of a command's output");
    } else if (text.rfind("[exit ", 0) == 0 && text.back() == ']') {
      command->exit_code = std::atoi(text.substr(6).c_str());
      output_started = exit_seen = true;
    } else {
      command->expected.push_back(text);
      output_started = true;
    }
  }
  if (in_fence) error("a fenced block is never closed");
  return page;
}

// Whether `actual` matches `pattern`, where "[..]" stands for any text.
bool line_matches(const std::string& pattern, const std::string& actual) {
  static const std::string any = "[..]";
  std::vector<std::string> pieces;
  for (std::size_t start = 0;;) {
    const std::size_t at = pattern.find(any, start);
    pieces.push_back(
        pattern.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + any.size();
  }
  if (pieces.size() == 1) return pattern == actual;
  const std::string& first = pieces.front();
  const std::string& last = pieces.back();
  if (actual.size() < first.size() + last.size()) return false;
  if (actual.compare(0, first.size(), first) != 0) return false;
  if (actual.compare(actual.size() - last.size(), last.size(), last) != 0) return false;
  // The middle pieces, each as early as it can be, between the first and the last.
  std::size_t pos = first.size();
  const std::size_t end = actual.size() - last.size();
  for (std::size_t i = 1; i + 1 < pieces.size(); ++i) {
    const std::size_t at = actual.find(pieces[i], pos);
    if (at == std::string::npos || at + pieces[i].size() > end) return false;
    pos = at + pieces[i].size();
  }
  return true;
}

// Lines of a command's output, trailing blanks and trailing empty lines dropped.
std::vector<std::string> output_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(rstrip(line));
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// Aligns expected lines (with "..." and "[..]") with the actual ones. Returns an empty string
// when they match, else the diff: "  " both, "- " expected only, "+ " printed only, "~ "
// printed and matched by a "..." line.
std::string diff_lines(std::vector<std::string> expected, const std::vector<std::string>& actual) {
  while (!expected.empty() && expected.back().empty()) expected.pop_back();
  const std::size_t n = expected.size(), m = actual.size();
  const int inf = std::numeric_limits<int>::max() / 2;
  // cost[i][j]: the fewest lines left unmatched aligning expected[i..] with actual[j..].
  std::vector<std::vector<int>> cost(n + 1, std::vector<int>(m + 1, inf));
  for (std::size_t i = n + 1; i-- > 0;) {
    for (std::size_t j = m + 1; j-- > 0;) {
      int& c = cost[i][j];
      if (i == n) {
        c = static_cast<int>(m - j);
      } else if (expected[i] == "...") {
        c = cost[i + 1][j];
        if (j < m) c = std::min(c, cost[i][j + 1]);
      } else {
        c = 1 + cost[i + 1][j];
        if (j < m) {
          c = std::min(c, 1 + cost[i][j + 1]);
          if (line_matches(expected[i], actual[j])) c = std::min(c, cost[i + 1][j + 1]);
        }
      }
    }
  }
  if (cost[0][0] == 0) return "";
  std::string out;
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    const int c = cost[i][j];
    if (i == n) {
      out += "+ " + actual[j++] + "\n";
    } else if (expected[i] == "...") {
      if (c == cost[i + 1][j])
        ++i;
      else
        out += "~ " + actual[j++] + "\n";
    } else if (j < m && line_matches(expected[i], actual[j]) && c == cost[i + 1][j + 1]) {
      out += "  " + actual[j] + "\n";
      ++i, ++j;
    } else if (c == 1 + cost[i + 1][j]) {
      out += "- " + expected[i++] + "\n";
    } else {
      out += "+ " + actual[j++] + "\n";
    }
  }
  return out;
}

std::string single_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs one block in bash; returns a message for each command whose output or exit code is
// not what the page says (none when the block ran as written).
std::vector<std::string> run_block(const DocBlock& block) {
  TempDir work, results;
  std::string script = "cd " + single_quoted(work.path()) + " || exit 99\n" +
                       "queuectl -q migrate 2>&1 || { echo \"the block's database could not be "
                       "migrated\"; exit 98; }\n";
  for (std::size_t i = 0; i < block.commands.size(); ++i) {
    const std::string n = std::to_string(i);
    script += "{ " + block.commands[i].text + "\n} >" +
              single_quoted(results.path() + "/out." + n) + " 2>&1 </dev/null\necho $? >" +
              single_quoted(results.path() + "/rc." + n) + "\n";
  }
  // Whatever the block left running in the background.
  script += "kill $(jobs -p) 2>/dev/null; wait\n";
  const std::string bin = fs::path(QUEUECTL_BINARY).parent_path().string();
  const char* path = std::getenv("PATH");
  RunResult r = run_process({"timeout", "-k", "5", "180", "bash", "-c", script}, "",
                            {{"QUEUECTL_DB", "sqlite:queue.db"},
                             {"PATH", bin + ":" + (path ? path : "/usr/bin:/bin")},
                             {"HOME", work.path()},
                             {"XDG_DATA_HOME", work.path() + "/.local/share"},
                             {"TZ", "UTC"},
                             {"LC_ALL", "C.UTF-8"},
                             {"COLUMNS", ""},
                             {"QUEUECTL_DB_PASSWORD", ""},
                             {"QUEUECTL_NAMED_LOCKS", ""}});
  std::vector<std::string> failures;
  for (std::size_t i = 0; i < block.commands.size(); ++i) {
    const DocCommand& c = block.commands[i];
    const std::string where = block.file + ":" + std::to_string(c.line) + ": $ " + c.text + "\n";
    const std::string rc_file = results.path() + "/rc." + std::to_string(i);
    if (!fs::exists(rc_file)) {
      failures.push_back(where + "did not finish (the block's bash ended, exit " +
                         std::to_string(r.exit_code) + ")\n" + dump(r));
      break;
    }
    const int code = std::atoi(read_text(rc_file).c_str());
    const std::string printed = read_text(results.path() + "/out." + std::to_string(i));
    const std::string diff = diff_lines(c.expected, output_lines(printed));
    if (diff.empty() && code == c.exit_code) continue;
    std::string message = where + "exit " + std::to_string(code);
    if (code != c.exit_code) message += ", the page says " + std::to_string(c.exit_code);
    if (!diff.empty())
      message += "\n--- the page (-), what it printed (+), matched by ... (~):\n" + diff;
    failures.push_back(message);
  }
  return failures;
}

struct Tally {
  int run = 0, shown = 0, commands = 0;
};

// Runs every runnable block of the pages; each failure fails the test with its message.
Tally check_pages(const std::vector<std::pair<std::string, std::string>>& pages) {
  Tally tally;
  for (const auto& [path, shown] : pages) {
    DocPage page = read_page(path, shown);
    for (const std::string& e : page.errors) FAIL_CHECK(e);
    for (const DocBlock& block : page.blocks) {
      if (!block.run) {
        ++tally.shown;
        continue;
      }
      tally.run += static_cast<int>(block.fences.size());
      tally.commands += static_cast<int>(block.commands.size());
      for (const std::string& f : run_block(block)) FAIL_CHECK(f);
    }
  }
  return tally;
}

}  // namespace

TEST_CASE("cli: doc examples: README.md's tour runs as written" * doctest::skip(!is_sqlite())) {
  Tally t = check_pages({{QUEUECTL_SOURCE_DIR "/README.md", "README.md"}});
  MESSAGE("README.md: " << t.run << " block(s), " << t.commands << " command(s) run, " << t.shown
                        << " shown only");
  CHECK_MESSAGE(t.run >= 1, "README.md has no runnable ```console block: the tour is gone");
}

TEST_CASE("cli: doc examples: every docs/ page runs as written" * doctest::skip(!is_sqlite())) {
  std::vector<std::pair<std::string, std::string>> pages;
  for (const auto& e : fs::directory_iterator(QUEUECTL_SOURCE_DIR "/docs"))
    if (e.path().extension() == ".md")
      pages.push_back({e.path().string(), "docs/" + e.path().filename().string()});
  std::sort(pages.begin(), pages.end());
  REQUIRE_MESSAGE(!pages.empty(), "no docs/*.md pages");
  Tally t = check_pages(pages);
  MESSAGE("docs/: " << pages.size() << " page(s), " << t.run << " block(s), " << t.commands
                    << " command(s) run, " << t.shown << " shown only");
  // A lost fence or flag must not quietly stop the examples from running.
  CHECK(t.run >= 30);
}

// The checker itself: a wrong expected line, a wrong exit code and a malformed block each
// fail, naming the file, the line and the command; "..." and "[..]" match what they should.
TEST_CASE("cli: doc examples: a wrong example fails, naming file, line, command and diff" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  const std::string page = dir.write("page.md",
                                     "# A page\n"
                                     "\n"
                                     "```console\n"
                                     "$ printf 'one\\ntwo\\nthree\\n'\n"
                                     "one\n"
                                     "...\n"
                                     "$ echo \"token $((6 * 7))\"\n"
                                     "token [..]\n"
                                     "$ queuectl show 9\n"
                                     "queuectl: error: job 9 not found\n"
                                     "[exit 4]\n"
                                     "$ cat <<'EOF'\n"
                                     "> here\n"
                                     "> EOF\n"
                                     "here\n"
                                     "```\n"
                                     "\n"
                                     "```console\n"
                                     "$ echo hello\n"
                                     "goodbye\n"
                                     "$ false\n"
                                     "```\n"
                                     "\n"
                                     "```console not-run\n"
                                     "$ queuectl --db postgresql://db/jobs work q -- true\n"
                                     "```\n"
                                     "\n"
                                     "```console\n"
                                     "no command first\n"
                                     "```\n");
  DocPage parsed = read_page(page, "page.md");
  REQUIRE(parsed.blocks.size() == 4);
  CHECK(parsed.blocks[0].commands.size() == 4);
  CHECK(parsed.blocks[0].commands[2].exit_code == 4);
  CHECK(parsed.blocks[0].commands[3].text == "cat <<'EOF'\nhere\nEOF");
  CHECK_FALSE(parsed.blocks[2].run);
  REQUIRE(parsed.errors.size() == 1);
  CHECK(parsed.errors[0] == "page.md:29: a console block must start with a \"$ \" command");

  CHECK(run_block(parsed.blocks[0]).empty());

  std::vector<std::string> failures = run_block(parsed.blocks[1]);
  REQUIRE(failures.size() == 2);
  INFO(failures[0]);
  CHECK(failures[0].rfind("page.md:19: $ echo hello\nexit 0\n", 0) == 0);
  CHECK(failures[0].find("\n- goodbye\n+ hello\n") != std::string::npos);
  CHECK(failures[1].rfind("page.md:21: $ false\nexit 1, the page says 0", 0) == 0);

  CHECK(line_matches("a [..] c [..]", "a b c d"));
  CHECK(line_matches("[..]", ""));
  CHECK_FALSE(line_matches("a [..] c", "a b d"));
  CHECK_FALSE(line_matches("ab[..]ba", "aba"));
  CHECK(diff_lines({"x", "...", "z"}, {"x", "z"}).empty());
  CHECK(diff_lines({"..."}, {"a", "b"}).empty());
  CHECK(diff_lines({"x", "...", "z"}, {"x", "y", "y"}) == "  x\n~ y\n~ y\n- z\n");
}

}  // namespace queuectl::testing::cli
