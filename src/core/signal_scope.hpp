// Signals caught for as long as a command needs them: `work`, `lock`, `bench` and `top`
// each hold one SignalScope, and every previous handler comes back when it ends.
//
// The handler does only what is safe in one: it counts the stop signals (SIGINT, SIGTERM,
// SIGHUP), notes the first, writes the signal's number into a pipe that the command's loop
// polls, and, once a process group is given, passes the signal on to it. Its state is the
// one piece of global state queuectl has, so one scope lives at a time.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <vector>

namespace queuectl {

class SignalScope {
 public:
  // Catches `signals`, and ignores `ignore` meanwhile (SIGPIPE under `work`, where a command
  // that exits without reading its whole payload must fail the worker's write, not end
  // the worker).
  explicit SignalScope(std::vector<int> signals, std::vector<int> ignore = {});
  // `lock`: the caught signals stay blocked in this thread until forward_to() names the
  // process group to pass them to, so that one that comes before is delivered then, not lost.
  static SignalScope forwarding(std::vector<int> signals);
  ~SignalScope();
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;

  // Readable once a signal has come (poll it); take() drains it.
  int fd() const { return pipe_[0]; }
  // Writing a byte here wakes whoever polls fd(): other threads use it to wake the loop.
  int wake_fd() const { return pipe_[1]; }
  // Wakes the poller from any thread (the byte reads back as 0 from take()).
  void wake() const;
  // The signals caught since the last call, in order; drains the pipe.
  std::vector<int> take();

  // Stop signals (SIGINT, SIGTERM, SIGHUP) caught so far, two that interrupt each other
  // counted as two; and the first of them (0: none yet).
  static int stops();
  static int first_stop();

  // From now on every caught signal goes to process group `group` as well; one caught
  // while blocked is passed on now.
  void forward_to(pid_t group);
  // The caught signals that were ignored when this scope began (nohup, a shell's `&`): a
  // child started meanwhile should start with them ignored too.
  std::vector<int> ignored_before() const;

 private:
  SignalScope(std::vector<int> signals, std::vector<int> ignore, bool forward);

  std::vector<int> signals_;
  std::vector<int> ignore_;
  int pipe_[2] = {-1, -1};
  std::vector<struct sigaction> old_;          // of signals_
  std::vector<struct sigaction> old_ignored_;  // of ignore_
  sigset_t mask_{};                            // the thread's mask before (forward)
  bool blocked_ = false;
};

}  // namespace queuectl
