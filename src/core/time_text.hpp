// Times as text: those typed by users (--run-at), normalized to UTC text the databases
// read, and the UTC text queuectl stores and prints, read back as a number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace queuectl {

// Parses RFC 3339 ("2026-11-22T10:00:00Z", "...+09:00", fractions allowed); a time with
// no offset ("2026-11-22 10:00[:SS]") is local time in the zone TZ names, as date(1) reads
// it. Returns "YYYY-MM-DD HH:MM:SS.ffffff" in UTC.
// Throws UsageError naming the text.
std::string parse_time_to_utc(std::string_view text);

// Microseconds since the epoch of an RFC 3339 UTC time as queuectl stores or prints one
// ("2026-11-22T10:00:00.123456Z"; the fraction may be shorter or absent).
std::optional<std::int64_t> parse_utc_time_us(std::string_view text);

// The other way: microseconds since the epoch as queuectl prints a time,
// "2026-11-22T10:00:00.123456Z".
std::string format_utc_time_us(std::int64_t us);

// A time as queuectl prints it, from PostgreSQL's own text of a timestamptz in a session
// with TimeZone UTC and DateStyle ISO ("2026-11-22 10:00:00.1234+00": the fraction's
// trailing zeros dropped, no fraction at a whole second): "2026-11-22T10:00:00.123400Z".
// Text already in that form (MySQL's, SQLite's) is returned as it is; "infinity" and
// "-infinity" (which to_char made NULL) as "". Throws Error on anything else.
std::string rfc3339_from_pg_text(const std::string& text);

}  // namespace queuectl
