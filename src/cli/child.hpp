// Running a user's command: `lock` runs one in the foreground and forwards signals to it.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace queuectl {

// Runs argv[0] (searched in PATH) with the given arguments, inheriting stdio, in a process
// group of its own (which gets the terminal, if queuectl has it). SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGUSR1 and SIGUSR2 sent to queuectl are passed on to that group, and the group
// is killed if queuectl itself dies, even by SIGKILL (PR_SET_PDEATHSIG and a GroupGuard),
// so that nothing it started can outlive what queuectl holds for it. `keep_going` is asked a few
// times a second while it runs; once it returns false the command gets SIGTERM, then SIGKILL after
// `kill_after_ms`. Returns its exit code, 128 + the signal number when a signal ended it, or 127
// when it could not be started (after saying why on stderr). Throws Error when its exit status
// cannot be learned (waitpid failed), rather than guess one.
int run_forwarding_signals(const std::vector<std::string>& argv,
                           const std::function<bool()>& keep_going = {}, int kill_after_ms = 10000);

}  // namespace queuectl
