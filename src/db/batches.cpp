#include "db/batches.hpp"

#include <algorithm>
#include <map>

#include <soci/soci.h>

#include "core/errors.hpp"
#include "db/dialects/flow_sql.hpp"
#include "db/job_repository_detail.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using soci::into;
using soci::use;

long long run_on(soci::session& s, const std::string& sql, long long id, long long job = 0) {
  soci::statement st(s);
  if (sql.find(":job") != std::string::npos) st.exchange(use(job, "job"));
  if (sql.find(":id") != std::string::npos) st.exchange(use(id, "id"));
  prepare_once(st, sql);
  st.execute(true);
  return st.get_affected_rows();
}

// The callback's payload: the given object with "batch" (its id and counts) first.
std::string callback_payload(const std::string& object, const Batch& b) {
  std::string batch =
      "{\"batch\":{\"id\":" + std::to_string(b.id) + ",\"total\":" + std::to_string(b.total) +
      ",\"done\":" + std::to_string(b.done) + ",\"failed\":" + std::to_string(b.failed) +
      ",\"canceled\":" + std::to_string(b.canceled) + "}";
  const std::size_t open = object.find('{');
  const std::string rest = open == std::string::npos ? "}" : object.substr(open + 1);
  const bool empty = rest.find_first_not_of(" \t\r\n") == std::string::npos ||
                     rest[rest.find_first_not_of(" \t\r\n")] == '}';
  return batch + (empty ? "}" : "," + rest);
}

}  // namespace

Batch Batches::create(const std::optional<BatchCallback>& on_success,
                      const std::optional<BatchCallback>& on_failure) {
  const BatchSql& q = batch_sql(db_.dialect().backend());
  std::optional<Batch> out;
  db_.transaction([&] {
    auto& s = db_.session();
    std::string sq = on_success ? on_success->queue : "",
                sp = on_success ? on_success->payload : "";
    std::string fq = on_failure ? on_failure->queue : "",
                fp = on_failure ? on_failure->payload : "";
    soci::indicator si = on_success ? soci::i_ok : soci::i_null;
    soci::indicator fi = on_failure ? soci::i_ok : soci::i_null;
    soci::indicator si2 = si, fi2 = fi;
    soci::statement st = statement_once(s, q.insert, use(sq, si, "sq"), use(sp, si2, "sp"),
                                        use(fq, fi, "fq"), use(fp, fi2, "fp"));
    st.execute(true);
    long long id = 0;
    s << db_.sql().enqueue.last_insert_id, into(id);
    out = read(id);
  });
  if (!out) throw Error("the batch just created cannot be read back");
  return *out;
}

std::optional<Batch> Batches::read(long long id) {
  const BatchSql& q = batch_sql(db_.dialect().backend());
  Batch b;
  long long bid = 0, total = 0, pending = 0, done = 0, failed = 0, canceled = 0, callback = 0;
  std::string sq, sp, fq, fp, created, closed, finished;
  soci::indicator sqi, spi, fqi, fpi, cbi, cli, fii;
  soci::statement st(db_.session());
  st.exchange(into(bid));
  st.exchange(into(total));
  st.exchange(into(pending));
  st.exchange(into(done));
  st.exchange(into(failed));
  st.exchange(into(canceled));
  st.exchange(into(sq, sqi));
  st.exchange(into(sp, spi));
  st.exchange(into(fq, fqi));
  st.exchange(into(fp, fpi));
  st.exchange(into(callback, cbi));
  st.exchange(into(created));
  st.exchange(into(closed, cli));
  st.exchange(into(finished, fii));
  st.exchange(use(id, "id"));
  prepare_once(st, q.read);
  if (!st.execute(true)) return std::nullopt;
  b.id = bid;
  b.total = total;
  b.pending = pending;
  b.done = done;
  b.failed = failed;
  b.canceled = canceled;
  if (sqi == soci::i_ok && spi == soci::i_ok) b.on_success = BatchCallback{sq, sp};
  if (fqi == soci::i_ok && fpi == soci::i_ok) b.on_failure = BatchCallback{fq, fp};
  if (cbi == soci::i_ok) b.callback_job_id = callback;
  b.created_at = created;
  if (cli == soci::i_ok) b.closed_at = closed;
  if (fii == soci::i_ok) b.finished_at = finished;
  return b;
}

Batch Batches::get(std::int64_t id) {
  std::optional<Batch> out;
  db_.snapshot([&] { out = read(id); });
  if (!out) throw NotFound("batch " + std::to_string(id) + " not found");
  return *out;
}

Batch Batches::close(std::int64_t id) {
  const BatchSql& q = batch_sql(db_.dialect().backend());
  std::optional<Batch> out;
  db_.transaction([&] {
    auto& s = db_.session();
    long long bid = id;
    run_on(s, q.close, bid);
    // A member that finished before the close counted itself; the close finishes the batch
    // when none is left (a batch of no members at all, too).
    try_finish(bid);
    out = read(bid);
  });
  if (!out) throw NotFound("batch " + std::to_string(id) + " not found");
  return *out;
}

void Batches::lock_open(std::int64_t id) {
  const BatchSql& q = batch_sql(db_.dialect().backend());
  long long bid = id;
  int closed = 0;
  soci::statement st = statement_once(db_.session(), q.lock, into(closed), use(bid, "id"));
  if (!st.execute(true))
    throw UsageError("--batch: batch " + std::to_string(id) +
                     " does not exist (make one with `queuectl batch create`)");
  if (closed)
    throw UsageError("--batch: batch " + std::to_string(id) +
                     " is closed: no job can be added to it");
}

void Batches::add_member(std::int64_t id, std::int64_t job) {
  const BatchSql& q = batch_sql(db_.dialect().backend());
  auto& s = db_.session();
  run_on(s, q.member, id, job);
  run_on(s, q.mark_job, 0, job);
  run_on(s, q.grow, id);
}

void Batches::settle(std::vector<long long> jobs, MemberEnd end) {
  if (jobs.empty()) return;
  const BatchSql& q = batch_sql(db_.dialect().backend());
  auto& s = db_.session();
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  if (jobs.size() > 1000) {  // a cancel passed down may reach any number of jobs
    for (std::size_t start = 0; start < jobs.size(); start += 1000)
      settle(std::vector<long long>(
                 jobs.begin() + static_cast<std::ptrdiff_t>(start),
                 jobs.begin() + static_cast<std::ptrdiff_t>(std::min(jobs.size(), start + 1000))),
             end);
    return;
  }
  std::map<long long, int> per_batch;
  std::vector<long long> members;
  {
    long long job = 0, batch = 0;
    soci::statement st(s);
    st.exchange(into(job));
    st.exchange(into(batch));
    bind_ids(st, jobs);
    prepare_once(st, expand_ids(q.members, jobs.size()));
    for (bool got = st.execute(true); got; got = st.fetch()) {
      members.push_back(job);
      ++per_batch[batch];
    }
  }
  if (members.empty()) return;
  execute_on_ids(s, q.settled, members);
  for (const auto& [batch, count] : per_batch) {
    long long bid = batch;
    int n = count, d = end == MemberEnd::done ? count : 0, f = end == MemberEnd::failed ? count : 0,
        c = end == MemberEnd::canceled ? count : 0;
    soci::statement st = statement_once(s, q.count, use(n, "n"), use(d, "d"), use(f, "f"),
                                        use(c, "c"), use(bid, "id"));
    st.execute(true);
    try_finish(bid);
  }
}

void Batches::try_finish(long long id) {
  const BatchSql& q = batch_sql(db_.dialect().backend());
  auto& s = db_.session();
  if (run_on(s, q.finish, id) == 0) return;
  // This transaction finished the batch: its one callback.
  std::optional<Batch> b = read(id);
  if (!b) return;
  const bool success = b->failed == 0 && b->canceled == 0;
  const std::optional<BatchCallback>& cb = success ? b->on_success : b->on_failure;
  if (!cb) return;
  NewJob job;
  job.queue = cb->queue;
  job.payload = callback_payload(cb->payload, *b);
  EnqueueResult r = job_repository_detail::enqueue_one(db_, job);
  run_on(s, q.callback, id, r.job.id);
}

}  // namespace queuectl
