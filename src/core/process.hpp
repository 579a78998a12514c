// Process helpers shared by `lock` and `work`: the guard that outlives queuectl to kill what
// it started, and helper threads that leave signals to the main thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <thread>

namespace queuectl {

// Starts a helper thread (a heartbeat, a lock keeper) with every signal blocked, so that a
// signal sent to queuectl is handled in its main thread: that is where `lock` forwards it to
// the command and the worker's loop wakes up. (Blocked from before the thread exists: a
// thread that blocked them itself would leave a moment in which it could take one.)
std::thread start_helper_thread(std::function<void()> body);

// The kernel's parent-death signal reaches only the command itself, not what it started
// (a shell script's own children). A guard is a small process, forked from queuectl, that
// SIGKILLs the process groups it watches as soon as queuectl is gone, however it died:
// it waits on a socket that only queuectl holds open, and end of file means queuectl is
// dead. Destroying the guard (queuectl exiting normally) dismisses it without killing.
// Safe to create while other threads run: the guard process calls only async-signal-safe
// functions and allocates nothing.
class GroupGuard {
 public:
  GroupGuard();
  ~GroupGuard();
  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;

  // Watches the process group `pgid` (a command started with setpgid(0, 0)), until
  // unwatch. At most kMaxGroups at once; more are not guarded.
  void watch(pid_t pgid);
  void unwatch(pid_t pgid);
  // Whether the guard process is running (false when it could not be started).
  bool active() const { return fd_ >= 0; }

  static constexpr int kMaxGroups = 1024;

 private:
  void send(char what, pid_t pgid);

  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace queuectl
