#include "core/process.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace queuectl {

void die_with_parent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(137);  // the parent died before prctl took effect
}

}  // namespace queuectl
