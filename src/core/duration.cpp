#include "core/duration.hpp"

#include <cctype>
#include <cmath>
#include <string>

#include "core/errors.hpp"

namespace queuectl {
namespace {

// Milliseconds in one unit, or 0 for an unknown unit.
double unit_ms(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60 * 1000.0;
  if (unit == "h") return 3600 * 1000.0;
  if (unit == "d") return 86400 * 1000.0;
  return 0;
}

constexpr double kMaxMs = 100.0 * 365 * 86400 * 1000;  // a century is plenty

}  // namespace

Duration Duration::parse(std::string_view text, std::string_view what) {
  auto bad = [&]() {
    return UsageError("invalid " + std::string(what) + " '" + std::string(text) +
                      "': expected e.g. 250ms, 30s, 5m, 2h, 7d, 1h30m or a number of seconds");
  };
  if (text.empty() || text.size() > 64) throw bad();
  double total = 0;
  std::size_t i = 0;
  bool any_unit = false;
  while (i < text.size()) {
    std::size_t start = i;
    bool dot = false;
    while (i < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[i])) || (text[i] == '.' && !dot))) {
      if (text[i] == '.') dot = true;
      ++i;
    }
    if (i == start || (i - start == 1 && dot)) throw bad();
    double number = std::stod(std::string(text.substr(start, i - start)));
    std::size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty()) {
      // A bare number is seconds, and only on its own.
      if (start != 0 || i != text.size()) throw bad();
      total = number * 1000;
      break;
    }
    double per = unit_ms(unit);
    if (per == 0) throw bad();
    total += number * per;
    any_unit = true;
  }
  (void)any_unit;
  if (!std::isfinite(total) || total > kMaxMs)
    throw UsageError("invalid " + std::string(what) + " '" + std::string(text) +
                     "': longer than 36500d (100 years), the longest a duration may be");
  return Duration(std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(total))));
}

std::string Duration::str() const {
  std::int64_t ms = ms_.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  if (ms < 1000) return out + std::to_string(ms) + "ms";
  const std::int64_t units[] = {86400000, 3600000, 60000, 1000};
  const char* names[] = {"d", "h", "m", "s"};
  for (int k = 0; k < 4; ++k) {
    if (ms >= units[k]) {
      out += std::to_string(ms / units[k]) + names[k];
      ms %= units[k];
    }
  }
  if (ms > 0) out += std::to_string(ms) + "ms";
  return out;
}

}  // namespace queuectl
