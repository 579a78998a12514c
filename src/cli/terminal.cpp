#include "cli/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ostream>

#include "core/human_time.hpp"

namespace queuectl {

std::optional<std::size_t> output_width(int fd) {
  if (const char* columns = std::getenv("COLUMNS"); columns && *columns) {
    char* end = nullptr;
    const long n = std::strtol(columns, &end, 10);
    if (*end == '\0' && n > 0 && n < 100000) return static_cast<std::size_t>(n);
  }
  winsize ws{};
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return static_cast<std::size_t>(ws.ws_col);
  return std::nullopt;
}

std::string progress_text(const std::string& verb, std::int64_t done,
                          std::optional<std::int64_t> total, const std::string& unit,
                          double seconds) {
  std::string text = verb + " " + std::to_string(done);
  if (total) text += " of " + std::to_string(*total);
  text += " " + unit;
  if (seconds > 0 && done > 0) {
    const double rate = done / seconds;
    char buf[32];
    std::snprintf(buf, sizeof buf, rate < 10 ? "%.1f/s" : "%.0f/s", rate);
    text += std::string(", ") + buf;
    if (total && *total > done) text += ", " + human_duration((*total - done) / rate) + " left";
  }
  return text;
}

ProgressLine::ProgressLine(std::ostream& stream, bool enabled)
    : stream_(stream), enabled_(enabled) {}

ProgressLine::~ProgressLine() {
  finish();
}

void ProgressLine::update(const std::string& verb, std::int64_t done,
                          std::optional<std::int64_t> total, const std::string& unit) {
  if (!enabled_) return;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  show(progress_text(verb, done, total, unit, seconds));
}

void ProgressLine::show(const std::string& text) {
  if (!enabled_) return;
  stream_ << "\r" << text << "\x1b[K" << std::flush;
  shown_ = true;
}

void ProgressLine::finish() {
  if (!shown_) return;
  stream_ << "\r\x1b[K" << std::flush;
  shown_ = false;
}

}  // namespace queuectl
