// The whole command line as a function, so that tests can drive it in process too.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace queuectl {

// Parses argv, runs the command, prints `queuectl: error: ...` for any failure and
// returns the exit code DESIGN.md gives it.
int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err);

class Database;

// The same for `queuectl serve`: `args` without the program name, run on `db`, a connection
// the caller opened and checked the schema of, and keeps (commands that hand their
// connection on, work and lock, refuse it).
int run_cli_on(Database& db, const std::vector<std::string>& args, std::ostream& out,
               std::ostream& err);

}  // namespace queuectl
