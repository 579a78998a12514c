#include "core/human_time.hpp"

#include <cmath>
#include <ctime>
#include <regex>

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

std::optional<std::int64_t> parse_utc_time_us(std::string_view text) {
  static const std::regex pattern(
      R"(^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6})\d*)?Z?$)");
  std::string s(text);
  std::smatch m;
  if (!std::regex_match(s, m, pattern)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  std::int64_t us = 0;
  if (m[7].matched) {
    std::string fraction = m[7].str();
    fraction.resize(6, '0');
    us = std::stoll(fraction);
  }
  return static_cast<std::int64_t>(timegm(&tm)) * 1000000 + us;
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
