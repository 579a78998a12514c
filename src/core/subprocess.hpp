// One process type for every command queuectl runs for its user: a job's command under
// `work`, CMD under `lock`. It owns the process from fork to reaping: its process group, its
// registration with the GroupGuard, its pipes (when output is captured) and its exit status.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/process.hpp"

namespace queuectl {

class Subprocess {
 public:
  static constexpr std::size_t kMaxStdout = 1024 * 1024;
  static constexpr std::size_t kStderrTail = 4096;
  static constexpr std::size_t kStderrLine = 16384;
  // The descriptor the command reports on (on_report_line), and a report line's most bytes.
  static constexpr int kReportFd = 3;
  static constexpr std::size_t kReportLine = 1024 * 1024;

  struct Options {
    // argv[0] is searched in PATH as execvp does (a file that is not a binary runs with /bin/sh).
    std::vector<std::string> argv;
    // The file to execute for argv[0], found beforehand (find_in_path), so that a worker that
    // starts the same command for every job searches PATH once rather than at every exec.
    // Empty: argv[0] is searched at each start.
    std::string path;
    // Set in the command's environment, over what queuectl inherited.
    std::map<std::string, std::string> env;
    // Left out of the command's environment (when not in `env`).
    std::vector<std::string> unset;
    // Capture: `input` is written to stdin, stdout is kept (up to kMaxStdout) and the tail of
    // stderr; the caller drives the pipes with poll_fds and handle. Otherwise the command
    // shares queuectl's stdin, stdout and stderr.
    bool capture = false;
    std::string input;
    // Capture mode: called with each line the command writes to stderr (without its line
    // end) as it comes, and with a last unterminated piece at the end; a line over
    // kStderrLine bytes comes in pieces of that size.
    std::function<void(const std::string&)> on_stderr_line;
    // Capture mode: when set, the command gets the write end of a pipe as descriptor
    // kReportFd, and this is called with each line it writes there (without its line end),
    // and a last unterminated one at the end. A line over kReportLine bytes is cut there.
    std::function<void(const std::string&)> on_report_line;
    // When queuectl's process group has the terminal, hand it to the command's group while
    // it runs (so that it can read the terminal and Ctrl-C reaches it), and take it back after.
    bool take_terminal = false;
    // Dispositions the command starts with. A signal queuectl handles starts at its default
    // action; so do those in `to_default` even when ignored (work ignores SIGPIPE for its own
    // sake, not for the command's); those in `to_ignore` start ignored; any other inherited
    // disposition is kept, as a shell keeps an ignored signal. Nothing is blocked.
    std::vector<int> to_default;
    std::vector<int> to_ignore;
    // Kills the process group if queuectl dies. One guard may serve many subprocesses; when
    // none is given, the subprocess starts one of its own.
    std::shared_ptr<GroupGuard> guard;
  };

  // Starts the command in a process group of its own, which the kernel (PR_SET_PDEATHSIG)
  // and the guard kill if queuectl dies. Between fork and exec the child makes only
  // async-signal-safe calls: argv, the environment and the PATH search are prepared before.
  // A command that cannot be run (not found, not executable) is not an exception: it has
  // ended with 127 when start returns, and exec_error() says why. Throws Error when no
  // process can be made (out of processes or descriptors).
  static std::unique_ptr<Subprocess> start(Options options);
  // Why `file` (argv[0]) could not be run from this environment: searched in PATH as start
  // searches it when it has no slash, else taken as a path. Empty when it can be run.
  static std::string why_not_runnable(const std::string& file);
  // The file start would execute for `file` (argv[0]): `file` itself when it has a slash,
  // else the first runnable one in PATH. Empty when there is none (why_not_runnable says why).
  static std::string find_in_path(const std::string& file);
  // Kills the process group and reaps the command, unless it was reaped already.
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }  // also its process group id
  // Sends a signal to the whole process group, as long as the command has not been reaped.
  void signal(int sig) const;
  // Reaps the command if it has ended, without blocking; true once it is reaped. Throws Error
  // when waitpid fails (ECHILD: something else reaped it, as the kernel does when SIGCHLD
  // is ignored): its exit status is then unknown, never made up. Later calls return true.
  bool reap();
  // Blocks until the command ends (EINTR is retried); returns exit_code(). Throws like reap.
  int wait();
  bool reaped() const { return reaped_; }
  // Its exit status, 128 + the signal that ended it, or 127 when it could not be run;
  // -1 while not reaped or when reaping failed.
  int exit_code() const { return exit_code_; }
  // errno of the failed exec, 0 when the command ran.
  int exec_error() const { return exec_error_; }
  // "cannot run 'CMD': REASON" for a failed exec.
  std::string exec_error_text() const;

  // Capture mode. Descriptors to poll (stdout, stderr, and stdin while input remains).
  void poll_fds(std::vector<pollfd>& fds) const;
  // Handles readiness on one of its descriptors; returns false when `fd` is not one of them.
  bool handle(int fd, short revents);
  // Reaped, and the output pipes drained (in capture mode).
  bool finished() const { return reaped_ && out_fd_ < 0 && err_fd_ < 0 && report_fd_ < 0; }
  const std::string& out() const { return out_; }
  bool out_truncated() const { return out_truncated_; }
  // The tail of stderr as valid UTF-8 without NUL, "..." in front when cut; for a command
  // that could not be run, exec_error_text().
  std::string err_tail() const;

 private:
  Subprocess() = default;
  void record_status(int status);
  void after_reaping(bool status_known);
  [[noreturn]] void wait_failed(int error);
  void close_fd(int& fd);
  // Hands the complete lines of err_line_ to on_stderr_line_; at the end, the rest too.
  void pass_stderr_lines(bool at_end);
  // Hands the complete lines read from the report pipe to on_report_line_.
  void pass_report_lines(bool at_end);

  std::string name_;
  pid_t pid_ = -1;
  std::shared_ptr<GroupGuard> guard_;
  bool capture_ = false;
  bool has_terminal_ = false;
  int in_fd_ = -1, out_fd_ = -1, err_fd_ = -1, report_fd_ = -1;
  std::string input_;
  std::size_t written_ = 0;
  std::string out_, err_;
  std::function<void(const std::string&)> on_stderr_line_;
  std::string err_line_;  // stderr not yet handed to on_stderr_line_
  std::function<void(const std::string&)> on_report_line_;
  std::string report_line_;       // report bytes not yet handed to on_report_line_
  bool report_skipping_ = false;  // past kReportLine: the rest of the line is dropped
  bool out_truncated_ = false, err_truncated_ = false;
  bool reaped_ = false;
  int exit_code_ = -1;
  int exec_error_ = 0;
};

}  // namespace queuectl
