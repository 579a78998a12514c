// Times and durations for people, in the table and describe views: "9m58s", "3m ago",
// "in 25s". Scripts read -o json, where times stay RFC 3339 and durations seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/time_text.hpp"

namespace queuectl {

// A duration as kubectl prints ages, two units at most: "850ms" under a second, "42s" under
// two minutes, "9m58s" under ten, "45m" under an hour, "5h30m" (or "2h") under eight,
// "20h" under two days, "3d4h" under eight, then "12d", "2y40d", "9y". The sign is dropped.
std::string human_duration(double seconds);

// Seconds from `now` to `time` (negative when `time` is past); none when either is not a
// time.
std::optional<double> seconds_until(std::string_view time, std::string_view now);

// `time` seen from `now`: "in 25s" ahead, "3m ago" behind, "now" within a second; `time`
// itself when either is not a time.
std::string relative_time(std::string_view time, std::string_view now);

// How long before `now` `time` was, kubectl's AGE: "3m" ("0s" for a time ahead); `time`
// itself when either is not a time.
std::string age_text(std::string_view time, std::string_view now);

}  // namespace queuectl
