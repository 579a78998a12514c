#include "core/cron_plan.hpp"

#include <deque>

#include "core/errors.hpp"

namespace queuectl {

Misfire parse_misfire(const std::string& text) {
  if (text == "once") return Misfire::once;
  if (text == "skip") return Misfire::skip;
  if (text == "all") return Misfire::all;
  throw UsageError("--misfire must be once, skip or all, not '" + text.substr(0, 32) + "'");
}

const char* misfire_name(Misfire m) {
  switch (m) {
    case Misfire::once:
      return "once";
    case Misfire::skip:
      return "skip";
    case Misfire::all:
      return "all";
  }
  return "once";
}

FirePlan plan_fires(const CronSchedule& schedule, const date::time_zone* zone,
                    std::int64_t next_fire, std::int64_t now, const MisfirePolicy& policy) {
  constexpr std::int64_t kMaxCounted = 1000000;
  const std::int64_t after = std::max<std::int64_t>(0, policy.after.count());
  auto next_of = [&](std::int64_t t) {
    return schedule.next_after(SysSeconds(std::chrono::seconds(t)), zone)
        .time_since_epoch()
        .count();
  };
  FirePlan plan;
  std::int64_t late = 0;
  std::deque<std::int64_t> latest_late;  // the last `limit` (or 1) missed ticks
  const std::size_t keep =
      policy.mode == Misfire::all ? static_cast<std::size_t>(std::max(policy.limit, 1)) : 1;
  std::vector<std::int64_t> on_time;
  std::int64_t t = next_fire, counted = 0;
  while (t <= now) {
    if (now - t > after) {
      if (++counted > kMaxCounted) {
        // Jump: the first tick after the edge of "on time". At least one tick was skipped.
        const std::int64_t resumed = next_of(now - after - 1);
        if (resumed > t) ++late;
        t = resumed;
        continue;
      }
      ++late;
      latest_late.push_back(t);
      if (latest_late.size() > keep) latest_late.pop_front();
    } else {
      on_time.push_back(t);
    }
    t = next_of(t);
  }
  plan.next = t;
  if (late > 0) {
    switch (policy.mode) {
      case Misfire::once:
        plan.fire.push_back({latest_late.back(), late - 1});
        plan.missed += late - 1;
        break;
      case Misfire::skip:
        plan.missed += late;
        break;
      case Misfire::all:
        for (std::int64_t tick : latest_late) plan.fire.push_back({tick, 0});
        plan.missed += late - static_cast<std::int64_t>(latest_late.size());
        break;
    }
  }
  for (std::int64_t tick : on_time) plan.fire.push_back({tick, 0});
  return plan;
}

}  // namespace queuectl
