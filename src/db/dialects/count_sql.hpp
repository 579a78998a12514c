// Counting finished jobs without reading them all: what `stats` (and so the web view and
// `stats -o prometheus`) runs unless --exact. Each queue's done, failed and canceled jobs
// are counted up to a cap through an index whose entries for that queue and status lie
// together, so a count reads at most `cap` entries however long the history; a count that
// reaches the cap is shown as "at least". The queues themselves are found by skipping
// through an index from one queue to the next, one probe per queue, never per row.
#pragma once

#include <string>

#include "core/db_url.hpp"

namespace queuectl {

struct CountStatements {
  // -> queue: every queue with a finished job (MySQL: every queue with any job).
  std::string finished_queues;
  // :q2 :c2 :q3 :c3 :q4 :c4 (the queue, and the cap, for each of done, failed, canceled)
  // -> done, failed, canceled, each at most its cap.
  std::string capped_finished;
  // MySQL only (empty elsewhere): :c (the cap) -> queue, done, failed, canceled for every
  // queue of finished_queues, as capped_finished counts them, in one statement.
  std::string capped_all;
};

const CountStatements& count_sql(Backend backend);

}  // namespace queuectl
