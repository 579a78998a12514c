#include <doctest/doctest.h>

#include <date/date.h>
#include <date/tz.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/cron_schedule.hpp"
#include "unit_helpers.hpp"

using queuectl::CronSchedule;
using queuectl::find_zone;
using queuectl::SysSeconds;
using queuectl::test::usage_error_of;

namespace {

SysSeconds utc(const std::string& text) {
  std::istringstream in(text);
  SysSeconds time;
  in >> date::parse("%Y-%m-%d %H:%M:%S", time);
  REQUIRE_MESSAGE(!in.fail(), "bad time in the test: " << text);
  return time;
}

std::string utc_text(SysSeconds time) {
  return date::format("%Y-%m-%d %H:%M:%S", time);
}

// Times as one line, so that a failing check shows all of them.
std::string joined(const std::vector<std::string>& texts) {
  std::string line;
  for (const std::string& text : texts) line += (line.empty() ? "" : ", ") + text;
  return line;
}

// The next fire times after `from` (UTC), as UTC text.
std::string fires(const char* schedule, const char* zone, const char* from, int n) {
  std::vector<std::string> texts;
  for (SysSeconds time : CronSchedule::parse(schedule).next_n(utc(from), find_zone(zone), n))
    texts.push_back(utc_text(time));
  return joined(texts);
}

struct Case {
  const char* schedule;
  const char* zone;
  const char* from;                   // UTC
  std::vector<std::string> expected;  // UTC
};

void check_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    std::string what = std::string(c.schedule) + " in " + c.zone + " after " + c.from;
    INFO(what);
    CHECK(fires(c.schedule, c.zone, c.from, static_cast<int>(c.expected.size())) ==
          joined(c.expected));
  }
}

}  // namespace

TEST_CASE("core::cron fields in UTC") {
  check_cases({
      // Steps, ranges, a/n, lists.
      {"*/15 * * * *",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-01 00:15:00", "2026-01-01 00:30:00", "2026-01-01 00:45:00",
        "2026-01-01 01:00:00"}},
      {"10-20/5 * * * *",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-01 00:10:00", "2026-01-01 00:15:00", "2026-01-01 00:20:00",
        "2026-01-01 01:10:00"}},
      {"50/5 * * * *",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-01 00:50:00", "2026-01-01 00:55:00", "2026-01-01 01:50:00"}},
      {"0,30 9-10 * * *",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-01 09:00:00", "2026-01-01 09:30:00", "2026-01-01 10:00:00", "2026-01-01 10:30:00",
        "2026-01-02 09:00:00"}},
      {"0 */6 * * *",
       "UTC",
       "2026-01-01 05:00:00",
       {"2026-01-01 06:00:00", "2026-01-01 12:00:00", "2026-01-01 18:00:00",
        "2026-01-02 00:00:00"}},
      // Strictly after, and at second 0.
      {"0 0 * * *", "UTC", "2026-01-01 00:00:00", {"2026-01-02 00:00:00"}},
      {"* * * * *", "UTC", "2026-01-01 00:00:30", {"2026-01-01 00:01:00", "2026-01-01 00:02:00"}},
      {"59 23 31 12 *", "UTC", "2026-12-31 23:59:00", {"2027-12-31 23:59:00"}},
      // Month and day names in any case; 7 and 0 are Sunday (2026-01-01 is a Thursday).
      {"0 0 1 jan,Jul *",
       "UTC",
       "2026-02-01 00:00:00",
       {"2026-07-01 00:00:00", "2027-01-01 00:00:00"}},
      {"0 9 * * MON-FRI",
       "UTC",
       "2026-01-02 10:00:00",
       {"2026-01-05 09:00:00", "2026-01-06 09:00:00", "2026-01-07 09:00:00"}},
      {"0 0 * * 7", "UTC", "2026-01-01 00:00:00", {"2026-01-04 00:00:00", "2026-01-11 00:00:00"}},
      {"0 0 * * 0", "UTC", "2026-01-01 00:00:00", {"2026-01-04 00:00:00"}},
      {"0 0 * * 5-7",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-02 00:00:00", "2026-01-03 00:00:00", "2026-01-04 00:00:00",
        "2026-01-09 00:00:00"}},
      {"0 0 * * sat,Sun",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-03 00:00:00", "2026-01-04 00:00:00", "2026-01-10 00:00:00"}},
      // Day-of-month alone, day-of-week alone, both (either may match).
      {"0 0 13 * *", "UTC", "2026-01-01 00:00:00", {"2026-01-13 00:00:00", "2026-02-13 00:00:00"}},
      {"0 0 * * FRI",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-02 00:00:00", "2026-01-09 00:00:00", "2026-01-16 00:00:00"}},
      {"0 0 13 * FRI",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-01-02 00:00:00", "2026-01-09 00:00:00", "2026-01-13 00:00:00",
        "2026-01-16 00:00:00"}},
      // A day field starting with `*` makes both count: the 1st/11th/21st/31st that is a Monday.
      {"0 0 */10 * MON",
       "UTC",
       "2026-01-01 00:00:00",
       {"2026-05-11 00:00:00", "2026-06-01 00:00:00"}},
      // Months without a 31st are skipped; Feb 31 with a weekday fires on the weekdays.
      {"0 0 31 * *", "UTC", "2026-01-31 00:00:00", {"2026-03-31 00:00:00", "2026-05-31 00:00:00"}},
      {"0 0 31 2 FRI",
       "UTC",
       "2026-01-31 00:00:00",
       {"2026-02-06 00:00:00", "2026-02-13 00:00:00"}},
      // Leap days, across 2100, which is not a leap year.
      {"0 0 29 2 *", "UTC", "2026-01-01 00:00:00", {"2028-02-29 00:00:00", "2032-02-29 00:00:00"}},
      {"0 0 29 2 *", "UTC", "2096-03-01 00:00:00", {"2104-02-29 00:00:00"}},
      {"0 12 29 FEB *", "UTC", "2028-02-29 12:00:00", {"2032-02-29 12:00:00"}},
      // Macros.
      {"@hourly", "UTC", "2026-01-01 00:00:00", {"2026-01-01 01:00:00", "2026-01-01 02:00:00"}},
      {"@daily", "UTC", "2026-01-01 00:00:00", {"2026-01-02 00:00:00"}},
      {"@midnight", "UTC", "2026-01-01 12:00:00", {"2026-01-02 00:00:00"}},
      {"@weekly", "UTC", "2026-01-01 00:00:00", {"2026-01-04 00:00:00", "2026-01-11 00:00:00"}},
      {"@monthly", "UTC", "2026-01-15 00:00:00", {"2026-02-01 00:00:00", "2026-03-01 00:00:00"}},
      {"@yearly", "UTC", "2026-01-01 00:00:00", {"2027-01-01 00:00:00"}},
      {"@Annually", "UTC", "2026-06-01 00:00:00", {"2027-01-01 00:00:00"}},
  });
}

TEST_CASE("core::cron @every adds to the previous tick") {
  check_cases({
      {"@every 10s",
       "UTC",
       "2026-01-01 00:00:07",
       {"2026-01-01 00:00:17", "2026-01-01 00:00:27", "2026-01-01 00:00:37"}},
      {"@every 1h30m",
       "UTC",
       "2026-01-01 23:00:00",
       {"2026-01-02 00:30:00", "2026-01-02 02:00:00"}},
      // Real time: a DST change does not move it.
      {"@every 1h",
       "Europe/Berlin",
       "2026-03-29 00:30:00",
       {"2026-03-29 01:30:00", "2026-03-29 02:30:00"}},
      {"@every 1d", "America/New_York", "2026-03-07 12:00:00", {"2026-03-08 12:00:00"}},
  });
  CHECK(CronSchedule::parse("@every 10s").is_every());
  CHECK_FALSE(CronSchedule::parse("@every 10s").fixed_time());
}

TEST_CASE("core::cron daylight saving time") {
  check_cases({
      // Europe/Berlin, spring 2026-03-29: 02:00 CET becomes 03:00 CEST at 01:00 UTC.
      // Fixed time in the gap: once, at the jump.
      {"30 2 * * *",
       "Europe/Berlin",
       "2026-03-28 00:00:00",
       {"2026-03-28 01:30:00", "2026-03-29 01:00:00", "2026-03-30 00:30:00"}},
      {"0,30 2 * * *",
       "Europe/Berlin",
       "2026-03-28 23:00:00",
       {"2026-03-29 01:00:00", "2026-03-30 00:00:00", "2026-03-30 00:30:00"}},
      // Wildcards follow real time: nothing invented in the gap.
      {"*/30 * * * *",
       "Europe/Berlin",
       "2026-03-29 00:00:00",
       {"2026-03-29 00:30:00", "2026-03-29 01:00:00", "2026-03-29 01:30:00"}},
      {"0 * * * *",
       "Europe/Berlin",
       "2026-03-28 23:30:00",
       {"2026-03-29 00:00:00", "2026-03-29 01:00:00", "2026-03-29 02:00:00"}},
      {"*/15 2 * * *", "Europe/Berlin", "2026-03-28 01:50:00", {"2026-03-30 00:00:00"}},
      // Europe/Berlin, autumn 2026-10-25: 03:00 CEST becomes 02:00 CET at 01:00 UTC.
      // Fixed time in the repeated hour: the first pass only.
      {"30 2 * * *",
       "Europe/Berlin",
       "2026-10-24 00:00:00",
       {"2026-10-24 00:30:00", "2026-10-25 00:30:00", "2026-10-26 01:30:00"}},
      {"30 2 * * *", "Europe/Berlin", "2026-10-25 00:30:00", {"2026-10-26 01:30:00"}},
      // Wildcards: both passes.
      {"*/30 * * * *",
       "Europe/Berlin",
       "2026-10-24 23:45:00",
       {"2026-10-25 00:00:00", "2026-10-25 00:30:00", "2026-10-25 01:00:00", "2026-10-25 01:30:00",
        "2026-10-25 02:00:00"}},
      {"0 * * * *",
       "Europe/Berlin",
       "2026-10-24 23:30:00",
       {"2026-10-25 00:00:00", "2026-10-25 01:00:00", "2026-10-25 02:00:00"}},
      {"*/30 2 * * *",
       "Europe/Berlin",
       "2026-10-24 23:00:00",
       {"2026-10-25 00:00:00", "2026-10-25 00:30:00", "2026-10-25 01:00:00", "2026-10-25 01:30:00",
        "2026-10-26 01:00:00"}},
      // America/New_York, spring 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00 UTC.
      {"30 2 * * *",
       "America/New_York",
       "2026-03-07 00:00:00",
       {"2026-03-07 07:30:00", "2026-03-08 07:00:00", "2026-03-09 06:30:00"}},
      {"*/30 * * * *",
       "America/New_York",
       "2026-03-08 06:00:00",
       {"2026-03-08 06:30:00", "2026-03-08 07:00:00", "2026-03-08 07:30:00"}},
      {"0 * * * *",
       "America/New_York",
       "2026-03-08 05:30:00",
       {"2026-03-08 06:00:00", "2026-03-08 07:00:00", "2026-03-08 08:00:00"}},
      // America/New_York, autumn 2026-11-01: 02:00 EDT becomes 01:00 EST at 06:00 UTC.
      {"30 1 * * *",
       "America/New_York",
       "2026-10-31 00:00:00",
       {"2026-10-31 05:30:00", "2026-11-01 05:30:00", "2026-11-02 06:30:00"}},
      {"30 1 * * *", "America/New_York", "2026-11-01 06:00:00", {"2026-11-02 06:30:00"}},
      {"*/30 * * * *",
       "America/New_York",
       "2026-11-01 05:15:00",
       {"2026-11-01 05:30:00", "2026-11-01 06:00:00", "2026-11-01 06:30:00",
        "2026-11-01 07:00:00"}},
      {"0 * * * *",
       "America/New_York",
       "2026-11-01 04:30:00",
       {"2026-11-01 05:00:00", "2026-11-01 06:00:00", "2026-11-01 07:00:00"}},
      // A fixed hour far from the change keeps its local time on both sides.
      {"0 9 * * *",
       "America/New_York",
       "2026-03-07 00:00:00",
       {"2026-03-07 14:00:00", "2026-03-08 13:00:00"}},
      {"@daily",
       "Europe/Berlin",
       "2026-10-24 00:00:00",
       {"2026-10-24 22:00:00", "2026-10-25 23:00:00"}},
  });
}

TEST_CASE("core::cron text and kind") {
  CHECK(CronSchedule::parse("  */15   *\t* * *  ").text() == "*/15 * * * *");
  CHECK(CronSchedule::parse("@every   1h30m").text() == "@every 1h30m");
  CHECK(CronSchedule::parse("@Daily").text() == "@Daily");
  CHECK(CronSchedule::parse("30 2 * * *").fixed_time());
  CHECK(CronSchedule::parse("0,30 1-3 * * *").fixed_time());
  CHECK(CronSchedule::parse("@daily").fixed_time());
  CHECK_FALSE(CronSchedule::parse("0 * * * *").fixed_time());
  CHECK_FALSE(CronSchedule::parse("*/10 2 * * *").fixed_time());
  CHECK_FALSE(CronSchedule::parse("@hourly").fixed_time());
  CHECK(CronSchedule::parse("* * * * *").next_n(utc("2026-01-01 00:00:00"), nullptr, 0).empty());
  // A null zone is UTC.
  CHECK(
      utc_text(CronSchedule::parse("30 2 * * *").next_after(utc("2026-03-29 00:00:00"), nullptr)) ==
      "2026-03-29 02:30:00");
}

TEST_CASE("core::cron parse errors") {
  struct Bad {
    const char* text;
    std::string message;
  };
  const char* expected =
      "expected 5 (minute hour day-of-month month day-of-week) or @every DUR / @hourly / @daily "
      "/ @weekly / @monthly / @yearly";
  const std::vector<Bad> cases = {
      {"61 * * * *", "minute: 61 is out of range 0-59"},
      {"0 24 * * *", "hour: 24 is out of range 0-23"},
      {"0 0 0 * *", "day-of-month: 0 is out of range 1-31"},
      {"0 0 32 * *", "day-of-month: 32 is out of range 1-31"},
      {"0 0 * 13 *", "month: 13 is out of range 1-12"},
      {"0 0 * * 8", "day-of-week: 8 is out of range 0-7"},
      {"99999999999 * * * *", "minute: 99999999999 is out of range 0-59"},
      {"0 */0 * * *", "hour: step 0 is not allowed"},
      {"5/0 * * * *", "minute: step 0 is not allowed"},
      {"*/61 * * * *", "minute: step 61 is out of range 1-60"},
      {"*/x * * * *", "minute: step \"x\" is not a number"},
      {"*/5/2 * * * *", "minute: \"*/5/2\" has more than one step"},
      {"0 0 * * FOO", "day-of-week: \"FOO\" is not a number or a day name"},
      {"0 0 * FOO *", "month: \"FOO\" is not a number or a month name"},
      {"0 0 * * MONDAY", "day-of-week: \"MONDAY\" is not a number or a day name"},
      {"x * * * *", "minute: \"x\" is not a number"},
      {"JAN * * * *", "minute: \"JAN\" is not a number"},
      {"-5 * * * *", "minute: \"-5\" is not a range"},
      {"1-2-3 * * * *", "minute: \"2-3\" is not a number"},
      {"0 22-2 * * *", "hour: range 22-2 goes backwards; write it as two: 22-23,0-2"},
      {"0 0 * * FRI-MON", "day-of-week: range FRI-MON goes backwards; write it as two: 5-7,0-1"},
      {"1,,2 * * * *", "minute: empty item in \"1,,2\""},
      {"0 0 31 2 *",
       "day-of-month: \"31\" never occurs in month \"2\"; the schedule would never fire"},
      {"0 0 30,31 FEB *",
       "day-of-month: \"30,31\" never occurs in month \"FEB\"; the schedule would never fire"},
      {"* * * *", std::string("schedule has 4 fields; ") + expected},
      {"* * * * * *", std::string("schedule has 6 fields; ") + expected},
      {"   ", std::string("schedule is empty; ") + expected},
      {"@fortnightly",
       "unknown schedule \"@fortnightly\"; expected @every DUR, @hourly, @daily, @midnight, "
       "@weekly, @monthly, @yearly or @annually"},
      {"@daily 5", "@daily takes nothing after it"},
      {"@every", "@every takes one duration, e.g. @every 10s or @every 1h30m"},
      {"@every 1s 2s", "@every takes one duration, e.g. @every 10s or @every 1h30m"},
      {"@every 0s", "@every: 0s is less than the minimum, 1s"},
      {"@every 500ms", "@every: 500ms is less than the minimum, 1s"},
      {"@every 1500ms", "@every: 1500ms is not a whole number of seconds"},
      {"@every soon",
       "invalid @every duration 'soon': expected e.g. 250ms, 30s, 5m, 2h, 7d, 1h30m or a number "
       "of seconds"},
  };
  for (const Bad& bad : cases) {
    std::string what = bad.text;
    INFO(what);
    CHECK(usage_error_of([&] { CronSchedule::parse(bad.text); }) == bad.message);
  }
  // Feb 30 is impossible only when the days alone decide.
  CHECK_NOTHROW(CronSchedule::parse("0 0 30 2,4 *"));
  CHECK_NOTHROW(CronSchedule::parse("0 0 30 2 MON"));
}

TEST_CASE("core::cron find_zone") {
  CHECK(find_zone("Europe/Berlin")->name() == "Europe/Berlin");
  CHECK(find_zone()->get_info(utc("2026-07-01 00:00:00")).offset == std::chrono::seconds(0));
  CHECK(usage_error_of([] { find_zone("Mars/Olympus"); }) ==
        "unknown time zone \"Mars/Olympus\" (see /usr/share/zoneinfo or timedatectl "
        "list-timezones)");
  CHECK(usage_error_of([] { find_zone(""); }) ==
        "unknown time zone \"\" (see /usr/share/zoneinfo or timedatectl list-timezones)");
}
