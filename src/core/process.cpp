#include "core/process.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace queuectl {

std::thread start_helper_thread(std::function<void()> body) {
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  // A new thread starts with its creator's mask; the creator gets its own back at once.
  std::thread thread;
  try {
    thread = std::thread(std::move(body));
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return thread;
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
  // Every signal is still blocked (see the constructor): handlers are reset first, so that
  // none of queuectl's runs in the guard once they are unblocked.
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, nullptr, &current) != 0) continue;
    if ((current.sa_flags & SA_SIGINFO) ||
        (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN))
      ::signal(sig, SIG_DFL);
  }
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
  // Signals stay blocked across fork, so that no handler of queuectl's runs in the guard.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  pid_t pid = fork();
  if (pid == 0) guard_main(sv[1]);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
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
