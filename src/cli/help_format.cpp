#include "cli/help_format.hpp"

#include <sstream>
#include <vector>

namespace queuectl {

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
  return text;
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
