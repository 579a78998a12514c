// `list --status S` of one status, through the index that holds that status alone. The
// general listing (ListingStatements::list_jobs) tests a status against a bitmask, which no
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

// What a listing of one status filters on, beside its status and id range.
struct OneStatusListing {
  Status status = Status::ready;
  bool by_queue = false;      // binds :queue
  bool newest_first = false;  // highest id first
  bool by_group = false;      // binds :group_key (group_key equal to it)
  bool by_error = false;      // binds :error (last_error holds it)
};

// The statement listing jobs of one status, ids between :after and :before (exclusive),
// :limit rows; status ready also binds :ready_now and :waiting (1 or 0, as in list_jobs).
// nullopt: no index serves that status on this backend better than the general listing.
std::optional<std::string> list_one_status_sql(Backend backend, const std::string& columns,
                                               const OneStatusListing& shape);

}  // namespace queuectl
