// What the files of Dependencies share: dependencies.cpp (settling edges when jobs finish,
// retry, show) and dependencies_enqueue.cpp (enqueue --after). Not for use elsewhere.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "core/job.hpp"
#include "db/row_reader.hpp"

namespace queuectl::dependencies_detail {

// Edge states (queuectl_job_deps.state). A child's count (queuectl_job_waits.pending) is
// its edges in state waiting or canceled_child: a parent whose failure canceled the job
// stays counted, so that its retry can reopen the edge.
inline constexpr int kEdgeWaiting = 0;
inline constexpr int kEdgeMet = 1;
inline constexpr int kEdgeCanceledChild = 2;
inline constexpr int kEdgeGaveUp = 3;

// Runs `sql`, which binds :child and, when it names them, :parent and :state.
inline void run(soci::session& s, const std::string& sql, long long child, long long parent = 0,
                int state = 0) {
  soci::statement st(s);
  if (sql.find(":state") != std::string::npos) st.exchange(soci::use(state, "state"));
  if (sql.find(":parent") != std::string::npos) st.exchange(soci::use(parent, "parent"));
  st.exchange(soci::use(child, "child"));
  prepare_once(st, sql);
  st.execute(true);
}

inline void sort_unique(std::vector<long long>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

// Calls `each` with `ids` 1,000 at a time: a "{ids}" list stays far below every backend's
// limit on bound values, however many jobs a cancel passed down reaches.
template <typename Each>
void for_chunks(const std::vector<long long>& ids, Each each) {
  for (std::size_t start = 0; start < ids.size(); start += 1000) {
    std::vector<long long> chunk(
        ids.begin() + static_cast<std::ptrdiff_t>(start),
        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), start + 1000)));
    each(chunk);
  }
}

// Reads the status of each job of `ids` with `lock_jobs` (DependencySql), which locks the
// rows for the caller's transaction; a job that does not exist is missing from the map.
inline std::map<long long, Status> lock_statuses(soci::session& s, const std::string& lock_jobs,
                                                 const std::vector<long long>& ids) {
  std::map<long long, Status> out;
  for_chunks(ids, [&](std::vector<long long>& chunk) {
    long long id = 0;
    int status = 0;
    soci::statement st(s);
    st.exchange(soci::into(id));
    st.exchange(soci::into(status));
    bind_ids(st, chunk);
    prepare_once(st, expand_ids(lock_jobs, chunk.size()));
    for (bool got = st.execute(true); got; got = st.fetch()) out[id] = static_cast<Status>(status);
  });
  return out;
}

}  // namespace queuectl::dependencies_detail
