#include <doctest/doctest.h>

#include <cstdlib>
#include <ctime>
#include <string>

#include "core/time_text.hpp"
#include "unit_helpers.hpp"

using queuectl::parse_time_to_utc;
using queuectl::test::usage_error_of;

namespace {
// Sets TZ for the scope, and puts it back.
struct ZoneScope {
  explicit ZoneScope(const char* zone) {
    if (const char* old = std::getenv("TZ")) saved = old, had = true;
    setenv("TZ", zone, 1);
    tzset();
  }
  ~ZoneScope() {
    if (had)
      setenv("TZ", saved.c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }
  std::string saved;
  bool had = false;
};
}  // namespace

TEST_CASE("core::parse_time_to_utc: only years every backend can store, less 9999-12-31") {
  CHECK(parse_time_to_utc("9999-12-30T23:59:59.999999Z") == "9999-12-30 23:59:59.999999");
  CHECK(parse_time_to_utc("1000-01-01T00:00:00Z") == "1000-01-01 00:00:00.000000");
  // The last day of 9999 stands for "waiting for other jobs" in run_at.
  CHECK(usage_error_of([] {
          parse_time_to_utc("9999-12-31T00:00:00Z");
        }).find("outside 1000-01-01 to 9999-12-30") != std::string::npos);
  // Within range as written, out of it in UTC.
  CHECK(usage_error_of([] {
          parse_time_to_utc("9999-12-30T23:00:00-05:00");
        }).find("outside 1000-01-01 to 9999-12-30") != std::string::npos);
  CHECK(usage_error_of([] {
          parse_time_to_utc("0999-12-31T23:59:59Z");
        }).find("outside 1000-01-01 to 9999-12-30") != std::string::npos);
}

TEST_CASE("core::parse_time_to_utc") {
  SUBCASE("UTC with Z") {
    CHECK(parse_time_to_utc("2026-11-22T10:00:00Z") == "2026-11-22 10:00:00.000000");
    CHECK(parse_time_to_utc("2026-01-01T00:00:00Z") == "2026-01-01 00:00:00.000000");
    CHECK(parse_time_to_utc("2026-12-31T23:59:59Z") == "2026-12-31 23:59:59.000000");
  }
  SUBCASE("offsets are converted to UTC") {
    CHECK(parse_time_to_utc("2026-11-22T10:00:00+09:00") == "2026-11-22 01:00:00.000000");
    CHECK(parse_time_to_utc("2026-11-22T10:00:00-0130") == "2026-11-22 11:30:00.000000");
    CHECK(parse_time_to_utc("2026-11-22T10:00:00-01:30") == "2026-11-22 11:30:00.000000");
    CHECK(parse_time_to_utc("2026-11-22T10:00:00+00:00") == "2026-11-22 10:00:00.000000");
    CHECK(parse_time_to_utc("2026-11-22T10:00:00+0545") == "2026-11-22 04:15:00.000000");
  }
  SUBCASE("offsets cross day, month and year boundaries") {
    CHECK(parse_time_to_utc("2026-11-22T01:00:00+09:00") == "2026-11-21 16:00:00.000000");
    CHECK(parse_time_to_utc("2026-12-31T23:30:00-01:00") == "2027-01-01 00:30:00.000000");
    CHECK(parse_time_to_utc("2026-03-01T00:00:00+01:00") == "2026-02-28 23:00:00.000000");
  }
  SUBCASE("fractions: padded or cut to microseconds") {
    CHECK(parse_time_to_utc("2026-11-22T10:00:00.5Z") == "2026-11-22 10:00:00.500000");
    CHECK(parse_time_to_utc("2026-11-22T10:00:00.123456Z") == "2026-11-22 10:00:00.123456");
    CHECK(parse_time_to_utc("2026-11-22T10:00:00.123456789Z") == "2026-11-22 10:00:00.123456");
    CHECK(parse_time_to_utc("2026-11-22T10:00:00.25+02:00") == "2026-11-22 08:00:00.250000");
  }
  SUBCASE("a space instead of T, no zone: local time, here with TZ at UTC") {
    ZoneScope zone("UTC0");
    CHECK(parse_time_to_utc("2026-11-22 10:00") == "2026-11-22 10:00:00.000000");
    CHECK(parse_time_to_utc("2026-11-22 10:00:30") == "2026-11-22 10:00:30.000000");
    CHECK(parse_time_to_utc("2026-11-22T10:00") == "2026-11-22 10:00:00.000000");
    CHECK(parse_time_to_utc("2026-11-22 10:00:00z") == "2026-11-22 10:00:00.000000");
  }
  SUBCASE("leap days") {
    CHECK(parse_time_to_utc("2028-02-29T12:00:00Z") == "2028-02-29 12:00:00.000000");
    CHECK(parse_time_to_utc("2000-02-29T12:00:00Z") == "2000-02-29 12:00:00.000000");
  }
  SUBCASE("rejects impossible or malformed times, naming the text") {
    for (const char* bad : {"2026-02-30T00:00:00Z",
                            "2026-02-29T00:00:00Z",
                            "1900-02-29T00:00:00Z",
                            "2026-04-31T00:00:00Z",
                            "tomorrow",
                            "2026-13-01T00:00:00Z",
                            "2026-00-01T00:00:00Z",
                            "2026-11-00T00:00:00Z",
                            "2026-11-22T24:00:00Z",
                            "2026-11-22T10:60:00Z",
                            "2026-11-22T10:00:61Z",
                            "2026-11-22",
                            "2026-11-22T10",
                            "",
                            "2026-11-22T10:00:00+25:00",
                            "2026-11-22T10:00:00+09:60",
                            "2026-11-22T10:00:00 +09:00",
                            "2026-11-22T10:00:00UTC",
                            "26-11-22T10:00:00Z",
                            "2026-11-22T10:00:00.Z",
                            " 2026-11-22T10:00:00Z",
                            "2026/11/22 10:00:00",
                            "1732269600"}) {
      CAPTURE(bad);
      std::string message = usage_error_of([&] { parse_time_to_utc(bad); });
      CHECK(message.find("'" + std::string(bad) + "'") != std::string::npos);
    }
  }
  SUBCASE("a long bad input is shortened in the message") {
    std::string junk(500, 'x');
    std::string message = usage_error_of([&] { parse_time_to_utc(junk); });
    CHECK(message.size() < 200);
  }
}

TEST_CASE("core::parse_time_to_utc: a time without an offset is local time in TZ") {
  {
    ZoneScope zone("KST-9");  // POSIX: nine hours east of UTC, no tzdata needed
    CHECK(parse_time_to_utc("2026-11-23 10:00") == "2026-11-23 01:00:00.000000");
    CHECK(parse_time_to_utc("2026-11-23T10:00:30.5") == "2026-11-23 01:00:30.500000");
    // An explicit offset still wins over TZ.
    CHECK(parse_time_to_utc("2026-11-23T10:00:00Z") == "2026-11-23 10:00:00.000000");
  }
  {
    ZoneScope zone("EST5EDT,M3.2.0,M11.1.0");  // daylight saving time applies by date
    CHECK(parse_time_to_utc("2026-01-15 12:00") == "2026-01-15 17:00:00.000000");
    CHECK(parse_time_to_utc("2026-07-15 12:00") == "2026-07-15 16:00:00.000000");
    // 02:30 on 2026-03-08 is skipped (02:00 -> 03:00): refused, as date(1) refuses it.
    CHECK(usage_error_of([] {
            parse_time_to_utc("2026-03-08 02:30");
          }).find("does not exist in the local time zone") != std::string::npos);
    CHECK(parse_time_to_utc("2026-03-08 03:30") == "2026-03-08 07:30:00.000000");
    // 01:30 on 2026-11-01 comes twice: taken, as date(1) takes it.
    CHECK(!parse_time_to_utc("2026-11-01 01:30").empty());
  }
  {
    ZoneScope zone("UTC0");
    CHECK(parse_time_to_utc("2026-11-23 10:00") == "2026-11-23 10:00:00.000000");
  }
}

TEST_CASE("format_utc_time_us prints what parse_utc_time_us reads, to the microsecond") {
  using queuectl::format_utc_time_us;
  using queuectl::parse_utc_time_us;
  CHECK(format_utc_time_us(0) == "1970-01-01T00:00:00.000000Z");
  CHECK(format_utc_time_us(-1) == "1969-12-31T23:59:59.999999Z");
  const std::string t = "2026-11-24T17:20:00.123456Z";
  REQUIRE(parse_utc_time_us(t));
  CHECK(format_utc_time_us(*parse_utc_time_us(t)) == t);
  // A lease added across a day, month and year end.
  CHECK(format_utc_time_us(*parse_utc_time_us("2026-12-31 23:59:59.999999") + 30000000) ==
        "2027-01-01T00:00:29.999999Z");
}

TEST_CASE("rfc3339_from_pg_text: PostgreSQL's text of a UTC timestamptz, as queuectl prints it") {
  using queuectl::rfc3339_from_pg_text;
  // The fraction's trailing zeros are dropped by PostgreSQL, and a whole second has none.
  CHECK(rfc3339_from_pg_text("2026-11-22 10:00:00.123456+00") == "2026-11-22T10:00:00.123456Z");
  CHECK(rfc3339_from_pg_text("2026-11-22 10:00:00.1234+00") == "2026-11-22T10:00:00.123400Z");
  CHECK(rfc3339_from_pg_text("2026-11-22 10:00:00.5+00") == "2026-11-22T10:00:00.500000Z");
  CHECK(rfc3339_from_pg_text("2026-11-22 10:00:00+00") == "2026-11-22T10:00:00.000000Z");
  // What MySQL and SQLite send already.
  CHECK(rfc3339_from_pg_text("2026-11-22T10:00:00.000001Z") == "2026-11-22T10:00:00.000001Z");
  // An infinite time, which the application's own SQL may set: what to_char made of it.
  CHECK(rfc3339_from_pg_text("infinity").empty());
  CHECK(rfc3339_from_pg_text("-infinity").empty());
  // Anything else is not guessed at: another zone, another DateStyle, a stray form.
  for (const char* bad :
       {"2026-11-22 10:00:00+09", "2026-11-22 10:00:00.123456+05:30", "11/22/2026 10:00:00.123 UTC",
        "22.11.2026 10:00:00 UTC", "Infinity", "", "2026-11-22 10:00:00.1234567+00",
        "2026-11-22 10:00:00,5+00", "2026-11-22 10:00:00.1a+00"})
    CHECK_THROWS_AS(rfc3339_from_pg_text(bad), queuectl::Error);
}
