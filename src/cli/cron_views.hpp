// `queuectl cron`'s results as Output: the schedules, one schedule with its coming and
// recent fires, what a tick fired, what an apply changed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "db/schedule_repository.hpp"

namespace queuectl {

// Seconds since the epoch as RFC 3339 UTC ("2026-03-29T01:00:00Z").
std::string epoch_utc(std::int64_t seconds);
// The same instant as the wall clock of `zone` shows it ("2026-03-29 03:00:00 CEST").
std::string epoch_local(std::int64_t seconds, const std::string& zone);

// Late: not paused, and its next tick is older than the misfire window (no firer is running).
bool schedule_late(const Schedule& s, std::int64_t now);

// What `cron add` or `cron apply` did to a schedule: added, replaced, unchanged, removed.
const char* outcome_name(PutOutcome o);
nlohmann::ordered_json schedule_json(const Schedule& s, std::int64_t now);
Output schedules_view(const std::vector<Schedule>& schedules, std::int64_t now);
// `show`: the schedule, its next `coming` fire times, and its recent fires.
Output schedule_view(const Schedule& s, std::int64_t now, const std::vector<std::int64_t>& coming,
                     const std::vector<ScheduleFire>& fires);
Output tick_view(const TickResult& r);
Output apply_view(const std::vector<ApplyChange>& changes, bool dry_run);
// Prometheus lines for `stats -o prometheus`: per schedule, its fire times and counts.
std::string schedules_prometheus(const std::vector<Schedule>& schedules, std::int64_t now);

}  // namespace queuectl
