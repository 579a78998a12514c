#include "db/dialects/list_sql.hpp"

namespace queuectl {
namespace {

// The index that holds the rows of `status` alone, for MySQL's FORCE INDEX (its optimizer
// would otherwise walk the primary key for the ORDER BY id), and for SQLite's INDEXED BY;
// "" where the planner finds it unasked (PostgreSQL) or where none does better.
std::string index_for(Backend backend, Status status, bool by_queue) {
  if (backend == Backend::mysql) {
    // ix_job_queue_claim is (queue, status, ...); ix_job_queue_lease (status, lock_until).
    if (status == Status::done) return "";
    return by_queue ? "ix_job_queue_claim" : "ix_job_queue_lease";
  }
  if (backend == Backend::sqlite) {
    switch (status) {
      case Status::ready:
        return "job_queue_claim";
      case Status::processing:
        return "job_queue_leases";
      case Status::failed:
        return "job_queue_failed";
      case Status::canceled:  // a queue's: (queue, status, finished_at); all: migration 15
        return by_queue ? "job_queue_finished" : "job_queue_canceled";
      default:
        return "";  // done: dense in id order, the general listing reads it best
    }
  }
  return "";
}

// A job waiting for others (enqueue --after) has this sentinel run_at.
const char* waiting_sentinel(Backend backend) {
  return backend == Backend::postgresql ? "TIMESTAMPTZ '9999-12-31 00:00:00+00'"
         : backend == Backend::mysql    ? "TIMESTAMP'2038-01-19 03:14:07.999999'"
                                        : "'9999-12-31 00:00:00.000'";
}

// :name as the backend wants it: CAST on PostgreSQL (see postgresql_sql.hpp).
std::string bound(Backend backend, const char* name, const char* type) {
  return backend == Backend::postgresql ? std::string("CAST(:") + name + " AS " + type + ")"
                                        : std::string(":") + name;
}

// The filters every listing shares: group key, error text, the id range, the order.
std::string filters_and_order(Backend backend, const ListingShape& shape) {
  std::string sql;
  if (shape.by_group) sql += " AND group_key = " + bound(backend, "group_key", "text");
  if (shape.by_error) {
    const std::string text = bound(backend, "error", "text");
    sql += backend == Backend::postgresql ? " AND strpos(last_error, " + text + ") > 0"
           : backend == Backend::mysql    ? " AND LOCATE(" + text + ", last_error) > 0"
                                          : " AND instr(last_error, " + text + ") > 0";
  }
  sql += " AND id > " + bound(backend, "after", "bigint") + " AND id < " +
         bound(backend, "before", "bigint");
  sql += shape.newest_first ? " ORDER BY id DESC" : " ORDER BY id";
  sql += " LIMIT " + bound(backend, "limit", "integer");
  return sql;
}

// PostgreSQL, one queue, several statuses: a branch for each group of statuses that one
// partial index holds (ready: job_queue_claim; processing: job_queue_processing_groups;
// finished: job_queue_finished), each naming its index's own term, joined in id order. No
// index holds every job of a queue (the dedupe index used to; migration 16 keeps it to jobs
// with a dedupe key), and the mask's condition alone (status = ANY (...)) implies none of the
// partial ones, so in one statement the planner read the whole table. A branch whose
// statuses the mask leaves out is folded away when the statement is planned.
std::string pg_list_queue_sql(const std::string& columns, const ListingShape& shape) {
  const std::string mask =
      ", (SELECT CAST(:status_mask AS integer) AS m) a WHERE status = ANY (ARRAY["
      "CASE WHEN a.m & 1 <> 0 THEN 0 END, CASE WHEN a.m & 2 <> 0 THEN 1 END, "
      "CASE WHEN a.m & 4 <> 0 THEN 2 END, CASE WHEN a.m & 8 <> 0 THEN 3 END, "
      "CASE WHEN a.m & 16 <> 0 THEN 4 END])";
  const std::string queue = " AND queue = CAST(:queue AS text)";
  const std::string branch = "(SELECT " + columns + " FROM job_queue" + mask + queue;
  const std::string ready =
      std::string(" AND status = 0 AND CASE WHEN run_at >= ") +
      waiting_sentinel(Backend::postgresql) +
      " THEN CAST(:waiting AS integer) ELSE CAST(:ready_now AS integer) END = 1";
  const std::string rest = filters_and_order(Backend::postgresql, shape) + ")";
  return "SELECT * FROM (" + branch + ready + rest + " UNION ALL " + branch + " AND status = 1" +
         rest + " UNION ALL " + branch + " AND status >= 2" + rest + ") u ORDER BY id" +
         (shape.newest_first ? " DESC" : "") + " LIMIT CAST(:limit AS integer)";
}

}  // namespace

std::string sqlite_queue_rows_sql() {
  return "SELECT COUNT(*) FROM (SELECT 1 FROM job_queue INDEXED BY job_queue_dedupe"
         " WHERE queue = :queue LIMIT :cap)";
}

std::string list_jobs_sql(Backend backend, const std::string& columns, const ListingShape& shape) {
  if (backend == Backend::postgresql && shape.by_queue) return pg_list_queue_sql(columns, shape);
  std::string sql = "SELECT " + columns + " FROM job_queue";
  if (backend == Backend::sqlite && shape.by_queue && shape.small_queue)
    sql += " INDEXED BY job_queue_dedupe";
  const std::string ready_now = bound(backend, "ready_now", "integer");
  const std::string waiting = bound(backend, "waiting", "integer");
  if (backend == Backend::postgresql) {
    // The mask as status = ANY (ARRAY[...]) from a one-row subquery, which the planner
    // folds to the bound statuses and can estimate (postgresql_sql.hpp says why).
    sql +=
        ", (SELECT CAST(:status_mask AS integer) AS m) a WHERE status = ANY (ARRAY["
        "CASE WHEN a.m & 1 <> 0 THEN 0 END, CASE WHEN a.m & 2 <> 0 THEN 1 END, "
        "CASE WHEN a.m & 4 <> 0 THEN 2 END, CASE WHEN a.m & 8 <> 0 THEN 3 END, "
        "CASE WHEN a.m & 16 <> 0 THEN 4 END])";
  } else {
    sql += " WHERE ((:status_mask >> status) & 1) = 1";
  }
  sql += std::string(" AND (status <> 0 OR CASE WHEN run_at >= ") + waiting_sentinel(backend) +
         " THEN " + waiting + " ELSE " + ready_now + " END = 1)";
  if (shape.by_queue) sql += " AND queue = " + bound(backend, "queue", "text");
  return sql + filters_and_order(backend, shape);
}

std::optional<std::string> list_one_status_sql(Backend backend, const std::string& columns,
                                               const ListingShape& shape) {
  const Status status = shape.status;
  const bool by_queue = shape.by_queue;
  if (status == Status::done) return std::nullopt;
  const bool pg = backend == Backend::postgresql;
  const std::string index = index_for(backend, status, by_queue);
  if (!pg && index.empty()) return std::nullopt;
  std::string sql = "SELECT " + columns + " FROM job_queue";
  if (backend == Backend::mysql) sql += " FORCE INDEX (" + index + ")";
  if (backend == Backend::sqlite) sql += " INDEXED BY " + index;
  const std::string equal = "status = " + std::to_string(static_cast<int>(status));
  if (index == "job_queue_finished")
    // The partial index's own term, and the equality marked rare so that SQLite seeks on
    // it rather than on the range (as in count_sql.cpp).
    sql += " WHERE likelihood(" + equal + ", 0.001) AND status >= 2";
  else
    sql += " WHERE " + equal;
  if (by_queue) sql += " AND queue = " + bound(backend, "queue", "text");
  if (status == Status::ready)
    sql += std::string(" AND CASE WHEN run_at >= ") + waiting_sentinel(backend) + " THEN " +
           bound(backend, "waiting", "integer") + " ELSE " +
           bound(backend, "ready_now", "integer") + " END = 1";
  return sql + filters_and_order(backend, shape);
}

}  // namespace queuectl
