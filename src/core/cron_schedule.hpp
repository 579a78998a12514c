// When a recurring job fires: cron's five fields or @every DUR, and the next fire time after
// a previous one in a given time zone. Pure arithmetic: times go in and come out, there is no
// clock here.
//
// Syntax: "minute hour day-of-month month day-of-week" with `*`, numbers, ranges `a-b`, steps
// `*/n`, `a-b/n` and `a/n` (a to the field's maximum), lists `a,b-c,*/5`; JAN-DEC and SUN-SAT
// in any case; day-of-week 0-7 (0 and 7 are Sunday). Macros: @hourly, @daily (= @midnight),
// @weekly, @monthly, @yearly (= @annually), and @every DUR (Duration::parse, whole seconds,
// at least 1s).
//
// Days, as Vixie cron: when day-of-month and day-of-week are both restricted (neither field
// starts with `*`), a day matches if either does; when one starts with `*`, it must match
// both (a plain `*` matches every day). So `0 0 */10 * MON` fires on the 1st, 11th, 21st or
// 31st only when it is a Monday.
//
// Daylight saving time, as Debian's cron treats it. A schedule is "fixed-time" when neither its
// minute nor its hour field contains `*` (`30 2 * * *`, `0,30 1-3 * * *`, @daily); otherwise it
// is "wildcard" (`*/15 * * * *`, `0 * * * *`, `*/10 2 * * *`, @hourly). Debian looks only at
// each field's first character; a `*` later in a list (`5,*/10`) counts here too.
//  - Fixed-time schedules follow the wall clock. A local time that occurs twice (autumn) fires
//    once, at its first occurrence. A local time skipped by a spring-forward fires once at the
//    instant of the jump (Europe/Berlin 2026-03-29 02:30 fires at 03:00 CEST = 01:00 UTC).
//    Several skipped times of one gap (`0,30 2 * * *`) are one fire at the jump, where Debian
//    runs each in its catch-up minute: a next fire time cannot repeat.
//  - Wildcard schedules follow real elapsed time: they fire at every instant whose local time
//    matches, so both passes through a repeated hour fire and nothing fires in a skipped hour.
//
// Impossible dates: with day-of-week `*`, parse rejects a day-of-month that none of the chosen
// months has (`0 0 31 2 *`, `0 0 30,31 FEB *`); `0 0 30 2,4 *` (April 30) and `0 0 31 2 FRI`
// (the Fridays of February) are accepted. Whatever parse accepts fires within 8 years (Feb 29
// of 2096, then of 2104), so next_after always has an answer; it looks 9 years ahead and
// throws Error should it find none.
#pragma once

#include <bitset>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace date {
class time_zone;
}

namespace queuectl {

// The same type as date::sys_seconds (and C++20's std::chrono::sys_seconds).
using SysSeconds = std::chrono::time_point<std::chrono::system_clock, std::chrono::seconds>;

// The five fields, parsed: the values each allows, and which of the day fields start with `*`.
struct CronFields {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days;       // 1-31
  std::bitset<13> months;     // 1-12
  std::bitset<7> weekdays;    // 0-6, Sunday 0
  bool day_star = false;      // day-of-month starts with `*`
  bool weekday_star = false;  // day-of-week starts with `*`
};

class CronSchedule {
 public:
  // Parses a schedule; throws UsageError naming the field and what is wrong with it.
  static CronSchedule parse(std::string_view text);

  // The first fire time strictly after `previous_tick`: second 0 of a local minute for cron
  // fields, `previous_tick` + DUR for @every. A null zone is UTC; @every ignores the zone.
  SysSeconds next_after(SysSeconds previous_tick, const date::time_zone* zone) const;

  // The next `n` fire times after `from`, each after the one before (empty when n <= 0).
  std::vector<SysSeconds> next_n(SysSeconds from, const date::time_zone* zone, int n) const;

  // The schedule as entered, trimmed, runs of blanks made one space: "*/15 * * * *".
  std::string text() const { return text_; }

  bool is_every() const { return every_.count() > 0; }
  // Neither minute nor hour contains `*` (see the DST rule above); false for @every.
  bool fixed_time() const { return fixed_time_; }

 private:
  std::string text_;
  std::chrono::seconds every_{0};  // > 0 for @every, and fields_ is then unused
  CronFields fields_;
  bool fixed_time_ = false;
};

// The time zone of an IANA name ("Europe/Berlin", "UTC") from the system's tzdata; throws
// UsageError for a name it does not know.
const date::time_zone* find_zone(std::string_view name = "UTC");

}  // namespace queuectl
