// The whole command line as a function, so that tests can drive it in process too.
#pragma once

#include <iosfwd>

namespace queuectl {

// Parses argv, runs the command, prints `queuectl: error: ...` for any failure and
// returns the exit code DESIGN.md gives it.
int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace queuectl
