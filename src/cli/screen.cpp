#include "cli/screen.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace queuectl {

Screen::Screen(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {
  if (::isatty(in_fd_) && ::tcgetattr(in_fd_, &saved_) == 0) {
    struct termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    raw_ = ::tcsetattr(in_fd_, TCSAFLUSH, &raw) == 0;
  }
  // Alternate screen, cursor hidden, screen cleared. (The destructor does not run when the
  // constructor throws: the settings go back here then.)
  try {
    write_all("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
  } catch (...) {
    if (raw_) ::tcsetattr(in_fd_, TCSAFLUSH, &saved_);
    throw;
  }
}

Screen::~Screen() {
  try {
    // Attributes off, cursor shown, back to the main screen as it was.
    write_all("\x1b[0m\x1b[?25h\x1b[?1049l");
  } catch (...) {
  }
  if (raw_) ::tcsetattr(in_fd_, TCSAFLUSH, &saved_);
}

std::size_t Screen::rows() const {
  winsize ws{};
  if (::ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0) return ws.ws_row;
  return 24;
}

std::size_t Screen::columns() const {
  winsize ws{};
  if (::ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

void Screen::draw(const std::vector<std::string>& lines) {
  // Home, each line over the old one with the rest of the row cleared, then everything
  // below cleared; the last line gets no line feed, so the screen never scrolls.
  std::string text = "\x1b[H";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    text += lines[i];
    text += "\x1b[K";
    if (i + 1 < lines.size()) text += "\r\n";
  }
  text += "\x1b[J";
  write_all(text);
}

Screen::Event Screen::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Event::tick;
    pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {raw_ ? in_fd_ : -1, POLLIN, 0}};
    const int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
    if (n <= 0) continue;
    bool resized = false;
    for (int sig : signals_.take()) {
      if (sig == SIGWINCH)
        resized = true;
      else
        return Event::quit;
    }
    if (resized) return Event::resize;
    if (fds[1].revents & (POLLHUP | POLLERR)) return Event::quit;
    if (fds[1].revents & POLLIN) {
      char key = 0;
      const ssize_t got = ::read(in_fd_, &key, 1);
      if (got == 0) return Event::quit;  // the terminal is gone
      if (got < 0) continue;
      switch (key) {
        case 'q':
        case 'Q':
        case 3:  // Ctrl-C
        case 4:  // Ctrl-D
          return Event::quit;
        case 'r':
        case 'R':
        case ' ':
          return Event::refresh;
        default:
          break;
      }
    }
  }
}

void Screen::write_all(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(out_fd_, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "write to the terminal");
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace queuectl
