// The terminal queuectl writes to: how wide it is, and one self-replacing progress line.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

namespace queuectl {

// Columns to fit tables in: $COLUMNS when it is set to a positive number (so that a
// script or test can choose), else the width of the terminal on `fd` (TIOCGWINSZ), else
// none: output to a pipe or file is never cut.
std::optional<std::size_t> output_width(int fd);

// A progress line on a terminal's stderr, rewritten in place ("\r" + text + "\x1b[K"):
// what was done so far, of how many when that is known, the rate and the time left.
// Disabled, it prints nothing. finish() clears the line, so that the final report takes
// its place instead of following a copy of it.
class ProgressLine {
 public:
  ProgressLine(std::ostream& stream, bool enabled);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Shows "<verb> <done>[ of <total>] <unit>, <rate>/s[, <eta> left]".
  void update(const std::string& verb, std::int64_t done, std::optional<std::int64_t> total,
              const std::string& unit);
  // Shows `text` as it is, for a caller that words and times its progress itself (bench).
  void show(const std::string& text);
  // Clears the line (once; also done by the destructor).
  void finish();

 private:
  std::ostream& stream_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The progress text alone, for a run `seconds` long so far: "reaped 300 of 1000 job(s),
// 150/s, 4s left". The rate is left out before anything is done, the time left without
// a total or once it is reached.
std::string progress_text(const std::string& verb, std::int64_t done,
                          std::optional<std::int64_t> total, const std::string& unit,
                          double seconds);

}  // namespace queuectl
