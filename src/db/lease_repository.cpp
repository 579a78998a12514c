#include "db/lease_repository.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "db/admin_repository.hpp"
#include "db/dependencies.hpp"

#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::use;

// "All leases" for the lease filter: lock_until < now + about 300 years, past the longest
// lease a duration can give (100 years) and within the SQL side's millisecond clamp.
constexpr long long kFarFutureMs = 9'000'000'000'000LL;

// The bound values of the lease filter, shared by the listing and its summary.
struct LeaseBinds {
  explicit LeaseBinds(const LeaseFilter& f)
      : queue(f.queue.value_or("")),
        worker(f.worker.value_or("")),
        queue_ind(f.queue ? soci::i_ok : soci::i_null),
        worker_ind(f.worker ? soci::i_ok : soci::i_null),
        leased(f.kind == LeaseKind::unleased ? 0 : 1),
        unleased(f.kind == LeaseKind::all || f.kind == LeaseKind::unleased ? 1 : 0),
        within_ms(f.kind == LeaseKind::expired    ? 0
                  : f.kind == LeaseKind::expiring ? f.expiring_within.ms()
                                                  : kFarFutureMs),
        older_ms(f.older_than ? f.older_than->ms() : 0) {}

  void bind(soci::statement& st) {
    st.exchange(use(queue, queue_ind, "queue"));
    st.exchange(use(worker, worker_ind, "worker"));
    st.exchange(use(leased, "leased"));
    st.exchange(use(within_ms, "within_ms"));
    st.exchange(use(unleased, "unleased"));
    st.exchange(use(older_ms, "older_ms"));
  }

  std::string queue, worker;
  soci::indicator queue_ind, worker_ind;
  int leased, unleased;
  long long within_ms, older_ms;
};

}  // namespace

std::vector<Lease> LeaseRepository::leases(const LeaseFilter& f) {
  std::vector<Lease> out;
  db_.retrying([&] {
    out.clear();
    LeaseBinds binds(f);
    int limit = f.limit;
    double seconds_left = 0;
    soci::indicator left_ind = soci::i_null;
    soci::statement st(db_.session());
    JobRowReader reader;
    reader.bind(st);
    st.exchange(soci::into(seconds_left, left_ind));
    binds.bind(st);
    st.exchange(use(limit, "limit"));
    prepare_once(st, db_.sql().leases.list_leases);
    for (bool got = st.execute(true); got; got = st.fetch())
      out.push_back({reader.job(), left_ind == soci::i_null ? std::nullopt
                                                            : std::optional<double>(seconds_left)});
  });
  return out;
}

namespace {

// Adds `add` to the count of its (queue, worker), keeping `counts` sorted by them.
void add_count(std::vector<ReapCount>& counts, const ReapCount& add) {
  auto key = [](const ReapCount& c) { return std::tie(c.queue, c.worker); };
  auto it =
      std::lower_bound(counts.begin(), counts.end(), add,
                       [&](const ReapCount& a, const ReapCount& b) { return key(a) < key(b); });
  if (it == counts.end() || key(*it) != key(add)) it = counts.insert(it, {add.queue, add.worker});
  it->requeued += add.requeued;
  it->failed += add.failed;
}

// One returned job, to ready or to failed, counted under its queue and former holder.
void count_reaped(std::vector<ReapCount>& counts, const std::string& queue,
                  const std::optional<std::string>& worker, bool failed) {
  add_count(counts, {queue, worker, failed ? 0 : 1, failed ? 1 : 0});
}

}  // namespace

std::vector<WorkerLeases> LeaseRepository::lease_summary(const LeaseFilter& f) {
  std::vector<WorkerLeases> out;
  db_.retrying([&] {
    out.clear();
    LeaseBinds binds(f);
    std::string worker;
    soci::indicator worker_ind = soci::i_null, expired_ind = soci::i_null,
                    unleased_ind = soci::i_null, left_ind = soci::i_null;
    long long leases = 0, expired = 0, unleased = 0;
    double least_left = 0;
    soci::statement st(db_.session());
    st.exchange(soci::into(worker, worker_ind));
    st.exchange(soci::into(leases));
    st.exchange(soci::into(expired, expired_ind));
    st.exchange(soci::into(unleased, unleased_ind));
    st.exchange(soci::into(least_left, left_ind));
    binds.bind(st);
    prepare_once(st, db_.sql().leases.lease_summary);
    for (bool got = st.execute(true); got; got = st.fetch()) {
      WorkerLeases w;
      if (worker_ind != soci::i_null) w.worker = worker;
      w.leases = leases;
      w.expired = expired_ind == soci::i_null ? 0 : expired;
      w.unleased = unleased_ind == soci::i_null ? 0 : unleased;
      if (left_ind != soci::i_null) w.soonest_seconds_left = least_left;
      out.push_back(w);
    }
  });
  // In one order on every backend (GROUP BY sorts by each server's collation, or not at all).
  std::sort(out.begin(), out.end(),
            [](const WorkerLeases& a, const WorkerLeases& b) { return a.worker < b.worker; });
  return out;
}

std::vector<WorkerLeases> LeaseRepository::lease_summary(const LeaseFilter& f,
                                                         const std::vector<Lease>& shown) {
  // A full page may have left rows out: only the server can count them all.
  if (shown.size() >= static_cast<std::size_t>(f.limit)) return lease_summary(f);
  std::vector<WorkerLeases> out;
  for (const Lease& l : shown) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const WorkerLeases& w) { return w.worker == l.job.locked_by; });
    if (it == out.end()) {
      WorkerLeases w;
      w.worker = l.job.locked_by;
      it = out.insert(out.end(), std::move(w));
    }
    ++it->leases;
    if (!l.seconds_left) {
      ++it->unleased;
      continue;
    }
    if (*l.seconds_left < 0) ++it->expired;
    if (!it->soonest_seconds_left || *l.seconds_left < *it->soonest_seconds_left)
      it->soonest_seconds_left = l.seconds_left;
  }
  std::sort(out.begin(), out.end(),
            [](const WorkerLeases& a, const WorkerLeases& b) { return a.worker < b.worker; });
  return out;
}

ReapResult LeaseRepository::reap(const ReapOptions& o,
                                 const std::function<void(const ReapResult&)>& progress) {
  ReapResult result;
  if (o.dry_run == DryRun::yes) {
    LeaseFilter f;
    f.queue = o.queue;
    f.kind = o.unleased_older_than ? LeaseKind::unleased : LeaseKind::expired;
    // "More than DUR ago", as the mark's own check; the listing's is "at least".
    if (o.unleased_older_than)
      f.older_than = Duration(std::chrono::milliseconds(o.unleased_older_than->ms() + 1));
    f.limit = 1000000;
    // A job out of attempts in a queue with a dead-letter queue would move there, as the
    // mark's trigger moves it.
    std::map<std::string, bool> dead_letters;
    for (const Lease& l : leases(f)) {
      const bool fails = l.job.attempts >= l.job.max_attempts;
      (fails ? result.failed : result.requeued).push_back(l.job.id);
      if (fails) {
        auto known = dead_letters.find(l.job.queue);
        if (known == dead_letters.end())
          known = dead_letters
                      .emplace(l.job.queue,
                               AdminRepository(db_).settings(l.job.queue).dead_letter.has_value())
                      .first;
        if (known->second) result.dead_lettered.push_back(l.job.id);
      }
      count_reaped(result.counts, l.job.queue, l.job.locked_by, fails);
    }
    result.batches = 1;
    return result;
  }
  const Statements& q = db_.sql();
  const bool unleased = o.unleased_older_than.has_value();
  long long older_ms = unleased ? o.unleased_older_than->ms() : 0;
  while (true) {
    std::vector<std::int64_t> requeued, failed, dead_lettered;
    std::vector<ReapCount> counts;
    std::size_t picked_count = 0;
    db_.transaction([&] {
      requeued.clear();
      failed.clear();
      dead_lettered.clear();
      counts.clear();
      auto& s = db_.session();
      std::string queue = o.queue.value_or("");
      soci::indicator queue_ind = o.queue ? soci::i_ok : soci::i_null;
      int batch = o.batch;
      std::vector<long long> ids = fetch_ids(
          s, unleased ? q.leases.reap_unleased_pick : q.leases.reap_pick, [&](soci::statement& st) {
            st.exchange(use(queue, queue_ind, "queue"));
            if (unleased) st.exchange(use(older_ms, "older_ms"));
            st.exchange(use(batch, "batch"));
          });
      picked_count = ids.size();
      if (ids.empty()) return;
      // The jitter is drawn by the statement, per row.
      long long base_ms = o.backoff.base.ms(), cap_ms = o.backoff.cap.ms();
      soci::statement mark(s);
      bind_ids(mark, ids);
      mark.exchange(use(base_ms, "base_ms"));
      mark.exchange(use(cap_ms, "cap_ms"));
      if (unleased) mark.exchange(use(older_ms, "older_ms"));
      prepare_once(mark, expand_ids(unleased ? q.leases.reap_unleased_mark : q.leases.reap_mark,
                                    ids.size()));
      mark.execute(true);
      // Read back inside the transaction: the rows we changed are still ours. A row that
      // is neither ready nor failed now was taken by someone else before the mark.
      long long id = 0;
      int status = 0, attempts = 0;
      std::string queue_name, worker, dead_from;
      soci::indicator worker_ind = soci::i_ok, dead_ind = soci::i_null;
      soci::statement read(s);
      read.exchange(soci::into(id));
      read.exchange(soci::into(status));
      read.exchange(soci::into(queue_name));
      read.exchange(soci::into(worker, worker_ind));
      read.exchange(soci::into(attempts));
      read.exchange(soci::into(dead_from, dead_ind));
      bind_ids(read, ids);
      prepare_once(read, expand_ids(q.leases.reaped_by_ids, ids.size()));
      std::vector<long long> gave_up;
      for (bool got = read.execute(true); got; got = read.fetch()) {
        bool to_ready = status == static_cast<int>(Status::ready);
        if (!to_ready && status != static_cast<int>(Status::failed)) continue;
        // Out of attempts and moved to its dead-letter queue by the same statement: ready
        // there from attempt 0, dead_from naming the queue it was reaped in.
        if (to_ready && attempts == 0 && dead_ind == soci::i_ok) {
          to_ready = false;
          queue_name = dead_from;
          dead_lettered.push_back(id);
        }
        (to_ready ? requeued : failed).push_back(id);
        if (status == static_cast<int>(Status::failed)) gave_up.push_back(id);
        count_reaped(counts, queue_name,
                     worker_ind == soci::i_null ? std::nullopt : std::optional<std::string>(worker),
                     !to_ready);
      }
      // Out of attempts: the jobs waiting for these get their policy, in this transaction.
      Dependencies(db_).parents_gave_up(gave_up, "failed");
    });
    if (picked_count == 0) break;
    result.requeued.insert(result.requeued.end(), requeued.begin(), requeued.end());
    result.failed.insert(result.failed.end(), failed.begin(), failed.end());
    result.dead_lettered.insert(result.dead_lettered.end(), dead_lettered.begin(),
                                dead_lettered.end());
    for (const ReapCount& c : counts) add_count(result.counts, c);
    ++result.batches;
    if (progress) progress(result);
    // A short batch means the expired set is drained; a batch that changed nothing means
    // every row it saw was taken meanwhile, and looping would only spin.
    if (picked_count < static_cast<std::size_t>(o.batch) || requeued.size() + failed.size() == 0)
      break;
    if (o.max_batches > 0 && result.batches >= o.max_batches) break;
  }
  return result;
}

}  // namespace queuectl
