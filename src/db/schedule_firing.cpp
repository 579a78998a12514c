// ScheduleRepository: firing due schedules (tick, trigger). Definitions and reads:
// schedule_repository.cpp.
#include <algorithm>
#include <ctime>

#include "core/cron_schedule.hpp"
#include "core/errors.hpp"
#include "db/job_repository.hpp"
#include "db/row_reader.hpp"
#include "db/schedule_repository.hpp"
#include "db/schedule_rows.hpp"

namespace queuectl {
namespace {

using schedule_rows::fetch_schedules;
using schedule_rows::one_schedule;
using schedule_rows::read_now;
using soci::use;

// The fires kept per schedule (queuectl_schedule_fires).
constexpr std::int64_t kFiresKept = 100;

// "YYYY-MM-DD HH:MM:SS.000000" UTC: a job's run_at (NewJob::run_at's form).
std::string utc_text(std::int64_t seconds) {
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S.000000", &tm);
  return buf;
}

// The job of one fire of the schedule; run_at the tick (none: now).
NewJob job_of(const ScheduleDefinition& d, std::optional<std::int64_t> tick) {
  NewJob job;
  job.queue = d.queue;
  job.payload = d.payload;
  job.priority = d.priority;
  job.max_attempts = d.max_attempts;
  job.group_key = d.group_key;
  if (tick) job.run_at = utc_text(*tick);
  return job;
}

// A fire's row of the schedule's history (queuectl_schedule_fires).
struct FireRow {
  std::string name;
  long long seq = 0;
  std::optional<std::int64_t> tick, job_id;
  long long missed = 0;
};

// Writes `fires` in as few statements as fit (kFireRows rows each).
void record_fires(Database& db, const std::vector<FireRow>& fires) {
  constexpr std::size_t kFireRows = 500;
  const InsertValuesRows& rows = db.sql().schedules.record_fires;
  for (std::size_t start = 0; start < fires.size(); start += kFireRows) {
    const std::size_t n = std::min(kFireRows, fires.size() - start);
    // Sized up front so that the bound references stay valid.
    std::vector<long long> tick(n), job(n);
    std::vector<soci::indicator> tick_ind(n), job_ind(n);
    std::string sql = rows.prefix;
    soci::statement st(db.session());
    for (std::size_t i = 0; i < n; ++i) {
      const FireRow& f = fires[start + i];
      tick[i] = f.tick.value_or(0);
      tick_ind[i] = f.tick ? soci::i_ok : soci::i_null;
      job[i] = f.job_id.value_or(0);
      job_ind[i] = f.job_id ? soci::i_ok : soci::i_null;
      sql += (i ? ", " : "") + values_row(rows, i);
      st.exchange(use(f.name));
      st.exchange(use(f.seq));
      st.exchange(use(tick[i], tick_ind[i]));
      st.exchange(use(job[i], job_ind[i]));
      st.exchange(use(f.missed));
    }
    prepare_once(st, sql + rows.suffix);
    st.execute(true);
  }
}

// Trims the schedule's history to about kFiresKept fires: when its seq went from `before`
// to `after` past a multiple of kPruneEvery (so once per kPruneEvery fires, not every fire).
void prune_fires(Database& db, const std::string& name, std::int64_t before, std::int64_t after) {
  constexpr std::int64_t kPruneEvery = 20;
  if (after <= kFiresKept || before / kPruneEvery == after / kPruneEvery) return;
  std::string n = name;
  long long below = after - kFiresKept;
  db.session() << db.sql().schedules.prune_fires, use(n, "name"), use(below, "below");
}

// Another firer moved the schedule on between our pick and our write (the pick's lock should
// make this impossible; a multi-primary cluster is where it could happen): the batch is
// rolled back and picked again.
struct ScheduleRace {};

bool unfinished(Database& db, std::int64_t job_id) {
  const std::optional<Status> status = schedule_rows::job_status(db, job_id);  // none: purged
  return status == Status::ready || status == Status::processing;
}

}  // namespace

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
    // First every schedule's plan and the jobs it makes, then the jobs in one INSERT, the
    // swaps, and the history in one INSERT: a batch costs a few statements, not a few per
    // fire.
    struct Firing {
      const Schedule* s;
      FirePlan plan;
      std::vector<FireEvent> events;
      std::vector<std::size_t> job_of_event;  // index into jobs; npos: skipped
      std::int64_t jobs = 0, skipped = 0;
    };
    constexpr std::size_t kSkipped = static_cast<std::size_t>(-1);
    std::vector<Firing> firings;
    std::vector<NewJob> jobs;
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
      Firing f{&s, plan_fires(cron, zone, s.next_fire, now, s.def.misfire), {}, {}, 0, 0};
      // Overlap skip: the last job's status is read only if the schedule asks; a job this
      // batch makes is unfinished by definition.
      bool busy = s.def.overlap_skip && s.last_job_id && unfinished(db_, *s.last_job_id);
      for (const PlannedTick& t : f.plan.fire) {
        f.events.push_back(FireEvent{s.def.name, s.def.queue, t.tick, std::nullopt, t.stands_for});
        if (busy) {
          f.job_of_event.push_back(kSkipped);
          ++f.skipped;
          continue;
        }
        f.job_of_event.push_back(jobs.size());
        jobs.push_back(job_of(s.def, t.tick));
        ++f.jobs;
        busy = s.def.overlap_skip;
      }
      firings.push_back(std::move(f));
    }
    const std::vector<std::int64_t> ids = insert_job_rows(db_, jobs);
    std::vector<FireRow> history;
    for (Firing& f : firings) {
      const Schedule& s = *f.s;
      std::optional<std::int64_t> last_job, last_fire;
      for (std::size_t i = 0; i < f.events.size(); ++i) {
        if (f.job_of_event[i] == kSkipped) continue;
        f.events[i].job_id = last_job = ids[f.job_of_event[i]];
        last_fire = f.events[i].tick;
      }
      std::string name = s.def.name;
      long long next = f.plan.next, old_next = s.next_fire, lf = last_fire.value_or(0),
                lj = last_job.value_or(0), fired = f.jobs, missed = f.plan.missed, sk = f.skipped,
                fires = static_cast<long long>(f.events.size());
      soci::indicator lf_ind = last_fire ? soci::i_ok : soci::i_null;
      soci::indicator lj_ind = last_job ? soci::i_ok : soci::i_null;
      soci::statement adv = statement_once(
          db_.session(), q.advance, use(next, "next_fire"), use(lf, lf_ind, "last_fire"),
          use(lj, lj_ind, "last_job_id"), use(fired, "fired"), use(missed, "missed"),
          use(sk, "skipped"), use(fires, "fires"), use(name, "name"), use(old_next, "old_next"));
      adv.execute(true);
      if (adv.get_affected_rows() != 1) throw ScheduleRace{};
      std::int64_t seq = s.seq;
      for (const FireEvent& e : f.events)
        history.push_back(FireRow{name, ++seq, e.tick, e.job_id, e.stands_for});
      mine.fires.insert(mine.fires.end(), f.events.begin(), f.events.end());
      mine.jobs += f.jobs;
      mine.missed += f.plan.missed;
      mine.skipped += f.skipped;
      ++mine.schedules;
    }
    record_fires(db_, history);
    for (const Firing& f : firings)
      prune_fires(db_, f.s->def.name, f.s->seq,
                  f.s->seq + static_cast<std::int64_t>(f.events.size()));
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
    const std::vector<std::int64_t> ids = insert_job_rows(db_, {job_of(s->def, std::nullopt)});
    event = FireEvent{s->def.name, s->def.queue, std::nullopt, ids.front(), 0};
    std::string n = name;
    long long job = *event.job_id, now = read_now(db_);
    db_.session() << db_.sql().schedules.triggered, use(n, "name"), use(job, "last_job_id"),
        use(now, "last_fire");
    record_fires(db_, {FireRow{name, s->seq + 1, std::nullopt, event.job_id, 0}});
    prune_fires(db_, name, s->seq, s->seq + 1);
  });
  return event;
}

}  // namespace queuectl
