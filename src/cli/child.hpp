// Running a user's command: `lock` runs one in the foreground and forwards signals to it.
#pragma once

#include <string>
#include <vector>

namespace queuectl {

// Runs argv[0] (searched in PATH) with the given arguments, inheriting stdio. SIGINT,
// SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to queuectl are passed on to it.
// Returns its exit code, 128 + the signal number when a signal ended it, or 127 when it
// could not be started.
int run_forwarding_signals(const std::vector<std::string>& argv);

}  // namespace queuectl
