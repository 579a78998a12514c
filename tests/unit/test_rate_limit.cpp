// The rate limit's text and token-bucket arithmetic (src/core/rate_limit.*), against known
// answers. The claim statements do the same arithmetic in SQL: tests/contract/test_rate_limits.cpp.
#include <doctest/doctest.h>

#include "core/errors.hpp"
#include "core/rate_limit.hpp"

namespace queuectl {

TEST_CASE("rate: N/s, N/m and N/h, with a burst of one period by default") {
  RateLimit r = parse_rate("20/s");
  CHECK_EQ(r.count, 20);
  CHECK_EQ(r.period_ms, 1000);
  CHECK_EQ(r.burst, 20);
  CHECK_FALSE(r.per_key);
  CHECK_EQ(r.rate_text(), "20/s");
  CHECK_EQ(parse_rate("50/m").period_ms, 60000);
  CHECK_EQ(parse_rate("50/min").rate_text(), "50/m");
  CHECK_EQ(parse_rate("1000/h").period_ms, 3600000);
  CHECK_EQ(parse_rate("1/hour").rate_text(), "1/h");
  CHECK_EQ(parse_rate("1000000/s").count, 1000000);
}

TEST_CASE("rate: bad rates name what is wrong") {
  for (const char* bad : {"0/s", "-1/s", "+1/s", "1.5/s", " 5/s", "5/s ", "5", "/s", "5/",
                          "1000001/s", "99999999999/s", "1e3/s", "5//s", "abc/s", ""}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_rate(bad), UsageError);
  }
  try {
    parse_rate("5/fortnight");
    FAIL("5/fortnight was taken");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("'fortnight' is not a unit of time") != std::string::npos);
  }
  try {
    parse_rate("0/s");
    FAIL("0/s was taken");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("from 1 to 1000000") != std::string::npos);
    CHECK(std::string(e.what()).find("'0/s'") != std::string::npos);
  }
  CHECK_EQ(parse_burst("1"), 1);
  CHECK_EQ(parse_burst("1000000"), 1000000);
  for (const char* bad : {"0", "-1", "1.5", "x", "", "1000001"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_burst(bad), UsageError);
  }
}

TEST_CASE("rate: a bucket refills at the rate, up to the burst") {
  RateLimit r = parse_rate("20/s");  // a token every 50 ms
  r.burst = 10;
  CHECK_EQ(tokens_at(r, RateBucket{}, 1000), doctest::Approx(10.0));  // never counted: full
  const RateBucket empty{0.0, 1000};
  CHECK_EQ(tokens_at(r, empty, 1000), doctest::Approx(0.0));
  CHECK_EQ(tokens_at(r, empty, 1050), doctest::Approx(1.0));
  CHECK_EQ(tokens_at(r, empty, 1125), doctest::Approx(2.5));
  CHECK_EQ(tokens_at(r, empty, 1500), doctest::Approx(10.0));
  CHECK_EQ(tokens_at(r, empty, 9000), doctest::Approx(10.0));  // the burst caps it
  CHECK_EQ(tokens_at(r, empty, 900), doctest::Approx(0.0));    // a clock that went back
  CHECK_EQ(whole_tokens(2.5), 2);
  CHECK_EQ(whole_tokens(0.999), 0);
  CHECK_EQ(whole_tokens(-1), 0);
  CHECK_EQ(ms_until_token(r, 0.0), 50);
  CHECK_EQ(ms_until_token(r, 0.5), 25);
  CHECK_EQ(ms_until_token(r, 1.0), 0);
  RateLimit hourly = parse_rate("1/h");
  CHECK_EQ(ms_until_token(hourly, 0.0), 3600000);
  RateLimit minute = parse_rate("3/m");  // a token every 20 s
  CHECK_EQ(tokens_at(minute, RateBucket{1.0, 0}, 20000), doctest::Approx(2.0));
}

}  // namespace queuectl
