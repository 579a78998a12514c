#include "db/admin_repository.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "core/nearest.hpp"
#include "db/dependencies.hpp"
#include "db/guarded_write.hpp"
#include "db/rate_buckets.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::use;

int status_mask(const std::vector<Status>& statuses) {
  int mask = 0;
  for (Status s : statuses) mask |= 1 << static_cast<int>(s);
  return mask;
}

// Reads id -> status for `ids` with the dialect's statuses_by_ids.
std::map<std::int64_t, Status> statuses_of(Database& db, std::vector<long long>& ids) {
  std::map<std::int64_t, Status> out;
  long long id = 0;
  int status = 0;
  soci::statement st(db.session());
  st.exchange(soci::into(id));
  st.exchange(soci::into(status));
  bind_ids(st, ids);
  prepare_once(st, expand_ids(db.sql().admin.statuses_by_ids, ids.size()));
  for (bool got = st.execute(true); got; got = st.fetch()) out[id] = static_cast<Status>(status);
  return out;
}

}  // namespace

IdOutcome AdminRepository::change_ids(const std::vector<std::int64_t>& ids,
                                      const GuardedWrite& write,
                                      const std::function<void(soci::statement&)>& add_uses,
                                      const std::function<void(std::vector<long long>)>& then) {
  IdOutcome outcome;
  db_.transaction([&] {
    outcome = {};
    // Each id once, in the order given (`cancel 7 7` cancels job 7 once).
    std::vector<std::int64_t> unique;
    std::set<std::int64_t> seen;
    for (std::int64_t id : ids)
      if (seen.insert(id).second) unique.push_back(id);
    std::vector<long long> bound(unique.begin(), unique.end());
    // Changed is what the write itself reports; a job that someone else changed meanwhile
    // (a worker claimed it, another retry ran first) is not among them.
    std::vector<long long> changed = write_ids(db_, write, bound, [&](soci::statement& st) {
      if (add_uses) add_uses(st);
    });
    std::sort(changed.begin(), changed.end());
    if (then) then(changed);
    std::vector<long long> rest;
    for (std::int64_t id : unique) {
      if (std::binary_search(changed.begin(), changed.end(), id))
        outcome.changed.push_back(id);
      else
        rest.push_back(id);
    }
    if (rest.empty()) return;
    // Why the others were left alone: gone, or a status the change does not apply to.
    auto status = statuses_of(db_, rest);
    for (long long id : rest) {
      auto it = status.find(id);
      if (it == status.end())
        outcome.not_found.push_back(id);
      else
        outcome.skipped.push_back({id, it->second});
    }
  });
  return outcome;
}

IdOutcome AdminRepository::retry(const std::vector<std::int64_t>& ids) {
  // A retried job that still waits for parents waits again; the jobs its failure canceled
  // wait for it again.
  return change_ids(ids, db_.sql().admin.retry_ids, {},
                    [&](std::vector<long long> changed) { Dependencies(db_).retried(changed); });
}

IdOutcome AdminRepository::move(const std::vector<std::int64_t>& ids,
                                const std::optional<std::string>& to) {
  std::string target = to.value_or("");
  soci::indicator ind = to ? soci::i_ok : soci::i_null;
  // A dead letter moved back may have been failed there: the jobs its failure canceled wait
  // for it again, as after a retry.
  return change_ids(
      ids, db_.sql().admin.move_ids,
      [&](soci::statement& st) { st.exchange(use(target, ind, "to")); },
      [&](std::vector<long long> changed) { Dependencies(db_).retried(changed); });
}

std::vector<long long> AdminRepository::pick_dead_letters(const std::optional<std::string>& queue,
                                                          std::int64_t after, int batch) {
  std::vector<long long> ids;
  db_.retrying([&] {
    std::string q = queue.value_or("");
    soci::indicator queue_ind = queue ? soci::i_ok : soci::i_null;
    long long after_id = after;
    int n = batch;
    ids = fetch_ids(db_.session(), db_.sql().admin.dead_letters_pick, [&](soci::statement& st) {
      st.exchange(use(q, queue_ind, "queue"));
      st.exchange(use(after_id, "after"));
      st.exchange(use(n, "batch"));
    });
  });
  return ids;
}

std::optional<std::int64_t> AdminRepository::first_dead_letter(const std::string& queue) {
  const std::vector<long long> ids = pick_dead_letters(queue, 0, 1);
  if (ids.empty()) return std::nullopt;
  return ids.front();
}

std::vector<std::int64_t> AdminRepository::move_matching(
    const std::optional<std::string>& from, const std::optional<std::string>& to, DryRun dry_run,
    int batch, const std::function<void(std::int64_t)>& progress) {
  std::vector<std::int64_t> moved;
  std::int64_t after = 0;
  while (true) {
    const std::vector<long long> ids = pick_dead_letters(from, after, batch);
    if (ids.empty()) break;
    after = ids.back();
    if (dry_run == DryRun::yes) {
      moved.insert(moved.end(), ids.begin(), ids.end());
    } else {
      // A job a consumer of the dead-letter queue claimed meanwhile stays where it is.
      auto outcome = move(std::vector<std::int64_t>(ids.begin(), ids.end()), to);
      moved.insert(moved.end(), outcome.changed.begin(), outcome.changed.end());
    }
    if (progress) progress(static_cast<std::int64_t>(moved.size()));
    if (ids.size() < static_cast<std::size_t>(batch)) break;
  }
  return moved;
}

IdOutcome AdminRepository::cancel(const std::vector<std::int64_t>& ids, Force force) {
  // The jobs waiting for a canceled job get their policy in the same transaction.
  std::vector<long long> dependents;
  IdOutcome outcome = change_ids(
      ids, force == Force::yes ? db_.sql().admin.cancel_ids_force : db_.sql().admin.cancel_ids, {},
      [&](std::vector<long long> changed) {
        dependents = Dependencies(db_).parents_gave_up(changed, "was canceled");
      });
  outcome.dependents_canceled.assign(dependents.begin(), dependents.end());
  return outcome;
}

namespace {

// A FinishedFilter's bound values (:queue, NULL for all; :status_mask; :older_ms), kept
// alive for as long as the statement that uses them: pick, count and delete bind the same.
struct FilterValues {
  explicit FilterValues(const FinishedFilter& f)
      : queue(f.queue.value_or("")),
        queue_ind(f.queue ? soci::i_ok : soci::i_null),
        mask(status_mask(f.statuses)),
        older_ms(f.older_than.ms()) {}
  void bind(soci::statement& st) {
    st.exchange(soci::use(queue, queue_ind, "queue"));
    st.exchange(soci::use(mask, "status_mask"));
    st.exchange(soci::use(older_ms, "older_ms"));
  }
  std::string queue;
  soci::indicator queue_ind;
  int mask;
  long long older_ms;
};

}  // namespace

std::vector<long long> AdminRepository::pick_finished(const FinishedFilter& f, std::int64_t after) {
  std::vector<long long> ids;
  db_.retrying([&] {
    FilterValues values(f);
    long long after_id = after;
    int batch = f.batch;
    ids = fetch_ids(db_.session(), db_.sql().admin.finished_pick, [&](soci::statement& st) {
      values.bind(st);
      st.exchange(use(after_id, "after"));
      st.exchange(use(batch, "batch"));
    });
  });
  return ids;
}

std::vector<std::int64_t> AdminRepository::retry_matching(const FinishedFilter& f) {
  std::vector<std::int64_t> retried;
  std::int64_t after = 0;
  while (true) {
    auto ids = pick_finished(f, after);
    if (ids.empty()) break;
    after = ids.back();
    auto outcome = retry(std::vector<std::int64_t>(ids.begin(), ids.end()));
    retried.insert(retried.end(), outcome.changed.begin(), outcome.changed.end());
    if (ids.size() < static_cast<std::size_t>(f.batch)) break;
  }
  return retried;
}

std::int64_t AdminRepository::count_finished(const FinishedFilter& f) {
  long long n = 0;
  db_.retrying([&] {
    FilterValues values(f);
    soci::statement st(db_.session());
    values.bind(st);
    st.exchange(soci::into(n));
    prepare_once(st, db_.sql().admin.finished_count);
    st.execute(true);
  });
  return n;
}

std::int64_t AdminRepository::purge(const FinishedFilter& f, DryRun dry_run,
                                    const std::function<void(std::int64_t)>& progress,
                                    std::vector<std::int64_t>* dependents_canceled) {
  std::int64_t total = 0, after = 0;
  for (int batches = 1;; ++batches) {
    auto ids = pick_finished(f, after);
    if (ids.empty()) break;
    after = ids.back();
    if (dry_run == DryRun::yes) {
      total += static_cast<std::int64_t>(ids.size());
    } else {
      // One short transaction per batch: no long lock, however many rows go.
      // Counted once the batch commits: a retried batch (contention at COMMIT) runs the
      // DELETE again and must not be counted twice.
      long long deleted = 0;
      std::vector<long long> canceled;
      db_.transaction([&] {
        canceled.clear();
        // The DELETE checks the filter again: a job retried and finished again since the
        // pick is newer than the cutoff now, or of a status not asked for.
        FilterValues values(f);
        soci::statement st(db_.session());
        bind_ids(st, ids);
        values.bind(st);
        prepare_once(st, expand_ids(db_.sql().admin.delete_ids, ids.size()));
        st.execute(true);
        deleted = st.get_affected_rows();
        // What --after and batches kept of the jobs that are gone.
        if (deleted > 0) canceled = Dependencies(db_).purged(ids);
      });
      total += deleted;
      if (dependents_canceled)
        dependents_canceled->insert(dependents_canceled->end(), canceled.begin(), canceled.end());
    }
    if (progress) progress(total);
    if (ids.size() < static_cast<std::size_t>(f.batch)) break;
    if (f.max_batches > 0 && batches >= f.max_batches) break;
  }
  return total;
}

void AdminRepository::pause(const std::string& queue) {
  db_.transaction([&] {
    std::string q = queue;
    db_.session() << db_.sql().queues.pause, use(q, "queue");
  });
}

bool AdminRepository::resume(const std::string& queue) {
  long long changed = 0;
  db_.transaction([&] {
    std::string q = queue;
    soci::statement st = statement_once(db_.session(), db_.sql().queues.resume, use(q, "queue"));
    st.execute(true);
    changed = st.get_affected_rows();
  });
  return changed > 0;
}

void AdminRepository::set_strict_groups(const std::string& queue, bool strict) {
  db_.transaction([&] {
    std::string q = queue;
    int flag = strict ? 1 : 0;
    db_.session() << db_.sql().queues.set_strict_groups, use(q, "queue"), use(flag, "strict");
  });
}

void AdminRepository::set_dead_letter(const std::string& queue,
                                      const std::optional<std::string>& target) {
  db_.transaction([&] {
    if (target) {
      // Follow the chain from the new target: it must not come back to `queue`.
      std::map<std::string, std::string> next;
      std::string from, to;
      soci::statement st = statement_once(db_.session(), db_.sql().queues.dead_letter_targets,
                                          soci::into(from), soci::into(to));
      for (bool got = st.execute(true); got; got = st.fetch()) next[from] = to;
      next[queue] = *target;
      std::string path = queue, at = *target;
      for (std::size_t hops = 0; hops <= next.size(); ++hops) {
        path += " -> " + at;
        if (at == queue)
          throw UsageError("--dead-letter " + *target + " would make a loop (" + path +
                           "); nothing was changed");
        auto it = next.find(at);
        if (it == next.end()) break;
        at = it->second;
      }
    }
    std::string q = queue, t = target.value_or("");
    soci::indicator ind = target ? soci::i_ok : soci::i_null;
    db_.session() << db_.sql().queues.set_dead_letter, use(q, "queue"), use(t, ind, "target");
  });
}

void AdminRepository::set_max_processing(const std::string& queue, std::optional<int> max) {
  db_.transaction([&] {
    std::string q = queue;
    int m = max.value_or(0);
    soci::indicator ind = max ? soci::i_ok : soci::i_null;
    db_.session() << db_.sql().queues.set_max_processing, use(q, "queue"), use(m, ind, "max");
  });
}

void AdminRepository::set_retain(const std::string& queue, std::optional<Duration> retain) {
  db_.transaction([&] {
    std::string q = queue;
    long long ms = retain ? retain->ms() : 0;
    soci::indicator ind = retain ? soci::i_ok : soci::i_null;
    db_.session() << db_.sql().queues.set_retain, use(q, "queue"), use(ms, ind, "retain_ms");
  });
}

void AdminRepository::set_keep_done(const std::string& queue, bool keep) {
  db_.transaction([&] {
    std::string q = queue;
    int flag = keep ? 1 : 0;
    db_.session() << db_.sql().queues.set_keep_done, use(q, "queue"), use(flag, "keep");
  });
}

void AdminRepository::set_rate(const std::string& queue, const std::optional<RateLimit>& rate) {
  db_.transaction([&] {
    std::string q = queue;
    int count = rate ? rate->count : 0, burst = rate ? rate->burst : 0;
    int per_key = rate && rate->per_key ? 1 : 0;
    long long period_ms = rate ? rate->period_ms : 0;
    soci::indicator ind = rate ? soci::i_ok : soci::i_null;
    db_.session() << db_.sql().queues.set_rate, use(q, "queue"), use(count, ind, "count"),
        use(period_ms, ind, "period_ms"), use(burst, ind, "burst"), use(per_key, "per_key");
    db_.session() << db_.sql().queues.clear_rate_keys, use(q, "queue");
  });
}

std::optional<std::chrono::milliseconds> AdminRepository::rate_wait(const std::string& queue) {
  std::optional<RateRead> rate;
  db_.retrying([&] { rate = read_rate(db_.session(), db_.sql().queues.rate_state, queue, true); });
  if (!rate || !rate->due) return std::nullopt;
  std::int64_t ms = ms_until_token(rate->limit, rate->tokens_now());
  // With a bucket per key, the claim may have come back empty with the queue's own bucket
  // full (its due jobs all have keys): each key's bucket, empty at worst, has a token again
  // after one token's time, so that is the longest wait, and the shortest one that does not
  // poll hot.
  if (rate->limit.per_key) {
    const std::int64_t one = ms_until_token(rate->limit, 0);
    ms = ms > 0 ? std::min(ms, one) : one;
  }
  // 0: the bucket holds a token again (it came back since the claim, or something else
  // holds the jobs back: busy groups, a concurrency limit); the worker tells the two apart.
  return std::chrono::milliseconds(ms);
}

QueueSettings AdminRepository::settings(const std::string& queue) {
  QueueSettings out;
  db_.retrying([&] {
    out = {};
    out.queue = queue;
    std::string q = queue, dead_letter;
    int paused = 0, strict = 0, max = 0, rate_count = 0, rate_burst = 0, rate_per_key = 0,
        keep_done = 1;
    long long retain_ms = 0, rate_period = 0;
    soci::indicator dl_ind = soci::i_null, max_ind = soci::i_null, retain_ind = soci::i_null,
                    rate_ind = soci::i_null, period_ind = soci::i_null, burst_ind = soci::i_null;
    soci::statement st = statement_once(
        db_.session(), db_.sql().queues.settings, soci::into(paused), soci::into(strict),
        soci::into(dead_letter, dl_ind), soci::into(max, max_ind),
        soci::into(retain_ms, retain_ind), soci::into(rate_count, rate_ind),
        soci::into(rate_period, period_ind), soci::into(rate_burst, burst_ind),
        soci::into(rate_per_key), soci::into(keep_done), use(q, "queue"));
    if (st.execute(true)) {
      if (rate_ind == soci::i_ok && period_ind == soci::i_ok && burst_ind == soci::i_ok)
        out.rate = RateLimit{rate_count, rate_period, rate_burst, rate_per_key != 0};
      out.paused = paused != 0;
      out.strict_groups = strict != 0;
      out.keep_done = keep_done != 0;
      if (dl_ind == soci::i_ok) out.dead_letter = dead_letter;
      if (max_ind == soci::i_ok) out.max_processing = max;
      if (retain_ind == soci::i_ok) out.retain = Duration(std::chrono::milliseconds(retain_ms));
    }
  });
  return out;
}

std::vector<std::string> AdminRepository::queue_names() {
  std::vector<std::string> names;
  db_.retrying([&] {
    names.clear();
    std::string name;
    soci::statement st = statement_once(db_.session(), db_.sql().queues.names, soci::into(name));
    for (bool got = st.execute(true); got; got = st.fetch()) names.push_back(name);
  });
  return names;
}

std::optional<std::string> AdminRepository::unknown_queue_note(const std::string& queue) {
  const std::vector<std::string> names = queue_names();
  if (std::find(names.begin(), names.end(), queue) != names.end()) return std::nullopt;
  const auto near = nearest(queue, names);
  return "queue " + queue + " has never had a job or a setting in " + db_.url().redacted() +
         (near ? "; did you mean " + *near + "?" : std::string(" (check the name)"));
}

std::vector<std::pair<std::string, bool>> AdminRepository::named_queues() {
  std::vector<std::pair<std::string, bool>> named;
  db_.retrying([&] {
    named.clear();
    std::string name;
    int paused = 0;
    soci::statement st =
        statement_once(db_.session(), db_.sql().queues.named, soci::into(name), soci::into(paused));
    for (bool got = st.execute(true); got; got = st.fetch()) named.emplace_back(name, paused != 0);
  });
  return named;
}

std::vector<std::int64_t> AdminRepository::missing_ids(const std::vector<std::int64_t>& ids) {
  constexpr std::size_t kChunk = 500;  // placeholders per statement, well under every limit
  std::vector<std::int64_t> missing;
  for (std::size_t start = 0; start < ids.size(); start += kChunk) {
    std::vector<long long> chunk(
        ids.begin() + static_cast<std::ptrdiff_t>(start),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), start + kChunk)));
    std::map<std::int64_t, Status> found;
    db_.retrying([&] { found = statuses_of(db_, chunk); });
    for (long long id : chunk)
      if (found.find(id) == found.end()) missing.push_back(id);
  }
  return missing;
}

}  // namespace queuectl
