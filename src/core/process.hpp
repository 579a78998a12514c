// Small process helpers shared by `lock` and `work`.
#pragma once

#include <sys/types.h>

namespace queuectl {

// In a freshly forked child: asks the kernel to SIGKILL it when the thread that forked it
// (queuectl's main thread) dies, and exits at once if that already happened. A command
// must not outlive the lease or the named lock that queuectl holds for it.
void die_with_parent(pid_t parent);

// In a forked child after exec failed: says so on stderr with write(2) alone (stdio's lock
// may be held by a thread that no longer exists here) and exits 127, as a shell does.
[[noreturn]] void exec_failed(const char* command, int error);

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
