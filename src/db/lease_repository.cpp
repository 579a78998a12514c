#include "db/lease_repository.hpp"

#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::use;

// "All leases" for the lease filter: lock_until < now + about 300 years, past the longest
// lease a duration can give (100 years) and within the SQL side's millisecond clamp.
constexpr long long kFarFutureMs = 9'000'000'000'000LL;

}  // namespace

std::vector<Lease> LeaseRepository::leases(const LeaseFilter& f) {
  std::vector<Lease> out;
  db_.retrying([&] {
    out.clear();
    std::string queue = f.queue.value_or(""), worker = f.worker.value_or("");
    soci::indicator queue_ind = f.queue ? soci::i_ok : soci::i_null;
    soci::indicator worker_ind = f.worker ? soci::i_ok : soci::i_null;
    int leased = f.kind == LeaseKind::unleased ? 0 : 1;
    int unleased = f.kind == LeaseKind::all || f.kind == LeaseKind::unleased ? 1 : 0;
    long long within_ms = f.kind == LeaseKind::expired    ? 0
                          : f.kind == LeaseKind::expiring ? f.expiring_within.ms()
                                                          : kFarFutureMs;
    long long older_ms = f.older_than ? f.older_than->ms() : 0;
    int limit = f.limit;
    double seconds_left = 0;
    soci::indicator left_ind = soci::i_null;
    soci::statement st(db_.session());
    JobRowReader reader;
    reader.bind(st);
    st.exchange(soci::into(seconds_left, left_ind));
    st.exchange(use(queue, queue_ind, "queue"));
    st.exchange(use(worker, worker_ind, "worker"));
    st.exchange(use(leased, "leased"));
    st.exchange(use(within_ms, "within_ms"));
    st.exchange(use(unleased, "unleased"));
    st.exchange(use(older_ms, "older_ms"));
    st.exchange(use(limit, "limit"));
    prepare_once(st, db_.sql().list_leases);
    for (bool got = st.execute(true); got; got = st.fetch())
      out.push_back({reader.job(), left_ind == soci::i_null ? std::nullopt
                                                            : std::optional<double>(seconds_left)});
  });
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
    for (const Lease& l : leases(f))
      (l.job.attempts >= l.job.max_attempts ? result.failed : result.requeued).push_back(l.job.id);
    result.batches = 1;
    return result;
  }
  const Statements& q = db_.sql();
  const bool unleased = o.unleased_older_than.has_value();
  long long older_ms = unleased ? o.unleased_older_than->ms() : 0;
  while (true) {
    std::vector<std::int64_t> requeued, failed;
    std::size_t picked_count = 0;
    db_.transaction([&] {
      requeued.clear();
      failed.clear();
      auto& s = db_.session();
      std::string queue = o.queue.value_or("");
      soci::indicator queue_ind = o.queue ? soci::i_ok : soci::i_null;
      int batch = o.batch;
      std::vector<long long> ids =
          fetch_ids(s, unleased ? q.reap_unleased_pick : q.reap_pick, [&](soci::statement& st) {
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
      prepare_once(mark, expand_ids(unleased ? q.reap_unleased_mark : q.reap_mark, ids.size()));
      mark.execute(true);
      // Read back inside the transaction: the rows we changed are still ours.
      long long id = 0;
      int status = 0;
      soci::statement read(s);
      read.exchange(soci::into(id));
      read.exchange(soci::into(status));
      bind_ids(read, ids);
      prepare_once(read, expand_ids(q.statuses_by_ids, ids.size()));
      for (bool got = read.execute(true); got; got = read.fetch()) {
        if (status == static_cast<int>(Status::ready)) requeued.push_back(id);
        if (status == static_cast<int>(Status::failed)) failed.push_back(id);
      }
    });
    if (picked_count == 0) break;
    result.requeued.insert(result.requeued.end(), requeued.begin(), requeued.end());
    result.failed.insert(result.failed.end(), failed.begin(), failed.end());
    ++result.batches;
    if (progress) progress(result);
    // A short batch means the expired set is drained; a batch that changed nothing means
    // every row it saw was taken meanwhile, and looping would only spin.
    if (picked_count < static_cast<std::size_t>(o.batch) || requeued.size() + failed.size() == 0)
      break;
  }
  return result;
}

}  // namespace queuectl
