// Durations as the command line writes them: 250ms, 30s, 5m, 2h, 7d, 1h30m, or a bare
// number of seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace queuectl {

class Duration {
 public:
  constexpr Duration() = default;
  constexpr explicit Duration(std::chrono::milliseconds ms) : ms_(ms) {}
  static constexpr Duration seconds(std::int64_t s) {
    return Duration(std::chrono::milliseconds(s * 1000));
  }

  // Parses one duration; throws UsageError naming `what` when the text is not one.
  static Duration parse(std::string_view text, std::string_view what = "duration");

  constexpr std::int64_t ms() const { return ms_.count(); }
  constexpr double secs() const { return static_cast<double>(ms_.count()) / 1000.0; }
  constexpr std::chrono::milliseconds chrono() const { return ms_; }
  constexpr bool positive() const { return ms_.count() > 0; }

  // Shortest readable form: "1h30m", "250ms", "0s".
  std::string str() const;

  friend constexpr bool operator==(Duration a, Duration b) { return a.ms_ == b.ms_; }
  friend constexpr bool operator<(Duration a, Duration b) { return a.ms_ < b.ms_; }

 private:
  std::chrono::milliseconds ms_{0};
};

}  // namespace queuectl
