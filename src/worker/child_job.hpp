// One run of the user's command for one job: payload on stdin, stdout kept (bounded) for
// the result, the tail of stderr kept for last_error. Runs in its own process group so
// that a Ctrl-C at the terminal reaches queuectl, which decides when to stop it.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace queuectl {

class ChildJob {
 public:
  static constexpr std::size_t kMaxStdout = 1024 * 1024;
  static constexpr std::size_t kStderrTail = 4096;

  // Starts argv with `env` added to the environment and `input` on stdin.
  // Throws Error when it cannot fork.
  static std::unique_ptr<ChildJob> start(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& env,
                                         std::string input);
  ~ChildJob();

  // Descriptors to poll (stdout, stderr, and stdin while input remains), with events.
  void poll_fds(std::vector<pollfd>& fds) const;
  // Handles readiness on one of our descriptors; returns false when it is not ours.
  bool handle(int fd, short revents);
  // Collects the exit status if the process has ended (non-blocking).
  void check_exit();
  // Sends a signal to the whole process group.
  void signal(int sig) const;

  // Ended and both output pipes drained.
  bool finished() const { return exited_ && out_fd_ < 0 && err_fd_ < 0; }
  int exit_code() const { return exit_code_; }  // 128 + signal when killed
  pid_t pid() const { return pid_; }            // also its process group
  const std::string& out() const { return out_; }
  bool out_truncated() const { return out_truncated_; }
  std::string err_tail() const;

 private:
  ChildJob() = default;
  void close_fd(int& fd);

  pid_t pid_ = -1;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1;
  std::string input_;
  std::size_t written_ = 0;
  std::string out_, err_;
  bool out_truncated_ = false, err_truncated_ = false;
  bool exited_ = false;
  int exit_code_ = -1;
};

}  // namespace queuectl
