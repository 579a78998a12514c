#include "db/schedule_repository.hpp"

#include <array>
#include <ctime>
#include <map>

#include "core/cron_schedule.hpp"
#include "core/errors.hpp"
#include "db/job_repository.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::use;

// The fires kept per schedule (queuectl_schedule_fires).
constexpr std::int64_t kFiresKept = 100;

// A row of the schedule columns (ScheduleStatements), read as text.
struct ScheduleRowReader {
  static constexpr std::size_t kColumns = 20;
  std::array<std::string, kColumns + 1> values;
  std::array<soci::indicator, kColumns + 1> nulls{};

  void bind(soci::statement& st, bool with_status = false) {
    for (std::size_t i = 0; i < kColumns + (with_status ? 1 : 0); ++i)
      st.exchange(soci::into(values[i], nulls[i]));
  }
  std::optional<std::int64_t> opt_num(std::size_t i) const {
    if (nulls[i] == soci::i_null) return std::nullopt;
    try {
      return std::stoll(values[i]);
    } catch (const std::exception&) {
      throw Error("unexpected value '" + values[i] + "' in schedule column " + std::to_string(i));
    }
  }
  std::int64_t num(std::size_t i) const { return opt_num(i).value_or(0); }
  std::string text(std::size_t i) const { return nulls[i] == soci::i_null ? "" : values[i]; }

  Schedule schedule(bool with_status = false) const {
    Schedule s;
    ScheduleDefinition& d = s.def;
    d.name = text(0);
    d.queue = text(1);
    d.payload = text(2);
    d.priority = static_cast<int>(num(3));
    d.max_attempts = static_cast<int>(num(4));
    if (nulls[5] != soci::i_null) d.group_key = values[5];
    d.schedule = text(6);
    d.time_zone = text(7);
    try {
      d.misfire.mode = parse_misfire(text(8));
    } catch (const UsageError&) {
      throw Error("schedule " + d.name + ": unknown misfire '" + text(8) + "' stored");
    }
    d.misfire.limit = static_cast<int>(num(9));
    d.misfire.after = std::chrono::seconds(num(10));
    d.overlap_skip = text(11) == "skip";
    s.paused = num(12) != 0;
    s.next_fire = num(13);
    s.last_fire = opt_num(14);
    s.last_job_id = opt_num(15);
    s.fired = num(16);
    s.missed = num(17);
    s.skipped = num(18);
    s.seq = num(19);
    if (with_status) {
      if (auto st = opt_num(20)) s.last_job_status = static_cast<Status>(*st);
    }
    return s;
  }
};

template <typename AddUses>
std::vector<Schedule> fetch_schedules(soci::session& session, const std::string& sql,
                                      AddUses add_uses, bool with_status = false) {
  soci::statement st(session);
  ScheduleRowReader reader;
  reader.bind(st, with_status);
  add_uses(st);
  prepare_once(st, sql);
  std::vector<Schedule> out;
  for (bool got = st.execute(true); got; got = st.fetch())
    out.push_back(reader.schedule(with_status));
  return out;
}

std::optional<Schedule> one_schedule(Database& db, const std::string& sql,
                                     const std::string& name) {
  std::string n = name;
  auto rows =
      fetch_schedules(db.session(), sql, [&](soci::statement& st) { st.exchange(use(n, "name")); });
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

std::int64_t read_now(Database& db) {
  long long now = 0;
  db.session() << db.sql().schedules.now, soci::into(now);
  return now;
}

// "YYYY-MM-DD HH:MM:SS.000000" UTC: a job's run_at (NewJob::run_at's form).
std::string utc_text(std::int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S.000000", &tm);
  return buf;
}

// Inserts one job of the schedule; run_at the tick (none: now). Returns its id.
std::int64_t insert_job(Database& db, const ScheduleDefinition& d,
                        std::optional<std::int64_t> tick) {
  NewJob job;
  job.queue = d.queue;
  job.payload = d.payload;
  job.priority = d.priority;
  job.max_attempts = d.max_attempts;
  job.group_key = d.group_key;
  if (tick) job.run_at = utc_text(*tick);
  if (insert_job_row(db, job) != 1)
    throw Error("schedule " + d.name + ": its job was not inserted");
  long long id = 0;
  db.session() << db.sql().enqueue.last_insert_id, soci::into(id);
  return id;
}

void record_fire(Database& db, const std::string& name, std::int64_t seq,
                 std::optional<std::int64_t> tick, std::optional<std::int64_t> job_id,
                 std::int64_t missed) {
  std::string n = name;
  long long sq = seq, t = tick.value_or(0), job = job_id.value_or(0), m = missed;
  soci::indicator tick_ind = tick ? soci::i_ok : soci::i_null;
  soci::indicator job_ind = job_id ? soci::i_ok : soci::i_null;
  db.session() << db.sql().schedules.record_fire, use(n, "name"), use(sq, "seq"),
      use(t, tick_ind, "tick"), use(job, job_ind, "job_id"), use(m, "missed");
}

void prune_fires(Database& db, const std::string& name, std::int64_t seq) {
  if (seq <= kFiresKept) return;
  std::string n = name;
  long long below = seq - kFiresKept;
  db.session() << db.sql().schedules.prune_fires, use(n, "name"), use(below, "below");
}

// Another firer moved the schedule on between our pick and our write (the pick's lock should
// make this impossible; a multi-primary cluster is where it could happen): the batch is
// rolled back and picked again.
struct ScheduleRace {};

bool unfinished(Database& db, std::int64_t job_id) {
  long long id = job_id;
  int status = -1;
  soci::indicator ind = soci::i_null;
  db.session() << db.sql().schedules.job_status, use(id, "id"), soci::into(status, ind);
  if (ind == soci::i_null || !db.session().got_data()) return false;  // purged
  return status == static_cast<int>(Status::ready) ||
         status == static_cast<int>(Status::processing);
}

}  // namespace

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
    soci::statement st = (db_.session().prepare << db_.sql().schedules.remove, use(n, "name"));
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
  return out;
}

std::vector<std::string> ScheduleRepository::names() {
  std::vector<std::string> out;
  db_.retrying([&] {
    out.clear();
    std::string name;
    soci::statement st = (db_.session().prepare << db_.sql().schedules.names, soci::into(name));
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
    soci::statement st =
        (db_.session().prepare << db_.sql().schedules.recent_fires, soci::into(seq),
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

int ScheduleRepository::fire_batch(const std::optional<std::string>& queue, int batch, int skip,
                                   TickResult& out) {
  TickResult mine;
  int handled = 0;
  db_.transaction([&] {
    mine = TickResult{};
    handled = 0;
    const auto& q = db_.sql().schedules;
    long long now = read_now(db_);
    std::string qn = queue.value_or("");
    soci::indicator q_ind = queue ? soci::i_ok : soci::i_null;
    int b = batch, past = skip;
    const std::vector<Schedule> due =
        fetch_schedules(db_.session(), q.due_pick, [&](soci::statement& st) {
          st.exchange(use(qn, q_ind, "queue"));
          st.exchange(use(now, "now"));
          st.exchange(use(b, "batch"));
          st.exchange(use(past, "skip"));
        });
    handled = static_cast<int>(due.size());
    for (const Schedule& s : due) {
      CronSchedule cron;
      const date::time_zone* zone = nullptr;
      try {
        cron = CronSchedule::parse(s.def.schedule);
        zone = find_zone(s.def.time_zone);
      } catch (const UsageError& e) {
        // Its text or zone no longer reads (edited by hand, a host without that zone): it
        // is left as it is, and the others still fire.
        mine.errors.push_back("schedule " + s.def.name + " cannot fire: " + e.what() +
                              " (fix it with queuectl cron add, or remove it)");
        continue;
      }
      const FirePlan plan = plan_fires(cron, zone, s.next_fire, now, s.def.misfire);
      std::optional<std::int64_t> last_job = s.last_job_id, new_job, last_fire;
      std::vector<FireEvent> events;
      std::int64_t jobs = 0, skipped = 0;
      for (const PlannedTick& t : plan.fire) {
        FireEvent e{s.def.name, s.def.queue, t.tick, std::nullopt, t.stands_for};
        if (s.def.overlap_skip && last_job && unfinished(db_, *last_job)) {
          ++skipped;
        } else {
          e.job_id = insert_job(db_, s.def, t.tick);
          last_job = new_job = e.job_id;
          last_fire = t.tick;
          ++jobs;
        }
        events.push_back(e);
      }
      std::string name = s.def.name;
      long long next = plan.next, old_next = s.next_fire, lf = last_fire.value_or(0),
                lj = new_job.value_or(0), fired = jobs, missed = plan.missed, sk = skipped,
                fires = static_cast<long long>(events.size());
      soci::indicator lf_ind = last_fire ? soci::i_ok : soci::i_null;
      soci::indicator lj_ind = new_job ? soci::i_ok : soci::i_null;
      soci::statement adv = statement_once(
          db_.session(), q.advance, use(next, "next_fire"), use(lf, lf_ind, "last_fire"),
          use(lj, lj_ind, "last_job_id"), use(fired, "fired"), use(missed, "missed"),
          use(sk, "skipped"), use(fires, "fires"), use(name, "name"), use(old_next, "old_next"));
      adv.execute(true);
      if (adv.get_affected_rows() != 1) throw ScheduleRace{};
      std::int64_t seq = s.seq;
      for (const FireEvent& e : events)
        record_fire(db_, name, ++seq, e.tick, e.job_id, e.stands_for);
      prune_fires(db_, name, seq);
      mine.fires.insert(mine.fires.end(), events.begin(), events.end());
      mine.jobs += jobs;
      mine.missed += plan.missed;
      mine.skipped += skipped;
      ++mine.schedules;
    }
  });
  out.fires.insert(out.fires.end(), mine.fires.begin(), mine.fires.end());
  out.jobs += mine.jobs;
  out.missed += mine.missed;
  out.skipped += mine.skipped;
  out.schedules += mine.schedules;
  out.errors.insert(out.errors.end(), mine.errors.begin(), mine.errors.end());
  return handled;
}

TickResult ScheduleRepository::tick(const std::optional<std::string>& queue, int batch,
                                    int max_batches) {
  TickResult out;
  // A cheap read first: most calls (a worker's, every second) find nothing due, and then
  // take no lock (on SQLite, not the database's write lock).
  bool any = false;
  db_.retrying([&] {
    std::string qn = queue.value_or("");
    soci::indicator q_ind = queue ? soci::i_ok : soci::i_null;
    int one = 0;
    soci::indicator one_ind = soci::i_null;
    db_.session() << db_.sql().schedules.any_due, use(qn, q_ind, "queue"), soci::into(one, one_ind);
    any = db_.session().got_data();
  });
  if (!any) return out;
  int races = 0;
  // Schedules that cannot fire stay due and, being the oldest, come first: the next batch
  // starts past them.
  int skip = 0;
  for (int n = 0; max_batches <= 0 || n < max_batches; ++n) {
    int handled = 0;
    try {
      const std::size_t errors_before = out.errors.size();
      handled = fire_batch(queue, batch, skip, out);
      skip += static_cast<int>(out.errors.size() - errors_before);
    } catch (const ScheduleRace&) {
      if (++races > 8) throw TemporaryError("schedules kept changing under this firer; try again");
      continue;
    }
    if (handled < batch) break;
  }
  return out;
}

FireEvent ScheduleRepository::trigger(const std::string& name) {
  FireEvent event;
  db_.transaction([&] {
    const std::optional<Schedule> s = one_schedule(db_, db_.sql().schedules.lock, name);
    if (!s) throw NotFound("no schedule named " + name + " (see queuectl cron list)");
    event = FireEvent{s->def.name, s->def.queue, std::nullopt,
                      insert_job(db_, s->def, std::nullopt), 0};
    std::string n = name;
    long long job = *event.job_id, now = read_now(db_);
    db_.session() << db_.sql().schedules.triggered, use(n, "name"), use(job, "last_job_id"),
        use(now, "last_fire");
    record_fire(db_, name, s->seq + 1, std::nullopt, event.job_id, 0);
    prune_fires(db_, name, s->seq + 1);
  });
  return event;
}

}  // namespace queuectl
