#include "db/dialects/flow_sql.hpp"

namespace queuectl {
namespace {

// What the statements of both differ in, per backend.
struct Parts {
  bool pg = false;
  std::string now;            // the database's clock (PostgreSQL: the transaction's start)
  std::string clock;          // the clock when the statement runs
  std::string waiting;        // a waiting job's run_at, as SQL
  std::string waiting_value;  // the same, as NewJob::run_at text
  std::string lock_suffix;    // " FOR UPDATE" (SQLite: nothing, its write lock serializes)
  std::string (*ts)(const std::string& column) = nullptr;  // a time as RFC 3339 UTC text
  // A job's status tested when the job is found by id. PostgreSQL: as CAST(status AS integer),
  // from which no partial index's status predicate is proved, so only the primary key finds
  // the row, whatever the statistics (postgresql_sql.hpp says why).
  std::string status_is(int status) const {
    return (pg ? "CAST(status AS integer) = " : "status = ") + std::to_string(status);
  }
  // A bound value: PostgreSQL casts it (SOCI sends text).
  std::string bind(const char* name, const char* type) const {
    return pg ? "CAST(:" + std::string(name) + " AS " + type + ")" : ":" + std::string(name);
  }
};

Parts parts_for(Backend backend) {
  Parts p;
  switch (backend) {
    case Backend::postgresql:
      p.pg = true;
      p.now = "now()";
      p.clock = "clock_timestamp()";
      p.waiting = "TIMESTAMPTZ '9999-12-31 00:00:00+00'";
      p.waiting_value = "9999-12-31 00:00:00.000000";
      p.lock_suffix = " FOR UPDATE";
      p.ts = [](const std::string& c) {
        return "to_char((" + c + ") AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
      };
      break;
    case Backend::mysql:
      p.now = "NOW(6)";
      p.clock = "NOW(6)";  // already the statement's own time
      // TIMESTAMP(6) ends in 2038: its last microsecond (a retry's backoff stops one short).
      p.waiting = "TIMESTAMP'2038-01-19 03:14:07.999999'";
      p.waiting_value = "2038-01-19 03:14:07.999999";
      p.lock_suffix = " FOR UPDATE";
      p.ts = [](const std::string& c) { return "DATE_FORMAT(" + c + ", '%Y-%m-%dT%H:%i:%s.%fZ')"; };
      break;
    case Backend::sqlite:
      p.now = "strftime('%Y-%m-%d %H:%M:%f', 'now')";
      p.clock = p.now;  // the write lock serializes: no later-starting writer commits first
      p.waiting = "'9999-12-31 00:00:00.000'";
      p.waiting_value = "9999-12-31 00:00:00.000";
      p.ts = [](const std::string& c) { return "strftime('%Y-%m-%dT%H:%M:%f000Z', " + c + ")"; };
      break;
  }
  return p;
}

DependencySql make_dependency_sql(const Parts& p) {
  const std::string& now = p.now;
  const std::string& waiting = p.waiting;
  const std::string& lock_suffix = p.lock_suffix;
  const bool pg = p.pg;
  auto n = [&](const char* name, const char* type) { return p.bind(name, type); };
  const std::string id = n("id", "bigint"), result = n("result", "jsonb"),
                    error = n("error", "text"), token = n("token", "text");
  DependencySql s;
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
  s.waiting_value = p.waiting_value;
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
              " WHERE id = " + n("child", "bigint") + " AND " + p.status_is(0) +
              " AND run_at >= " + waiting;
  // On PostgreSQL the release also wakes the queue's listening workers (at commit), as an
  // insert does.
  s.release_selects = pg;
  if (pg)
    s.release = "WITH r AS (" + s.release +
                " RETURNING queue) SELECT COUNT(*) FROM (SELECT pg_notify('queuectl_jobs', r.queue)"
                " FROM r) n";
  s.lock_waits =
      "SELECT child_id FROM queuectl_job_waits WHERE child_id IN ({ids})"
      " ORDER BY child_id" +
      lock_suffix;
  s.meet_edges = "UPDATE queuectl_job_deps SET state = 1 WHERE parent_id IN ({ids}) AND state = 0";
  s.count_down_many = "UPDATE queuectl_job_waits SET pending = pending - " + n("n", "integer") +
                      " WHERE child_id IN ({ids})";
  s.released_among =
      "SELECT child_id FROM queuectl_job_waits WHERE child_id IN ({ids}) AND pending <= 0"
      " ORDER BY child_id";
  s.release_many = "UPDATE job_queue SET run_at = " + now + ", updated_at = " + now +
                   " WHERE id IN ({ids}) AND " + p.status_is(0) + " AND run_at >= " + waiting;
  if (pg)
    s.release_many = "WITH r AS (" + s.release_many +
                     " RETURNING queue) SELECT COUNT(*) FROM (SELECT pg_notify('queuectl_jobs',"
                     " q.queue) FROM (SELECT DISTINCT queue FROM r) q) n";
  s.cancel_child = "UPDATE job_queue SET status = 4, finished_at = " + now +
                   ", updated_at = " + now + ", last_error = " + error +
                   " WHERE id = " + n("child", "bigint") + " AND " + p.status_is(0) +
                   " AND run_at >= " + waiting;
  s.revive_edges =
      "SELECT d.parent_id, d.child_id"
      "  FROM queuectl_job_deps d JOIN queuectl_job_waits w ON w.child_id = d.child_id"
      " WHERE d.parent_id IN ({ids}) AND d.state = 2"
      " ORDER BY d.child_id, d.parent_id";
  s.revive_child = "UPDATE job_queue SET status = 0, run_at = " + waiting +
                   ", finished_at = NULL, last_error = NULL, updated_at = " + now +
                   " WHERE id = " + n("child", "bigint") + " AND " + p.status_is(4);
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
                 " WHERE id = " + id + " AND " + p.status_is(1) + " AND lock_token = " + token +
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
  s.insert_edges = "INSERT INTO queuectl_job_deps (parent_id, child_id, state)";
  s.insert_waits = "INSERT INTO queuectl_job_waits (child_id, pending, on_parent_failure)";
  if (pg) {
    const std::string arrays =
        " SELECT * FROM unnest(CAST(:a AS bigint[]), CAST(:b AS bigint[]), CAST(:c AS "
        "smallint[]))";
    s.insert_edges_arrays = s.insert_edges + arrays;
    s.insert_waits_arrays =
        s.insert_waits +
        " SELECT * FROM unnest(CAST(:a AS bigint[]), CAST(:b AS integer[]), CAST(:c AS "
        "smallint[]))";
  }
  s.ackable_parents = "SELECT id FROM job_queue WHERE id IN ({ids}) AND " + p.status_is(1) +
                      " AND lock_token = " + token + " AND has_dependents = 1 ORDER BY id" +
                      lock_suffix;
  s.ack_parents_ids =
      "UPDATE job_queue SET status = 2, result = NULL, lock_until = NULL,"
      " finished_at = " +
      now + ", updated_at = " + now + " WHERE id IN ({ids})";
  s.orphaned_edges =
      "SELECT d.parent_id, d.child_id, w.on_parent_failure"
      "  FROM queuectl_job_deps d JOIN queuectl_job_waits w ON w.child_id = d.child_id"
      " WHERE d.parent_id IN ({ids}) AND d.state = 0"
      "   AND NOT EXISTS (SELECT 1 FROM job_queue j WHERE j.id = d.parent_id)"
      " ORDER BY d.child_id, d.parent_id";
  s.purge_edges =
      "DELETE FROM queuectl_job_deps WHERE child_id IN ({ids})"
      " AND NOT EXISTS (SELECT 1 FROM job_queue j WHERE j.id = queuectl_job_deps.child_id)";
  s.purge_waits =
      "DELETE FROM queuectl_job_waits WHERE child_id IN ({ids})"
      " AND NOT EXISTS (SELECT 1 FROM job_queue j WHERE j.id = queuectl_job_waits.child_id)";
  return s;
}

BatchSql make_batch_sql(const Parts& p) {
  const std::string& now = p.now;
  const std::string& lock_suffix = p.lock_suffix;
  const auto ts = p.ts;
  auto n = [&](const char* name, const char* type) { return p.bind(name, type); };
  const std::string id = n("id", "bigint");
  BatchSql s;
  s.insert =
      "INSERT INTO queuectl_batches (on_success_queue, on_success_payload, on_failure_queue,"
      " on_failure_payload) VALUES (" +
      n("sq", "text") + ", " + n("sp", "text") + ", " + n("fq", "text") + ", " + n("fp", "text") +
      ")";
  s.read =
      "SELECT id, total, pending, done, failed, canceled, on_success_queue,"
      " on_success_payload, on_failure_queue, on_failure_payload, callback_job_id, " +
      ts("created_at") + ", " + ts("closed_at") + ", " + ts("finished_at") +
      " FROM queuectl_batches WHERE id = " + id;
  s.lock =
      "SELECT CASE WHEN closed_at IS NULL THEN 0 ELSE 1 END FROM queuectl_batches WHERE id = " +
      id + lock_suffix;
  s.member = "INSERT INTO queuectl_batch_jobs (job_id, batch_id) VALUES (" + n("job", "bigint") +
             ", " + id + ")";
  s.mark_job = "UPDATE job_queue SET has_dependents = 1 WHERE id = " + n("job", "bigint");
  s.grow = "UPDATE queuectl_batches SET total = total + 1, pending = pending + 1 WHERE id = " + id;
  s.members =
      "SELECT job_id, batch_id FROM queuectl_batch_jobs WHERE job_id IN ({ids}) AND settled = 0"
      " ORDER BY batch_id, job_id";
  s.settled = "UPDATE queuectl_batch_jobs SET settled = 1 WHERE job_id IN ({ids})";
  s.count = "UPDATE queuectl_batches SET pending = pending - " + n("n", "integer") +
            ", done = done + " + n("d", "integer") + ", failed = failed + " + n("f", "integer") +
            ", canceled = canceled + " + n("c", "integer") + " WHERE id = " + id;
  s.close = "UPDATE queuectl_batches SET closed_at = " + now + " WHERE id = " + id +
            " AND closed_at IS NULL";
  // The clock, not now(): on PostgreSQL now() is this transaction's start, and a member acked
  // by a transaction that started later but committed first (before this one took the batch
  // row's lock) would otherwise show a finished_at after its batch's.
  s.finish = "UPDATE queuectl_batches SET finished_at = " + p.clock + " WHERE id = " + id +
             " AND pending = 0 AND closed_at IS NOT NULL AND finished_at IS NULL";
  s.callback =
      "UPDATE queuectl_batches SET callback_job_id = " + n("job", "bigint") + " WHERE id = " + id;
  s.purge_members =
      "DELETE FROM queuectl_batch_jobs WHERE job_id IN ({ids})"
      " AND NOT EXISTS (SELECT 1 FROM job_queue j WHERE j.id = queuectl_batch_jobs.job_id)";
  return s;
}

// Each backend's statements, built once.
template <typename T>
const T& per_backend(Backend backend, T (*make)(const Parts&)) {
  static const T pg = make(parts_for(Backend::postgresql));
  static const T my = make(parts_for(Backend::mysql));
  static const T lite = make(parts_for(Backend::sqlite));
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

}  // namespace

const DependencySql& dependency_sql(Backend backend) {
  return per_backend(backend, make_dependency_sql);
}

const BatchSql& batch_sql(Backend backend) {
  return per_backend(backend, make_batch_sql);
}

}  // namespace queuectl
