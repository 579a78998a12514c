// Running a GuardedWrite (see statements.hpp): a write that reports what it changed from the
// write itself. Both run inside the caller's transaction, which on MySQL holds the pick's
// row locks until the write is done.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "core/job.hpp"
#include "db/database.hpp"
#include "db/row_reader.hpp"

namespace queuectl {

// Runs a "{ids}" guarded write over `ids` and returns the ids it changed. `add_uses`
// adds the binds besides the ids (the pick and the write bind the same ones).
template <typename AddUses>
std::vector<long long> write_ids(Database& db, const GuardedWrite& w, std::vector<long long>& ids,
                                 AddUses add_uses) {
  soci::session& session = db.session();
  auto binds = [&](soci::statement& st) {
    bind_ids(st, ids);
    add_uses(st);
  };
  if (db.dialect().update_returning())
    return fetch_ids(session, expand_ids(w.write, ids.size()), binds);
  std::vector<long long> locked = fetch_ids(session, expand_ids(w.pick, ids.size()), binds);
  if (locked.empty()) return locked;
  soci::statement st(session);
  bind_ids(st, locked);
  add_uses(st);
  prepare_once(st, expand_ids(w.write, locked.size()));
  st.execute(true);
  return locked;
}

// Runs a guarded write on one job held under `token`: the job as the write left it, or
// nothing when the guard refused (the token no longer holds it, or no such job). The pick
// binds :id and :token; the write binds them and what `add_uses` adds.
template <typename AddUses>
std::optional<Job> write_job(Database& db, const GuardedWrite& w, long long& id, std::string& token,
                             AddUses add_uses) {
  soci::session& session = db.session();
  auto write_binds = [&](soci::statement& st) {
    add_uses(st);
    st.exchange(soci::use(id, "id"));
    st.exchange(soci::use(token, "token"));
  };
  std::vector<Job> jobs;
  if (db.dialect().update_returning()) {
    jobs = fetch_jobs(session, w.write, write_binds);
  } else {
    auto held = fetch_ids(session, w.pick, [&](soci::statement& st) {
      st.exchange(soci::use(id, "id"));
      st.exchange(soci::use(token, "token"));
    });
    if (held.empty()) return std::nullopt;
    soci::statement st(session);
    write_binds(st);
    prepare_once(st, w.write);
    st.execute(true);
    // Read under the row lock this transaction holds: exactly what the write left.
    jobs = fetch_jobs(session, db.sql().job_by_id,
                      [&](soci::statement& x) { x.exchange(soci::use(id, "id")); });
  }
  if (jobs.empty()) return std::nullopt;
  return jobs.front();
}

}  // namespace queuectl
