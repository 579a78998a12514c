#include "core/cron_schedule.hpp"

#include <date/date.h>
#include <date/tz.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>

#include "core/duration.hpp"
#include "core/errors.hpp"

namespace queuectl {
namespace {

using date::local_days;
using date::local_seconds;
using std::chrono::minutes;

const char* const kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                   "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
const char* const kDayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

// One of the five fields: its name in messages, its range, and the names it accepts
// (names[i] stands for first_named + i).
struct FieldSpec {
  const char* name;
  int min;
  int max;
  const char* const* names = nullptr;
  int name_count = 0;
  int first_named = 0;
  const char* name_kind = "";
};

const FieldSpec kMinute{"minute", 0, 59};
const FieldSpec kHour{"hour", 0, 23};
const FieldSpec kDay{"day-of-month", 1, 31};
const FieldSpec kMonth{"month", 1, 12, kMonthNames, 12, 1, "month"};
// 7 is Sunday as well as 0; folded onto 0 once the field is read.
const FieldSpec kWeekday{"day-of-week", 0, 7, kDayNames, 7, 0, "day"};

const char* const kExpected =
    "expected 5 (minute hour day-of-month month day-of-week) or @every DUR / @hourly / @daily "
    "/ @weekly / @monthly / @yearly";

// Far enough for Feb 29 across a century's skipped leap year (2096 to 2104).
constexpr date::days kSearchDays{9 * 366};

[[noreturn]] void fail(const FieldSpec& field, const std::string& problem) {
  throw UsageError(std::string(field.name) + ": " + problem);
}

std::string in_quotes(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

bool all_digits(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

bool same_letters(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

std::string range_text(int low, int high) {
  return std::to_string(low) + "-" + std::to_string(high);
}

// A number (at most 9 digits, so that it fits an int before the range check) or a name.
int value_of(const FieldSpec& field, std::string_view text) {
  if (all_digits(text)) {
    int value = text.size() > 9 ? field.max + 1 : std::stoi(std::string(text));
    if (value < field.min || value > field.max)
      fail(field, std::string(text) + " is out of range " + range_text(field.min, field.max));
    return value;
  }
  for (int i = 0; i < field.name_count; ++i)
    if (same_letters(text, field.names[i])) return field.first_named + i;
  std::string kinds = field.names ? std::string(" or a ") + field.name_kind + " name" : "";
  fail(field, in_quotes(text) + " is not a number" + kinds);
}

// One item of a list: `*`, `a`, `a-b`, each with an optional `/step`. Returns its values
// as bits.
std::uint64_t parse_item(const FieldSpec& field, std::string_view item, std::string_view whole) {
  if (item.empty()) fail(field, "empty item in " + in_quotes(whole));
  std::size_t slash = item.find('/');
  std::string_view range = item.substr(0, slash);
  int step = 1;
  if (slash != std::string_view::npos) {
    std::string_view step_text = item.substr(slash + 1);
    if (step_text.find('/') != std::string_view::npos)
      fail(field, in_quotes(item) + " has more than one step");
    if (!all_digits(step_text)) fail(field, "step " + in_quotes(step_text) + " is not a number");
    int span = field.max - field.min + 1;
    step = step_text.size() > 9 ? span + 1 : std::stoi(std::string(step_text));
    if (step == 0) fail(field, "step 0 is not allowed");
    if (step > span)
      fail(field, "step " + std::string(step_text) + " is out of range " + range_text(1, span));
  }
  int low = field.min;
  int high = field.max;
  if (range != "*") {
    std::size_t dash = range.find('-');
    if (dash == 0 || dash + 1 == range.size()) fail(field, in_quotes(range) + " is not a range");
    low = value_of(field, range.substr(0, dash));
    // `a/n` runs from a to the field's maximum; a lone `a` is just a.
    high = dash != std::string_view::npos    ? value_of(field, range.substr(dash + 1))
           : slash != std::string_view::npos ? field.max
                                             : low;
    if (low > high)
      fail(field, "range " + std::string(range) + " goes backwards; write it as two: " +
                      range_text(low, field.max) + "," + range_text(field.min, high));
  }
  std::uint64_t bits = 0;
  for (int value = low; value <= high; value += step) bits |= std::uint64_t{1} << value;
  return bits;
}

std::uint64_t parse_field(const FieldSpec& field, std::string_view text) {
  std::uint64_t bits = 0;
  std::size_t start = 0;
  for (;;) {
    std::size_t comma = text.find(',', start);
    bits |= parse_item(field, text.substr(start, comma - start), text);
    if (comma == std::string_view::npos) return bits;
    start = comma + 1;
  }
}

template <std::size_t N>
std::bitset<N> to_bits(std::uint64_t bits) {
  return std::bitset<N>(bits & ((std::uint64_t{1} << N) - 1));
}

std::vector<std::string_view> split_blanks(std::string_view text) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

// The five fields the macros stand for.
std::optional<std::string_view> macro_fields(std::string_view word) {
  struct Macro {
    const char* name;
    const char* fields;
  };
  static const Macro kMacros[] = {{"@hourly", "0 * * * *"},   {"@daily", "0 0 * * *"},
                                  {"@midnight", "0 0 * * *"}, {"@weekly", "0 0 * * 0"},
                                  {"@monthly", "0 0 1 * *"},  {"@yearly", "0 0 1 1 *"},
                                  {"@annually", "0 0 1 1 *"}};
  for (const Macro& macro : kMacros)
    if (same_letters(word, macro.name)) return std::string_view(macro.fields);
  return std::nullopt;
}

std::chrono::seconds parse_every(const std::vector<std::string_view>& words) {
  if (words.size() != 2)
    throw UsageError("@every takes one duration, e.g. @every 10s or @every 1h30m");
  Duration every = Duration::parse(words[1], "@every duration");
  if (every.ms() < 1000)
    throw UsageError("@every: " + std::string(words[1]) + " is less than the minimum, 1s");
  if (every.ms() % 1000 != 0)
    throw UsageError("@every: " + std::string(words[1]) + " is not a whole number of seconds");
  return std::chrono::seconds(every.ms() / 1000);
}

// Whether some chosen month has some chosen day (February counted with 29).
bool some_day_exists(const CronFields& fields) {
  const unsigned kLongest[] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  for (unsigned month = 1; month <= 12; ++month)
    for (unsigned day = 1; fields.months[month] && day <= kLongest[month]; ++day)
      if (fields.days[day]) return true;
  return false;
}

bool day_matches(const CronFields& fields, local_days day) {
  date::year_month_day date{day};
  bool by_day = fields.days[static_cast<unsigned>(date.day())];
  bool by_weekday = fields.weekdays[date::weekday{day}.c_encoding()];
  // Vixie cron: either restricted field may match, unless one of them starts with `*`.
  if (fields.day_star || fields.weekday_star) return by_day && by_weekday;
  return by_day || by_weekday;
}

// The first local minute at or after `from` (a whole minute) that the fields allow, up to the
// end of `last_day`.
std::optional<local_seconds> next_local_match(const CronFields& fields, local_seconds from,
                                              local_days last_day) {
  local_days day = date::floor<date::days>(from);
  auto minute_of_day = date::floor<minutes>(from - day);
  int first_hour = static_cast<int>(minute_of_day.count() / 60);
  int first_minute = static_cast<int>(minute_of_day.count() % 60);
  for (; day <= last_day; day += date::days{1}, first_hour = 0, first_minute = 0) {
    date::year_month_day date{day};
    if (!fields.months[static_cast<unsigned>(date.month())]) {
      // To the last day of this month; the loop steps onto the next one.
      day = local_days{date.year() / date.month() / date::last};
      continue;
    }
    if (!day_matches(fields, day)) continue;
    for (int hour = first_hour; hour < 24; ++hour) {
      if (!fields.hours[hour]) continue;
      for (int minute = hour == first_hour ? first_minute : 0; minute < 60; ++minute)
        if (fields.minutes[minute]) return day + std::chrono::hours(hour) + minutes(minute);
    }
  }
  return std::nullopt;
}

// When a fixed-time schedule's local time happens: its only or first occurrence, or the
// instant a spring-forward skips it at.
SysSeconds fixed_instant(local_seconds local, const date::time_zone* zone) {
  if (zone == nullptr) return SysSeconds{local.time_since_epoch()};
  date::local_info info = zone->get_info(local);
  if (info.result == date::local_info::nonexistent) return info.first.end;
  return SysSeconds{local.time_since_epoch() - info.first.offset};
}

}  // namespace

CronSchedule CronSchedule::parse(std::string_view text) {
  std::vector<std::string_view> words = split_blanks(text);
  if (words.empty()) throw UsageError(std::string("schedule is empty; ") + kExpected);
  CronSchedule schedule;
  for (std::string_view word : words) {
    if (!schedule.text_.empty()) schedule.text_ += ' ';
    schedule.text_ += word;
  }
  if (same_letters(words[0], "@every")) {
    schedule.every_ = parse_every(words);
    return schedule;
  }
  if (words[0].substr(0, 1) == "@") {
    std::optional<std::string_view> fields = macro_fields(words[0]);
    if (!fields)
      throw UsageError("unknown schedule " + in_quotes(words[0]) +
                       "; expected @every DUR, @hourly, @daily, @midnight, @weekly, @monthly, "
                       "@yearly or @annually");
    if (words.size() != 1) throw UsageError(std::string(words[0]) + " takes nothing after it");
    words = split_blanks(*fields);
  }
  if (words.size() != 5)
    throw UsageError("schedule has " + std::to_string(words.size()) + " fields; " + kExpected);

  CronFields& fields = schedule.fields_;
  fields.minutes = to_bits<60>(parse_field(kMinute, words[0]));
  fields.hours = to_bits<24>(parse_field(kHour, words[1]));
  fields.days = to_bits<32>(parse_field(kDay, words[2]));
  fields.months = to_bits<13>(parse_field(kMonth, words[3]));
  std::uint64_t weekdays = parse_field(kWeekday, words[4]);
  fields.weekdays = to_bits<7>(weekdays | (weekdays >> 7));  // 7 is Sunday
  fields.day_star = words[2][0] == '*';
  fields.weekday_star = words[4][0] == '*';
  schedule.fixed_time_ =
      words[0].find('*') == std::string_view::npos && words[1].find('*') == std::string_view::npos;
  // With day-of-week `*` only the days count; rejecting Feb 30 here keeps next_after finite.
  if (!fields.day_star && fields.weekday_star && !some_day_exists(fields))
    fail(kDay, in_quotes(words[2]) + " never occurs in month " + in_quotes(words[3]) +
                   "; the schedule would never fire");
  return schedule;
}

SysSeconds CronSchedule::next_after(SysSeconds previous_tick, const date::time_zone* zone) const {
  if (is_every()) return previous_tick + every_;
  local_seconds local_previous =
      zone ? zone->to_local(previous_tick) : local_seconds{previous_tick.time_since_epoch()};
  local_days last_day = date::floor<date::days>(local_previous) + kSearchDays;
  auto never = [&] {
    return Error("schedule " + in_quotes(text_) + " has no fire time within 9 years");
  };

  if (fixed_time_) {
    // Local minutes map onto instants in order (a skipped one onto the jump, a repeated one
    // onto its first pass), so the first match that lands after the previous tick is the one.
    local_seconds from = date::floor<minutes>(local_previous);
    for (;;) {
      std::optional<local_seconds> match = next_local_match(fields_, from, last_day);
      if (!match) throw never();
      SysSeconds instant = fixed_instant(*match, zone);
      if (instant > previous_tick) return instant;
      from = *match + minutes(1);
    }
  }

  // Wildcard: walk the zone's stretches of constant offset, each a plain shift of local time.
  SysSeconds from = previous_tick + std::chrono::seconds(1);
  for (;;) {
    std::chrono::seconds offset{0};
    SysSeconds stretch_end = SysSeconds::max();
    if (zone) {
      date::sys_info info = zone->get_info(from);
      offset = info.offset;
      stretch_end = info.end;
    }
    local_seconds local = date::ceil<minutes>(local_seconds{from.time_since_epoch() + offset});
    std::optional<local_seconds> match = next_local_match(fields_, local, last_day);
    if (!match) throw never();
    SysSeconds instant{match->time_since_epoch() - offset};
    if (instant < stretch_end) return instant;
    from = stretch_end;
  }
}

std::vector<SysSeconds> CronSchedule::next_n(SysSeconds from, const date::time_zone* zone,
                                             int n) const {
  std::vector<SysSeconds> times;
  for (int i = 0; i < n; ++i) {
    from = next_after(from, zone);
    times.push_back(from);
  }
  return times;
}

const date::time_zone* find_zone(std::string_view name) {
  try {
    return date::locate_zone(name);
  } catch (const std::runtime_error&) {
    throw UsageError("unknown time zone " + in_quotes(name) +
                     " (see /usr/share/zoneinfo or timedatectl list-timezones)");
  }
}

}  // namespace queuectl
