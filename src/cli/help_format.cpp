#include "cli/help_format.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace queuectl {

namespace {

constexpr std::size_t kHelpWidth = 80;
// Where CLI11 starts an option's description (its default column width).
constexpr std::size_t kDescriptionColumn = 30;

// `line` folded at spaces to kHelpWidth columns, its continuation lines under its text:
// under the description for an option's line, else under the line's own indent. A word
// longer than the room is left whole, never cut.
void fold_line(const std::string& line, std::size_t indent, std::string& out) {
  std::string rest = line;
  while (rest.size() > kHelpWidth) {
    std::size_t cut = rest.rfind(' ', kHelpWidth);
    if (cut == std::string::npos || cut <= indent) cut = rest.find(' ', kHelpWidth);
    if (cut == std::string::npos) break;
    out += rest.substr(0, cut) + "\n";
    const std::size_t next = rest.find_first_not_of(' ', cut);
    rest = next == std::string::npos ? std::string() : std::string(indent, ' ') + rest.substr(next);
  }
  if (!rest.empty()) out += rest + "\n";
}

bool is_option_line(const std::string& line) {
  return line.size() > kDescriptionColumn && line.compare(0, 2, "  ") == 0 &&
         line.compare(kDescriptionColumn - 2, 2, "  ") == 0 && line[kDescriptionColumn] != ' ';
}

// A line of prose that goes on from the line before it: neither starts indented, the one
// before does not end a heading ("Examples:"), and this one does not start an item of its
// own ("Exit codes: ...", a label of a few words and a colon).
bool continues(const std::string& before, const std::string& line) {
  if (before.empty() || line.empty() || before[0] == ' ' || line[0] == ' ') return false;
  // A heading ("Examples:") is short; a long line that ends in a colon is a sentence going
  // on ("... shows as 10000+ (JSON:"), joined like any other.
  auto heading = [](const std::string& l) { return l.back() == ':' && l.size() <= 40; };
  if (heading(before) || heading(line)) return false;
  const std::size_t colon = line.find(": ");
  const bool label = colon != std::string::npos && colon < 24 &&
                     std::count(line.begin(), line.begin() + colon, ' ') <= 2 &&
                     std::isupper(static_cast<unsigned char>(line[0]));
  return !label;
}

}  // namespace

std::string wrap_help(const std::string& text) {
  std::vector<std::string> lines;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t nl = text.find('\n', at);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  // text ends with a newline: the last "line" is the empty rest after it.
  const bool final_newline = !text.empty() && text.back() == '\n';
  if (final_newline) lines.pop_back();
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (is_option_line(line)) {
      fold_line(line, kDescriptionColumn, out);
    } else if (!line.empty() && line[0] != ' ') {
      // Prose: a paragraph hand-folded wider than 80 is joined, then folded at 80; one
      // that fits is left as written.
      std::size_t last = i;
      bool too_wide = line.size() > kHelpWidth;
      while (last + 1 < lines.size() && continues(lines[last], lines[last + 1])) {
        ++last;
        if (lines[last].size() > kHelpWidth) too_wide = true;
      }
      if (!too_wide) {
        for (; i <= last; ++i) out += lines[i] + "\n";
        i = last;
        continue;
      }
      std::string paragraph = line;
      while (i < last) paragraph += " " + lines[++i];
      fold_line(paragraph, 0, out);
    } else {
      // Indented: an example to copy whole, or a list laid out by hand.
      out += line + "\n";
    }
  }
  if (!final_newline && !out.empty()) out.pop_back();
  return out;
}

HelpFormatter::HelpFormatter() {
  label("REQUIRED", "(required)");
  label("SUBCOMMAND", "COMMAND");
}

std::string HelpFormatter::make_help(const CLI::App* app, std::string name,
                                     CLI::AppFormatMode mode) const {
  if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
  std::stringstream out;
  out << make_description(app) << make_usage(app, name) << make_positionals(app)
      << make_groups(app, mode) << make_subcommands(app, mode);
  // A command's help also lists the options of queuectl itself, which every command takes
  // (before or after its name): --db, -o, -q, -v and the rest, but not --help or --version.
  if (const CLI::App* parent = app->get_parent()) {
    std::vector<const CLI::Option*> globals = parent->get_options([parent](const CLI::Option* opt) {
      return opt->nonpositional() && opt != parent->get_help_ptr() &&
             opt != parent->get_version_ptr() && !opt->get_group().empty();
    });
    if (!globals.empty())
      out << "\n" << make_group("Global options (before or after the command)", false, globals);
  }
  out << '\n' << make_footer(app);
  // CLI11 ends each option group with a blank line of its own: one is enough.
  std::string text = out.str();
  for (auto at = text.find("\n\n\n"); at != std::string::npos; at = text.find("\n\n\n", at))
    text.erase(at, 1);
  // Folded at words to 80 columns: a terminal (or help2man) would cut mid-word.
  return wrap_help(text);
}

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
  if (!is_positional) return CLI::Formatter::make_option_name(opt, false);
  std::string name = opt->get_name(true, false);
  if (opt->get_expected_max() >= CLI::detail::expected_max_vector_size) name += "...";
  return opt->get_required() ? name : "[" + name + "]";
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (opt->get_positional()) return {};
  return CLI::Formatter::make_option_opts(opt);
}

}  // namespace queuectl
