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
      case Status::canceled:  // (queue, status, finished_at): a seek needs the queue
        return by_queue ? "job_queue_finished" : "";
      default:
        return "";  // done: dense in id order, the general listing reads it best
    }
  }
  return "";
}

}  // namespace

std::optional<std::string> list_one_status_sql(Backend backend, const std::string& columns,
                                               const OneStatusListing& shape) {
  const Status status = shape.status;
  const bool by_queue = shape.by_queue;
  if (status == Status::done) return std::nullopt;
  const bool pg = backend == Backend::postgresql;
  const std::string index = index_for(backend, status, by_queue);
  if (!pg && index.empty()) return std::nullopt;
  auto bound = [pg](const char* name, const char* type) {
    return pg ? std::string("CAST(:") + name + " AS " + type + ")" : std::string(":") + name;
  };
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
  if (by_queue) sql += " AND queue = " + bound("queue", "text");
  if (status == Status::ready) {
    // A job waiting for others (enqueue --after) has the sentinel run_at.
    const char* sentinel = pg                          ? "TIMESTAMPTZ '9999-12-31 00:00:00+00'"
                           : backend == Backend::mysql ? "TIMESTAMP'2038-01-19 03:14:07.999999'"
                                                       : "'9999-12-31 00:00:00.000'";
    sql += std::string(" AND CASE WHEN run_at >= ") + sentinel + " THEN " +
           bound("waiting", "integer") + " ELSE " + bound("ready_now", "integer") + " END = 1";
  }
  if (shape.by_group) sql += " AND group_key = " + bound("group_key", "text");
  if (shape.by_error) {
    const std::string text = bound("error", "text");
    sql += pg                          ? " AND strpos(last_error, " + text + ") > 0"
           : backend == Backend::mysql ? " AND LOCATE(" + text + ", last_error) > 0"
                                       : " AND instr(last_error, " + text + ") > 0";
  }
  sql += " AND id > " + bound("after", "bigint") + " AND id < " + bound("before", "bigint");
  sql += shape.newest_first ? " ORDER BY id DESC" : " ORDER BY id";
  sql += " LIMIT " + bound("limit", "integer");
  return sql;
}

}  // namespace queuectl
