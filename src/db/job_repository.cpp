// JobRepository: enqueue (the claim: job_repository_claim.cpp; finishing writes:
// job_repository_finish.cpp; reads: job_repository_reads.cpp).
#include "db/job_repository.hpp"

#include <algorithm>
#include <ctime>
#include <limits>
#include <map>
#include <set>

#include <optional>
#include <variant>

#include "core/errors.hpp"
#include "core/time_text.hpp"
#include "db/guarded_write.hpp"
#include "db/job_repository_detail.hpp"
#include "db/rate_buckets.hpp"
#include "db/row_reader.hpp"

namespace queuectl {

namespace job_repository_detail {
namespace {

// Seconds since the epoch of a "YYYY-MM-DD HH:MM:SS[.ffffff]" UTC time.
std::int64_t utc_seconds(const std::string& text) {
  const std::optional<std::int64_t> us = parse_utc_time_us(text);
  if (!us) throw Error("unreadable time '" + text + "'");
  return *us / 1000000;
}

}  // namespace

// A time the job columns cannot hold (MySQL's TIMESTAMP ends in 2038) is bad input,
// refused before anything is written, not the server's "Incorrect datetime value" after a
// batch was half sent. `at` (UTC text) or now, plus `after`.
void check_storable(const Dialect& dialect, const std::optional<std::string>& at, Duration after,
                    const std::string& what) {
  const std::string latest = dialect.latest_time();
  if (latest.empty()) return;
  const std::int64_t base = at ? utc_seconds(*at) : static_cast<std::int64_t>(std::time(nullptr));
  if (base + after.ms() / 1000 > utc_seconds(latest))
    throw UsageError(what + " would end after " + latest +
                     " UTC, the latest time this server's TIMESTAMP columns hold");
}

}  // namespace job_repository_detail

namespace {

using job_repository_detail::ArrayLiteral;
using job_repository_detail::check_storable;
using job_repository_detail::kArrayRows;
using job_repository_detail::kBulkBytes;
using job_repository_detail::kBulkRows;
using soci::use;

// How many of jobs[start, ...) go in one statement: up to `most` rows, and kBulkBytes of
// values, to stay well under MySQL's max_allowed_packet (16 MiB by default).
std::size_t rows_in_statement(const std::vector<NewJob>& jobs, std::size_t start,
                              std::size_t most) {
  std::size_t bytes = 0, n = 0;
  for (; start + n < jobs.size() && n < most && (n == 0 || bytes < kBulkBytes); ++n)
    bytes += jobs[start + n].payload.size() + 512;
  return n;
}

// Whether none of jobs[start, start + n) has a dedupe key: then the dialect's keyless inserts,
// where it has them (EnqueueStatements::Keyless), write the same rows more cheaply.
bool keyless_rows(const std::vector<NewJob>& jobs, std::size_t start, std::size_t n) {
  return std::none_of(jobs.begin() + static_cast<std::ptrdiff_t>(start),
                      jobs.begin() + static_cast<std::ptrdiff_t>(start + n),
                      [](const NewJob& j) { return j.dedupe_key.has_value(); });
}

// jobs[start, start + n) as insert_arrays's eight array literals.
struct JobArrays {
  ArrayLiteral queue, priority, run_at, delay, max_attempts, payload, dedupe, group, trace_parent,
      trace_state;

  void bind(soci::statement& st, const std::vector<NewJob>& jobs, std::size_t start,
            std::size_t n) {
    for (std::size_t i = start; i < start + n; ++i) {
      const NewJob& j = jobs[i];
      queue.add(j.queue);
      priority.add(j.priority);
      run_at.add(j.run_at);
      delay.add(j.delay.ms());
      max_attempts.add(j.max_attempts);
      payload.add(j.payload);
      dedupe.add(j.dedupe_key);
      group.add(j.group_key);
      trace_parent.add(j.trace_parent);
      trace_state.add(j.trace_state);
    }
    st.exchange(use(queue.done(), "queues"));
    st.exchange(use(priority.done(), "priorities"));
    st.exchange(use(run_at.done(), "run_ats"));
    st.exchange(use(delay.done(), "delays_ms"));
    st.exchange(use(max_attempts.done(), "max_attempts"));
    st.exchange(use(payload.done(), "payloads"));
    st.exchange(use(dedupe.done(), "dedupe_keys"));
    st.exchange(use(group.done(), "group_keys"));
    st.exchange(use(trace_parent.done(), "trace_parents"));
    st.exchange(use(trace_state.done(), "trace_states"));
  }
};

// jobs[start, start + n) as the rows of a values_rows INSERT, bound by position.
struct JobValues {
  // Sized up front so that the bound references stay valid.
  std::vector<std::string> queue, payload, run_at, dedupe, group, trace_parent, trace_state;
  std::vector<int> priority, max_attempts;
  std::vector<long long> delay;
  std::vector<soci::indicator> run_at_ind, dedupe_ind, group_ind, trace_parent_ind, trace_state_ind;

  // Returns the statement's text.
  std::string bind(soci::statement& st, const InsertValuesRows& rows,
                   const std::vector<NewJob>& jobs, std::size_t start, std::size_t n) {
    for (auto* v : {&queue, &payload, &run_at, &dedupe, &group, &trace_parent, &trace_state})
      v->resize(n);
    priority.resize(n);
    max_attempts.resize(n);
    delay.resize(n);
    for (auto* v : {&run_at_ind, &dedupe_ind, &group_ind, &trace_parent_ind, &trace_state_ind})
      v->resize(n);
    std::string sql = rows.prefix;
    for (std::size_t i = 0; i < n; ++i) {
      const NewJob& j = jobs[start + i];
      queue[i] = j.queue;
      payload[i] = j.payload;
      priority[i] = j.priority;
      max_attempts[i] = j.max_attempts;
      delay[i] = j.delay.ms();
      run_at[i] = j.run_at.value_or("");
      run_at_ind[i] = j.run_at ? soci::i_ok : soci::i_null;
      dedupe[i] = j.dedupe_key.value_or("");
      dedupe_ind[i] = j.dedupe_key ? soci::i_ok : soci::i_null;
      group[i] = j.group_key.value_or("");
      group_ind[i] = j.group_key ? soci::i_ok : soci::i_null;
      trace_parent[i] = j.trace_parent.value_or("");
      trace_parent_ind[i] = j.trace_parent ? soci::i_ok : soci::i_null;
      trace_state[i] = j.trace_state.value_or("");
      trace_state_ind[i] = j.trace_state ? soci::i_ok : soci::i_null;
      sql += (i ? ", " : "") + values_row(rows, i);
      // Positional binds in the row's order: queue, priority, run_at, delay, max_attempts,
      // payload, dedupe_key, group_key, trace_parent, trace_state.
      st.exchange(use(queue[i]));
      st.exchange(use(priority[i]));
      st.exchange(use(run_at[i], run_at_ind[i]));
      st.exchange(use(delay[i]));
      st.exchange(use(max_attempts[i]));
      st.exchange(use(payload[i]));
      st.exchange(use(dedupe[i], dedupe_ind[i]));
      st.exchange(use(group[i], group_ind[i]));
      st.exchange(use(trace_parent[i], trace_parent_ind[i]));
      st.exchange(use(trace_state[i], trace_state_ind[i]));
    }
    return sql + rows.suffix;
  }
};

}  // namespace

long long insert_job_row(Database& db, const NewJob& job) {
  std::string queue = job.queue, payload = job.payload;
  int priority = job.priority, max_attempts = job.max_attempts;
  long long delay_ms = job.delay.ms();
  std::string run_at = job.run_at.value_or(""), dedupe = job.dedupe_key.value_or("");
  std::string group = job.group_key.value_or("");
  soci::indicator run_at_ind = job.run_at ? soci::i_ok : soci::i_null;
  soci::indicator dedupe_ind = job.dedupe_key ? soci::i_ok : soci::i_null;
  soci::indicator group_ind = job.group_key ? soci::i_ok : soci::i_null;
  std::string trace_parent = job.trace_parent.value_or(""),
              trace_state = job.trace_state.value_or("");
  soci::indicator trace_parent_ind = job.trace_parent ? soci::i_ok : soci::i_null;
  soci::indicator trace_state_ind = job.trace_state ? soci::i_ok : soci::i_null;
  const EnqueueStatements& q = db.sql().enqueue;
  soci::statement st = statement_once(
      db.session(), q.keyless && !job.dedupe_key ? q.keyless->insert_job : q.insert_job,
      use(queue, "queue"), use(priority, "priority"), use(run_at, run_at_ind, "run_at"),
      use(delay_ms, "delay_ms"), use(max_attempts, "max_attempts"), use(payload, "payload"),
      use(dedupe, dedupe_ind, "dedupe_key"), use(group, group_ind, "group_key"),
      use(trace_parent, trace_parent_ind, "trace_parent"),
      use(trace_state, trace_state_ind, "trace_state"));
  st.execute(true);
  return st.get_affected_rows();
}

EnqueueResult JobRepository::enqueue(const NewJob& job) {
  check_storable(db_.dialect(), job.run_at, job.delay, "the job's run_at");
  EnqueueResult out;
  db_.transaction([&] { out = job_repository_detail::enqueue_one(db_, job); });
  return out;
}

EnqueueResult job_repository_detail::enqueue_one(Database& db, const NewJob& job) {
  auto& s = db.session();
  const Statements& q = db.sql();
  std::string queue = job.queue, dedupe = job.dedupe_key.value_or("");
  // Read the count before check_skipped_rows: on MySQL it runs SHOW WARNINGS, and the
  // affected-row count is the connection's, for whatever statement ran last.
  const long long inserted = insert_job_row(db, job);
  db.dialect().check_skipped_rows(s);
  if (inserted > 0) {
    long long id = 0;
    s << q.enqueue.last_insert_id, soci::into(id);
    auto jobs = fetch_jobs(s, q.job_by_id, [&](soci::statement& x) { x.exchange(use(id, "id")); });
    if (jobs.empty()) throw Error("the job just inserted cannot be read back");
    return {jobs.front(), false};
  }
  auto jobs = fetch_jobs(s, q.enqueue.job_by_dedupe_key, [&](soci::statement& x) {
    x.exchange(use(queue, "queue"));
    x.exchange(use(dedupe, "dedupe_key"));
  });
  if (jobs.empty()) throw Error("insert skipped, but no job holds its dedupe key");
  return {jobs.front(), true};
}

BulkEnqueueResult JobRepository::enqueue_many(const std::vector<NewJob>& jobs) {
  for (std::size_t i = 0; i < jobs.size(); ++i)
    check_storable(db_.dialect(), jobs[i].run_at, jobs[i].delay,
                   "job " + std::to_string(i + 1) + "'s run_at");
  BulkEnqueueResult out;
  db_.transaction([&] {
    out = {};
    auto& s = db_.session();
    const Statements& q = db_.sql();
    const bool arrays = q.enqueue.insert_arrays.has_value();
    for (std::size_t start = 0, n = 0; start < jobs.size(); start += n) {
      n = rows_in_statement(jobs, start, arrays ? kArrayRows : kBulkRows);
      JobArrays a;
      JobValues v;
      soci::statement st(s);
      if (arrays) {
        a.bind(st, jobs, start, n);
        const auto& keyless = q.enqueue.keyless;
        prepare_once(st, keyless && keyless_rows(jobs, start, n) ? keyless->insert_arrays
                                                                 : *q.enqueue.insert_arrays);
      } else {
        prepare_once(st, v.bind(st, q.enqueue.values_rows, jobs, start, n));
      }
      st.execute(true);
      const long long inserted = st.get_affected_rows();
      db_.dialect().check_skipped_rows(s);
      out.enqueued += inserted;
      out.duplicates += static_cast<long long>(n) - inserted;
    }
  });
  return out;
}

std::vector<std::int64_t> insert_job_rows(Database& db, const std::vector<NewJob>& jobs) {
  const EnqueueStatements& q = db.sql().enqueue;
  auto& s = db.session();
  std::vector<std::int64_t> ids;
  ids.reserve(jobs.size());
  const auto lost = [] { return Error("a job of a multi-row insert was not inserted"); };
  long long step = q.consecutive_ids ? 1 : 0;
  if (!step && q.id_step && jobs.size() > 1) s << *q.id_step, soci::into(step);
  if (!q.insert_arrays_ids && step <= 0) {
    for (const NewJob& job : jobs) {
      if (insert_job_row(db, job) != 1) throw lost();
      long long id = 0;
      s << q.last_insert_id, soci::into(id);
      ids.push_back(id);
    }
    return ids;
  }
  const bool arrays = q.insert_arrays_ids.has_value();
  for (std::size_t start = 0, n = 0; start < jobs.size(); start += n) {
    n = rows_in_statement(jobs, start, arrays ? kArrayRows : kBulkRows);
    if (arrays) {
      JobArrays a;
      const std::string& sql = q.keyless && keyless_rows(jobs, start, n)
                                   ? q.keyless->insert_arrays_ids
                                   : *q.insert_arrays_ids;
      std::vector<long long> got =
          fetch_ids(s, sql, [&](soci::statement& st) { a.bind(st, jobs, start, n); });
      if (got.size() != n) throw lost();
      std::sort(got.begin(), got.end());
      ids.insert(ids.end(), got.begin(), got.end());
      continue;
    }
    JobValues v;
    soci::statement st(s);
    prepare_once(st, v.bind(st, q.values_rows, jobs, start, n));
    st.execute(true);
    if (st.get_affected_rows() != static_cast<long long>(n)) throw lost();
    long long last = 0;  // the first id where id_step says the step
    s << q.last_insert_id, soci::into(last);
    for (std::size_t i = 0; i < n; ++i)
      ids.push_back(q.consecutive_ids ? last - static_cast<long long>(n - 1 - i)
                                      : last + step * static_cast<long long>(i));
  }
  return ids;
}

}  // namespace queuectl
