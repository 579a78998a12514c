// queuectl: thin main. Parses the command line, runs the command, and turns the one
// error hierarchy into a message and an exit code.
#include <signal.h>

#include <iostream>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  // SIGCHLD ignored by whoever started queuectl (a `trap '' CHLD`, some supervisors) would
  // make the kernel reap its children unasked, and their exit codes would be lost: queuectl
  // waits for the commands it runs, so it takes the default back.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGCHLD, &dfl, nullptr);
  return queuectl::run_cli(argc, argv, std::cout, std::cerr);
}
