// Absolute times typed by users (--run-at), normalized to UTC text the databases read.
#pragma once

#include <string>
#include <string_view>

namespace queuectl {

// Parses RFC 3339 ("2026-11-22T10:00:00Z", "...+09:00", fractions allowed); a time with
// no offset ("2026-11-22 10:00[:SS]") is local time in the zone TZ names, as date(1) reads
// it. Returns "YYYY-MM-DD HH:MM:SS.ffffff" in UTC.
// Throws UsageError naming the text.
std::string parse_time_to_utc(std::string_view text);

}  // namespace queuectl
