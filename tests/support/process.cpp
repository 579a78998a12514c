#include "support/process.hpp"

#include <pthread.h>

#include <cerrno>

#include <csignal>

#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace queuectl::testing {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

void apply_env(const std::map<std::string, std::string>& env) {
  for (const auto& [k, v] : env) {
    if (v.empty())
      unsetenv(k.c_str());
    else
      setenv(k.c_str(), v.c_str(), 1);
  }
}

// A command that never ends, or prints without end, must fail its test case, not hold the
// whole suite until ctest's timeout (nor fill the machine's memory with what it printed):
// every run has a deadline (QUEUECTL_TEST_COMMAND_TIMEOUT seconds, 600 unless set) and a
// cap on what it may print.
constexpr std::size_t kMaxCapturedBytes = std::size_t{256} << 20;

int command_timeout_seconds() {
  const char* text = std::getenv("QUEUECTL_TEST_COMMAND_TIMEOUT");
  const int value = text ? std::atoi(text) : 0;
  return value > 0 ? value : 600;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    line += a;
  }
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}

// queuectl started by a test gets at most 8 GiB of address space: one that ran away with
// memory fails on its own instead of starving the suites beside it.
void limit_queuectl_memory(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] != QUEUECTL_BINARY) return;
  const rlimit limit{rlim_t{8} << 30, rlim_t{8} << 30};
  setrlimit(RLIMIT_AS, &limit);
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

RunResult run_process(const std::vector<std::string>& argv, const std::string& input,
                      const std::map<std::string, std::string>& env) {
  int in_pipe[2], out_pipe[2], err_pipe[2];
  // Close-on-exec: a child started at the same moment from another thread must not
  // inherit these pipes (it would keep them open, and this run from ending).
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC))
    throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      close(fd);
    apply_env(env);
    limit_queuectl_memory(argv);
    auto args = c_argv(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  // Feed stdin and drain stdout/stderr together so that no pipe fills up and blocks.
  RunResult r;
  std::size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  bool out_open = true, err_open = true;
  char buf[65536];
  const int limit_s = command_timeout_seconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  // Ends a run that broke the deadline or the cap: the child is killed (what it started
  // may live on and hold the pipes, so they are closed here rather than read to the end).
  auto give_up = [&](const std::string& why) {
    kill(pid, SIGKILL);
    if (out_open) close(out_pipe[0]);
    if (err_open) close(err_pipe[0]);
    if (in_fd >= 0) close(in_fd);
    int ignored = 0;
    waitpid(pid, &ignored, 0);
    throw std::runtime_error("test harness: " + why + ": " + command_line(argv));
  };
  while (out_open || err_open || in_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) give_up("still running after " + std::to_string(limit_s) + " s, killed");
    const int ready = poll(fds, n, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    if (ready == 0) continue;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in_fd) {
        // A command that exits before reading all its input closes the pipe: the write
        // then fails with EPIPE. The SIGPIPE it raises would end the whole test binary, so
        // it is blocked around the write and taken back if it came (per thread; a process
        // this thread forks later has the mask as it was).
        sigset_t pipe_signal, before;
        sigemptyset(&pipe_signal);
        sigaddset(&pipe_signal, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_signal, &before);
        ssize_t w = write(in_fd, input.data() + written, input.size() - written);
        if (w < 0 && errno == EPIPE) {
          const timespec now{0, 0};
          sigtimedwait(&pipe_signal, nullptr, &now);
        }
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 || written == input.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(fds[i].fd);
        (fds[i].fd == out_pipe[0] ? out_open : err_open) = false;
      } else {
        (fds[i].fd == out_pipe[0] ? r.out : r.err).append(buf, static_cast<std::size_t>(got));
        if (r.out.size() + r.err.size() > kMaxCapturedBytes)
          give_up("printed over " + std::to_string(kMaxCapturedBytes >> 20) + " MiB, killed");
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = decode_status(status);
  return r;
}

RunResult queuectl(const std::string& url, const std::vector<std::string>& args,
                   const std::string& input, const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {QUEUECTL_BINARY, "--db", url};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, input, env);
}

int spawn_process(const std::vector<std::string>& argv, const std::string& log_path,
                  const std::map<std::string, std::string>& env) {
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    apply_env(env);
    limit_queuectl_memory(argv);
    auto args = c_argv(argv);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

int wait_process(int pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return decode_status(status);
}

}  // namespace queuectl::testing
