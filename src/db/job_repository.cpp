// JobRepository: enqueue and claim (finishing writes: job_repository_finish.cpp; reads:
// job_repository_reads.cpp).
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

void sort_claim_order(std::vector<Job>& jobs) {
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.run_at != b.run_at) return a.run_at < b.run_at;
    return a.id < b.id;
  });
}

// How many of jobs[start, ...) go in one statement: up to `most` rows, and kBulkBytes of
// values, to stay well under MySQL's max_allowed_packet (16 MiB by default).
std::size_t rows_in_statement(const std::vector<NewJob>& jobs, std::size_t start,
                              std::size_t most) {
  std::size_t bytes = 0, n = 0;
  for (; start + n < jobs.size() && n < most && (n == 0 || bytes < kBulkBytes); ++n)
    bytes += jobs[start + n].payload.size() + 512;
  return n;
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
  soci::statement st = statement_once(
      db.session(), db.sql().enqueue.insert_job, use(queue, "queue"), use(priority, "priority"),
      use(run_at, run_at_ind, "run_at"), use(delay_ms, "delay_ms"),
      use(max_attempts, "max_attempts"), use(payload, "payload"),
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
        prepare_once(st, *q.enqueue.insert_arrays);
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
  if (!q.insert_arrays_ids && !q.consecutive_ids) {
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
      std::vector<long long> got = fetch_ids(
          s, *q.insert_arrays_ids, [&](soci::statement& st) { a.bind(st, jobs, start, n); });
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
    long long last = 0;
    s << q.last_insert_id, soci::into(last);
    for (std::size_t i = 0; i < n; ++i) ids.push_back(last - static_cast<long long>(n - 1 - i));
  }
  return ids;
}

std::optional<ClaimStart> read_claim_start(Database& db, const ClaimPickThenMark& q,
                                           const std::string& queue) {
  ClaimStart start;
  std::string name = queue;
  db.session() << q.start, soci::into(start.priority), soci::into(start.run_at),
      soci::into(start.id), use(name, "queue");
  if (!db.session().got_data()) return std::nullopt;
  return start;
}

void bind_claim_start(soci::statement& pick, ClaimStart& start) {
  // Each placeholder appears once in a statement: the two used twice have a twin.
  pick.exchange(use(start.priority, "start_priority"));
  pick.exchange(use(start.priority, "start_priority_eq"));
  pick.exchange(use(start.run_at, "start_run_at"));
  pick.exchange(use(start.run_at, "start_run_at_eq"));
  pick.exchange(use(start.id, "start_id"));
}

std::vector<Job> JobRepository::claim(const ClaimRequest& request) {
  check_storable(db_.dialect(), std::nullopt, request.lease, "the lease");
  const std::string token = new_lock_token();
  std::vector<Job> jobs;
  if (const auto* one = std::get_if<ClaimReturning>(&db_.sql().claim)) {
    auto run = [&](const std::string& sql) {
      auto work = [&] { jobs = claim_returning(*one, sql, request, token); };
      if (one->in_transaction)
        db_.transaction(work);
      else
        db_.retrying(work);  // one statement: atomic on its own, two round trips fewer
    };
    if (!one->claim_rated) {
      run(one->claim);
    } else {
      // `claim` takes nothing from a queue with a rate limit: `claim_rated` is tried when it
      // found nothing, and first while the queue's last claims came from it.
      const bool rated_first = rated_queues_.count(request.queue) != 0;
      if (!rated_first) run(one->claim);
      if (jobs.empty()) {
        run(*one->claim_rated);
        if (jobs.empty())
          rated_queues_.erase(request.queue);
        else
          rated_queues_.insert(request.queue);
      }
    }
  } else {
    const auto& steps = std::get<ClaimPickThenMark>(db_.sql().claim);
    db_.transaction([&] { jobs = claim_pick_then_mark(steps, request, token); });
  }
  sort_claim_order(jobs);
  return jobs;
}

std::vector<Job> JobRepository::claim_returning(const ClaimReturning& q, const std::string& sql,
                                                const ClaimRequest& r, const std::string& token) {
  std::string worker = r.worker, tok = token, queue = r.queue;
  long long lease_ms = r.lease.ms();
  int limit = r.limit;
  // A rate limit the claim does not take itself (SQLite): the bucket first, under the
  // claim's write lock; the jobs that use it are cut to its whole tokens.
  std::optional<RateRead> rate;
  double tokens = 0;
  int grant = std::numeric_limits<int>::max(), keys_free = 0;
  if (q.rate) {
    rate = read_rate(db_.session(), q.rate->read, queue);
    if (rate) {
      tokens = rate->tokens_now();
      grant = whole_tokens(tokens);
      keys_free = rate->limit.per_key ? 1 : 0;
      if (grant == 0 && !rate->limit.per_key) return {};  // skipped, not waited on
    }
  }
  std::vector<Job> jobs = fetch_jobs(db_.session(), sql, [&](soci::statement& st) {
    st.exchange(use(worker, "worker"));
    st.exchange(use(tok, "token"));
    st.exchange(use(lease_ms, "lease_ms"));
    st.exchange(use(queue, "queue"));
    st.exchange(use(limit, "limit"));
    if (q.rate) {
      st.exchange(use(grant, "grant"));
      st.exchange(use(keys_free, "keys_free"));
    }
  });
  if (rate && !jobs.empty()) spend_claimed(*q.rate, queue, *rate, tokens, jobs);
  return jobs;
}

void JobRepository::spend_claimed(const RateSteps& q, const std::string& queue,
                                  const RateRead& rate, double tokens,
                                  const std::vector<Job>& jobs) {
  int keyless = 0;
  std::vector<std::string> keys;
  for (const Job& job : jobs) {
    if (rate.limit.per_key && job.group_key)
      keys.push_back(*job.group_key);
    else
      ++keyless;
  }
  spend_rate(db_.session(), q, queue, rate, tokens, keyless, keys);
}

std::vector<Job> JobRepository::claim_pick_then_mark(const ClaimPickThenMark& q,
                                                     const ClaimRequest& r,
                                                     const std::string& token) {
  auto& s = db_.session();
  std::string queue = r.queue, worker = r.worker, tok = token;
  int limit = r.limit;
  long long lease_ms = r.lease.ms();
  // Row by row, as fetch_ids does (a one-element vector into() reads a single row).
  std::vector<long long> picked;
  std::map<long long, Job> rows;  // what the pick read of each
  std::string claimed_at;         // the pick's time, which the mark writes
  bool any_grouped = false, limited = false, rated = false;
  // A claim of one job starts at the top: the old entries ahead of it are then about as
  // many as the jobs claimed while purge waits for its batch (some 60), fewer than a round
  // trip's worth of reading, and `start` would add that round trip.
  std::optional<ClaimStart> start = limit > 1 ? read_claim_start(db_, q, queue) : ClaimStart{};
  if (!start) return {};
  {
    long long id = 0;
    int grouped = 0, cap = 0, rate_count = 0;
    soci::indicator cap_ind = soci::i_null, rate_ind = soci::i_null;
    soci::statement pick(s);
    pick.exchange(soci::into(id));
    pick.exchange(soci::into(grouped));
    pick.exchange(soci::into(cap, cap_ind));
    pick.exchange(soci::into(rate_count, rate_ind));
    pick.exchange(soci::into(claimed_at));
    JobRowReader reader;
    reader.bind(pick);
    pick.exchange(use(queue, "queue"));
    pick.exchange(use(limit, "limit"));
    bind_claim_start(pick, *start);
    prepare_once(pick, q.pick);
    for (bool got = pick.execute(true); got; got = pick.fetch()) {
      picked.push_back(id);
      rows.emplace(id, reader.job());
      any_grouped = any_grouped || grouped != 0;
      limited = limited || cap_ind == soci::i_ok;
      rated = rated || rate_ind == soci::i_ok;
    }
  }
  // The heads were read before their locks were taken: read them again, now that no
  // other claimer can take them, and keep only those still at the head of their group.
  if (any_grouped) {
    std::vector<long long> bound = picked;
    auto heads = fetch_ids(s, expand_ids(q.recheck, bound.size()),
                           [&](soci::statement& st) { bind_ids(st, bound); });
    std::sort(heads.begin(), heads.end());
    // In claim order still, so that a limit below keeps the first ones.
    picked.erase(std::remove_if(picked.begin(), picked.end(),
                                [&](long long id) {
                                  return !std::binary_search(heads.begin(), heads.end(), id);
                                }),
                 picked.end());
  }
  // A concurrency limit: wait for the queue's settings row, then count what is processing
  // now, and keep no more of the picked jobs (in claim order) than there are free slots.
  if (limited && !picked.empty()) {
    int cap = 0;
    soci::indicator cap_ind = soci::i_null;
    long long busy = 0;
    s << q.limit_lock, soci::into(cap, cap_ind), use(queue, "queue");
    if (cap_ind == soci::i_ok) {
      s << q.limit_busy, soci::into(busy), use(queue, "queue");
      const long long slots = std::max(0LL, cap - busy);
      if (static_cast<long long>(picked.size()) > slots)
        picked.resize(static_cast<std::size_t>(slots));
    }
  }
  // A rate limit: wait for the queue's row, then read its bucket, and keep (in claim order)
  // no more jobs that use it than it has whole tokens. With rate_per_key a grouped job uses
  // its key's bucket instead, which the pick checked.
  std::optional<RateRead> rate;
  double tokens = 0;
  if (rated && !picked.empty()) {
    rate = read_rate(s, q.rate.read, queue);
    if (rate) {
      tokens = rate->tokens_now();
      int left = whole_tokens(tokens);
      std::vector<long long> kept;
      for (long long id : picked) {
        const bool keyless = !rate->limit.per_key || !rows.at(id).group_key;
        if (!keyless)
          kept.push_back(id);
        else if (left > 0) {
          kept.push_back(id);
          --left;
        }
      }
      picked.swap(kept);
    }
  }
  if (picked.empty()) return {};
  soci::statement mark(s);
  bind_ids(mark, picked);
  mark.exchange(use(worker, "worker"));
  mark.exchange(use(tok, "token"));
  mark.exchange(use(claimed_at, "claimed_at"));
  mark.exchange(use(lease_ms, "lease_ms"));
  prepare_once(mark, expand_ids(q.mark, picked.size()));
  mark.execute(true);
  // The rows as the mark left them: locked, with the pick's time (the rows are locked by
  // this transaction since the pick, so nothing else changed them).
  const std::optional<std::int64_t> at_us = parse_utc_time_us(claimed_at);
  if (!at_us) throw Error("the database gave the time of a claim as '" + claimed_at + "'");
  const std::string at = format_utc_time_us(*at_us);
  const std::string until = format_utc_time_us(*at_us + lease_ms * 1000);
  std::vector<Job> jobs;
  jobs.reserve(picked.size());
  for (long long id : picked) {
    Job job = std::move(rows.at(id));
    job.status = Status::processing;
    job.attempts += 1;
    job.locked_by = worker;
    job.lock_token = tok;
    job.locked_at = at;
    job.lock_until = until;
    job.updated_at = at;
    job.progress.reset();  // the mark clears them: they are the new attempt's
    job.progress_note.reset();
    jobs.push_back(std::move(job));
  }
  if (rate) spend_claimed(q.rate, queue, *rate, tokens, jobs);
  return jobs;
}
}  // namespace queuectl
