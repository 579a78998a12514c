#include "db/dialects/count_sql.hpp"

namespace queuectl {
namespace {

// One capped count: the derived table stops at the cap, COUNT(*) counts what it kept.
std::string capped(const char* status, const char* n) {
  return std::string("(SELECT COUNT(*) FROM (SELECT 1 FROM job_queue WHERE queue = :q") + n +
         " AND status = " + status + " LIMIT :c" + n + ") c" + n + ")";
}

CountStatements make(Backend backend) {
  CountStatements s;
  if (backend == Backend::mysql) {
    // A loose index scan of ix_job_queue_claim (queue first): one entry read per queue.
    s.finished_queues = "SELECT DISTINCT queue FROM job_queue";
  } else {
    // PostgreSQL and SQLite have no loose index scan: each step of the recursion seeks the
    // next queue in the finished index (queue, status, finished_at WHERE status >= 2).
    s.finished_queues = R"(
      WITH RECURSIVE q(queue) AS (
        SELECT (SELECT queue FROM job_queue WHERE status >= 2 ORDER BY queue LIMIT 1)
        UNION ALL
        SELECT (SELECT j.queue FROM job_queue j
                 WHERE j.status >= 2 AND j.queue > q.queue ORDER BY j.queue LIMIT 1)
          FROM q WHERE q.queue IS NOT NULL)
      SELECT queue FROM q WHERE queue IS NOT NULL)";
  }
  // The statuses are written in, not bound: PostgreSQL and SQLite use a partial index only
  // for a status the planner can see is finished. MySQL reads (queue, status) of
  // ix_job_queue_claim, PostgreSQL and SQLite job_queue_finished: index entries only.
  s.capped_finished =
      "SELECT " + capped("2", "2") + ", " + capped("3", "3") + ", " + capped("4", "4");
  return s;
}

}  // namespace

const CountStatements& count_sql(Backend backend) {
  static const CountStatements pg = make(Backend::postgresql);
  static const CountStatements my = make(Backend::mysql);
  static const CountStatements lite = make(Backend::sqlite);
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

}  // namespace queuectl
