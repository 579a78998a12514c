// JobRepository: the claim (enqueue: job_repository.cpp).
#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <variant>

#include "core/errors.hpp"
#include "core/time_text.hpp"
#include "db/guarded_write.hpp"
#include "db/job_repository.hpp"
#include "db/job_repository_detail.hpp"
#include "db/rate_buckets.hpp"
#include "db/row_reader.hpp"

namespace queuectl {

namespace {

using job_repository_detail::check_storable;
using soci::use;

// The bucket of a rated queue had too few tokens for a claim that took them after the mark.
struct RateShort {};
// A claim without the checks of grouped jobs picked one.
struct GroupedPicked {};

// Into claim order: priority first, then run_at, then id. A Job is some thirty fields, so the
// sort moves positions and each job moves once, into its place; claims that come back in
// order already are left as they are.
void sort_claim_order(std::vector<Job>& jobs) {
  auto before = [](const Job& a, const Job& b) {
    if (a.priority != b.priority) return a.priority > b.priority;
    if (a.run_at != b.run_at) return a.run_at < b.run_at;
    return a.id < b.id;
  };
  if (std::is_sorted(jobs.begin(), jobs.end(), before)) return;
  std::vector<std::size_t> order(jobs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return before(jobs[a], jobs[b]); });
  std::vector<Job> sorted;
  sorted.reserve(jobs.size());
  for (std::size_t i : order) sorted.push_back(std::move(jobs[i]));
  jobs = std::move(sorted);
}

}  // namespace

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
  if (const auto* bound = std::get_if<ClaimReturning>(&db_.sql().claim)) {
    const ClaimReturning& q = claim_statements(*bound, request.limit);
    auto run = [&](const std::string& sql) {
      auto work = [&] { jobs = claim_returning(q, sql, request, token); };
      if (q.in_transaction)
        db_.transaction(work);
      else
        db_.retrying(work);  // one statement: atomic on its own, two round trips fewer
    };
    // `claim_ungrouped` takes nothing when it meets a grouped job, `claim` nothing from a
    // queue with a rate limit, `claim_rated_simple` nothing from one whose keys have buckets
    // of their own nor when it meets a grouped job: each later statement is tried when the
    // earlier found nothing, and first once one of the queue's claims came from it. The last,
    // `claim_rated`, serves every queue, and an empty claim keeps the place: an idle or
    // throttled rated queue costs no more statements than the chain from there, and a queue
    // with grouped jobs is claimed with the group checks from then on.
    std::vector<const std::string*> chain;
    if (q.claim_ungrouped) chain.push_back(&*q.claim_ungrouped);
    chain.push_back(&q.claim);
    if (q.claim_rated_simple) chain.push_back(&*q.claim_rated_simple);
    if (q.claim_rated) chain.push_back(&*q.claim_rated);
    const auto known = claim_stage_.find(request.queue);
    std::size_t stage = known == claim_stage_.end() ? 0 : known->second;
    for (; stage < chain.size() && jobs.empty(); ++stage) run(*chain[stage]);
    if (!jobs.empty()) {
      if (stage == 1)
        claim_stage_.erase(request.queue);
      else
        claim_stage_[request.queue] = stage - 1;
    }
  } else {
    const auto& steps = std::get<ClaimPickThenMark>(db_.sql().claim);
    // A rated queue's tokens are taken after the mark, so that claimers take turns on its
    // bucket for the commit only; when they run short, the claim is made again with the
    // bucket locked first, and so is the queue's next until a claim is not cut by them. A
    // queue is picked without the checks of grouped jobs until a claim picks one. Each
    // retry takes a fuller way, which does not throw again: three tries at most.
    ClaimWay way;
    way.careful = rate_careful_.count(request.queue) != 0;
    way.ungrouped = grouped_queues_.count(request.queue) == 0;
    for (;;) {
      try {
        db_.transaction([&] { jobs = claim_pick_then_mark(steps, request, token, way); });
        break;
      } catch (const RateShort&) {
        rate_careful_.insert(request.queue);
        way.careful = true;
      } catch (const GroupedPicked&) {
        grouped_queues_.insert(request.queue);
        way.ungrouped = false;
      }
    }
  }
  sort_claim_order(jobs);
  return jobs;
}

namespace {

// The values a claim statement of ClaimReturning binds, by reference.
struct ClaimBinds {
  std::string worker, token, queue;
  long long lease_ms = 0;
  int limit = 0, grant = 0, keys_free = 0;

  void bind(soci::statement& st, const ClaimReturning& q) {
    st.exchange(use(worker, "worker"));
    st.exchange(use(token, "token"));
    st.exchange(use(lease_ms, "lease_ms"));
    st.exchange(use(queue, "queue"));
    if (q.binds_limit) st.exchange(use(limit, "limit"));
    if (q.rate) {
      st.exchange(use(grant, "grant"));
      st.exchange(use(keys_free, "keys_free"));
    }
  }
};

}  // namespace

// A claim statement prepared once on the server and run again with new values: PostgreSQL
// parses and analyzes its text (three CTEs, four sub-selects) once, where a one-time
// statement is parsed at every claim. That parsing was a quarter of a one-job claim:
// pgbench on the landed statement, 0.47 ms a claim run as a one-time statement, 0.35
// prepared, and the same 0.35 with custom plans forced, so it was not planning. A claim of
// more than 1,000 jobs is still planned at each run with its values (a custom plan): its
// generic plan cannot see the bound LIMIT, expects a tenth of the queue and costs more. A
// claim of up to 1,000 (ClaimReturning::with_limit, its LIMIT written in) is planned once,
// generically, from its sixth run. test_indexes.cpp checks both, and that every generic
// plan reads the claim index. (Forcing custom plans for the session made the plpgsql
// functions plan each of their statements at every call: the rate-per-key race fell
// behind; forcing generic plans would do it to every statement of the session.) The
// values are bound by reference, so they live here.
struct JobRepository::PreparedClaim {
  explicit PreparedClaim(soci::session& session) : st(session) {}
  soci::statement st;
  JobRowReader reader;
  ClaimBinds binds;
};

JobRepository::JobRepository(Database& db) : db_(db) {}
JobRepository::~JobRepository() = default;

std::vector<Job> JobRepository::claim_returning(const ClaimReturning& q, const std::string& sql,
                                                const ClaimRequest& r, const std::string& token) {
  ClaimBinds b;
  b.worker = r.worker;
  b.token = token;
  b.queue = r.queue;
  b.lease_ms = r.lease.ms();
  b.limit = r.limit;
  b.grant = std::numeric_limits<int>::max();
  // Kept prepared only where keeps_prepared, and only from its second run: a command that
  // claims once (`queuectl claim`) sends it as a one-time statement, without the round trips
  // of PREPARE and DEALLOCATE.
  bool keep = keeps_prepared();
  if (keep) keep = !prepared_claims_.emplace(&sql, nullptr).second;
  // A rate limit the claim does not take itself (SQLite): the bucket first, under the
  // claim's write lock; the jobs that use it are cut to its whole tokens.
  std::optional<RateRead> rate;
  double tokens = 0;
  if (q.rate) {
    rate = read_rate(db_.session(), q.rate->read, b.queue);
    if (rate) {
      tokens = rate->tokens_now();
      b.grant = whole_tokens(tokens);
      b.keys_free = rate->limit.per_key ? 1 : 0;
      if (b.grant == 0 && !rate->limit.per_key) return {};  // skipped, not waited on
    }
  }
  std::vector<Job> jobs;
  if (!keep) {
    jobs = fetch_jobs(db_.session(), sql, [&](soci::statement& st) { b.bind(st, q); });
  } else {
    PreparedClaim& p = prepared_claim(sql, q);
    p.binds = b;
    // Room for the whole claim up front: growing moves every job read so far, and a vector
    // of a hundred grows seven times.
    jobs.reserve(static_cast<std::size_t>(std::clamp(r.limit, 1, 1000)));
    try {
      for (bool got = p.st.execute(true); got; got = p.st.fetch()) jobs.push_back(p.reader.job());
    } catch (...) {
      // Whatever went wrong, the next claim prepares it afresh rather than trust it.
      prepared_claims_.erase(&sql);
      throw;
    }
  }
  if (rate && !jobs.empty()) spend_claimed(*q.rate, b.queue, *rate, tokens, jobs);
  return jobs;
}

const ClaimReturning& JobRepository::claim_statements(const ClaimReturning& bound, int limit) {
  if (!bound.with_limit || limit < 1 || limit > ClaimReturning::kWrittenLimitMax) return bound;
  auto found = written_claims_.find(limit);
  if (found != written_claims_.end() && found->second) return *found->second;
  // A batch's written statements only pay where they run again prepared: run once, a bound
  // LIMIT is planned with its value just the same. So a size's first claim binds its LIMIT
  // (a command that claims once, `queuectl claim --limit 5`, sends no number in its text),
  // and is noted (null) if there is room for the size; its later claims run the written
  // statements. One job's are written from the first (as `claim` has always done).
  if (limit > 1) {
    if (!keeps_prepared()) return bound;
    if (found == written_claims_.end()) {
      if (written_claims_.size() < kWrittenLimitsKept) written_claims_.emplace(limit, nullptr);
      return bound;
    }
  }
  auto& slot = written_claims_[limit];
  slot = std::make_unique<const ClaimReturning>(bound.with_limit(limit));
  return *slot;
}

bool JobRepository::keeps_prepared() const {
  switch (db_.dialect().backend()) {
    case Backend::postgresql:
      // Behind a transaction pooler the next statement may reach a server session that
      // never saw it prepared.
      return !db_.pooled();
    case Backend::sqlite:
      // Compiling the claim (sqlite3_prepare_v2) was a third of `work`'s own CPU on SQLite.
      // A kept statement holds no lock between runs: each run steps it to its end.
      return true;
    default:
      return false;
  }
}

JobRepository::PreparedClaim& JobRepository::prepared_claim(const std::string& sql,
                                                            const ClaimReturning& q) {
  auto& slot = prepared_claims_[&sql];
  if (slot) return *slot;
  auto p = std::make_unique<PreparedClaim>(db_.session());
  p->reader.bind(p->st);
  p->binds.bind(p->st, q);
  try {
    p->st.alloc();
    p->st.prepare(sql, soci::details::st_repeatable_query);
    p->st.define_and_bind();
  } catch (...) {
    prepared_claims_.erase(&sql);
    throw;
  }
  slot = std::move(p);
  return *slot;
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
                                                     const std::string& token, ClaimWay way) {
  const bool careful = way.careful;
  auto& s = db_.session();
  std::string queue = r.queue, worker = r.worker, tok = token;
  int limit = r.limit;
  long long lease_ms = r.lease.ms();
  // Row by row, as fetch_ids does (a one-element vector into() reads a single row).
  std::vector<long long> picked;
  std::map<long long, Job> rows;  // what the pick read of each
  std::string claimed_at;         // the pick's time, which the mark writes
  bool any_grouped = false, limited = false, rated = false, per_key = false;
  // A claim of one job starts at the top: the old entries ahead of it are then about as
  // many as the jobs claimed while purge waits for its batch (some 60), fewer than a round
  // trip's worth of reading, and `start` would add that round trip.
  std::optional<ClaimStart> start = limit > 1 ? read_claim_start(db_, q, queue) : ClaimStart{};
  if (!start) return {};
  {
    long long id = 0;
    int grouped = 0, cap = 0, rate_per_key = 0;
    soci::indicator cap_ind = soci::i_null, rate_ind = soci::i_null;
    soci::statement pick(s);
    pick.exchange(soci::into(id));
    pick.exchange(soci::into(grouped));
    pick.exchange(soci::into(cap, cap_ind));
    pick.exchange(soci::into(rate_per_key, rate_ind));
    pick.exchange(soci::into(claimed_at));
    JobRowReader reader;
    reader.bind(pick);
    pick.exchange(use(queue, "queue"));
    pick.exchange(use(limit, "limit"));
    const bool top = limit <= 1;
    if (!top) bind_claim_start(pick, *start);
    prepare_once(pick, way.ungrouped ? (top ? q.pick_ungrouped_top : q.pick_ungrouped)
                                     : (top ? q.pick_top : q.pick));
    for (bool got = pick.execute(true); got; got = pick.fetch()) {
      if (grouped != 0 && way.ungrouped) throw GroupedPicked{};
      picked.push_back(id);
      rows.emplace(id, reader.job());
      any_grouped = any_grouped || grouped != 0;
      limited = limited || cap_ind == soci::i_ok;
      rated = rated || rate_ind == soci::i_ok;
      per_key = per_key || (rate_ind == soci::i_ok && rate_per_key != 0);
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
  // A rate limit, the careful way (else rate_take below): wait for the queue's row, then
  // read its bucket, and keep (in claim order) no more jobs that use it than it has whole
  // tokens. With rate_per_key a grouped job uses its key's bucket instead, which the pick
  // checked.
  std::optional<RateRead> rate;
  double tokens = 0;
  if (rated && !picked.empty() && (careful || per_key)) {
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
      if (kept.size() == picked.size()) rate_careful_.erase(queue);
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
  if (rated && !careful && !per_key) {
    int taken = static_cast<int>(picked.size()), taken_check = taken;
    soci::statement take(s);
    take.exchange(use(taken, "taken"));
    take.exchange(use(taken_check, "taken_check"));
    take.exchange(use(queue, "queue"));
    prepare_once(take, q.rate_take);
    take.execute(true);
    if (take.get_affected_rows() == 0) throw RateShort{};
  }
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
