#include "core/human_time.hpp"

#include <cmath>
#include <ctime>

namespace queuectl {

std::string human_duration(double seconds) {
  seconds = std::fabs(seconds);
  if (!std::isfinite(seconds)) return "-";
  if (seconds < 1) return std::to_string(static_cast<long long>(seconds * 1000)) + "ms";
  const long long s = static_cast<long long>(seconds);
  const long long m = s / 60, h = s / 3600, d = s / 86400;
  auto two = [](long long a, const char* ua, long long b, const char* ub) {
    return std::to_string(a) + ua + (b ? std::to_string(b) + ub : std::string());
  };
  if (s < 120) return std::to_string(s) + "s";
  if (m < 10) return two(m, "m", s % 60, "s");
  if (h < 1) return std::to_string(m) + "m";
  if (h < 8) return two(h, "h", m % 60, "m");
  if (h < 48) return std::to_string(h) + "h";
  if (d < 8) return two(d, "d", h % 24, "h");
  if (d < 365 * 2) return std::to_string(d) + "d";
  if (d < 365 * 8) return two(d / 365, "y", d % 365, "d");
  return std::to_string(d / 365) + "y";
}

std::optional<double> seconds_until(std::string_view time, std::string_view now) {
  const auto t = parse_utc_time_us(time), n = parse_utc_time_us(now);
  if (!t || !n) return std::nullopt;
  return static_cast<double>(*t - *n) / 1e6;
}

std::string relative_time(std::string_view time, std::string_view now) {
  const auto s = seconds_until(time, now);
  if (!s) return std::string(time);
  if (std::fabs(*s) < 1) return "now";
  return *s > 0 ? "in " + human_duration(*s) : human_duration(*s) + " ago";
}

std::string age_text(std::string_view time, std::string_view now) {
  const auto s = seconds_until(time, now);
  if (!s) return std::string(time);
  return *s > -1 ? "0s" : human_duration(*s);
}

}  // namespace queuectl
