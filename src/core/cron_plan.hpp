// Which jobs a due schedule makes now: the ticks from its next fire time up to the database's
// now, split into those on time and those missed while no firer ran, and what the misfire
// policy makes of the missed ones. Pure: the times come in as seconds since the epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cron_schedule.hpp"

namespace queuectl {

enum class Misfire { once, skip, all };

struct MisfirePolicy {
  Misfire mode = Misfire::once;
  int limit = 100;                 // `all`: at most this many missed ticks run (the latest)
  std::chrono::seconds after{60};  // a tick later than this is missed
};

// "once", "skip", "all"; throws UsageError otherwise.
Misfire parse_misfire(const std::string& text);
const char* misfire_name(Misfire m);

struct PlannedTick {
  std::int64_t tick = 0;        // the tick the job stands for (its run_at)
  std::int64_t stands_for = 0;  // missed ticks besides it that this job covers (`once`)
};

struct FirePlan {
  std::vector<PlannedTick> fire;  // oldest first; one job each
  std::int64_t missed = 0;        // ticks that make no job (lost to downtime)
  std::int64_t next = 0;          // the next fire time after all of them
};

// The ticks of `schedule` from `next_fire` (the first not yet fired) up to `now`. A tick at
// most `policy.after` old is on time and fires. Older ticks were missed: `once` makes one job
// for all of them (at the latest), `skip` none, `all` one each for the latest `limit`. The
// next fire time is computed from the last tick, never from now. Counts at most 1,000,000
// ticks one by one; past that (a `* * * * *` schedule down for two years) it jumps to the
// first tick within `after` of now and counts what it jumped over as missed, at least one.
FirePlan plan_fires(const CronSchedule& schedule, const date::time_zone* zone,
                    std::int64_t next_fire, std::int64_t now, const MisfirePolicy& policy);

}  // namespace queuectl
