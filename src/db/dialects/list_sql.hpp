// `list --status S` of one status, through the index that holds that status alone. The
// general listing (list_jobs_sql, below) tests a status against a bitmask, which no
// partial index can serve: with millions of done jobs, a page of ready or failed ones walked
// the whole history in id order. Here the status is written into the text (never input:
// one of the five, from Status), so PostgreSQL and SQLite use their partial claim, lease and
// failed indexes (SQLite the finished one for a queue's canceled jobs), and MySQL the
// status-keyed ones it is told to; the matching rows are then sorted by id. Done jobs, dense
// in id order, keep the general listing.
#pragma once

#include <optional>
#include <string>

#include "core/db_url.hpp"
#include "core/job.hpp"

namespace queuectl {

// What a listing filters on, beside its id range.
struct ListingShape {
  Status status = Status::ready;  // list_one_status_sql's status (list_jobs_sql: :status_mask)
  bool by_queue = false;          // binds :queue
  bool newest_first = false;      // highest id first
  bool by_group = false;          // binds :group_key (group_key equal to it)
  bool by_error = false;          // binds :error (last_error holds it)
  // SQLite, list_jobs_sql with by_queue: read the queue's rows through its index and sort
  // them (a small queue), instead of every job in id order (a large one).
  bool small_queue = false;
};

// SQLite has no statistics per queue name, so it cannot tell a small queue from a large
// one: JobRepository::list asks this first (binds :queue, :cap), and sets small_queue when
// the count is under the cap.
std::string sqlite_queue_rows_sql();
constexpr int kSmallQueueRows = 10000;

// The statement listing jobs of one status, ids between :after and :before (exclusive),
// :limit rows; status ready also binds :ready_now and :waiting (1 or 0, as in list_jobs_sql).
// nullopt: no index serves that status on this backend better than the general listing.
std::optional<std::string> list_one_status_sql(Backend backend, const std::string& columns,
                                               const ListingShape& shape);

// The general listing: any statuses, in id order. Binds :status_mask (bit 1 << status),
// :ready_now and :waiting, the filters `shape` names, :after, :before and :limit. The queue,
// when given, is a plain equality (never "COALESCE(:queue, queue)"), so that MySQL and
// SQLite may read a small queue's rows by an index on the queue instead of walking every
// job in id order.
std::string list_jobs_sql(Backend backend, const std::string& columns, const ListingShape& shape);

}  // namespace queuectl
