#include "db/dependencies.hpp"

#include <algorithm>
#include <map>

#include <soci/soci.h>

#include "core/errors.hpp"
#include "db/batches.hpp"
#include "db/dependencies_detail.hpp"
#include "db/dialects/flow_sql.hpp"
#include "db/job_repository_detail.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::into;
using soci::use;

using namespace dependencies_detail;

long long affected(soci::session& s, const std::string& sql, long long child,
                   const std::string* error = nullptr) {
  soci::statement st(s);
  std::string e = error ? *error : std::string();
  if (error) st.exchange(use(e, "error"));
  st.exchange(use(child, "child"));
  prepare_once(st, sql);
  st.execute(true);
  return st.get_affected_rows();
}

// Makes a waiting child ready now (nothing if it no longer waits: canceled meanwhile).
void release(soci::session& s, const DependencySql& q, long long child) {
  if (!q.release_selects) {
    affected(s, q.release, child);
    return;
  }
  long long released = 0;
  soci::statement st = statement_once(s, q.release, into(released), use(child, "child"));
  st.execute(true);
}

struct OpenEdge {
  long long parent = 0;
  long long child = 0;
  int policy = 0;
};

std::vector<OpenEdge> open_edges(soci::session& s, const std::string& sql,
                                 std::vector<long long>& ids, bool with_policy) {
  std::vector<OpenEdge> out;
  OpenEdge e;
  soci::statement st(s);
  st.exchange(into(e.parent));
  st.exchange(into(e.child));
  if (with_policy) st.exchange(into(e.policy));
  bind_ids(st, ids);
  prepare_once(st, expand_ids(sql, ids.size()));
  for (bool got = st.execute(true); got; got = st.fetch()) out.push_back(e);
  return out;
}

// open_edges over `ids` 1,000 at a time.
std::vector<OpenEdge> open_edges_chunked(soci::session& s, const std::string& sql,
                                         const std::vector<long long>& ids, bool with_policy) {
  std::vector<OpenEdge> out;
  for_chunks(ids, [&](std::vector<long long>& chunk) {
    std::vector<OpenEdge> part = open_edges(s, sql, chunk, with_policy);
    out.insert(out.end(), part.begin(), part.end());
  });
  return out;
}

// Takes `n` parents off `child`'s count, and releases it when none is left.
void count_down(soci::session& s, const DependencySql& q, long long child, int n_met) {
  int n = n_met;
  {
    soci::statement st = statement_once(s, q.count_down, use(n, "n"), use(child, "child"));
    st.execute(true);
  }
  int left = 1;
  soci::statement st = statement_once(s, q.pending, into(left), use(child, "child"));
  st.execute(true);
  if (left <= 0) release(s, q, child);
}

}  // namespace

std::string_view parent_failure_name(ParentFailure p) {
  switch (p) {
    case ParentFailure::cancel:
      return "cancel";
    case ParentFailure::run:
      return "run";
    case ParentFailure::wait:
      return "wait";
  }
  return "cancel";
}

ParentFailure parse_parent_failure(std::string_view text) {
  for (ParentFailure p : {ParentFailure::cancel, ParentFailure::run, ParentFailure::wait})
    if (parent_failure_name(p) == text) return p;
  throw UsageError("--on-parent-failure: '" + std::string(text) +
                   "' is not one of cancel, run, wait");
}

std::vector<std::int64_t> parse_parent_ids(const std::string& text, const std::string& what) {
  std::vector<std::int64_t> ids;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const bool digits =
        !item.empty() && item.size() <= 18 &&
        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoll(item) <= 0)
      throw UsageError(what + ": '" + item.substr(0, 40) +
                       "' is not a job id (give ids above 0, separated by commas)");
    ids.push_back(std::stoll(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  if (ids.size() > kMaxParents)
    throw UsageError(what + ": " + std::to_string(ids.size()) + " parents; at most " +
                     std::to_string(kMaxParents));
  return ids;
}

void Dependencies::parents_done(std::vector<long long> ids) {
  if (ids.empty()) return;
  sort_unique(ids);
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  auto& s = db_.session();
  Batches(db_).settle(ids, MemberEnd::done);
  // A few statements over all the parents and children, 1,000 ids each, not a few for each
  // edge: an `ack --from` of 500 jobs that each had a waiting child ran at 0.05x one of plain
  // jobs when each edge had its own.
  std::vector<OpenEdge> edges = open_edges_chunked(s, q.open_edges, ids, true);
  if (edges.empty()) return;
  std::map<long long, int> met;  // child -> parents met now (ordered by child)
  for (const OpenEdge& e : edges) ++met[e.child];
  std::vector<long long> children;
  std::map<int, std::vector<long long>> by_count;  // parents met -> those children
  for (const auto& [child, n] : met) {
    children.push_back(child);
    by_count[n].push_back(child);
  }
  // The children's counts locked first, in child order, as every settling transaction takes
  // them: two that share children never wait for each other.
  for_chunks(children, [&](std::vector<long long>& chunk) {
    fetch_ids(s, expand_ids(q.lock_waits, chunk.size()),
              [&](soci::statement& st) { bind_ids(st, chunk); });
  });
  for_chunks(ids, [&](std::vector<long long>& chunk) { execute_on_ids(s, q.meet_edges, chunk); });
  for (auto& entry : by_count)
    for_chunks(entry.second, [&](std::vector<long long>& chunk) {
      int n = entry.first;
      soci::statement st(s);
      st.exchange(use(n, "n"));
      bind_ids(st, chunk);
      prepare_once(st, expand_ids(q.count_down_many, chunk.size()));
      st.execute(true);
    });
  std::vector<long long> ready;
  for_chunks(children, [&](std::vector<long long>& chunk) {
    std::vector<long long> got = fetch_ids(s, expand_ids(q.released_among, chunk.size()),
                                           [&](soci::statement& st) { bind_ids(st, chunk); });
    ready.insert(ready.end(), got.begin(), got.end());
  });
  for_chunks(ready, [&](std::vector<long long>& chunk) {
    if (!q.release_selects) {
      execute_on_ids(s, q.release_many, chunk);
      return;
    }
    fetch_ids(s, expand_ids(q.release_many, chunk.size()),
              [&](soci::statement& st) { bind_ids(st, chunk); });
  });
}

std::vector<long long> Dependencies::parents_gave_up(std::vector<long long> ids,
                                                     const std::string& how) {
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  auto& s = db_.session();
  // Breadth first: a child canceled here passes the cancel on to its own children.
  std::vector<long long> level = std::move(ids);
  std::string level_how = how;
  MemberEnd end = how == "failed" ? MemberEnd::failed : MemberEnd::canceled;
  std::vector<long long> all_canceled;
  while (!level.empty()) {
    sort_unique(level);
    Batches(db_).settle(level, end);
    end = MemberEnd::canceled;
    std::vector<OpenEdge> edges = open_edges_chunked(s, q.open_edges, level, true);
    std::vector<long long> canceled, run_now;
    for (const OpenEdge& e : edges) {
      const auto policy = static_cast<ParentFailure>(e.policy);
      if (policy == ParentFailure::wait) continue;
      int state = kEdgeGaveUp;
      if (policy == ParentFailure::cancel) {
        std::string error = "parent job " + std::to_string(e.parent) + " " + level_how;
        if (affected(s, q.cancel_child, e.child, &error) > 0) {
          state = kEdgeCanceledChild;
          canceled.push_back(e.child);
        } else {
          // No longer waiting (canceled by hand, or by another parent): settled and counted.
          run_now.push_back(e.child);
        }
      } else {
        run_now.push_back(e.child);
      }
      run(s, q.set_edge, e.child, e.parent, state);
    }
    // A parent that gave up lets a child with policy "run" go on as if it were done; the
    // count of every edge settled here without a cancel goes down.
    std::map<long long, int> met;
    for (long long c : run_now) ++met[c];
    for (const auto& [child, n] : met) count_down(s, q, child, n);
    all_canceled.insert(all_canceled.end(), canceled.begin(), canceled.end());
    level = std::move(canceled);
    level_how = "was canceled";
  }
  return all_canceled;
}

bool Dependencies::reconcile(long long child, bool direct) {
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  auto& s = db_.session();
  long long c = child;
  // The edges that gave up, and their parents' rows locked (job rows before count rows, as
  // a finishing transaction takes them): a parent failing or finishing meanwhile waits.
  std::vector<std::pair<long long, int>> edges;  // parent, state
  {
    long long parent = 0;
    int state = 0, status = 0;
    soci::indicator status_ind = soci::i_ok;
    soci::statement st = statement_once(s, q.parents, into(parent), into(state),
                                        into(status, status_ind), use(c, "id"));
    for (bool got = st.execute(true); got; got = st.fetch())
      if (state == kEdgeCanceledChild || state == kEdgeGaveUp) edges.emplace_back(parent, state);
  }
  std::vector<long long> parent_ids;
  for (const auto& e : edges) parent_ids.push_back(e.first);
  sort_unique(parent_ids);
  const std::map<long long, Status> status_of = lock_statuses(s, q.lock_jobs, parent_ids);
  int pending = 0;
  {
    soci::statement st = statement_once(s, q.lock_wait, into(pending), use(c, "child"));
    if (!st.execute(true)) return false;
  }
  auto gave_up = [&](long long parent) {
    auto it = status_of.find(parent);
    return it == status_of.end() || it->second == Status::failed || it->second == Status::canceled;
  };
  // A job canceled by a parent's failure waits again only when no parent of it is still
  // failed or canceled; a job retried by hand goes on without those.
  if (!direct)
    for (const auto& [parent, state] : edges)
      if (gave_up(parent)) return false;
  std::vector<long long> reopened;
  for (const auto& [parent, state] : edges) {
    auto it = status_of.find(parent);
    const int now = gave_up(parent)              ? kEdgeGaveUp
                    : it->second == Status::done ? kEdgeMet
                                                 : kEdgeWaiting;
    if (now == kEdgeWaiting) reopened.push_back(parent);
    if (now != state) run(s, q.set_edge, c, parent, now);
  }
  if (!reopened.empty()) execute_on_ids(s, q.mark_parents, reopened);
  {
    long long c2 = c;
    soci::statement st = statement_once(s, q.recount, use(c, "child"), use(c2, "child2"));
    st.execute(true);
  }
  if (!direct && affected(s, q.revive_child, c) == 0) return false;
  soci::statement rd = statement_once(s, q.pending, into(pending), use(c, "child"));
  rd.execute(true);
  if (pending > 0) {
    soci::statement st = statement_once(s, q.hold, use(c, "id"));
    st.execute(true);
  } else if (!direct) {
    release(s, q, c);
  }
  return true;
}

void Dependencies::retried(std::vector<long long> ids) {
  if (ids.empty()) return;
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  auto& s = db_.session();
  sort_unique(ids);
  // A retried job that waits for parents (retry set its run_at to now): its edges from
  // parents that gave up are settled again, and it waits for those not yet done.
  for_chunks(ids, [&](std::vector<long long>& chunk) {
    for (long long c : fetch_ids(s, expand_ids(q.children_among, chunk.size()),
                                 [&](soci::statement& st) { bind_ids(st, chunk); }))
      reconcile(c, true);
  });
  // The jobs a retried job's failure canceled wait for it again, unless another of their
  // parents is still failed or canceled; and so on down.
  std::vector<long long> level = ids;
  while (!level.empty()) {
    sort_unique(level);
    std::vector<long long> revived;
    for (const OpenEdge& e : open_edges_chunked(s, q.revive_edges, level, false))
      if (reconcile(e.child, false)) revived.push_back(e.child);
    level = std::move(revived);
  }
}

std::vector<long long> Dependencies::purged(std::vector<long long> ids) {
  if (ids.empty()) return {};
  auto& s = db_.session();
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  // A parent purged while jobs still wait for it (policy wait, after it failed or was
  // canceled: a done parent's edges are met) can no longer be retried: those jobs are
  // canceled, and pass the cancel on, as a parent's failure does.
  // (A job with policy run whose parent was purged with its edge still open, as when an
  // application's own SQL failed the parent, counts it as settled and goes on.)
  std::vector<long long> canceled, settled;
  for (const OpenEdge& e : open_edges_chunked(s, q.orphaned_edges, ids, true)) {
    std::string error = "parent job " + std::to_string(e.parent) + " was purged before it was done";
    const bool was_waiting = static_cast<ParentFailure>(e.policy) != ParentFailure::run &&
                             affected(s, q.cancel_child, e.child, &error) > 0;
    if (was_waiting)
      canceled.push_back(e.child);
    else
      settled.push_back(e.child);
    run(s, q.set_edge, e.child, e.parent, was_waiting ? kEdgeCanceledChild : kEdgeGaveUp);
  }
  std::map<long long, int> met;
  for (long long c : settled) ++met[c];
  for (const auto& [child, n] : met) count_down(s, q, child, n);
  if (!canceled.empty()) {
    const std::vector<long long> further = parents_gave_up(canceled, "was canceled");
    canceled.insert(canceled.end(), further.begin(), further.end());
  }
  for (const std::string* sql :
       {&q.purge_edges, &q.purge_waits, &batch_sql(db_.dialect().backend()).purge_members})
    execute_on_ids(s, *sql, ids);
  return canceled;
}

std::vector<std::int64_t> Dependencies::ack_parents(const std::vector<const AckItem*>& items) {
  std::vector<std::int64_t> lost;
  if (items.empty()) return lost;
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  // In id order, as `enqueue --after` and a retry lock parents; the jobs without a result in
  // a few statements per token (`ack --from` of one claim's jobs: one token).
  std::vector<const AckItem*> sorted = items;
  std::sort(sorted.begin(), sorted.end(),
            [](const AckItem* a, const AckItem* b) { return a->id < b->id; });
  std::map<std::string, std::vector<long long>> by_token;
  std::vector<const AckItem*> with_result;
  for (const AckItem* item : sorted) {
    if (item->result)
      with_result.push_back(item);
    else
      by_token[item->token].push_back(item->id);
  }
  // One transaction: the jobs' own writes under their tokens, then the children of all that
  // were acked, settled together.
  db_.transaction([&] {
    lost.clear();
    auto& s = db_.session();
    std::vector<long long> acked;
    for (auto& [token_text, ids] : by_token)
      for_chunks(ids, [&](std::vector<long long>& chunk) {
        std::string token = token_text;
        std::vector<long long> got =
            fetch_ids(s, expand_ids(q.ackable_parents, chunk.size()), [&](soci::statement& st) {
              bind_ids(st, chunk);
              st.exchange(use(token, "token"));
            });
        if (!got.empty()) execute_on_ids(s, q.ack_parents_ids, got);
        std::sort(got.begin(), got.end());
        for (long long id : chunk)
          if (std::binary_search(got.begin(), got.end(), id))
            acked.push_back(id);
          else
            lost.push_back(id);
      });
    if (!with_result.empty()) {
      long long id = 0;
      std::string token, result;
      soci::statement st(s);
      st.exchange(use(result, "result"));
      st.exchange(use(id, "id"));
      st.exchange(use(token, "token"));
      // Prepared on the server only to run again; one runs once (prepare_once).
      if (with_result.size() == 1) {
        prepare_once(st, q.ack_parent);
      } else {
        st.alloc();
        st.prepare(q.ack_parent);
        st.define_and_bind();
      }
      for (const AckItem* item : with_result) {
        id = item->id;
        token = item->token;
        result = *item->result;
        st.execute(true);
        if (st.get_affected_rows() > 0)
          acked.push_back(id);
        else
          lost.push_back(item->id);
      }
    }
    parents_done(acked);
  });
  return lost;
}

std::optional<JobWaits> Dependencies::waits_of(std::int64_t job_id) {
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  std::optional<JobWaits> out;
  db_.snapshot([&] {
    out.reset();
    auto& s = db_.session();
    long long id = job_id;
    JobWaits w;
    bool any = false;
    {
      int pending = 0, policy = 0;
      soci::statement st =
          statement_once(s, q.wait_row, into(pending), into(policy), use(id, "id"));
      if (st.execute(true)) {
        any = true;
        w.pending = pending;
        w.on_parent_failure = static_cast<ParentFailure>(policy);
      }
    }
    {
      long long parent = 0;
      int state = 0, status = 0;
      soci::indicator status_ind = soci::i_ok;
      soci::statement st = statement_once(s, q.parents, into(parent), into(state),
                                          into(status, status_ind), use(id, "id"));
      for (bool got = st.execute(true); got; got = st.fetch()) {
        ParentLink link;
        link.id = parent;
        if (status_ind == soci::i_ok) link.status = static_cast<Status>(status);
        link.state = !link.status                  ? "missing"
                     : state == kEdgeWaiting       ? "waiting"
                     : state == kEdgeMet           ? "done"
                     : state == kEdgeCanceledChild ? "canceled-child"
                                                   : "gave-up";
        w.parents.push_back(link);
      }
    }
    {
      long long child = 0;
      soci::statement st = statement_once(s, q.children, into(child), use(id, "id"));
      for (bool got = st.execute(true); got; got = st.fetch()) w.children.push_back(child);
      long long total = 0;
      soci::statement c = statement_once(s, q.children_count, into(total), use(id, "id"));
      c.execute(true);
      w.children_total = total;
    }
    if (any || !w.children.empty()) out = std::move(w);
  });
  return out;
}

}  // namespace queuectl
