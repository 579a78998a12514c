// A queue's rate limit (`queue Q --rate 20/s --burst 10 --rate-per-key on`): what it is, how
// it is written, and the token bucket's arithmetic. Pure: times come in as milliseconds of
// the database clock. The claim statements do the same arithmetic in SQL (see
// src/db/dialects/*_jobs.cpp); tests/unit/test_rate_limit.cpp checks this one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace queuectl {

struct RateLimit {
  int count = 1;                  // jobs started ...
  std::int64_t period_ms = 1000;  // ... per this many milliseconds (1000, 60000, 3600000)
  int burst = 1;                  // tokens saved up at most
  bool per_key = false;           // a bucket per group key (keyless jobs share the queue's)

  // "20/s", "50/m", "1000/h": the rate alone.
  std::string rate_text() const;
  // Tokens gained per millisecond.
  double per_ms() const { return static_cast<double>(count) / static_cast<double>(period_ms); }
  bool operator==(const RateLimit& o) const {
    return count == o.count && period_ms == o.period_ms && burst == o.burst && per_key == o.per_key;
  }
};

// Parses --rate: N/s, N/m or N/h (also N/sec, N/min, N/hour), N a whole number from 1 to
// 1,000,000. Throws UsageError naming `option` and the text.
RateLimit parse_rate(const std::string& text, const std::string& option = "--rate");
// Parses --burst: a whole number from 1 to 1,000,000. Throws UsageError.
int parse_burst(const std::string& text, const std::string& option = "--burst");
// The burst when none is given: one period's worth of jobs.
inline int default_burst(const RateLimit& r) {
  return r.count;
}

// A bucket as last counted: `tokens` at `refreshed_ms` (nullopt tokens: never counted, full).
struct RateBucket {
  std::optional<double> tokens;
  std::optional<std::int64_t> refreshed_ms;
};

// The tokens a bucket holds at `now_ms`: refilled since it was counted, at most the burst.
double tokens_at(const RateLimit& r, const RateBucket& b, std::int64_t now_ms);
// How many jobs may start now out of a bucket holding `tokens`: the whole tokens.
int whole_tokens(double tokens);
// Milliseconds until a bucket holding `tokens` has a whole token (0: it has one now).
std::int64_t ms_until_token(const RateLimit& r, double tokens);

}  // namespace queuectl
