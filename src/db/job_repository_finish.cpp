// JobRepository: the lease holder's writes (ack, fail, extend, release).
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "core/errors.hpp"
#include "db/dependencies.hpp"
#include "db/guarded_write.hpp"
#include "db/job_repository.hpp"
#include "db/job_repository_detail.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

using job_repository_detail::ArrayLiteral;
using job_repository_detail::check_storable;
using job_repository_detail::kArrayRows;
using job_repository_detail::kBulkRows;
using soci::use;

// The ids of `all` from `start` on, at most `chunk` of them: one statement's share.
std::vector<long long> chunk_of(const std::vector<long long>& all, std::size_t start,
                                std::size_t chunk) {
  return {all.begin() + static_cast<std::ptrdiff_t>(start),
          all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), start + chunk))};
}

// An optimistic batch ack matched fewer rows than it named: roll it back and ack the
// pessimistic way, which tells which ids were lost.
struct AckMissed {};

}  // namespace

void JobRepository::ack(const AckItem& item) {
  auto lost = ack_many({item});
  if (!lost.empty()) throw_lease_lost(item.id, item.token);
}

std::vector<long long> JobRepository::ack_id_array(const std::vector<long long>& ids,
                                                   const std::string& token, bool deleting) {
  const FinishStatements& f = db_.sql().finish;
  const auto& one_sql = deleting ? f.ack_delete_one : f.ack_id_one;
  const bool one = ids.size() == 1 && one_sql;
  const std::string& sql = one ? *one_sql : deleting ? *f.ack_delete_array : *f.ack_id_array;
  std::string ids_text;
  if (!one) {
    ArrayLiteral list;
    for (long long id : ids) list.add(id);
    ids_text = list.done();
  }
  // As claim_returning: only where keeps_prepared, and only from the second run, so that
  // `queuectl ack` sends one statement and no PREPARE.
  bool keep = keeps_prepared();
  if (keep) keep = !prepared_acks_.emplace(&sql, nullptr).second;
  auto bind = [&](PreparedAck& p) {
    p.st.exchange(soci::into(p.acked));
    if (one)
      p.st.exchange(use(p.id, "id"));
    else
      p.st.exchange(use(p.ids, "ids"));
    p.st.exchange(use(p.token, "token"));
  };
  auto run = [&](PreparedAck& p) {
    p.id = ids.front();
    p.ids = std::move(ids_text);
    p.token = token;
    std::vector<long long> acked;
    for (bool got = p.st.execute(true); got; got = p.st.fetch()) acked.push_back(p.acked);
    return acked;
  };
  if (!keep) {
    PreparedAck once(db_.session());
    bind(once);
    prepare_once(once.st, sql);
    return run(once);
  }
  std::unique_ptr<PreparedAck>& slot = prepared_acks_[&sql];
  if (!slot) {
    auto p = std::make_unique<PreparedAck>(db_.session());
    bind(*p);
    p->st.alloc();
    p->st.prepare(sql, soci::details::st_repeatable_query);
    p->st.define_and_bind();
    slot = std::move(p);
  }
  try {
    return run(*slot);
  } catch (...) {
    // Whatever went wrong, the next ack prepares it afresh rather than trust it.
    prepared_acks_.erase(&sql);
    throw;
  }
}

void JobRepository::throw_lease_lost(std::int64_t id, const std::string& token,
                                     const std::string& expired) {
  // Only on the failure path: one read to tell a missing job (4) from a lost lease (3), and
  // to say which way the lease was lost.
  const std::optional<Job> job = find(id);
  if (!job) throw NotFound("job " + std::to_string(id) + " not found");
  std::string why;
  if (job->status != Status::processing)
    why = "the job is " + std::string(status_name(job->status)) + ", no longer processing";
  else if (job->lock_token != token)
    why = "the token does not match (the job is processing under another claim)";
  else
    why =
        "its lease ended" + (job->lock_until ? " at " + *job->lock_until : std::string()) + expired;
  throw LeaseLost("lease lost on job " + std::to_string(id) + ": " + why);
}

std::vector<std::int64_t> JobRepository::ack_many(const std::vector<AckItem>& items) {
  if (items.empty()) return {};
  const std::set<std::string>& deleting = deleting_queues();
  if (deleting.empty()) return ack_kept(items);
  // The deletes are tried first for the acks whose queue keeps no done job, or is not known
  // (`queuectl ack ID`); what they did not take is acked the usual way, in a transaction of
  // its own.
  std::vector<AckItem> tried, rest;
  for (const AckItem& item : items)
    (item.queue && !deleting.count(*item.queue) ? rest : tried).push_back(item);
  if (tried.empty()) return ack_kept(items);
  for (AckItem& item : ack_deleting(tried)) rest.push_back(std::move(item));
  if (rest.empty()) return {};
  return ack_kept(rest);
}

const std::set<std::string>& JobRepository::deleting_queues() {
  const auto now = std::chrono::steady_clock::now();
  if (deleting_queues_asked_ && now - *deleting_queues_asked_ < std::chrono::minutes(1))
    return deleting_queues_;
  std::set<std::string> queues;
  db_.retrying([&] {
    queues.clear();
    std::string queue;
    // Unnamed, as every one-time statement: behind a pooler a named one may be left on a
    // server session another client gets.
    soci::statement st =
        statement_once(db_.session(), db_.sql().finish.deleting_queues, soci::into(queue));
    for (bool got = st.execute(true); got; got = st.fetch()) queues.insert(queue);
  });
  deleting_queues_ = std::move(queues);
  deleting_queues_asked_ = now;
  return deleting_queues_;
}

std::vector<AckItem> JobRepository::ack_deleting(const std::vector<AckItem>& items) {
  const FinishStatements& f = db_.sql().finish;
  const bool arrays = f.ack_delete_array.has_value();
  const std::size_t chunk = arrays ? kArrayRows : kBulkRows;
  // A result goes with its job: the ack of a deleting queue keeps nothing.
  std::map<std::string, std::vector<long long>> by_token;
  for (const AckItem& item : items) by_token[item.token].push_back(item.id);
  std::size_t statements = 0;
  for (const auto& entry : by_token) statements += (entry.second.size() + chunk - 1) / chunk;
  // Without RETURNING (MySQL, MariaDB), one job's DELETE goes alone, in autocommit: it says
  // by its count of rows whether it took the job, and a job it did not take it left as it
  // was. More go the guarded way in a transaction: their rows locked, then deleted.
  const bool returning = db_.dialect().update_returning();
  const bool alone = statements == 1 && !db_.pooled() &&
                     (returning || (by_token.size() == 1 && by_token.begin()->second.size() == 1));
  std::vector<long long> deleted;
  auto work = [&] {
    deleted.clear();
    for (auto& [token_text, all_ids] : by_token) {
      for (std::size_t start = 0; start < all_ids.size(); start += chunk) {
        std::vector<long long> ids = chunk_of(all_ids, start, chunk);
        std::string token = token_text;
        std::vector<long long> gone;
        if (arrays) {
          gone = ack_id_array(ids, token, true);
        } else if (!returning && alone) {
          soci::statement st(db_.session());
          bind_ids(st, ids);
          st.exchange(use(token, "token"));
          prepare_once(st, expand_ids(f.ack_delete.write, ids.size()));
          st.execute(true);
          if (st.get_affected_rows() == 1) gone = ids;
        } else {
          gone = write_ids(db_, f.ack_delete, ids,
                           [&](soci::statement& st) { st.exchange(use(token, "token")); });
        }
        deleted.insert(deleted.end(), gone.begin(), gone.end());
      }
    }
  };
  if (alone)
    db_.retrying(work);
  else
    db_.transaction(work);
  std::sort(deleted.begin(), deleted.end());
  std::vector<AckItem> kept;
  for (const AckItem& item : items)
    if (!std::binary_search(deleted.begin(), deleted.end(), static_cast<long long>(item.id)))
      kept.push_back(item);
  return kept;
}

std::vector<std::int64_t> JobRepository::ack_kept(const std::vector<AckItem>& items) {
  // Acks without a result are grouped by token and done a chunk at a time in one
  // statement; acks with a result are one UPDATE each (prepared once).
  std::map<std::string, std::vector<long long>> by_token;
  std::vector<const AckItem*> with_result;
  for (const AckItem& item : items) {
    if (item.result)
      with_result.push_back(&item);
    else
      by_token[item.token].push_back(item.id);
  }
  // Without UPDATE ... RETURNING (MySQL, MariaDB), a guarded write first locks the rows its
  // guard admits, to learn which they are: a round trip more. The UPDATE alone says how many
  // rows it matched (CLIENT_FOUND_ROWS), so it goes first: when it matched every id, they were
  // all held and all are acked; when fewer (a lost lease, an id twice), the transaction is
  // rolled back and done again the locking way.
  const bool returning = db_.dialect().update_returning();
  bool optimistic = !returning;
  const bool arrays = db_.sql().finish.ack_id_array.has_value();
  const std::size_t chunk = arrays ? kArrayRows : kBulkRows;
  // One statement in all (one chunk of ids written by UPDATE ... RETURNING, or one ack with
  // a result) is atomic and durable on its own, in autocommit: no BEGIN and COMMIT around
  // it (two round trips of a one-job ack, issue 13). Several run in one transaction, and so
  // does the optimistic UPDATE, which must be able to take itself back.
  std::size_t statements = with_result.size();
  for (const auto& [token_text, all_ids] : by_token)
    statements += (all_ids.size() + chunk - 1) / chunk * (returning ? 1 : 2);
  std::vector<std::int64_t> lost;
  auto work = [&] {
    lost.clear();
    auto& s = db_.session();
    const Statements& q = db_.sql();
    for (auto& [token_text, all_ids] : by_token) {
      for (std::size_t start = 0; start < all_ids.size(); start += chunk) {
        std::vector<long long> ids = chunk_of(all_ids, start, chunk);
        std::string token = token_text;
        if (arrays) {
          std::vector<long long> acked = ack_id_array(ids, token);
          std::sort(acked.begin(), acked.end());
          for (long long id : ids)
            if (!std::binary_search(acked.begin(), acked.end(), id)) lost.push_back(id);
          continue;
        }
        if (optimistic) {
          soci::statement st(s);
          bind_ids(st, ids);
          st.exchange(use(token, "token"));
          prepare_once(st, expand_ids(q.finish.ack_ids.write, ids.size()));
          st.execute(true);
          if (st.get_affected_rows() != static_cast<long long>(ids.size())) throw AckMissed{};
          continue;
        }
        std::vector<long long> acked =
            write_ids(db_, q.finish.ack_ids, ids,
                      [&](soci::statement& st) { st.exchange(use(token, "token")); });
        std::sort(acked.begin(), acked.end());
        for (long long id : ids)
          if (!std::binary_search(acked.begin(), acked.end(), id)) lost.push_back(id);
      }
    }
    if (with_result.empty()) return;
    long long id = 0;
    std::string token, result;
    soci::indicator result_ind = soci::i_ok;
    soci::statement st(s);
    st.exchange(use(result, result_ind, "result"));
    st.exchange(use(id, "id"));
    st.exchange(use(token, "token"));
    // Prepared on the server only to run again (in a transaction); one ack's statement runs
    // once, in autocommit, where a pooler may send a later round trip to another server
    // session that never saw it prepared.
    if (with_result.size() == 1) {
      prepare_once(st, q.finish.ack);
    } else {
      st.alloc();
      st.prepare(q.finish.ack);
      st.define_and_bind();
    }
    for (const AckItem* item : with_result) {
      id = item->id;
      token = item->token;
      result = *item->result;
      st.execute(true);
      if (st.get_affected_rows() == 0) lost.push_back(item->id);
    }
  };
  // The optimistic UPDATE of one job (a worker's one-job ack) either acks it or writes
  // nothing, so it needs no transaction to take itself back: autocommit, one round trip
  // instead of three.
  const bool one_job = statements == 2 && with_result.empty() && by_token.size() == 1 &&
                       by_token.begin()->second.size() == 1 && !db_.pooled();
  if (optimistic && !by_token.empty()) {
    try {
      if (one_job)
        db_.retrying(work);
      else
        db_.transaction(work);
      return ack_declined(items, lost);
    } catch (const AckMissed&) {
      optimistic = false;  // rolled back: nothing of it was written
    }
  }
  // One statement is atomic on its own; behind a pooler it still takes a transaction, the
  // only place its lock wait can be set (set_config(..., true)): in autocommit it would run
  // with whatever the server session has, maybe no limit, and a worker told to stop could
  // hang on a locked row.
  if (statements == 1 && !db_.pooled())
    db_.retrying(work);
  else
    db_.transaction(work);
  return ack_declined(items, lost);
}

std::vector<std::int64_t> JobRepository::ack_declined(const std::vector<AckItem>& items,
                                                      const std::vector<std::int64_t>& lost) {
  // The plain ack refuses a job that other jobs wait for (has_dependents): it is acked again
  // here, with its children's release in the same transaction. What is still refused then
  // was lost.
  if (lost.empty()) return lost;
  std::vector<std::int64_t> sorted = lost;
  std::sort(sorted.begin(), sorted.end());
  std::vector<const AckItem*> declined;
  for (const AckItem& item : items)
    if (std::binary_search(sorted.begin(), sorted.end(), item.id)) declined.push_back(&item);
  return Dependencies(db_).ack_parents(declined);
}

Job JobRepository::fail(const FailRequest& r) {
  if (r.retry_in) check_storable(db_.dialect(), std::nullopt, *r.retry_in, "the retry's run_at");
  std::optional<Job> job;
  db_.transaction([&] {
    long long id = r.id;
    std::string token = r.token, error = r.error;
    if (r.permanent) {
      job = write_job(db_, db_.sql().finish.fail_final, id, token,
                      [&](soci::statement& st) { st.exchange(use(error, "error")); });
    } else {
      long long base_ms = r.retry_in ? r.retry_in->ms() : r.backoff.base.ms();
      long long cap_ms = r.retry_in ? r.retry_in->ms() : r.backoff.cap.ms();
      double jitter = r.retry_in ? 1.0 : 0.5 + 0.5 * random_unit();
      job = write_job(db_, db_.sql().finish.fail_retry, id, token, [&](soci::statement& st) {
        st.exchange(use(error, "error"));
        st.exchange(use(base_ms, "base_ms"));
        st.exchange(use(cap_ms, "cap_ms"));
        st.exchange(use(jitter, "jitter"));
      });
    }
    // A job that gave up may have moved to its queue's dead-letter queue in the same
    // statement, by an AFTER trigger whose change SQLite's RETURNING does not show. The row
    // is read again inside the write's transaction, before anyone else can change it: the
    // report is the write's own, not the row as a later claim or retry left it.
    if (job && job->status == Status::failed) {
      auto now = fetch_jobs(db_.session(), db_.sql().job_by_id,
                            [&](soci::statement& st) { st.exchange(use(id, "id")); });
      if (!now.empty()) job = now.front();
    }
    // Failed for good (not moved to a dead-letter queue): the jobs waiting for it get their
    // policy in this transaction.
    if (job && job->status == Status::failed) Dependencies(db_).parents_gave_up({id}, "failed");
  });
  if (!job) throw_lease_lost(r.id, r.token);
  return *job;
}

Job JobRepository::extend(std::int64_t id, const std::string& token, Duration lease,
                          const JobReport& report) {
  check_storable(db_.dialect(), std::nullopt, lease, "the lease");
  std::optional<Job> job;
  db_.transaction([&] {
    long long bound_id = id, lease_ms = lease.ms();
    std::string tok = token;
    // A part not reported is bound as NULL: the statement keeps the stored value.
    int progress = report.progress.value_or(0);
    std::string note = report.note.value_or(""), checkpoint = report.checkpoint.value_or("");
    soci::indicator progress_ind = report.progress ? soci::i_ok : soci::i_null;
    soci::indicator note_ind = report.note ? soci::i_ok : soci::i_null;
    soci::indicator checkpoint_ind = report.checkpoint ? soci::i_ok : soci::i_null;
    job = write_job(db_, db_.sql().finish.extend, bound_id, tok, [&](soci::statement& st) {
      st.exchange(use(lease_ms, "lease_ms"));
      st.exchange(use(progress, progress_ind, "progress"));
      st.exchange(use(note, note_ind, "note"));
      st.exchange(use(checkpoint, checkpoint_ind, "checkpoint"));
    });
  });
  if (!job) throw_lease_lost(id, token, " (an expired lease cannot be extended: claim it again)");
  return *job;
}

Job JobRepository::release(std::int64_t id, const std::string& token) {
  std::optional<Job> job;
  db_.transaction([&] {
    long long bound_id = id;
    std::string tok = token;
    job = write_job(db_, db_.sql().finish.release, bound_id, tok, [](soci::statement&) {});
  });
  if (!job) throw_lease_lost(id, token);
  return *job;
}

}  // namespace queuectl
