#include "core/subprocess.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/errors.hpp"
#include "core/validate.hpp"

extern char** environ;

namespace queuectl {
namespace {

// Everything the child needs between fork and exec, built in the parent: after fork only
// the forking thread exists in the child, and a lock another thread held at that moment
// (malloc's, the environment's, the locale's behind strerror) stays held there forever.
struct ChildPlan {
  std::vector<std::string> env_text, paths;
  std::vector<char*> argv, envp, candidates;
  std::vector<char*> sh_argv;  // /bin/sh, the file (set in the child), the arguments
  const std::vector<int>* to_default = nullptr;
  const std::vector<int>* to_ignore = nullptr;
  pid_t parent = -1;
  bool terminal = false;
  int in = -1, out = -1, err = -1;  // the child's ends of the pipes, when capturing
  int report = -1;                  // the write end of the report pipe, if any
  int status = -1;                  // the write end of the exec-status pipe
};

// The value of PATH in the environment the command gets, as execvp would search it.
std::string path_of(const std::vector<std::string>& env) {
  for (const auto& e : env)
    if (e.rfind("PATH=", 0) == 0) return e.substr(5);
  return "/bin:/usr/bin";  // glibc's default when PATH is unset
}

void prepare(ChildPlan& plan, const Subprocess::Options& o) {
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (o.env.count(name)) continue;
    if (std::find(o.unset.begin(), o.unset.end(), name) != o.unset.end()) continue;
    plan.env_text.push_back(entry);
  }
  for (const auto& [k, v] : o.env) plan.env_text.push_back(k + "=" + v);
  for (auto& e : plan.env_text) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);

  for (const auto& a : o.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);

  const std::string& file = o.argv.front();
  if (!o.path.empty()) {
    plan.paths.push_back(o.path);
  } else if (file.find('/') != std::string::npos) {
    plan.paths.push_back(file);
  } else if (!file.empty()) {
    const std::string path = path_of(plan.env_text);
    std::size_t start = 0;
    while (true) {
      const std::size_t colon = path.find(':', start);
      std::string dir = path.substr(start, colon == std::string::npos ? colon : colon - start);
      plan.paths.push_back((dir.empty() ? "." : dir) + "/" + file);  // empty: the current folder
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  for (auto& p : plan.paths) plan.candidates.push_back(p.data());

  plan.sh_argv.push_back(const_cast<char*>("/bin/sh"));
  plan.sh_argv.push_back(nullptr);
  for (std::size_t i = 1; i < o.argv.size(); ++i) plan.sh_argv.push_back(plan.argv[i]);
  plan.sh_argv.push_back(nullptr);
  plan.to_default = &o.to_default;
  plan.to_ignore = &o.to_ignore;
}

void set_disposition(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, nullptr);
}

// The child, from fork to exec: async-signal-safe calls only, and no allocation. Every
// signal is blocked on entry (the parent blocked them before fork), so no handler of
// queuectl's can run here; dispositions are reset before the mask is cleared.
[[noreturn]] void run_child(ChildPlan& plan) {
  setpgid(0, 0);
  if (plan.terminal) tcsetpgrp(STDIN_FILENO, getpid());  // SIGTTOU is blocked: no stop
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != plan.parent) _exit(137);  // queuectl died before prctl took effect
  if (plan.in >= 0) {
    // The pipes were made above descriptor 2, so these dup2 calls cannot overwrite them.
    dup2(plan.in, STDIN_FILENO);
    dup2(plan.out, STDOUT_FILENO);
    dup2(plan.err, STDERR_FILENO);
  }
  // Above kReportFd too (make_pipe), so this cannot overwrite another pipe; dup2 clears
  // close-on-exec on the copy.
  if (plan.report >= 0) dup2(plan.report, Subprocess::kReportFd);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;  // reserved by the C library
    const bool handled = (current.sa_flags & SA_SIGINFO) ||
                         (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    if (handled) set_disposition(sig, SIG_DFL);
  }
  for (int sig : *plan.to_default) set_disposition(sig, SIG_DFL);
  for (int sig : *plan.to_ignore) set_disposition(sig, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  // execvp's search, over candidates prepared in the parent: a directory where the file is
  // missing is skipped, one where it may not be run is remembered, anything else ends it.
  int error = ENOENT;
  bool denied = false;
  for (char* path : plan.candidates) {
    execve(path, plan.argv.data(), plan.envp.data());
    error = errno;
    if (error == ENOEXEC) {  // not a binary: a script without #!, run by the shell
      plan.sh_argv[1] = path;
      execve("/bin/sh", plan.sh_argv.data(), plan.envp.data());
      error = errno;
      break;
    }
    if (error == EACCES) {
      denied = true;
    } else if (error != ENOENT && error != ENOTDIR && error != ESTALE && error != ENODEV &&
               error != ETIMEDOUT) {
      break;
    }
  }
  if (denied && (error == ENOENT || error == ENOTDIR)) error = EACCES;
  // The parent reads why; it prints the message (strerror is not safe here).
  (void)!write(plan.status, &error, sizeof error);
  _exit(127);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kShareMemory = false;  // the sanitizers' runtimes expect a copied child
#else
constexpr bool kShareMemory = true;
#endif

int child_entry(void* plan) {
  run_child(*static_cast<ChildPlan*>(plan));
}

// The stack a child runs on from clone to exec, one per thread that starts children, made
// at its first child and kept: the thread waits while its child uses it (CLONE_VFORK), so
// no two children of one thread ever share it. Kept rather than mapped and unmapped at each
// child, which cost a fresh page fault or two in the child and, in a process with other
// threads, an munmap that flushes every core's view of the address space.
class ChildStack {
 public:
  static constexpr std::size_t kSize = 128 * 1024;
  ~ChildStack() {
    if (base_ != nullptr) munmap(base_, kSize);
  }
  // The top of the stack (it grows down), or nullptr with errno set.
  char* top() {
    if (base_ == nullptr) {
      void* mapped = mmap(nullptr, kSize, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
      if (mapped == MAP_FAILED) return nullptr;
      base_ = mapped;
    }
    return static_cast<char*>(base_) + kSize;
  }

 private:
  void* base_ = nullptr;
};

// Makes the child that runs run_child(plan); returns its pid, or -1 with `error` set. The
// child shares queuectl's memory until it execs or exits, and the calling thread waits that
// long (CLONE_VM | CLONE_VFORK, as posix_spawn does): no page tables are copied and none torn
// down again at exec, which is most of what starting a short command costs a large process.
// run_child writes only its own stack (this thread's ChildStack), its plan, and errno, which
// the calling thread does not read meanwhile.
pid_t make_child(ChildPlan& plan, int& error) {
  if (!kShareMemory) {
    const pid_t pid = fork();
    if (pid == 0) run_child(plan);
    error = errno;
    return pid;
  }
  thread_local ChildStack stack;
  char* top = stack.top();
  if (top == nullptr) {
    error = errno;
    return -1;
  }
  const pid_t pid = clone(child_entry, top, CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
  error = errno;
  return pid;
}

// A regular file this process may execute.
bool runnable(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string Subprocess::find_in_path(const std::string& file) {
  if (file.empty()) return "";
  if (file.find('/') != std::string::npos) return runnable(file) ? file : "";
  const char* env_path = std::getenv("PATH");
  const std::string path = env_path ? env_path : "/bin:/usr/bin";
  for (std::size_t start = 0; start <= path.size();) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    if (runnable(dir + "/" + file)) return dir + "/" + file;
    start = end + 1;
  }
  return "";
}

std::string Subprocess::why_not_runnable(const std::string& file) {
  if (file.empty()) return "is empty";
  if (file.find('/') != std::string::npos) {
    if (access(file.c_str(), F_OK) != 0) return "does not exist";
    return runnable(file) ? "" : "is not an executable file";
  }
  return find_in_path(file).empty() ? "is not found in PATH" : "";
}

namespace {

// A close-on-exec pipe whose ends are both above descriptor 3 (kReportFd), so that setting
// up the child's stdio and report descriptor with dup2 never closes one of them (queuectl
// may run with stdio closed).
bool make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    if (fds[i] > Subprocess::kReportFd) continue;
    const int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, Subprocess::kReportFd + 1);
    close(fds[i]);
    fds[i] = moved;
    if (moved < 0) {
      if (fds[1 - i] >= 0) close(fds[1 - i]);
      fds[1 - i] = -1;
      return false;
    }
  }
  return true;
}

void close_all(std::initializer_list<int*> fds) {
  for (int* fd : fds)
    if (*fd >= 0) {
      close(*fd);
      *fd = -1;
    }
}

// Makes process group `pgid` the terminal's foreground group.
void give_terminal(pid_t pgid) {
  // tcsetpgrp from a background group would stop queuectl with SIGTTOU.
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, pgid);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

std::unique_ptr<Subprocess> Subprocess::start(Options o) {
  if (o.argv.empty()) throw Error("no command to run");
  std::unique_ptr<Subprocess> p(new Subprocess());
  p->name_ = o.argv.front();
  p->capture_ = o.capture;
  ChildPlan plan;
  prepare(plan, o);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
  int report[2] = {-1, -1};
  const bool reports = o.capture && o.on_report_line;
  if ((o.capture && (!make_pipe(in) || !make_pipe(out) || !make_pipe(err))) ||
      (reports && !make_pipe(report)) || !make_pipe(status)) {
    const int e = errno;
    close_all({&in[0], &in[1], &out[0], &out[1], &err[0], &err[1], &status[0], &status[1],
               &report[0], &report[1]});
    throw Error("cannot start '" + p->name_ + "': cannot create pipes: " + std::strerror(e));
  }
  if (o.capture) {
    plan.in = in[0];
    plan.out = out[1];
    plan.err = err[1];
    plan.report = report[1];
  }
  plan.status = status[1];
  p->guard_ = o.guard ? o.guard : std::make_shared<GroupGuard>();
  plan.terminal = o.take_terminal && isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  plan.parent = getpid();

  std::fflush(nullptr);  // buffered output must not be written twice, by the child too
  // Every signal is blocked across fork: a handler of queuectl's must never run in the child
  // (it would forward signals or wake the worker from the wrong process).
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  int fork_error = 0;
  const pid_t pid = make_child(plan, fork_error);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  close_all({&in[0], &out[1], &err[1], &status[1], &report[1]});
  if (pid < 0) {
    close_all({&in[1], &out[0], &err[0], &status[0], &report[0]});
    throw Error("cannot start '" + p->name_ + "': " + std::strerror(fork_error));
  }
  p->pid_ = pid;
  setpgid(pid, pid);  // also here, so that signals to the group work at once
  p->guard_->watch(pid);
  p->has_terminal_ = plan.terminal;
  if (plan.terminal) give_terminal(pid);
  p->in_fd_ = in[1];
  p->out_fd_ = out[0];
  p->err_fd_ = err[0];
  p->report_fd_ = report[0];
  for (int fd : {p->in_fd_, p->out_fd_, p->err_fd_, p->report_fd_})
    if (fd >= 0) fcntl(fd, F_SETFL, O_NONBLOCK);
  p->input_ = std::move(o.input);
  if (p->input_.empty()) p->close_fd(p->in_fd_);
  if (o.capture) p->on_stderr_line_ = std::move(o.on_stderr_line);
  if (reports) p->on_report_line_ = std::move(o.on_report_line);

  // End of file: exec succeeded (the pipe is close-on-exec). An int: why it failed.
  int exec_errno = 0;
  ssize_t n;
  do n = read(status[0], &exec_errno, sizeof exec_errno);
  while (n < 0 && errno == EINTR);
  close(status[0]);
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    p->exec_error_ = exec_errno;
    p->err_ = p->exec_error_text() + "\n";
    p->wait();  // it exits at once with 127
  }
  return p;
}

Subprocess::~Subprocess() {
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
  close_fd(report_fd_);
  if (!reaped_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    after_reaping(true);
  }
}

std::string Subprocess::exec_error_text() const {
  return "cannot run '" + name_ + "': " + std::strerror(exec_error_);
}

void Subprocess::signal(int sig) const {
  if (!reaped_ && pid_ > 0) kill(-pid_, sig);
}

bool Subprocess::reap() {
  if (reaped_) return true;
  int status = 0;
  pid_t r;
  do r = waitpid(pid_, &status, WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r == 0) return false;
  if (r < 0) {
    wait_failed(errno);
  }
  record_status(status);
  return true;
}

int Subprocess::wait() {
  if (reaped_) return exit_code_;
  int status = 0;
  pid_t r;
  do r = waitpid(pid_, &status, 0);
  while (r < 0 && errno == EINTR);
  if (r < 0) {
    wait_failed(errno);
  }
  record_status(status);
  return exit_code_;
}

void Subprocess::wait_failed(int error) {
  // Whatever became of it, it is not ours to wait for any more, and its process group id may
  // belong to someone else once the group is empty: it is never signaled again.
  reaped_ = true;
  after_reaping(false);
  throw Error("cannot learn how '" + name_ + "' (pid " + std::to_string(pid_) +
              ") ended: waitpid: " + std::strerror(error));
}

void Subprocess::record_status(int status) {
  reaped_ = true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  after_reaping(true);
  // What the command reported is in the pipe by now (it cannot exit while blocked writing
  // there): read to the end of what is there, and done. A process that left the group (setsid,
  // a daemon) may still hold descriptor 3, and must not keep the job from finishing.
  if (report_fd_ >= 0) {
    char buf[16384];
    ssize_t n;
    while ((n = read(report_fd_, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
      if (n > 0) report_line_.append(buf, static_cast<std::size_t>(n));
    pass_report_lines(true);
    close_fd(report_fd_);
  }
}

void Subprocess::after_reaping(bool status_known) {
  // A captured command's children may still hold its pipes open: once the command is gone,
  // they go too, so that reading ends. (A command sharing queuectl's stdio keeps them.)
  if (capture_ && status_known) kill(-pid_, SIGKILL);
  guard_->unwatch(pid_);
  if (has_terminal_) {
    give_terminal(getpgrp());
    has_terminal_ = false;
  }
}

void Subprocess::close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace queuectl
