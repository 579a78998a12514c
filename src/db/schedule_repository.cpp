#include "db/schedule_repository.hpp"

#include <array>
#include <ctime>
#include <map>

#include "core/cron_schedule.hpp"
#include "core/errors.hpp"
#include "db/job_repository.hpp"
#include "db/row_reader.hpp"
#include "db/schedule_rows.hpp"

namespace queuectl {

using schedule_rows::fetch_schedules;
using schedule_rows::one_schedule;
using schedule_rows::read_now;
using soci::use;

bool ScheduleDefinition::operator==(const ScheduleDefinition& o) const {
  return name == o.name && queue == o.queue && payload == o.payload && priority == o.priority &&
         max_attempts == o.max_attempts && group_key == o.group_key && schedule == o.schedule &&
         time_zone == o.time_zone && misfire.mode == o.misfire.mode &&
         misfire.limit == o.misfire.limit && misfire.after == o.misfire.after &&
         overlap_skip == o.overlap_skip;
}

std::int64_t first_tick_after(const std::string& schedule, const std::string& time_zone,
                              std::int64_t now) {
  return CronSchedule::parse(schedule)
      .next_after(SysSeconds(std::chrono::seconds(now)), find_zone(time_zone))
      .time_since_epoch()
      .count();
}

std::int64_t ScheduleRepository::now() {
  std::int64_t out = 0;
  db_.retrying([&] { out = read_now(db_); });
  return out;
}

// Another process added the same name between our read and our INSERT (both read no row:
// there was none to lock). The transaction is run again, and finds the row then.
struct ScheduleAddRace {};

PutOutcome ScheduleRepository::put(const ScheduleDefinition& def) {
  PutOutcome outcome = PutOutcome::added;
  for (int attempt = 1;; ++attempt) {
    try {
      db_.transaction([&] { outcome = put_locked(def, false); });
      return outcome;
    } catch (const ScheduleAddRace&) {
      if (attempt >= 3) throw TemporaryError("schedule " + def.name + " kept changing; try again");
    }
  }
}

PutOutcome ScheduleRepository::put_locked(const ScheduleDefinition& def, bool dry_run) {
  const std::optional<Schedule> old = one_schedule(db_, db_.sql().schedules.lock, def.name);
  if (old && old->def == def) return PutOutcome::unchanged;
  const PutOutcome outcome = old ? PutOutcome::replaced : PutOutcome::added;
  if (dry_run) return outcome;
  long long next = 0;
  if (old && old->def.schedule == def.schedule && old->def.time_zone == def.time_zone)
    next = old->next_fire;
  else
    next = first_tick_after(def.schedule, def.time_zone, read_now(db_));
  std::string name = def.name, queue = def.queue, payload = def.payload,
              group = def.group_key.value_or(""), schedule = def.schedule, tz = def.time_zone,
              misfire = misfire_name(def.misfire.mode),
              overlap = def.overlap_skip ? "skip" : "allow";
  int priority = def.priority, max_attempts = def.max_attempts, limit = def.misfire.limit;
  int after = static_cast<int>(def.misfire.after.count());
  soci::indicator group_ind = def.group_key ? soci::i_ok : soci::i_null;
  const auto& q = db_.sql().schedules;
  soci::statement st = statement_once(
      db_.session(), old ? q.redefine : q.insert, use(name, "name"), use(queue, "queue"),
      use(payload, "payload"), use(priority, "priority"), use(max_attempts, "max_attempts"),
      use(group, group_ind, "group_key"), use(schedule, "schedule"), use(tz, "time_zone"),
      use(misfire, "misfire"), use(limit, "misfire_limit"), use(after, "misfire_after"),
      use(overlap, "overlap"), use(next, "next_fire"));
  st.execute(true);
  // The INSERT skips a name another process added since our read: start over.
  if (!old && st.get_affected_rows() == 0) throw ScheduleAddRace{};
  return outcome;
}

std::vector<ApplyChange> ScheduleRepository::apply(const std::vector<ScheduleDefinition>& defs,
                                                   bool prune, bool dry_run) {
  for (int attempt = 1;; ++attempt) {
    try {
      return apply_once(defs, prune, dry_run);
    } catch (const ScheduleAddRace&) {
      if (attempt >= 3) throw TemporaryError("the schedules kept changing; try again");
    }
  }
}

std::vector<ApplyChange> ScheduleRepository::apply_once(const std::vector<ScheduleDefinition>& defs,
                                                        bool prune, bool dry_run) {
  std::vector<ApplyChange> out;
  db_.transaction([&] {
    out.clear();
    std::map<std::string, const ScheduleDefinition*> wanted;
    for (const ScheduleDefinition& d : defs) wanted[d.name] = &d;
    std::map<std::string, ScheduleDefinition> stored;
    for (const Schedule& s : fetch_schedules(
             db_.session(), db_.sql().schedules.list, [](soci::statement&) {}, true))
      stored[s.def.name] = s.def;
    for (const auto& [name, def] : wanted) {
      ApplyChange c{name, put_locked(*def, dry_run), {}};
      auto it = stored.find(name);
      if (c.outcome == PutOutcome::replaced && it != stored.end())
        c.changes = definition_changes(it->second, *def);
      out.push_back(c);
    }
    if (!prune) return;
    for (const auto& [name, def] : stored) {
      if (wanted.count(name)) continue;
      if (!dry_run) {
        std::string n = name;
        db_.session() << db_.sql().schedules.remove, use(n, "name");
        db_.session() << db_.sql().schedules.remove_fires, use(n, "name");
      }
      out.push_back({name, PutOutcome::removed, {}});
    }
  });
  return out;
}

std::vector<std::string> definition_changes(const ScheduleDefinition& a,
                                            const ScheduleDefinition& b) {
  std::vector<std::string> out;
  auto quoted = [](const std::string& v) { return "'" + v + "'"; };
  auto add = [&](const char* field, const std::string& from, const std::string& to) {
    if (from != to) out.push_back(std::string(field) + ": " + from + " -> " + to);
  };
  add("schedule", quoted(a.schedule), quoted(b.schedule));
  add("tz", a.time_zone, b.time_zone);
  add("queue", a.queue, b.queue);
  add("payload", a.payload, b.payload);
  add("priority", std::to_string(a.priority), std::to_string(b.priority));
  add("max_attempts", std::to_string(a.max_attempts), std::to_string(b.max_attempts));
  add("group_key", a.group_key ? quoted(*a.group_key) : "none",
      b.group_key ? quoted(*b.group_key) : "none");
  add("misfire", misfire_name(a.misfire.mode), misfire_name(b.misfire.mode));
  add("misfire_limit", std::to_string(a.misfire.limit), std::to_string(b.misfire.limit));
  add("misfire_after", std::to_string(a.misfire.after.count()) + "s",
      std::to_string(b.misfire.after.count()) + "s");
  add("overlap", a.overlap_skip ? "skip" : "allow", b.overlap_skip ? "skip" : "allow");
  return out;
}

bool ScheduleRepository::remove(const std::string& name) {
  long long removed = 0;
  db_.transaction([&] {
    std::string n = name;
    soci::statement st = statement_once(db_.session(), db_.sql().schedules.remove, use(n, "name"));
    st.execute(true);
    removed = st.get_affected_rows();
    db_.session() << db_.sql().schedules.remove_fires, use(n, "name");
  });
  return removed > 0;
}

bool ScheduleRepository::set_paused(const std::string& name, bool paused) {
  bool changed = false;
  db_.transaction([&] {
    const std::optional<Schedule> s = one_schedule(db_, db_.sql().schedules.lock, name);
    if (!s) throw NotFound("no schedule named " + name + " (see queuectl cron list)");
    changed = s->paused != paused;
    if (!changed) return;
    long long next =
        paused ? s->next_fire : first_tick_after(s->def.schedule, s->def.time_zone, read_now(db_));
    std::string n = name;
    int p = paused ? 1 : 0;
    db_.session() << db_.sql().schedules.set_paused, use(n, "name"), use(p, "paused"),
        use(next, "next_fire");
  });
  return changed;
}

std::vector<Schedule> ScheduleRepository::list() {
  std::vector<Schedule> out;
  db_.retrying([&] {
    out = fetch_schedules(
        db_.session(), db_.sql().schedules.list, [](soci::statement&) {}, true);
  });
  return out;
}

std::optional<Schedule> ScheduleRepository::find(const std::string& name) {
  std::optional<Schedule> out;
  db_.retrying([&] { out = one_schedule(db_, db_.sql().schedules.get, name); });
  // The last job's status, as list() joins it (`get` is also the locking read of a fire,
  // which joins nothing).
  if (out && out->last_job_id)
    db_.retrying([&] { out->last_job_status = schedule_rows::job_status(db_, *out->last_job_id); });
  return out;
}

std::vector<std::string> ScheduleRepository::names() {
  std::vector<std::string> out;
  db_.retrying([&] {
    out.clear();
    std::string name;
    soci::statement st = statement_once(db_.session(), db_.sql().schedules.names, soci::into(name));
    for (bool got = st.execute(true); got; got = st.fetch()) out.push_back(name);
  });
  return out;
}

std::vector<ScheduleFire> ScheduleRepository::recent_fires(const std::string& name, int limit) {
  std::vector<ScheduleFire> out;
  db_.retrying([&] {
    out.clear();
    std::string n = name;
    int lim = limit;
    long long seq = 0, tick = 0, job = 0, missed = 0;
    int status = 0;
    std::string at;
    soci::indicator tick_ind, job_ind, status_ind;
    soci::statement st = statement_once(
        db_.session(), db_.sql().schedules.recent_fires, soci::into(seq),
        soci::into(tick, tick_ind), soci::into(job, job_ind), soci::into(missed),
        soci::into(status, status_ind), soci::into(at), use(n, "name"), use(lim, "limit"));
    for (bool got = st.execute(true); got; got = st.fetch()) {
      ScheduleFire f;
      f.seq = seq;
      if (tick_ind == soci::i_ok) f.tick = tick;
      if (job_ind == soci::i_ok) f.job_id = job;
      f.missed = missed;
      if (status_ind == soci::i_ok) f.status = static_cast<Status>(status);
      f.fired_at = at;
      out.push_back(f);
    }
  });
  return out;
}

}  // namespace queuectl
