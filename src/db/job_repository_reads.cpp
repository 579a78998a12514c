// JobRepository: reading jobs (find, get, list), per-queue stats, the database's clock.
#include <algorithm>
#include <limits>
#include <map>

#include "core/errors.hpp"
#include "db/dialects/count_sql.hpp"
#include "db/dialects/list_sql.hpp"
#include "db/job_repository.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::use;

}  // namespace

std::optional<Job> JobRepository::find(std::int64_t id) {
  std::vector<Job> jobs;
  db_.retrying([&] {
    long long bound = id;
    jobs = fetch_jobs(db_.session(), db_.sql().job_by_id,
                      [&](soci::statement& st) { st.exchange(use(bound, "id")); });
  });
  if (jobs.empty()) return std::nullopt;
  return jobs.front();
}

Job JobRepository::get(std::int64_t id) {
  auto job = find(id);
  if (!job) throw NotFound("job " + std::to_string(id) + " not found");
  return *job;
}

namespace {

// One listing of `f`: its statement, with `columns`, and the values it binds (kept here, so
// that they outlive the statement's binds). One status reads the index that holds it alone;
// the rest, the general listing (db/dialects/list_sql.hpp).
class Listing {
 public:
  Listing(Database& db, const ListFilter& f, const std::string& columns) : f_(f) {
    for (Status st : f.statuses) mask_ |= 1 << static_cast<int>(st);
    if (f.statuses.empty()) mask_ = 0x1f;
    ListingShape shape;
    shape.by_queue = f.queue.has_value();
    shape.newest_first = f.newest_first;
    shape.by_group = f.group_key.has_value();
    shape.by_error = f.error_text.has_value();
    std::optional<std::string> one;
    if (f.statuses.size() == 1) {
      shape.status = f.statuses.front();
      one = list_one_status_sql(db.dialect().backend(), columns, shape);
    }
    if (!one && f.queue && db.dialect().backend() == Backend::sqlite) {
      long long rows = 0;
      int cap = kSmallQueueRows;
      db.session() << sqlite_queue_rows_sql(), use(queue_, "queue"), use(cap, "cap"),
          soci::into(rows);
      shape.small_queue = rows < kSmallQueueRows;
    }
    general_ = !one;
    ready_listed_ = one ? shape.status == Status::ready : true;
    sql_ = one ? *one : list_jobs_sql(db.dialect().backend(), columns, shape);
  }
  const std::string& sql() const { return sql_; }
  void bind(soci::statement& st) {
    if (general_) st.exchange(use(mask_, "status_mask"));
    if (f_.queue) st.exchange(use(queue_, "queue"));
    if (ready_listed_) {
      st.exchange(use(waiting_, "waiting"));
      st.exchange(use(ready_now_, "ready_now"));
    }
    if (f_.group_key) st.exchange(use(group_, "group_key"));
    if (f_.error_text) st.exchange(use(error_, "error"));
    st.exchange(use(after_, "after"));
    st.exchange(use(before_, "before"));
    st.exchange(use(limit_, "limit"));
  }

 private:
  const ListFilter& f_;
  std::string queue_ = f_.queue.value_or("");
  std::string group_ = f_.group_key.value_or(""), error_ = f_.error_text.value_or("");
  int mask_ = 0;
  long long after_ = f_.after;
  long long before_ = f_.before == 0 ? std::numeric_limits<long long>::max() : f_.before;
  int limit_ = f_.limit;
  int ready_now_ = f_.ready_now ? 1 : 0, waiting_ = f_.waiting ? 1 : 0;
  bool general_ = true, ready_listed_ = true;
  std::string sql_;
};

}  // namespace

std::vector<Job> JobRepository::list(const ListFilter& f) {
  std::vector<Job> jobs;
  db_.retrying([&] {
    Listing listing(db_, f, db_.sql().job_columns);
    jobs = fetch_jobs(db_.session(), listing.sql(), [&](soci::statement& st) { listing.bind(st); });
  });
  return jobs;
}

std::vector<std::int64_t> JobRepository::list_ids(const ListFilter& f) {
  std::vector<std::int64_t> ids;
  db_.retrying([&] {
    Listing listing(db_, f, "id");
    const std::vector<long long> rows =
        fetch_ids(db_.session(), listing.sql(), [&](soci::statement& st) { listing.bind(st); });
    ids.assign(rows.begin(), rows.end());
  });
  return ids;
}

void JobRepository::count_all_finished(const StatsEntry& entry) {
  auto& s = db_.session();
  std::string name;
  int status = 0;
  long long n = 0;
  soci::statement finished = statement_once(s, db_.sql().listing.stats_finished, soci::into(name),
                                            soci::into(status), soci::into(n));
  for (bool got = finished.execute(true); got; got = finished.fetch()) {
    QueueStats& qs = entry(name);
    if (status == static_cast<int>(Status::done)) qs.done = n;
    if (status == static_cast<int>(Status::failed)) qs.failed = n;
    if (status == static_cast<int>(Status::canceled)) qs.canceled = n;
  }
}

void JobRepository::count_finished(const std::vector<std::string>& queues, std::int64_t cap,
                                   const StatsEntry& entry) {
  auto& s = db_.session();
  const CountStatements& sql = count_sql(db_.dialect().backend());
  long long cap_value = cap, done = 0, failed = 0, canceled = 0;
  auto counted = [&](const std::string& queue) {
    if (done == 0 && failed == 0 && canceled == 0) return;
    QueueStats& qs = entry(queue);
    qs.done = done;
    qs.failed = failed;
    qs.canceled = canceled;
    if (done >= cap) qs.at_least.push_back("done");
    if (failed >= cap) qs.at_least.push_back("failed");
    if (canceled >= cap) qs.at_least.push_back("canceled");
  };
  std::vector<std::string> names = queues;
  std::string name;
  if (names.empty() && !sql.capped_all.empty()) {
    soci::statement all =
        statement_once(s, sql.capped_all, soci::use(cap_value, "c"), soci::into(name),
                       soci::into(done), soci::into(failed), soci::into(canceled));
    for (bool got = all.execute(true); got; got = all.fetch()) counted(name);
    return;
  }
  if (names.empty()) {
    soci::statement list = statement_once(s, sql.finished_queues, soci::into(name));
    for (bool got = list.execute(true); got; got = list.fetch()) names.push_back(name);
  }
  for (const std::string& queue : names) {
    s << sql.capped_finished, soci::use(queue, "q2"), soci::use(cap_value, "c2"),
        soci::use(queue, "q3"), soci::use(cap_value, "c3"), soci::use(queue, "q4"),
        soci::use(cap_value, "c4"), soci::into(done), soci::into(failed), soci::into(canceled);
    counted(queue);
  }
}

std::vector<QueueStats> JobRepository::stats(const std::vector<std::string>& queues,
                                             std::int64_t finished_cap) {
  std::map<std::string, QueueStats> by_queue;
  auto entry = [&](const std::string& name) -> QueueStats& {
    QueueStats& qs = by_queue[name];
    qs.queue = name;
    return qs;
  };
  // One snapshot: a job that moves from ready to done between two of the statements is
  // counted once, not twice or not at all.
  db_.snapshot([&] {
    by_queue.clear();
    auto& s = db_.session();
    const Statements& q = db_.sql();
    std::string name;
    long long a = 0, b = 0;
    double age = 0;
    long long w = 0;
    soci::indicator age_ind = soci::i_null, a_ind = soci::i_null, b_ind = soci::i_null,
                    w_ind = soci::i_null;
    soci::statement ready =
        statement_once(s, q.listing.stats_ready, soci::into(name), soci::into(a, a_ind),
                       soci::into(b, b_ind), soci::into(age, age_ind), soci::into(w, w_ind));
    for (bool got = ready.execute(true); got; got = ready.fetch()) {
      QueueStats& qs = entry(name);
      qs.ready = a_ind == soci::i_null ? 0 : a;
      qs.scheduled = b_ind == soci::i_null ? 0 : b;
      qs.waiting = w_ind == soci::i_null ? 0 : w;
      if (age_ind != soci::i_null) qs.oldest_ready_age_seconds = std::max(0.0, age);
    }
    long long c = 0;
    soci::indicator c_ind = soci::i_null;
    soci::statement processing =
        statement_once(s, q.listing.stats_processing, soci::into(name), soci::into(a, a_ind),
                       soci::into(b, b_ind), soci::into(c, c_ind));
    for (bool got = processing.execute(true); got; got = processing.fetch()) {
      QueueStats& qs = entry(name);
      qs.processing = a;
      qs.expired = b_ind == soci::i_null ? 0 : b;
      qs.unleased = c_ind == soci::i_null ? 0 : c;
    }
    if (finished_cap > 0)
      count_finished(queues, finished_cap, entry);
    else
      count_all_finished(entry);
    soci::statement paused = statement_once(s, q.listing.paused_queues, soci::into(name));
    for (bool got = paused.execute(true); got; got = paused.fetch()) entry(name).paused = true;
    std::string dead_letter;
    int strict = 0, max = 0, rate_count = 0, rate_burst = 0, rate_per_key = 0, keep_done = 1;
    long long rate_period = 0, retain_ms = 0;
    soci::indicator dl_ind = soci::i_null, max_ind = soci::i_null, rate_ind = soci::i_null,
                    period_ind = soci::i_null, burst_ind = soci::i_null, retain_ind = soci::i_null;
    soci::statement policies = statement_once(
        s, q.listing.queue_policies, soci::into(name), soci::into(strict),
        soci::into(dead_letter, dl_ind), soci::into(max, max_ind), soci::into(rate_count, rate_ind),
        soci::into(rate_period, period_ind), soci::into(rate_burst, burst_ind),
        soci::into(rate_per_key), soci::into(retain_ms, retain_ind), soci::into(keep_done));
    for (bool got = policies.execute(true); got; got = policies.fetch()) {
      QueueStats& qs = entry(name);
      qs.strict_groups = strict != 0;
      if (dl_ind == soci::i_ok) qs.dead_letter = dead_letter;
      if (max_ind == soci::i_ok) qs.max_processing = max;
      if (rate_ind == soci::i_ok && period_ind == soci::i_ok && burst_ind == soci::i_ok)
        qs.rate = RateLimit{rate_count, rate_period, rate_burst, rate_per_key != 0};
      qs.retain = retain_ind == soci::i_ok
                      ? std::optional<Duration>(Duration(std::chrono::milliseconds(retain_ms)))
                      : std::nullopt;
      qs.keep_done = keep_done != 0;
    }
  });
  std::vector<QueueStats> out;
  if (queues.empty()) {
    for (auto& [name, qs] : by_queue) out.push_back(qs);
  } else {
    for (const auto& name : queues) {
      auto it = by_queue.find(name);
      QueueStats qs;
      qs.queue = name;
      out.push_back(it == by_queue.end() ? qs : it->second);
    }
  }
  return out;
}

std::string JobRepository::now() {
  std::string text;
  db_.retrying([&] { db_.session() << db_.sql().now, soci::into(text); });
  return text;
}

}  // namespace queuectl
