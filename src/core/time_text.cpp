#include "core/time_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <regex>

#include "core/errors.hpp"

namespace queuectl {

std::string parse_time_to_utc(std::string_view text) {
  static const std::regex pattern(
      R"(^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|z|[+-]\d{2}:?\d{2})?$)");
  std::string s(text);
  std::smatch m;
  auto bad = [&]() {
    return UsageError("invalid time '" + s.substr(0, 40) +
                      "': expected RFC 3339, e.g. 2026-11-22T10:00:00Z");
  };
  if (!std::regex_match(s, m, pattern)) throw bad();
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = m[6].matched ? std::stoi(m[6]) : 0;
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    throw bad();
  int day = tm.tm_mday, month = tm.tm_mon;
  const std::tm fields = tm;
  std::time_t t = timegm(&tm);
  if (t == -1 || tm.tm_mday != day || tm.tm_mon != month) throw bad();  // e.g. Feb 30
  // No offset: the local time of TZ, as date(1) reads it (not UTC whatever TZ says).
  if (!m[8].matched) {
    std::tm local = fields;
    local.tm_isdst = -1;  // daylight saving time as it applies on that date
    t = std::mktime(&local);
    if (t == -1) throw bad();
    // mktime moves a time the clocks skip (02:30 on a spring-forward night) by the jump;
    // date(1) refuses it, and so does this.
    if (fields.tm_sec < 60 && (local.tm_hour != fields.tm_hour || local.tm_min != fields.tm_min ||
                               local.tm_mday != fields.tm_mday))
      throw UsageError("time '" + s.substr(0, 40) +
                       "' does not exist in the local time zone (the clocks skip it): give an "
                       "offset, e.g. 2026-03-29T02:30:00+01:00, or another time");
  }
  if (m[8].matched && m[8] != "Z" && m[8] != "z") {
    std::string off = m[8];
    int sign = off[0] == '-' ? -1 : 1;
    off.erase(std::remove(off.begin(), off.end(), ':'), off.end());
    int hh = std::stoi(off.substr(1, 2)), mm = std::stoi(off.substr(3, 2));
    if (hh > 23 || mm > 59) throw bad();
    t -= sign * (hh * 3600 + mm * 60);
  }
  std::string frac = m[7].matched ? std::string(m[7]) : "";
  frac = (frac + "000000").substr(0, 6);
  std::tm utc{};
  gmtime_r(&t, &utc);
  // What every backend can store (MySQL's DATETIME: years 1000 to 9999), after the offset;
  // the last day of 9999 stands for "waiting for other jobs" in run_at.
  if (utc.tm_year + 1900 < 1000 || utc.tm_year + 1900 > 9999 ||
      (utc.tm_year + 1900 == 9999 && utc.tm_mon == 11 && utc.tm_mday == 31))
    throw UsageError("time '" + s.substr(0, 40) +
                     "' is outside 1000-01-01 to 9999-12-30 (in UTC; 9999-12-31 marks jobs "
                     "waiting for others)");
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d.%s", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, frac.c_str());
  return buf;
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

std::string format_utc_time_us(std::int64_t us) {
  std::int64_t seconds = us / 1000000, fraction = us % 1000000;
  if (fraction < 0) {
    fraction += 1000000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<long long>(fraction));
  return buf;
}

std::string rfc3339_from_pg_text(const std::string& text) {
  // "YYYY-MM-DDTHH:MM:SS.ffffffZ" already.
  if (text.size() == 27 && text[10] == 'T' && text.back() == 'Z') return text;
  // What to_char made of them (NULL): a time the application's own SQL set so.
  if (text == "infinity" || text == "-infinity") return "";
  // "YYYY-MM-DD HH:MM:SS" then ".f" to ".ffffff" or nothing, then "+00".
  const std::size_t n = text.size();
  const bool shaped = n >= 22 && text[4] == '-' && text[10] == ' ' && text[13] == ':' &&
                      text.compare(n - 3, 3, "+00") == 0 && (n == 22 || text[19] == '.') && n <= 29;
  if (!shaped) throw Error("unexpected time '" + text + "' from the database");
  // Built in place, one allocation: five of these a job read, a hundred jobs a claim.
  const std::size_t digits = n == 22 ? 0 : n - 23;  // of the fraction, 1 to 6
  std::string out;
  out.reserve(27);
  out.append(text, 0, 19);
  out[10] = 'T';
  out += '.';
  for (std::size_t i = 0; i < digits; ++i) {
    const char c = text[20 + i];
    if (c < '0' || c > '9') throw Error("unexpected time '" + text + "' from the database");
    out += c;
  }
  out.append(6 - digits, '0');
  out += 'Z';
  return out;
}

}  // namespace queuectl
