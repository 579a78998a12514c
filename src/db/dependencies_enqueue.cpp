// Dependencies: enqueue --after (one job at a time, or many from enqueue --from).
#include <array>
#include <map>

#include <soci/soci.h>

#include "core/errors.hpp"
#include "db/batches.hpp"
#include "db/dependencies.hpp"
#include "db/dependencies_detail.hpp"
#include "db/dialects/flow_sql.hpp"
#include "db/job_repository_detail.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using namespace dependencies_detail;
using soci::into;
using soci::use;

// A new job's edges, from its parents' statuses (read under their row locks).
struct EdgePlan {
  std::vector<std::pair<long long, int>> edges;  // parent, state
  int pending = 0;                               // its count: edges waiting or canceled_child
  std::vector<long long> counted;                // the parents counted, to mark has_dependents
  std::optional<std::string> cancel;             // why it is canceled at once
  bool waits() const { return pending > 0 && !cancel; }
};

EdgePlan plan_edges(const std::vector<std::int64_t>& after,
                    const std::map<long long, Status>& status_of, ParentFailure policy) {
  EdgePlan plan;
  for (long long parent : after) {
    const Status st = status_of.at(parent);
    int state = kEdgeWaiting;
    if (st == Status::done) {
      state = kEdgeMet;
    } else if (st == Status::failed || st == Status::canceled) {
      if (policy == ParentFailure::cancel) {
        state = kEdgeCanceledChild;
        if (!plan.cancel)
          plan.cancel = "parent job " + std::to_string(parent) +
                        (st == Status::failed ? " failed" : " was canceled");
      } else if (policy == ParentFailure::run) {
        state = kEdgeGaveUp;
      }
    }
    if (state == kEdgeWaiting || state == kEdgeCanceledChild) {
      ++plan.pending;
      plan.counted.push_back(parent);
    }
    plan.edges.emplace_back(parent, state);
  }
  return plan;
}

// Locks the parents of every job and reads their statuses; an id with no job is bad input,
// reported for the first job (from `first`, its index among all the jobs given) that names it.
std::map<long long, Status> lock_parents(soci::session& s, const DependencySql& q,
                                         const std::vector<NewJobAfter>& jobs,
                                         std::size_t first = 0) {
  std::vector<long long> all;
  for (const NewJobAfter& j : jobs) all.insert(all.end(), j.after.begin(), j.after.end());
  sort_unique(all);
  std::map<long long, Status> status_of = lock_statuses(s, q.lock_jobs, all);
  for (std::size_t i = 0; i < jobs.size(); ++i)
    for (long long p : jobs[i].after)
      if (!status_of.count(p))
        throw JobInputError(first + i, "--after: job " + std::to_string(p) +
                                           " does not exist (a job can only wait for jobs "
                                           "already enqueued)");
  return status_of;
}

// "INSERT ... VALUES (:a0, :b0, :c0), (:a1, ...)" over the rows of three bound columns, 500
// rows a statement; the values live in `cols` until each statement has run. Bound by
// position, in the text's order: SQLite finds a named parameter by a linear search of the
// names, which made 1,500 named ones most of an `enqueue --from` of 2,000 jobs with parents:
// there the text has "?" (`question_marks`) instead.
void insert_rows(soci::session& s, const std::string& head, const char* names,
                 std::array<std::vector<long long>, 3>& cols, bool question_marks) {
  constexpr std::size_t kRows = 500;
  const std::size_t total = cols[0].size();
  for (std::size_t start = 0; start < total; start += kRows) {
    const std::size_t n = std::min(kRows, total - start);
    std::string sql = head;
    soci::statement st(s);
    for (std::size_t i = 0; i < n; ++i) {
      sql += i ? ", (" : " VALUES (";
      for (std::size_t c = 0; c < 3; ++c) {
        sql += c ? ", " : "";
        sql +=
            question_marks ? std::string("?") : ":" + std::string(1, names[c]) + std::to_string(i);
        st.exchange(use(cols[c][start + i]));
      }
      sql += ")";
    }
    prepare_once(st, sql);
    st.execute(true);
  }
}

// The rows of three columns as three array parameters :a :b :c (PostgreSQL), one statement.
void insert_arrays(soci::session& s, const std::string& sql,
                   const std::array<std::vector<long long>, 3>& cols) {
  if (cols[0].empty()) return;
  std::array<std::string, 3> text;
  for (std::size_t c = 0; c < 3; ++c) {
    job_repository_detail::ArrayLiteral list;
    for (long long v : cols[c]) list.add(v);
    text[c] = list.done();
  }
  soci::statement st =
      statement_once(s, sql, use(text[0], "a"), use(text[1], "b"), use(text[2], "c"));
  st.execute(true);
}

void check_storable_all(const Dialect& dialect, const std::vector<NewJobAfter>& jobs) {
  for (std::size_t i = 0; i < jobs.size(); ++i)
    job_repository_detail::check_storable(dialect, jobs[i].job.run_at, jobs[i].job.delay,
                                          "job " + std::to_string(i + 1) + "'s run_at");
}

}  // namespace

std::vector<EnqueueResult> Dependencies::enqueue(const std::vector<NewJobAfter>& jobs) {
  check_storable_all(db_.dialect(), jobs);
  std::vector<EnqueueResult> out;
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  db_.transaction([&] {
    out.clear();
    auto& s = db_.session();
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const NewJobAfter& one = jobs[i];
      // The parents, locked: a parent's finishing write waits until this transaction has
      // added its edge, and then sees it; or it finished first, and its status says so.
      const std::map<long long, Status> status_of = lock_parents(s, q, {one}, i);
      // The batch after the parents, as a finishing transaction takes the finished job's row
      // first. (It may then lock a child's row after a batch row; such a deadlock is rare and
      // retried as any contention is.)
      if (one.batch) {
        try {
          Batches(db_).lock_open(*one.batch);
        } catch (const UsageError& e) {
          throw JobInputError(i, e.what());
        }
      }
      EdgePlan plan = plan_edges(one.after, status_of, one.on_parent_failure);
      NewJob job = one.job;
      if (plan.waits()) {  // inserted waiting, not held after
        job.run_at = q.waiting_value;
        job.delay = Duration();
      }
      EnqueueResult r = job_repository_detail::enqueue_one(db_, job);
      if (!r.duplicate) {
        long long child = r.job.id;
        if (one.batch) Batches(db_).add_member(*one.batch, child);
        if (!one.after.empty()) {
          for (const auto& [parent, state] : plan.edges)
            run(s, q.insert_edge, child, parent, state);
          if (!plan.counted.empty()) execute_on_ids(s, q.mark_parents, plan.counted);
          int pending = plan.pending, policy = static_cast<int>(one.on_parent_failure);
          soci::statement st = statement_once(s, q.insert_wait, use(child, "child"),
                                              use(pending, "pending"), use(policy, "policy"));
          st.execute(true);
        }
        if (plan.cancel) {
          std::string error = *plan.cancel;
          soci::statement st =
              statement_once(s, q.cancel_new, use(error, "error"), use(child, "id"));
          st.execute(true);
          Batches(db_).settle({child}, MemberEnd::canceled);
          auto again = fetch_jobs(s, db_.sql().job_by_id,
                                  [&](soci::statement& x) { x.exchange(use(child, "id")); });
          if (!again.empty()) r.job = again.front();
        }
      }
      out.push_back(std::move(r));
    }
  });
  return out;
}

std::int64_t Dependencies::enqueue_bulk(const std::vector<NewJobAfter>& jobs) {
  for (const NewJobAfter& j : jobs)
    if (j.job.dedupe_key || j.batch) throw Error("enqueue_bulk takes no dedupe key and no batch");
  check_storable_all(db_.dialect(), jobs);
  const DependencySql& q = dependency_sql(db_.dialect().backend());
  db_.transaction([&] {
    auto& s = db_.session();
    const std::map<long long, Status> status_of = lock_parents(s, q, jobs);
    std::vector<EdgePlan> plans;
    std::vector<NewJob> plain;
    plans.reserve(jobs.size());
    plain.reserve(jobs.size());
    for (const NewJobAfter& j : jobs) {
      plans.push_back(plan_edges(j.after, status_of, j.on_parent_failure));
      plain.push_back(j.job);
      if (plans.back().waits()) {  // inserted waiting, not held after
        plain.back().run_at = q.waiting_value;
        plain.back().delay = Duration();
      }
    }
    const std::vector<std::int64_t> ids = insert_job_rows(db_, plain);
    std::array<std::vector<long long>, 3> edges, waits;
    std::vector<long long> counted;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].after.empty()) continue;
      for (const auto& [parent, state] : plans[i].edges) {
        edges[0].push_back(parent);
        edges[1].push_back(ids[i]);
        edges[2].push_back(state);
      }
      waits[0].push_back(ids[i]);
      waits[1].push_back(plans[i].pending);
      waits[2].push_back(static_cast<long long>(jobs[i].on_parent_failure));
      counted.insert(counted.end(), plans[i].counted.begin(), plans[i].counted.end());
    }
    const bool marks = db_.dialect().backend() == Backend::sqlite;
    if (!q.insert_edges_arrays.empty()) {
      insert_arrays(s, q.insert_edges_arrays, edges);
      insert_arrays(s, q.insert_waits_arrays, waits);
    } else {
      insert_rows(s, q.insert_edges, "pcs", edges, marks);
      insert_rows(s, q.insert_waits, "cnp", waits, marks);
    }
    sort_unique(counted);
    for_chunks(counted,
               [&](std::vector<long long>& chunk) { execute_on_ids(s, q.mark_parents, chunk); });
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      if (!plans[i].cancel) continue;
      long long child = ids[i];
      std::string error = *plans[i].cancel;
      soci::statement st = statement_once(s, q.cancel_new, use(error, "error"), use(child, "id"));
      st.execute(true);
    }
  });
  return static_cast<std::int64_t>(jobs.size());
}

}  // namespace queuectl
