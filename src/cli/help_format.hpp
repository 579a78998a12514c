// How `--help` reads: arguments by the names people use (QUEUE, [PAYLOAD], ID...), options
// that must be given marked "(required)", and in a command's help the global options it
// accepts too.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace queuectl {

// `text` with every line longer than 80 columns folded at spaces; an option's description
// continues under itself (column 30), any other line under its own indent.
std::string wrap_help(const std::string& text);

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter();

  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override;
  // A positional as the usage line shows it: QUEUE, [QUEUE], ID..., [COMMAND...].
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
  // The usage line shows positionals the same way.
  std::string make_option_usage(const CLI::Option* opt) const override {
    return make_option_name(opt, true);
  }
  // Nothing after a positional's name: its usage form says it all.
  std::string make_option_opts(const CLI::Option* opt) const override;
};

}  // namespace queuectl
