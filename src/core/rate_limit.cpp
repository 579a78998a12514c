#include "core/rate_limit.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace queuectl {
namespace {

constexpr long long kMaxCount = 1000000;

// A whole number from 1 to kMaxCount written plainly (no sign, no spaces, no exponent).
std::optional<long long> whole_number(const std::string& text) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  long long n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n < 1 || n > kMaxCount) return std::nullopt;
  return n;
}

std::string rate_input_text(const std::string& text) {
  return text.substr(0, 32);
}

}  // namespace

std::string RateLimit::rate_text() const {
  const char* unit = period_ms == 3600000 ? "h" : period_ms == 60000 ? "m" : "s";
  return std::to_string(count) + "/" + unit;
}

RateLimit parse_rate(const std::string& text, const std::string& option) {
  const std::string usage = option +
                            " must be N/s, N/m or N/h with N a whole number from 1 to 1000000 "
                            "(none removes the limit), not '" +
                            rate_input_text(text) + "'";
  const std::size_t slash = text.find('/');
  if (slash == std::string::npos) throw UsageError(usage);
  const std::string number = text.substr(0, slash), unit = text.substr(slash + 1);
  std::int64_t period = 0;
  if (number.empty() || unit.empty()) throw UsageError(usage);
  if (unit == "s" || unit == "sec" || unit == "second")
    period = 1000;
  else if (unit == "m" || unit == "min" || unit == "minute")
    period = 60000;
  else if (unit == "h" || unit == "hour")
    period = 3600000;
  else
    throw UsageError(option + ": '" + rate_input_text(unit) +
                     "' is not a unit of time here (s, m or h), in '" + rate_input_text(text) +
                     "'");
  const std::optional<long long> n = whole_number(number);
  if (!n) throw UsageError(usage);
  RateLimit r;
  r.count = static_cast<int>(*n);
  r.period_ms = period;
  r.burst = default_burst(r);
  return r;
}

int parse_burst(const std::string& text, const std::string& option) {
  const std::optional<long long> n = whole_number(text);
  if (!n)
    throw UsageError(option + " must be a whole number from 1 to 1000000, not '" +
                     rate_input_text(text) + "'");
  return static_cast<int>(*n);
}

double tokens_at(const RateLimit& r, const RateBucket& b, std::int64_t now_ms) {
  const double burst = static_cast<double>(r.burst);
  if (!b.tokens) return burst;
  const std::int64_t since =
      b.refreshed_ms ? std::max<std::int64_t>(0, now_ms - *b.refreshed_ms) : 0;
  return std::min(burst, *b.tokens + static_cast<double>(since) * r.per_ms());
}

int whole_tokens(double tokens) {
  if (!(tokens >= 1)) return 0;
  return static_cast<int>(std::min(std::floor(tokens), 2147483647.0));
}

std::int64_t ms_until_token(const RateLimit& r, double tokens) {
  if (tokens >= 1) return 0;
  const double missing = 1 - std::max(0.0, tokens);
  // Period over count, not 1 / per_ms(): a whole token's time comes out exact.
  const double ms = missing * static_cast<double>(r.period_ms) / static_cast<double>(r.count);
  return static_cast<std::int64_t>(std::ceil(ms - 1e-9));
}

}  // namespace queuectl
