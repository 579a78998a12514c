// queuectl: thin main. Parses the command line, runs the command, and turns the one
// error hierarchy into a message and an exit code.
#include <iostream>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  return queuectl::run_cli(argc, argv, std::cout, std::cerr);
}
