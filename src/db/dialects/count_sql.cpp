#include "db/dialects/count_sql.hpp"

namespace queuectl {
namespace {

// One capped count: the derived table stops at the cap, COUNT(*) counts what it kept.
// PostgreSQL's and SQLite's. `order`: PostgreSQL's (the finished index's own order, so that
// a scan of the table, even one that would stop at the cap, is never cheaper than the
// index). `equal` is the status' term.
// SQLite's is marked rare with likelihood(): its statistics say a queue's finished entries
// share few statuses, so the equality looked less selective than the range `status >= 2`,
// and with that range it read a queue's done entries to count its canceled ones.
std::string capped(const std::string& equal, const char* n, const char* order) {
  return std::string("(SELECT COUNT(*) FROM (SELECT 1 FROM job_queue WHERE queue = :q") + n +
         " AND " + equal + " AND status >= 2" + order + " LIMIT :c" + n + ") c" + n + ")";
}

// MySQL's capped count: the entry after the cap's, if there is one, says "more than the cap"
// (the cap is returned, which the caller shows as "at least"); only when there is none is
// the queue's status counted, so a long history costs one read of `cap` index entries. The
// count of a derived table stopped at the cap (PostgreSQL's and SQLite's shape) read as
// many entries and then materialized them: 1.7 ms a queue against 1.2 on MariaDB 10.11 at
// 30,000 done jobs a queue. COALESCE evaluates the count only when the probe found nothing.
// `queue` is the queue's term (a bound name, or the outer query's column), `cap` the cap's.
// The index is forced: with a queue from the outer query, MariaDB read canceled jobs through
// ix_job_queue_lease (status first), every queue's.
std::string probed(const char* n, const std::string& queue, const std::string& cap) {
  const std::string where =
      " FROM job_queue j FORCE INDEX (ix_job_queue_claim) WHERE j.queue = " + queue +
      " AND j.status = " + n;
  return "COALESCE((SELECT " + cap + where + " LIMIT " + cap + ", 1), (SELECT COUNT(*)" + where +
         "))";
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
  // The statuses are written in, not bound, and `status >= 2` beside them: PostgreSQL and
  // SQLite use the partial index (WHERE status >= 2) only for a condition they can see
  // implies its own, and SQLite sees only the same term. MySQL reads (queue, status) of
  // ix_job_queue_claim, PostgreSQL and SQLite job_queue_finished: index entries only.
  const char* order = backend == Backend::postgresql ? " ORDER BY finished_at" : "";
  auto equal = [&](const char* status) {
    const std::string term = std::string("status = ") + status;
    return backend == Backend::sqlite ? "likelihood(" + term + ", 0.001)" : term;
  };
  if (backend == Backend::mysql) {
    s.capped_finished = "SELECT " + probed("2", ":q2", ":c2") + ", " + probed("3", ":q3", ":c3") +
                        ", " + probed("4", ":q4", ":c4");
    // Every queue in one statement: ten queues at the cap took 10 ms against 13 one by one.
    s.capped_all = "SELECT q.queue, " + probed("2", "q.queue", ":c") + ", " +
                   probed("3", "q.queue", ":c") + ", " + probed("4", "q.queue", ":c") + " FROM (" +
                   s.finished_queues + ") q";
    return s;
  }
  s.capped_finished = "SELECT " + capped(equal("2"), "2", order) + ", " +
                      capped(equal("3"), "3", order) + ", " + capped(equal("4"), "4", order);
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
