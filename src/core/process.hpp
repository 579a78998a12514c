// Small process helpers shared by `lock` and `work`.
#pragma once

#include <sys/types.h>

namespace queuectl {

// In a freshly forked child: asks the kernel to SIGKILL it when the thread that forked it
// (queuectl's main thread) dies, and exits at once if that already happened. A command
// must not outlive the lease or the named lock that queuectl holds for it.
void die_with_parent(pid_t parent);

}  // namespace queuectl
