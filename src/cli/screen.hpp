// The terminal taken over by a full-screen view (`queuectl top`): the alternate screen,
// no cursor, keys read one at a time without echo; and given back as it was, whatever
// ends the view (a key, a signal, an exception).
#pragma once

#include <signal.h>
#include <termios.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace queuectl {

// Signals that end a refreshing view (SIGINT, SIGTERM, SIGHUP) and SIGWINCH, caught while
// an instance lives: the handler only writes the signal's number into a pipe that wait()
// reads, so the view stops between two frames and puts the terminal back itself.
class ViewSignals {
 public:
  ViewSignals();
  ~ViewSignals();
  ViewSignals(const ViewSignals&) = delete;
  ViewSignals& operator=(const ViewSignals&) = delete;

  // The read end of the pipe.
  int fd() const;
  // The signals that arrived since the last call (drains the pipe).
  std::vector<int> take();

 private:
  static constexpr int kCount = 4;
  static constexpr int kSignals[kCount] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
  struct sigaction old_[kCount];
};

class Screen {
 public:
  enum class Event { tick, quit, resize, refresh };

  // Switches `out_fd` (a terminal) to the alternate screen and hides the cursor; when
  // `in_fd` is a terminal too, turns off its line editing, echo and signal keys (Ctrl-C
  // arrives as a key, Ctrl-Z is ignored) until the destructor.
  Screen(int in_fd, int out_fd);
  // Shows the cursor, leaves the alternate screen and restores the terminal's settings.
  ~Screen();
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Rows and columns now (24x80 when the terminal does not say).
  std::size_t rows() const;
  std::size_t columns() const;
  // Replaces what the screen shows by `lines` (each at most columns() wide), without
  // clearing first, so that nothing flickers.
  void draw(const std::vector<std::string>& lines);
  // Waits up to `timeout` for a key or a signal: quit on q, Q, Ctrl-C, Ctrl-D or SIGINT,
  // SIGTERM, SIGHUP; refresh on r or space; resize on SIGWINCH; tick when the time is up.
  Event wait(std::chrono::milliseconds timeout);

 private:
  void write_all(const std::string& text);

  int in_fd_;
  int out_fd_;
  bool raw_ = false;
  struct termios saved_ {};
  ViewSignals signals_;
};

}  // namespace queuectl
