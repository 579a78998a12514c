// plan_fires: which jobs a due schedule makes, from its next fire time up to now, under each
// misfire policy.
#include <doctest/doctest.h>

#include "core/cron_plan.hpp"
#include "core/errors.hpp"

using queuectl::CronSchedule;
using queuectl::FirePlan;
using queuectl::Misfire;
using queuectl::MisfirePolicy;
using queuectl::plan_fires;

namespace {

// 2026-11-26 00:00:00 UTC.
constexpr std::int64_t kMidnight = 1795651200;

std::vector<std::int64_t> ticks(const FirePlan& p) {
  std::vector<std::int64_t> out;
  for (const auto& t : p.fire) out.push_back(t.tick);
  return out;
}

MisfirePolicy policy(Misfire mode, int limit = 100, int after = 60) {
  MisfirePolicy p;
  p.mode = mode;
  p.limit = limit;
  p.after = std::chrono::seconds(after);
  return p;
}

}  // namespace

TEST_CASE("plan_fires: a tick on time fires once, and the next is computed from it") {
  const auto every = CronSchedule::parse("@every 10s");
  FirePlan p = plan_fires(every, nullptr, kMidnight, kMidnight + 3, policy(Misfire::once));
  CHECK(ticks(p) == std::vector<std::int64_t>{kMidnight});
  CHECK(p.fire[0].stands_for == 0);
  CHECK(p.missed == 0);
  CHECK(p.next == kMidnight + 10);
  // Not yet due: nothing, and the next stays.
  p = plan_fires(every, nullptr, kMidnight, kMidnight - 1, policy(Misfire::once));
  CHECK(p.fire.empty());
  CHECK(p.next == kMidnight);
}

TEST_CASE("plan_fires: late within the window, every tick fires (a slow firer catches up)") {
  const auto every = CronSchedule::parse("@every 1s");
  for (Misfire m : {Misfire::once, Misfire::skip, Misfire::all}) {
    FirePlan p = plan_fires(every, nullptr, kMidnight, kMidnight + 5, policy(m, 100, 60));
    CHECK(ticks(p) == std::vector<std::int64_t>{kMidnight, kMidnight + 1, kMidnight + 2,
                                                kMidnight + 3, kMidnight + 4, kMidnight + 5});
    CHECK(p.missed == 0);
    CHECK(p.next == kMidnight + 6);
  }
}

TEST_CASE("plan_fires: after downtime, once, skip and all") {
  const auto minutely = CronSchedule::parse("* * * * *");
  // Down from 00:00 to 00:10:30, a minute's window: ticks 00:00 .. 00:09 are missed (00:09
  // is 90 s old), 00:10 is on time.
  const std::int64_t now = kMidnight + 630;
  FirePlan once = plan_fires(minutely, nullptr, kMidnight, now, policy(Misfire::once));
  REQUIRE(once.fire.size() == 2);
  CHECK(once.fire[0].tick == kMidnight + 540);  // the latest missed tick
  CHECK(once.fire[0].stands_for == 9);          // for the 9 before it
  CHECK(once.fire[1].tick == kMidnight + 600);
  CHECK(once.missed == 9);
  CHECK(once.next == kMidnight + 660);

  FirePlan skip = plan_fires(minutely, nullptr, kMidnight, now, policy(Misfire::skip));
  CHECK(ticks(skip) == std::vector<std::int64_t>{kMidnight + 600});
  CHECK(skip.missed == 10);
  CHECK(skip.next == kMidnight + 660);

  FirePlan all3 = plan_fires(minutely, nullptr, kMidnight, now, policy(Misfire::all, 3));
  CHECK(ticks(all3) == std::vector<std::int64_t>{kMidnight + 420, kMidnight + 480, kMidnight + 540,
                                                 kMidnight + 600});
  CHECK(all3.missed == 7);
  FirePlan all_of_them = plan_fires(minutely, nullptr, kMidnight, now, policy(Misfire::all, 100));
  CHECK(all_of_them.fire.size() == 11);
  CHECK(all_of_them.missed == 0);
}

TEST_CASE("plan_fires: a daily schedule down for three days, in its zone") {
  const auto daily = CronSchedule::parse("30 2 * * *");
  const auto* berlin = queuectl::find_zone("Europe/Berlin");
  // 2026-11-26 02:30 CET = 01:30 UTC; down until 2026-11-29 12:00 UTC.
  const std::int64_t first = kMidnight + 5400;
  const std::int64_t now = kMidnight + 3 * 86400 + 12 * 3600;
  FirePlan once = plan_fires(daily, berlin, first, now, policy(Misfire::once));
  REQUIRE(once.fire.size() == 1);
  CHECK(once.fire[0].tick == first + 3 * 86400);
  CHECK(once.fire[0].stands_for == 3);
  CHECK(once.next == first + 4 * 86400);
  FirePlan skip = plan_fires(daily, berlin, first, now, policy(Misfire::skip));
  CHECK(skip.fire.empty());
  CHECK(skip.missed == 4);
  CHECK(skip.next == first + 4 * 86400);
}

TEST_CASE("plan_fires: two years down, every minute: bounded work, the next tick after now") {
  const auto minutely = CronSchedule::parse("* * * * *");
  const std::int64_t now = kMidnight + 2 * 366 * 86400 + 30;
  FirePlan p = plan_fires(minutely, nullptr, kMidnight, now, policy(Misfire::once));
  REQUIRE(!p.fire.empty());
  CHECK(p.missed >= 1000000 - 1);
  CHECK(p.next > now);
  CHECK(p.next <= now + 60);
}

TEST_CASE("parse_misfire names the option") {
  CHECK(queuectl::parse_misfire("all") == Misfire::all);
  CHECK_THROWS_AS(queuectl::parse_misfire("twice"), queuectl::UsageError);
}
