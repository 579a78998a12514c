#include "db/top_repository.hpp"

#include "core/rate_limit.hpp"

#include <algorithm>
#include <map>

#include "db/row_reader.hpp"

namespace queuectl {

TopSnapshot TopRepository::read(int workers, int failures) {
  TopSnapshot out;
  std::map<std::string, TopQueue> by_queue;
  auto entry = [&](const std::string& name) -> TopQueue& {
    TopQueue& q = by_queue[name];
    q.queue = name;
    return q;
  };
  db_.snapshot([&] {
    by_queue.clear();
    out = TopSnapshot{};
    auto& s = db_.session();
    const Statements& q = db_.sql();
    s << q.now, soci::into(out.now);

    std::string name;
    long long a = 0, b = 0, c = 0;
    double age = 0;
    soci::indicator a_ind = soci::i_null, b_ind = soci::i_null, c_ind = soci::i_null,
                    age_ind = soci::i_null;
    // Each statement runs once, unprepared: one round trip each on PostgreSQL.
    soci::statement ready(s);
    ready.exchange(soci::into(name));
    ready.exchange(soci::into(a, a_ind));
    ready.exchange(soci::into(b, b_ind));
    ready.exchange(soci::into(age, age_ind));
    long long w = 0;
    soci::indicator w_ind = soci::i_null;
    ready.exchange(soci::into(w, w_ind));
    prepare_once(ready, q.listing.stats_ready);
    for (bool got = ready.execute(true); got; got = ready.fetch()) {
      TopQueue& tq = entry(name);
      tq.ready = a_ind == soci::i_null ? 0 : a;
      tq.scheduled = b_ind == soci::i_null ? 0 : b;
      tq.waiting = w_ind == soci::i_null ? 0 : w;
      if (age_ind != soci::i_null) tq.oldest_ready_age_seconds = std::max(0.0, age);
    }
    soci::statement processing(s);
    processing.exchange(soci::into(name));
    processing.exchange(soci::into(a, a_ind));
    processing.exchange(soci::into(b, b_ind));
    processing.exchange(soci::into(c, c_ind));
    prepare_once(processing, q.listing.stats_processing);
    for (bool got = processing.execute(true); got; got = processing.fetch()) {
      TopQueue& tq = entry(name);
      tq.processing = a;
      tq.expired = b_ind == soci::i_null ? 0 : b;
    }
    soci::statement failed(s);
    failed.exchange(soci::into(name));
    failed.exchange(soci::into(a));
    prepare_once(failed, q.top.failed);
    for (bool got = failed.execute(true); got; got = failed.fetch()) entry(name).failed = a;
    soci::statement done(s);
    done.exchange(soci::into(name));
    done.exchange(soci::into(a));
    prepare_once(done, q.top.done_recently);
    for (bool got = done.execute(true); got; got = done.fetch())
      if (a > 0) entry(name).done_last_minute = a;
    int paused = 0, strict = 0, rate_count = 0, keep_done = 1;
    long long rate_period = 0, retain_ms = 0;
    soci::indicator rate_ind = soci::i_null, period_ind = soci::i_null, retain_ind = soci::i_null;
    soci::statement settings(s);
    settings.exchange(soci::into(name));
    settings.exchange(soci::into(paused));
    settings.exchange(soci::into(strict));
    settings.exchange(soci::into(c, c_ind));
    settings.exchange(soci::into(rate_count, rate_ind));
    settings.exchange(soci::into(rate_period, period_ind));
    settings.exchange(soci::into(retain_ms, retain_ind));
    settings.exchange(soci::into(keep_done));
    prepare_once(settings, q.top.queue_settings);
    for (bool got = settings.execute(true); got; got = settings.fetch()) {
      TopQueue& tq = entry(name);
      tq.paused = paused != 0;
      tq.strict_groups = strict != 0;
      if (c_ind != soci::i_null) tq.max_processing = c;
      if (rate_ind == soci::i_ok && period_ind == soci::i_ok)
        tq.rate = RateLimit{rate_count, rate_period, 1, false}.rate_text();
      if (retain_ind == soci::i_ok) tq.retain_ms = retain_ms;
      tq.keep_done = keep_done != 0;
    }

    std::string worker;
    soci::indicator worker_ind = soci::i_null;
    int limit = workers;
    soci::statement busiest(s);
    busiest.exchange(soci::into(worker, worker_ind));
    busiest.exchange(soci::into(a));
    busiest.exchange(soci::into(b, b_ind));
    busiest.exchange(soci::use(limit, "limit"));
    prepare_once(busiest, q.top.workers);
    for (bool got = busiest.execute(true); got; got = busiest.fetch()) {
      TopWorker w;
      if (worker_ind != soci::i_null) w.worker = worker;
      w.leases = a;
      w.expired = b_ind == soci::i_null ? 0 : b;
      out.workers.push_back(w);
    }

    long long id = 0;
    int attempts = 0;
    std::string error;
    soci::indicator error_ind = soci::i_null;
    int failure_limit = failures;
    soci::statement newest(s);
    newest.exchange(soci::into(id));
    newest.exchange(soci::into(name));
    newest.exchange(soci::into(attempts));
    newest.exchange(soci::into(age, age_ind));
    newest.exchange(soci::into(error, error_ind));
    newest.exchange(soci::use(failure_limit, "limit"));
    prepare_once(newest, q.top.failures);
    for (bool got = newest.execute(true); got; got = newest.fetch()) {
      TopFailure f;
      f.id = id;
      f.queue = name;
      f.attempts = attempts;
      if (age_ind != soci::i_null) f.age_seconds = std::max(0.0, age);
      f.error = error_ind == soci::i_null ? std::string() : error;
      out.failures.push_back(f);
    }

    {
      long long job = 0;
      int progress = 0, progress_limit = failures;
      std::string worker, note;
      soci::indicator worker_ind = soci::i_null, progress_ind = soci::i_null,
                      note_ind = soci::i_null;
      soci::statement reported(s);
      reported.exchange(soci::into(job));
      reported.exchange(soci::into(name));
      reported.exchange(soci::into(worker, worker_ind));
      reported.exchange(soci::into(progress, progress_ind));
      reported.exchange(soci::into(note, note_ind));
      reported.exchange(soci::use(progress_limit, "limit"));
      prepare_once(reported, q.top.progress);
      out.progress.clear();
      for (bool got = reported.execute(true); got; got = reported.fetch()) {
        TopProgress p;
        p.id = job;
        p.queue = name;
        if (worker_ind != soci::i_null) p.worker = worker;
        if (progress_ind != soci::i_null) p.progress = progress;
        if (note_ind != soci::i_null) p.note = note;
        out.progress.push_back(p);
      }
    }

    long long late = 0;
    std::string queue;
    int late_limit = 5;
    soci::statement overdue(s);
    overdue.exchange(soci::into(name));
    overdue.exchange(soci::into(queue));
    overdue.exchange(soci::into(late));
    overdue.exchange(soci::use(late_limit, "limit"));
    prepare_once(overdue, q.schedules.late);
    out.late_schedules.clear();
    for (bool got = overdue.execute(true); got; got = overdue.fetch())
      out.late_schedules.push_back({name, queue, late});
  });
  for (auto& [name, tq] : by_queue) out.queues.push_back(tq);
  return out;
}

}  // namespace queuectl
