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

#include "core/signal_scope.hpp"

namespace queuectl {

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
  // Those that end the view (SIGINT, SIGTERM, SIGHUP) and SIGWINCH, read between frames so
  // that the view stops or redraws and puts the terminal back itself.
  SignalScope signals_{{SIGINT, SIGTERM, SIGHUP, SIGWINCH}};
};

}  // namespace queuectl
