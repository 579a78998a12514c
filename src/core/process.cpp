#include "core/process.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>

namespace queuectl {

void die_with_parent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(137);  // the parent died before prctl took effect
}

void exec_failed(const char* command, int error) {
  auto put = [](const char* text) { (void)!write(STDERR_FILENO, text, std::strlen(text)); };
  put("queuectl: cannot run '");
  put(command);
  put("': ");
  put(std::strerror(error));  // a table lookup for the known codes; no allocation
  put("\n");
  _exit(127);
}

namespace {

// A message from queuectl to its guard: 'w' watch, 'u' unwatch, 'x' dismiss; then a pgid.
struct GuardMessage {
  char what;
  pid_t pgid;
};

// The guard process: closes everything but its end of the socket, ignores the signals a
// terminal or a supervisor sends to the whole group (it must outlive queuectl to be of
// use), and keeps a fixed table of watched groups until told to go or queuectl is gone.
[[noreturn]] void guard_main(int fd) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGTSTP, SIGTTIN,
                  SIGTTOU, SIGALRM})
    ::signal(sig, SIG_IGN);
  ::signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (fd > 0) close_range(0, static_cast<unsigned>(fd) - 1, 0);
  close_range(static_cast<unsigned>(fd) + 1, ~0U, 0);
  prctl(PR_SET_NAME, "queuectl-guard");
  pid_t groups[GroupGuard::kMaxGroups];
  int count = 0;
  GuardMessage m;
  while (true) {
    ssize_t n = recv(fd, &m, sizeof m, MSG_WAITALL);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof m)) break;  // end of file: queuectl is gone
    if (m.what == 'x') _exit(0);
    if (m.what == 'w' && count < GroupGuard::kMaxGroups) {
      groups[count++] = m.pgid;
    } else if (m.what == 'u') {
      for (int i = 0; i < count; ++i)
        if (groups[i] == m.pgid) {
          groups[i] = groups[--count];
          break;
        }
    }
  }
  for (int i = 0; i < count; ++i) kill(-groups[i], SIGKILL);
  _exit(0);
}

}  // namespace

GroupGuard::GroupGuard() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return;
  pid_t pid = fork();
  if (pid == 0) guard_main(sv[1]);
  close(sv[1]);
  if (pid < 0) {
    close(sv[0]);
    return;
  }
  pid_ = pid;
  fd_ = sv[0];
}

GroupGuard::~GroupGuard() {
  if (fd_ < 0) return;
  send('x', 0);
  close(fd_);
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

void GroupGuard::watch(pid_t pgid) {
  send('w', pgid);
}
void GroupGuard::unwatch(pid_t pgid) {
  send('u', pgid);
}

void GroupGuard::send(char what, pid_t pgid) {
  if (fd_ < 0 || pgid < 0) return;
  GuardMessage m;
  std::memset(&m, 0, sizeof m);
  m.what = what;
  m.pgid = pgid;
  // MSG_NOSIGNAL: a guard that died must not take queuectl with it (SIGPIPE).
  while (::send(fd_, &m, sizeof m, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

}  // namespace queuectl
