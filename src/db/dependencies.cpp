#include "db/dependencies.hpp"

#include <algorithm>
#include <array>
#include <map>

#include <soci/soci.h>

#include "core/errors.hpp"
#include "db/batches.hpp"
#include "db/job_repository_detail.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::into;
using soci::use;

// Edge states (queuectl_job_deps.state).
constexpr int kEdgeWaiting = 0;
constexpr int kEdgeMet = 1;
constexpr int kEdgeCanceledChild = 2;
constexpr int kEdgeGaveUp = 3;

// The statements, per backend. Each binds its values; "{ids}" is a list of :idN.
struct DepSql {
  std::string lock_jobs;       // {ids} -> id, status; the rows locked for this transaction
  std::string mark_parents;    // {ids}
  std::string insert_edge;     // :parent :child :state
  std::string insert_wait;     // :child :pending :policy
  std::string hold;            // :id -> run_at = waiting
  std::string waiting_value;   // the waiting run_at as NewJob::run_at text
  std::string cancel_new;      // :id :error
  std::string open_edges;      // {ids} -> parent, child, policy; edges still waiting
  std::string set_edge;        // :state :parent :child
  std::string count_down;      // :n :child
  std::string pending;         // :child -> pending
  std::string release;         // :child
  std::string cancel_child;    // :error :child
  std::string revive_edges;    // {ids} -> parent, child (edges whose parent canceled the child)
  std::string revive_child;    // :child
  std::string lock_wait;       // :child -> pending, the row locked
  std::string recount;         // :child :child2 (the same) -> pending = edges in state 0 or 2
  std::string children_among;  // {ids} -> those with a count (enqueued with --after)
  std::string ack_parent;      // :result :id :token
  std::string wait_row;        // :id -> pending, policy
  std::string parents;         // :id -> parent, state, status (NULL: purged)
  std::string children;        // :id -> child (first 100)
  std::string children_count;  // :id -> count
};

DepSql make_sql(Backend backend) {
  std::string now, waiting, lock_suffix, id, result, error, token;
  switch (backend) {
    case Backend::postgresql:
      now = "now()";
      waiting = "TIMESTAMPTZ '9999-12-31 00:00:00+00'";
      lock_suffix = " FOR UPDATE";
      id = "CAST(:id AS bigint)";
      result = "CAST(:result AS jsonb)";
      error = "CAST(:error AS text)";
      token = "CAST(:token AS text)";
      break;
    case Backend::mysql:
      now = "NOW(6)";
      // TIMESTAMP(6) ends in 2038: its last microsecond (a retry's backoff stops one short).
      waiting = "TIMESTAMP'2038-01-19 03:14:07.999999'";
      lock_suffix = " FOR UPDATE";
      id = ":id";
      result = ":result";
      error = ":error";
      token = ":token";
      break;
    case Backend::sqlite:
      now = "strftime('%Y-%m-%d %H:%M:%f', 'now')";
      waiting = "'9999-12-31 00:00:00.000'";
      id = ":id";
      result = ":result";
      error = ":error";
      token = ":token";
      break;
  }
  const bool pg = backend == Backend::postgresql;
  auto n = [&](const char* name, const char* type) {
    return pg ? "CAST(:" + std::string(name) + " AS " + type + ")" : ":" + std::string(name);
  };
  DepSql s;
  s.lock_jobs = "SELECT id, status FROM job_queue WHERE id IN ({ids}) ORDER BY id" + lock_suffix;
  s.mark_parents =
      "UPDATE job_queue SET has_dependents = 1 WHERE id IN ({ids}) AND has_dependents = 0";
  s.insert_edge = "INSERT INTO queuectl_job_deps (parent_id, child_id, state) VALUES (" +
                  n("parent", "bigint") + ", " + n("child", "bigint") + ", " +
                  n("state", "smallint") + ")";
  s.insert_wait = "INSERT INTO queuectl_job_waits (child_id, pending, on_parent_failure) VALUES (" +
                  n("child", "bigint") + ", " + n("pending", "integer") + ", " +
                  n("policy", "smallint") + ")";
  s.hold = "UPDATE job_queue SET run_at = " + waiting + " WHERE id = " + id;
  s.waiting_value = backend == Backend::mysql    ? "2038-01-19 03:14:07.999999"
                    : backend == Backend::sqlite ? "9999-12-31 00:00:00.000"
                                                 : "9999-12-31 00:00:00.000000";
  s.cancel_new = "UPDATE job_queue SET status = 4, finished_at = " + now + ", updated_at = " + now +
                 ", last_error = " + error + " WHERE id = " + id;
  // Edges still waiting, in child order (the order every settling transaction locks the
  // children's counts in, so that two of them never wait for each other).
  s.open_edges =
      "SELECT d.parent_id, d.child_id, w.on_parent_failure"
      "  FROM queuectl_job_deps d JOIN queuectl_job_waits w ON w.child_id = d.child_id"
      " WHERE d.parent_id IN ({ids}) AND d.state = 0"
      " ORDER BY d.child_id, d.parent_id";
  s.set_edge = "UPDATE queuectl_job_deps SET state = " + n("state", "smallint") +
               " WHERE parent_id = " + n("parent", "bigint") +
               " AND child_id = " + n("child", "bigint");
  s.count_down = "UPDATE queuectl_job_waits SET pending = pending - " + n("n", "integer") +
                 " WHERE child_id = " + n("child", "bigint");
  s.pending = "SELECT pending FROM queuectl_job_waits WHERE child_id = " + n("child", "bigint");
  s.release = "UPDATE job_queue SET run_at = " + now + ", updated_at = " + now +
              " WHERE id = " + n("child", "bigint") + " AND status = 0 AND run_at >= " + waiting;
  // On PostgreSQL the release also wakes the queue's listening workers (at commit), as an
  // insert does.
  if (pg)
    s.release = "WITH r AS (" + s.release +
                " RETURNING queue) SELECT COUNT(*) FROM (SELECT pg_notify('queuectl_jobs', r.queue)"
                " FROM r) n";
  s.cancel_child = "UPDATE job_queue SET status = 4, finished_at = " + now +
                   ", updated_at = " + now + ", last_error = " + error +
                   " WHERE id = " + n("child", "bigint") +
                   " AND status = 0 AND run_at >= " + waiting;
  s.revive_edges =
      "SELECT d.parent_id, d.child_id"
      "  FROM queuectl_job_deps d JOIN queuectl_job_waits w ON w.child_id = d.child_id"
      " WHERE d.parent_id IN ({ids}) AND d.state = 2"
      " ORDER BY d.child_id, d.parent_id";
  s.revive_child = "UPDATE job_queue SET status = 0, run_at = " + waiting +
                   ", finished_at = NULL, last_error = NULL, updated_at = " + now +
                   " WHERE id = " + n("child", "bigint") + " AND status = 4";
  s.lock_wait = "SELECT pending FROM queuectl_job_waits WHERE child_id = " + n("child", "bigint") +
                lock_suffix;
  s.recount =
      "UPDATE queuectl_job_waits SET pending = (SELECT COUNT(*) FROM queuectl_job_deps d"
      " WHERE d.child_id = " +
      n("child", "bigint") + " AND d.state IN (0, 2)) WHERE child_id = " + n("child2", "bigint");
  s.children_among =
      "SELECT child_id FROM queuectl_job_waits WHERE child_id IN ({ids})"
      " ORDER BY child_id";
  s.ack_parent = "UPDATE job_queue SET status = 2, result = " + result +
                 ", lock_until = NULL, finished_at = " + now + ", updated_at = " + now +
                 " WHERE id = " + id + " AND status = 1 AND lock_token = " + token +
                 " AND has_dependents = 1";
  s.wait_row = "SELECT pending, on_parent_failure FROM queuectl_job_waits WHERE child_id = " + id;
  s.parents =
      "SELECT d.parent_id, d.state, j.status"
      "  FROM queuectl_job_deps d LEFT JOIN job_queue j ON j.id = d.parent_id"
      " WHERE d.child_id = " +
      id + " ORDER BY d.parent_id";
  s.children = "SELECT child_id FROM queuectl_job_deps WHERE parent_id = " + id +
               " ORDER BY child_id LIMIT 100";
  s.children_count = "SELECT COUNT(*) FROM queuectl_job_deps WHERE parent_id = " + id;
  return s;
}

const DepSql& sql_for(Backend backend) {
  static const DepSql pg = make_sql(Backend::postgresql);
  static const DepSql my = make_sql(Backend::mysql);
  static const DepSql lite = make_sql(Backend::sqlite);
  switch (backend) {
    case Backend::postgresql:
      return pg;
    case Backend::mysql:
      return my;
    case Backend::sqlite:
      break;
  }
  return lite;
}

void run(soci::session& s, const std::string& sql, long long child, long long parent = 0,
         int state = 0) {
  soci::statement st(s);
  if (sql.find(":state") != std::string::npos) st.exchange(use(state, "state"));
  if (sql.find(":parent") != std::string::npos) st.exchange(use(parent, "parent"));
  st.exchange(use(child, "child"));
  prepare_once(st, sql);
  st.execute(true);
}

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
void release(soci::session& s, const DepSql& q, long long child, bool pg) {
  if (!pg) {
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

// open_edges over `ids` 1,000 at a time (a cancel passed down may reach any number of jobs).
std::vector<OpenEdge> open_edges_chunked(soci::session& s, const std::string& sql,
                                         const std::vector<long long>& ids, bool with_policy) {
  std::vector<OpenEdge> out;
  for (std::size_t start = 0; start < ids.size(); start += 1000) {
    std::vector<long long> chunk(
        ids.begin() + static_cast<std::ptrdiff_t>(start),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), start + 1000)));
    std::vector<OpenEdge> part = open_edges(s, sql, chunk, with_policy);
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

void sort_unique(std::vector<long long>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
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

std::vector<EnqueueResult> Dependencies::enqueue(const std::vector<NewJobAfter>& jobs) {
  for (std::size_t i = 0; i < jobs.size(); ++i)
    job_repository_detail::check_storable(db_.dialect(), jobs[i].job.run_at, jobs[i].job.delay,
                                          "job " + std::to_string(i + 1) + "'s run_at");
  std::vector<EnqueueResult> out;
  const DepSql& q = sql_for(db_.dialect().backend());
  db_.transaction([&] {
    out.clear();
    auto& s = db_.session();
    for (const NewJobAfter& one : jobs) {
      // The parents, locked: a parent's finishing write waits until this transaction has
      // added its edge, and then sees it; or it finished first, and its status says so.
      std::map<long long, Status> parents;
      if (!one.after.empty()) {
        std::vector<long long> ids(one.after.begin(), one.after.end());
        long long id = 0;
        int status = 0;
        soci::statement st(s);
        st.exchange(into(id));
        st.exchange(into(status));
        bind_ids(st, ids);
        prepare_once(st, expand_ids(q.lock_jobs, ids.size()));
        for (bool got = st.execute(true); got; got = st.fetch())
          parents[id] = static_cast<Status>(status);
        for (long long p : ids)
          if (!parents.count(p))
            throw UsageError("--after: job " + std::to_string(p) +
                             " does not exist (a job can only wait for jobs already enqueued)");
      }
      // The batch after the parents, as a finishing transaction takes the finished job's row
      // first. (It may then lock a child's row after a batch row; such a deadlock is rare and
      // retried as any contention is.)
      if (one.batch) Batches(db_).lock_open(*one.batch);
      EnqueueResult r = job_repository_detail::enqueue_one(db_, one.job);
      if (r.duplicate) {
        out.push_back(std::move(r));
        continue;
      }
      long long child = r.job.id;
      if (one.batch) Batches(db_).add_member(*one.batch, child);
      if (one.after.empty()) {
        out.push_back(std::move(r));
        continue;
      }
      std::vector<long long> unfinished;
      int pending = 0;
      std::optional<long long> canceled_by;
      std::string canceled_how;
      for (const auto& [parent, status] : parents) {
        int state = kEdgeWaiting;
        if (status == Status::done) {
          state = kEdgeMet;
        } else if (status == Status::failed || status == Status::canceled) {
          if (one.on_parent_failure == ParentFailure::cancel) {
            state = kEdgeCanceledChild;
            if (!canceled_by) {
              canceled_by = parent;
              canceled_how = status == Status::failed ? "failed" : "was canceled";
            }
          } else if (one.on_parent_failure == ParentFailure::run) {
            state = kEdgeGaveUp;
          }
        }
        // A parent whose failure canceled this job stays counted: its retry reopens the edge.
        if (state == kEdgeWaiting || state == kEdgeCanceledChild) {
          ++pending;
          unfinished.push_back(parent);
        }
        run(s, q.insert_edge, child, parent, state);
      }
      if (!unfinished.empty()) execute_on_ids(s, q.mark_parents, unfinished);
      {
        int policy = static_cast<int>(one.on_parent_failure);
        soci::statement st = statement_once(s, q.insert_wait, use(child, "child"),
                                            use(pending, "pending"), use(policy, "policy"));
        st.execute(true);
      }
      if (canceled_by) {
        std::string error = "parent job " + std::to_string(*canceled_by) + " " + canceled_how;
        soci::statement st = statement_once(s, q.cancel_new, use(error, "error"), use(child, "id"));
        st.execute(true);
        Batches(db_).settle({child}, MemberEnd::canceled);
      } else if (pending > 0) {
        soci::statement st = statement_once(s, q.hold, use(child, "id"));
        st.execute(true);
      }
      if (canceled_by || pending > 0) {
        auto again = fetch_jobs(s, db_.sql().job_by_id,
                                [&](soci::statement& x) { x.exchange(use(child, "id")); });
        if (!again.empty()) r.job = again.front();
      }
      out.push_back(std::move(r));
    }
  });
  return out;
}

namespace {

// "INSERT ... VALUES (:a0, :b0, :c0), (:a1, ...)" over `rows` rows of three bound columns,
// `rows` at a time; the values live in `cols` until the statement has run.
void insert_rows(soci::session& s, const std::string& head, const char* names,
                 std::array<std::vector<long long>, 3>& cols) {
  constexpr std::size_t kRows = 500;
  const std::size_t total = cols[0].size();
  for (std::size_t start = 0; start < total; start += kRows) {
    const std::size_t n = std::min(kRows, total - start);
    std::string sql = head;
    soci::statement st(s);
    for (std::size_t i = 0; i < n; ++i) {
      sql += i ? ", (" : " VALUES (";
      for (std::size_t c = 0; c < 3; ++c) {
        const std::string name = std::string(1, names[c]) + std::to_string(i);
        sql += (c ? ", :" : ":") + name;
        st.exchange(use(cols[c][start + i], name));
      }
      sql += ")";
    }
    prepare_once(st, sql);
    st.execute(true);
  }
}

// Runs a "{ids}" statement over `ids`, 1,000 at a time.
void on_ids_chunked(soci::session& s, const std::string& sql, const std::vector<long long>& ids) {
  for (std::size_t start = 0; start < ids.size(); start += 1000) {
    std::vector<long long> chunk(
        ids.begin() + static_cast<std::ptrdiff_t>(start),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), start + 1000)));
    execute_on_ids(s, sql, chunk);
  }
}

}  // namespace

std::int64_t Dependencies::enqueue_bulk(const std::vector<NewJobAfter>& jobs) {
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].job.dedupe_key || jobs[i].batch)
      throw Error("enqueue_bulk takes no dedupe key and no batch");
    job_repository_detail::check_storable(db_.dialect(), jobs[i].job.run_at, jobs[i].job.delay,
                                          "job " + std::to_string(i + 1) + "'s run_at");
  }
  const DepSql& q = sql_for(db_.dialect().backend());
  db_.transaction([&] {
    auto& s = db_.session();
    std::vector<long long> all;
    for (const NewJobAfter& j : jobs) all.insert(all.end(), j.after.begin(), j.after.end());
    sort_unique(all);
    std::map<long long, Status> status_of;
    for (std::size_t start = 0; start < all.size(); start += 1000) {
      std::vector<long long> chunk(
          all.begin() + static_cast<std::ptrdiff_t>(start),
          all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), start + 1000)));
      long long id = 0;
      int status = 0;
      soci::statement st(s);
      st.exchange(into(id));
      st.exchange(into(status));
      bind_ids(st, chunk);
      prepare_once(st, expand_ids(q.lock_jobs, chunk.size()));
      for (bool got = st.execute(true); got; got = st.fetch())
        status_of[id] = static_cast<Status>(status);
    }
    for (long long p : all)
      if (!status_of.count(p))
        throw UsageError("--after: job " + std::to_string(p) +
                         " does not exist (a job can only wait for jobs already enqueued)");
    // A job that will wait is inserted waiting (its run_at the stand-in), not held after.
    std::vector<NewJob> plain;
    plain.reserve(jobs.size());
    for (const NewJobAfter& j : jobs) {
      plain.push_back(j.job);
      bool waits_for_one = false, canceled_now = false;
      for (long long parent : j.after) {
        const Status st = status_of[parent];
        const bool gave_up = st == Status::failed || st == Status::canceled;
        canceled_now = canceled_now || (gave_up && j.on_parent_failure == ParentFailure::cancel);
        waits_for_one = waits_for_one || st == Status::ready || st == Status::processing ||
                        (gave_up && j.on_parent_failure == ParentFailure::wait);
      }
      if (waits_for_one && !canceled_now) {
        plain.back().run_at = q.waiting_value;
        plain.back().delay = Duration();
      }
    }
    const std::vector<std::int64_t> ids = insert_job_rows(db_, plain);
    std::array<std::vector<long long>, 3> edges, waits;
    std::vector<long long> unfinished;
    std::vector<std::pair<long long, std::string>> canceled;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const NewJobAfter& j = jobs[i];
      if (j.after.empty()) continue;
      const long long child = ids[i];
      long long pending = 0;
      std::optional<std::string> cancel;
      for (long long parent : j.after) {
        const Status st = status_of[parent];
        long long state = kEdgeWaiting;
        if (st == Status::done) {
          state = kEdgeMet;
        } else if (st == Status::failed || st == Status::canceled) {
          if (j.on_parent_failure == ParentFailure::cancel) {
            state = kEdgeCanceledChild;
            if (!cancel)
              cancel = "parent job " + std::to_string(parent) +
                       (st == Status::failed ? " failed" : " was canceled");
          } else if (j.on_parent_failure == ParentFailure::run) {
            state = kEdgeGaveUp;
          }
        }
        if (state == kEdgeWaiting || state == kEdgeCanceledChild) {
          ++pending;
          unfinished.push_back(parent);
        }
        edges[0].push_back(parent);
        edges[1].push_back(child);
        edges[2].push_back(state);
      }
      waits[0].push_back(child);
      waits[1].push_back(pending);
      waits[2].push_back(static_cast<long long>(j.on_parent_failure));
      if (cancel) canceled.emplace_back(child, *cancel);
    }
    insert_rows(s, "INSERT INTO queuectl_job_deps (parent_id, child_id, state)", "pcs", edges);
    insert_rows(s, "INSERT INTO queuectl_job_waits (child_id, pending, on_parent_failure)", "cnp",
                waits);
    sort_unique(unfinished);
    on_ids_chunked(s, q.mark_parents, unfinished);
    for (auto& [child, error] : canceled) {
      long long c = child;
      soci::statement st = statement_once(s, q.cancel_new, use(error, "error"), use(c, "id"));
      st.execute(true);
    }
  });
  return static_cast<std::int64_t>(jobs.size());
}

void Dependencies::parents_done(std::vector<long long> ids) {
  if (ids.empty()) return;
  sort_unique(ids);
  const DepSql& q = sql_for(db_.dialect().backend());
  auto& s = db_.session();
  Batches(db_).settle(ids, MemberEnd::done);
  std::vector<OpenEdge> edges = open_edges_chunked(s, q.open_edges, ids, true);
  std::map<long long, int> met;  // child -> parents met now (ordered by child)
  for (const OpenEdge& e : edges) {
    run(s, q.set_edge, e.child, e.parent, kEdgeMet);
    ++met[e.child];
  }
  for (const auto& [child, n_met] : met) {
    long long c = child;
    int n = n_met;
    {
      soci::statement st = statement_once(s, q.count_down, use(n, "n"), use(c, "child"));
      st.execute(true);
    }
    int left = 1;
    soci::statement st = statement_once(s, q.pending, into(left), use(c, "child"));
    st.execute(true);
    if (left <= 0) release(s, q, c, db_.dialect().backend() == Backend::postgresql);
  }
}

void Dependencies::parents_gave_up(std::vector<long long> ids, const std::string& how) {
  const DepSql& q = sql_for(db_.dialect().backend());
  auto& s = db_.session();
  // Breadth first: a child canceled here passes the cancel on to its own children.
  std::vector<long long> level = std::move(ids);
  std::string level_how = how;
  MemberEnd end = how == "failed" ? MemberEnd::failed : MemberEnd::canceled;
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
    for (const auto& [child, n_met] : met) {
      long long c = child;
      int n = n_met;
      soci::statement st = statement_once(s, q.count_down, use(n, "n"), use(c, "child"));
      st.execute(true);
      int left = 1;
      soci::statement rd = statement_once(s, q.pending, into(left), use(c, "child"));
      rd.execute(true);
      if (left <= 0) release(s, q, c, db_.dialect().backend() == Backend::postgresql);
    }
    level = std::move(canceled);
    level_how = "was canceled";
  }
}

bool Dependencies::reconcile(long long child, bool direct) {
  const DepSql& q = sql_for(db_.dialect().backend());
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
  std::map<long long, Status> status_of;
  if (!edges.empty()) {
    std::vector<long long> ids;
    for (const auto& e : edges) ids.push_back(e.first);
    sort_unique(ids);
    long long id = 0;
    int status = 0;
    soci::statement st(s);
    st.exchange(into(id));
    st.exchange(into(status));
    bind_ids(st, ids);
    prepare_once(st, expand_ids(q.lock_jobs, ids.size()));
    for (bool got = st.execute(true); got; got = st.fetch())
      status_of[id] = static_cast<Status>(status);
  }
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
    release(s, q, c, db_.dialect().backend() == Backend::postgresql);
  }
  return true;
}

void Dependencies::retried(std::vector<long long> ids) {
  if (ids.empty()) return;
  const DepSql& q = sql_for(db_.dialect().backend());
  auto& s = db_.session();
  sort_unique(ids);
  // A retried job that waits for parents (retry set its run_at to now): its edges from
  // parents that gave up are settled again, and it waits for those not yet done.
  for (std::size_t start = 0; start < ids.size(); start += 1000) {
    std::vector<long long> chunk(
        ids.begin() + static_cast<std::ptrdiff_t>(start),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), start + 1000)));
    for (long long c : fetch_ids(s, expand_ids(q.children_among, chunk.size()),
                                 [&](soci::statement& st) { bind_ids(st, chunk); }))
      reconcile(c, true);
  }
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

void Dependencies::purged(std::vector<long long> ids) {
  if (ids.empty()) return;
  auto& s = db_.session();
  for (const char* sql :
       {"DELETE FROM queuectl_job_deps WHERE child_id IN ({ids})"
        " AND NOT EXISTS (SELECT 1 FROM job_queue j WHERE j.id = queuectl_job_deps.child_id)",
        "DELETE FROM queuectl_job_waits WHERE child_id IN ({ids})"
        " AND NOT EXISTS (SELECT 1 FROM job_queue j WHERE j.id = queuectl_job_waits.child_id)",
        "DELETE FROM queuectl_batch_jobs WHERE job_id IN ({ids})"
        " AND NOT EXISTS (SELECT 1 FROM job_queue j WHERE j.id = queuectl_batch_jobs.job_id)"})
    execute_on_ids(s, sql, ids);
}

std::vector<std::int64_t> Dependencies::ack_parents(const std::vector<const AckItem*>& items) {
  std::vector<std::int64_t> lost;
  const DepSql& q = sql_for(db_.dialect().backend());
  for (const AckItem* item : items) {
    bool acked = false;
    db_.transaction([&] {
      auto& s = db_.session();
      long long id = item->id;
      std::string token = item->token, result = item->result.value_or("");
      soci::indicator ind = item->result ? soci::i_ok : soci::i_null;
      soci::statement st = statement_once(s, q.ack_parent, use(result, ind, "result"),
                                          use(id, "id"), use(token, "token"));
      st.execute(true);
      acked = st.get_affected_rows() > 0;
      if (acked) parents_done({id});
    });
    if (!acked) lost.push_back(item->id);
  }
  return lost;
}

std::optional<JobWaits> Dependencies::waits_of(std::int64_t job_id) {
  const DepSql& q = sql_for(db_.dialect().backend());
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
