#include "worker/child_job.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/errors.hpp"
#include "core/process.hpp"
#include "core/validate.hpp"

namespace queuectl {

std::unique_ptr<ChildJob> ChildJob::start(const std::vector<std::string>& argv,
                                          const std::map<std::string, std::string>& env,
                                          std::string input) {
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
    const int e = errno;
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) close(fd);
    throw Error(std::string("cannot create pipes: ") + std::strerror(e));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      close(fd);
    throw Error(std::string("cannot fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);
    die_with_parent(parent);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) ::signal(sig, SIG_DFL);
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execvp(args[0], args.data());
    exec_failed(args[0], errno);
  }
  setpgid(pid, pid);  // also from the parent, so that signal() works at once
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  std::unique_ptr<ChildJob> job(new ChildJob());
  job->pid_ = pid;
  job->in_fd_ = in_pipe[1];
  job->out_fd_ = out_pipe[0];
  job->err_fd_ = err_pipe[0];
  job->input_ = std::move(input);
  for (int fd : {job->in_fd_, job->out_fd_, job->err_fd_}) fcntl(fd, F_SETFL, O_NONBLOCK);
  if (job->input_.empty()) job->close_fd(job->in_fd_);
  return job;
}

ChildJob::~ChildJob() {
  close_fd(in_fd_);
  close_fd(out_fd_);
  close_fd(err_fd_);
  if (!exited_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

void ChildJob::close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

void ChildJob::poll_fds(std::vector<pollfd>& fds) const {
  if (in_fd_ >= 0) fds.push_back({in_fd_, POLLOUT, 0});
  if (out_fd_ >= 0) fds.push_back({out_fd_, POLLIN, 0});
  if (err_fd_ >= 0) fds.push_back({err_fd_, POLLIN, 0});
}

bool ChildJob::handle(int fd, short revents) {
  if (fd < 0 || (fd != in_fd_ && fd != out_fd_ && fd != err_fd_)) return false;
  if (fd == in_fd_) {
    if (revents & (POLLERR | POLLHUP)) {
      close_fd(in_fd_);  // the command does not read its stdin: fine
      return true;
    }
    ssize_t n = write(in_fd_, input_.data() + written_, input_.size() - written_);
    if (n > 0) written_ += static_cast<std::size_t>(n);
    if ((n < 0 && errno != EAGAIN) || written_ == input_.size()) close_fd(in_fd_);
    return true;
  }
  char buf[16384];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0 && errno == EAGAIN) return true;
  if (n <= 0) {
    close_fd(fd == out_fd_ ? out_fd_ : err_fd_);
    return true;
  }
  std::size_t got = static_cast<std::size_t>(n);
  if (fd == out_fd_) {
    std::size_t room = kMaxStdout - std::min(kMaxStdout, out_.size());
    out_.append(buf, std::min(room, got));
    if (got > room) out_truncated_ = true;
  } else {
    err_.append(buf, got);
    if (err_.size() > 2 * kStderrTail) {
      err_.erase(0, err_.size() - kStderrTail);
      err_truncated_ = true;
    }
  }
  return true;
}

void ChildJob::check_exit() {
  if (exited_ || pid_ <= 0) return;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    // A grandchild may still hold the pipes open: stop reading once the command is gone.
    kill(-pid_, SIGKILL);
  }
}

void ChildJob::signal(int sig) const {
  if (!exited_ && pid_ > 0) kill(-pid_, sig);
}

std::string ChildJob::err_tail() const {
  std::string tail = err_.size() > kStderrTail ? err_.substr(err_.size() - kStderrTail) : err_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  // Raw bytes: a cut at the start may split a character, and a command may print
  // anything; last_error is text, so it must be valid UTF-8 without NUL characters
  // (PostgreSQL's text cuts at the first one).
  for (char& c : tail)
    if (c == '\0') c = ' ';
  return to_valid_utf8((err_truncated_ || err_.size() > kStderrTail ? "..." : "") + tail);
}

}  // namespace queuectl
