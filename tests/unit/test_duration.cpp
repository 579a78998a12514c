#include <doctest/doctest.h>

#include <string>

#include "core/duration.hpp"
#include "unit_helpers.hpp"

using queuectl::Duration;
using queuectl::test::usage_error_of;

namespace {

std::int64_t ms_of(const char* text) {
  return Duration::parse(text).ms();
}

}  // namespace

TEST_CASE("core::Duration::parse") {
  SUBCASE("each unit") {
    CHECK(ms_of("250ms") == 250);
    CHECK(ms_of("30s") == 30'000);
    CHECK(ms_of("5m") == 5 * 60'000);
    CHECK(ms_of("2h") == 2 * 3'600'000);
    CHECK(ms_of("7d") == 7 * 86'400'000LL);
  }
  SUBCASE("compound") {
    CHECK(ms_of("1h30m") == 90 * 60'000);
    CHECK(ms_of("1d2h3m4s5ms") == 86'400'000LL + 2 * 3'600'000 + 3 * 60'000 + 4'000 + 5);
    CHECK(ms_of("1m30s") == 90'000);
  }
  SUBCASE("a bare number is seconds") {
    CHECK(ms_of("90") == 90'000);
    CHECK(ms_of("1.5") == 1'500);
    CHECK(ms_of("0") == 0);
    CHECK(ms_of("0.25") == 250);
  }
  SUBCASE("fractions with a unit") {
    CHECK(ms_of("1.5s") == 1'500);
    CHECK(ms_of("0.5h") == 30 * 60'000);
    CHECK(ms_of("2.5m") == 150'000);
  }
  SUBCASE("zero in any unit") {
    CHECK(ms_of("0s") == 0);
    CHECK(ms_of("0ms") == 0);
    CHECK_FALSE(Duration::parse("0").positive());
  }
  SUBCASE("large but sane values") {
    CHECK(ms_of("365d") == 365 * 86'400'000LL);
    CHECK(ms_of("8760h") == 365 * 86'400'000LL);
  }
  SUBCASE("rejects malformed text") {
    for (const char* bad : {"", "abc", "5x", "-5s", "1h-3m", "s", "30 s", " 30s", "30s ", "1e3",
                            "ms", "5sec", "1.2.3", ".", "1h 30m", "+5s", "5S", "1,5s", "1h30"}) {
      CAPTURE(bad);
      std::string message = usage_error_of([&] { Duration::parse(bad); });
      CHECK(message.find("'" + std::string(bad) + "'") != std::string::npos);
    }
  }
  SUBCASE("rejects absurdly large values") {
    for (const char* bad : {"1000000d", "99999999999999999999", "9999999999999999999999h", "1e308",
                            "100000000000000000000000000000000000000000000000000000000"}) {
      CAPTURE(bad);
      usage_error_of([&] { Duration::parse(bad); });
    }
    std::string long_text(200, '9');
    usage_error_of([&] { Duration::parse(long_text); });
  }
  SUBCASE("the message names the option and the text") {
    std::string message = usage_error_of([] { Duration::parse("soon", "--lease"); });
    CHECK(message.find("--lease") != std::string::npos);
    CHECK(message.find("'soon'") != std::string::npos);
  }
}

TEST_CASE("core::Duration::str") {
  SUBCASE("shortest readable form") {
    CHECK(Duration().str() == "0s");
    CHECK(Duration(std::chrono::milliseconds(250)).str() == "250ms");
    CHECK(Duration::seconds(30).str() == "30s");
    CHECK(Duration::seconds(90).str() == "1m30s");
    CHECK(Duration::seconds(5400).str() == "1h30m");
    CHECK(Duration::seconds(7 * 86400).str() == "7d");
    CHECK(Duration(std::chrono::milliseconds(1500)).str() == "1s500ms");
    CHECK(Duration(std::chrono::milliseconds(86'400'000LL + 1)).str() == "1d1ms");
  }
  SUBCASE("parse(str()) round trips") {
    for (std::int64_t ms :
         {0LL, 1LL, 250LL, 999LL, 1000LL, 1500LL, 59'999LL, 60'000LL, 90'000LL, 3'600'000LL,
          5'400'000LL, 86'400'000LL, 90'061'001LL, 7 * 86'400'000LL + 3'600'000LL + 1}) {
      CAPTURE(ms);
      Duration d{std::chrono::milliseconds(ms)};
      CHECK(Duration::parse(d.str()).ms() == ms);
    }
  }
  SUBCASE("str(parse()) is canonical for canonical text") {
    for (const char* text : {"250ms", "30s", "5m", "2h", "7d", "1h30m", "1d1h1m1s1ms"}) {
      CAPTURE(text);
      CHECK(Duration::parse(text).str() == text);
    }
  }
}

TEST_CASE("core::Duration accessors") {
  Duration d = Duration::seconds(3);
  CHECK(d.ms() == 3000);
  CHECK(d.secs() == doctest::Approx(3.0));
  CHECK(d.chrono() == std::chrono::seconds(3));
  CHECK(d.positive());
  CHECK(Duration::seconds(2) < d);
  CHECK_FALSE(d < Duration::seconds(2));
  CHECK(d == Duration::parse("3s"));
}
