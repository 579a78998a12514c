#include "cli/cron_views.hpp"

#include <algorithm>

#include <date/date.h>
#include <date/tz.h>

#include "core/cron_schedule.hpp"
#include "core/human_time.hpp"

namespace queuectl {
namespace {

using json = nlohmann::ordered_json;

json opt_num(const std::optional<std::int64_t>& v) {
  return v ? json(*v) : json();
}

std::string relative(std::int64_t t, std::int64_t now) {
  if (t == now) return "now";
  const std::string d = human_duration(static_cast<double>(t - now));
  return t > now ? "in " + d : d + " ago";
}

}  // namespace

const char* outcome_name(PutOutcome o) {
  switch (o) {
    case PutOutcome::added:
      return "added";
    case PutOutcome::replaced:
      return "replaced";
    case PutOutcome::unchanged:
      return "unchanged";
    case PutOutcome::removed:
      return "removed";
  }
  return "unchanged";
}

std::string epoch_utc(std::int64_t seconds) {
  return date::format("%Y-%m-%dT%H:%M:%SZ", SysSeconds(std::chrono::seconds(seconds)));
}

std::string epoch_local(std::int64_t seconds, const std::string& zone) {
  try {
    date::zoned_seconds z(find_zone(zone), SysSeconds(std::chrono::seconds(seconds)));
    return date::format("%Y-%m-%d %H:%M:%S %Z", z);
  } catch (const std::exception&) {
    return epoch_utc(seconds);
  }
}

bool schedule_late(const Schedule& s, std::int64_t now) {
  return !s.paused && now - s.next_fire > s.def.misfire.after.count();
}

json schedule_json(const Schedule& s, std::int64_t now) {
  const ScheduleDefinition& d = s.def;
  return {{"name", d.name},
          {"schedule", d.schedule},
          {"tz", d.time_zone},
          {"queue", d.queue},
          {"payload", raw_json(d.payload)},
          {"priority", d.priority},
          {"max_attempts", d.max_attempts},
          {"group_key", d.group_key ? json(*d.group_key) : json()},
          {"misfire", misfire_name(d.misfire.mode)},
          {"misfire_limit", d.misfire.limit},
          {"misfire_after_seconds", d.misfire.after.count()},
          {"overlap", d.overlap_skip ? "skip" : "allow"},
          {"paused", s.paused},
          {"next_run_at", epoch_utc(s.next_fire)},
          {"next_run_local", epoch_local(s.next_fire, d.time_zone)},
          {"last_run_at", s.last_fire ? json(epoch_utc(*s.last_fire)) : json()},
          {"last_job_id", opt_num(s.last_job_id)},
          {"last_job_status",
           s.last_job_status ? json(std::string(status_name(*s.last_job_status))) : json()},
          {"late", schedule_late(s, now)},
          {"fired", s.fired},
          {"missed", s.missed},
          {"skipped", s.skipped}};
}

Output schedules_view(const std::vector<Schedule>& schedules, std::int64_t now) {
  Output out;
  out.document = json::array();
  const std::vector<Fit> fit = {Fit::shrink, Fit::shrink, Fit::keep, Fit::shrink,
                                Fit::keep,   Fit::keep,   Fit::keep, Fit::keep};
  Table t{{"NAME", "SCHEDULE", "TZ", "QUEUE", "NEXT", "NEXT (UTC)", "LAST", "STATE"}, {}, fit};
  for (const Schedule& s : schedules) {
    out.document.push_back(schedule_json(s, now));
    std::string last = "-";
    if (s.last_fire) {
      last = relative(*s.last_fire, now);
      if (s.last_job_id) {
        last += ", job " + std::to_string(*s.last_job_id);
        last += s.last_job_status ? " " + std::string(status_name(*s.last_job_status)) : " purged";
      }
    }
    std::string state = s.paused ? "paused" : schedule_late(s, now) ? "LATE" : "ok";
    t.rows.push_back(
        {s.def.name, s.def.schedule, s.def.time_zone, s.def.queue,
         epoch_local(s.next_fire, s.def.time_zone) + " (" + relative(s.next_fire, now) + ")",
         epoch_utc(s.next_fire), last, state});
  }
  out.elements = true;
  out.table = t;
  return out;
}

Output schedule_view(const Schedule& s, std::int64_t now, const std::vector<std::int64_t>& coming,
                     const std::vector<ScheduleFire>& fires) {
  Output out;
  json doc = schedule_json(s, now);
  json next = json::array();
  for (std::int64_t t : coming)
    next.push_back({{"at", epoch_utc(t)}, {"local", epoch_local(t, s.def.time_zone)}});
  doc["next_runs"] = next;
  json recent = json::array();
  for (const ScheduleFire& f : fires)
    recent.push_back({{"tick", f.tick ? json(epoch_utc(*f.tick)) : json()},
                      {"by_hand", !f.tick.has_value()},
                      {"job_id", opt_num(f.job_id)},
                      {"job_status", f.status ? json(std::string(status_name(*f.status))) : json()},
                      {"missed", f.missed},
                      {"fired_at", f.fired_at}});
  doc["recent_fires"] = recent;
  out.document = doc;
  const ScheduleDefinition& d = s.def;
  out.lines = {
      "name:       " + d.name,
      "schedule:   " + d.schedule + " (" + d.time_zone + ")",
      "queue:      " + d.queue + ", payload " + d.payload + ", priority " +
          std::to_string(d.priority) + ", max attempts " + std::to_string(d.max_attempts) +
          (d.group_key ? ", group " + *d.group_key : ""),
      std::string("misfire:    ") + misfire_name(d.misfire.mode) +
          (d.misfire.mode == Misfire::all ? " (at most " + std::to_string(d.misfire.limit) + ")"
                                          : "") +
          ", a tick more than " + human_duration(static_cast<double>(d.misfire.after.count())) +
          " late is missed; overlap " + (d.overlap_skip ? "skip" : "allow"),
      std::string("state:      ") +
          (s.paused                ? "paused"
           : schedule_late(s, now) ? "LATE"
                                   : "ok") +
          "; fired " + std::to_string(s.fired) + ", missed " + std::to_string(s.missed) +
          ", skipped " + std::to_string(s.skipped),
      "next runs:"};
  std::size_t local_width = 0;
  for (std::int64_t t : coming)
    local_width = std::max(local_width, epoch_local(t, d.time_zone).size());
  for (std::int64_t t : coming) {
    std::string local = epoch_local(t, d.time_zone);
    local.resize(local_width, ' ');
    out.lines.push_back("  " + local + "   " + epoch_utc(t));
  }
  out.lines.push_back(fires.empty() ? "recent fires: none" : "recent fires:");
  for (const ScheduleFire& f : fires) {
    // (fired_at has microseconds; to the second is enough here)
    const std::string at = f.fired_at.size() > 19 ? f.fired_at.substr(0, 19) + "Z" : f.fired_at;
    std::string line = "  " + (f.tick ? epoch_utc(*f.tick) : "by hand at " + at) + "  ";
    if (f.job_id) {
      line += "job " + std::to_string(*f.job_id) + " " +
              (f.status ? std::string(status_name(*f.status)) : "purged");
    } else {
      line += "skipped: the last job was unfinished";
    }
    if (f.missed > 0) line += " (one job for " + std::to_string(f.missed + 1) + " missed ticks)";
    out.lines.push_back(line);
  }
  return out;
}

Output tick_view(const TickResult& r) {
  Output out;
  json fires = json::array();
  for (const FireEvent& e : r.fires) {
    fires.push_back({{"schedule", e.name},
                     {"queue", e.queue},
                     {"tick", e.tick ? json(epoch_utc(*e.tick)) : json()},
                     {"job_id", opt_num(e.job_id)},
                     {"missed", e.stands_for}});
    std::string line = "schedule " + e.name + ": ";
    const std::string tick = e.tick ? "tick " + epoch_utc(*e.tick) : "a fire by hand";
    line += e.job_id ? "job " + std::to_string(*e.job_id) + " in " + e.queue + " for " + tick
                     : tick + " skipped, its last job is unfinished";
    if (e.stands_for > 0)
      line += " (one job for " + std::to_string(e.stands_for + 1) + " missed ticks)";
    out.lines.push_back(line);
  }
  out.document = {{"jobs", r.jobs}, {"skipped", r.skipped}, {"missed", r.missed}, {"fires", fires}};
  out.items = fires;
  out.lines.push_back(std::to_string(r.jobs) + " job(s) from " + std::to_string(r.schedules) +
                      " schedule(s) due; " + std::to_string(r.skipped) + " tick(s) skipped, " +
                      std::to_string(r.missed) + " missed");
  out.report = true;
  return out;
}

Output apply_view(const std::vector<ApplyChange>& changes, bool dry_run) {
  Output out;
  json doc = json::array();
  int changed = 0;
  for (const ApplyChange& c : changes) {
    json ch = json::array();
    for (const std::string& s : c.changes) ch.push_back(s);
    doc.push_back({{"name", c.name}, {"change", outcome_name(c.outcome)}, {"fields", ch}});
    if (c.outcome == PutOutcome::unchanged) continue;
    ++changed;
    std::string line =
        std::string(dry_run ? "would be " : "") + outcome_name(c.outcome) + ": " + c.name;
    out.lines.push_back(line);
    for (const std::string& s : c.changes) out.lines.push_back("  " + s);
  }
  out.lines.push_back(std::to_string(changed) + " of " + std::to_string(changes.size()) +
                      " schedule(s) " +
                      (dry_run ? "would change (dry run: nothing written)" : "changed"));
  out.document = {{"dry_run", dry_run}, {"changes", doc}};
  out.items = doc;
  out.report = !dry_run;
  return out;
}

std::string schedules_prometheus(const std::vector<Schedule>& schedules, std::int64_t now) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    for (const Schedule& s : schedules) {
      const std::string v = value(s);
      if (v.empty()) continue;
      out += std::string(name) + "{schedule=\"" + s.def.name + "\",queue=\"" + s.def.queue +
             "\"} " + v + "\n";
    }
  };
  family("queuectl_schedule_next_run_timestamp_seconds", "gauge",
         "When the schedule fires next (Unix time).",
         [](const Schedule& s) { return std::to_string(s.next_fire); });
  family(
      "queuectl_schedule_last_run_timestamp_seconds", "gauge",
      "When the schedule last made a job: its tick, or the moment of a cron trigger (Unix time).",
      [](const Schedule& s) { return s.last_fire ? std::to_string(*s.last_fire) : std::string(); });
  family("queuectl_schedule_fired_total", "counter", "Ticks that made a job.",
         [](const Schedule& s) { return std::to_string(s.fired); });
  family("queuectl_schedule_missed_total", "counter",
         "Ticks lost while no firer ran (misfire once or skip, or beyond the all limit).",
         [](const Schedule& s) { return std::to_string(s.missed); });
  family("queuectl_schedule_skipped_total", "counter",
         "Ticks skipped because the last job was unfinished (overlap skip).",
         [](const Schedule& s) { return std::to_string(s.skipped); });
  family("queuectl_schedule_late", "gauge",
         "1 while the schedule's next tick is past its misfire window (no firer is running).",
         [now](const Schedule& s) { return std::string(schedule_late(s, now) ? "1" : "0"); });
  family("queuectl_schedule_paused", "gauge", "1 while the schedule is paused.",
         [](const Schedule& s) { return std::string(s.paused ? "1" : "0"); });
  return out;
}

}  // namespace queuectl
