#include "db/group_repository.hpp"

#include "db/row_reader.hpp"

namespace queuectl {

std::vector<GroupHead> GroupRepository::busy_groups(const GroupFilter& f) {
  std::vector<GroupHead> out;
  db_.retrying([&] {
    out.clear();
    std::string queue = f.queue, key, run_at, error;
    int blocked_only = f.blocked_only ? 1 : 0, limit = f.limit, status = 0, attempts = 0;
    long long id = 0, waiting = 0;
    double age = 0;
    soci::indicator error_ind = soci::i_null;
    soci::statement st = statement_once(
        db_.session(), db_.sql().groups.list, soci::into(key), soci::into(id), soci::into(status),
        soci::into(attempts), soci::into(age), soci::into(run_at), soci::into(waiting),
        soci::into(error, error_ind), soci::use(queue, "queue"),
        soci::use(blocked_only, "blocked_only"), soci::use(limit, "limit"));
    for (bool got = st.execute(true); got; got = st.fetch()) {
      GroupHead g;
      g.group_key = key;
      g.id = id;
      g.status = static_cast<Status>(status);
      g.attempts = attempts;
      g.age_seconds = age < 0 ? 0 : age;
      g.run_at = run_at;
      g.waiting = waiting;
      if (error_ind != soci::i_null) g.last_error = error;
      out.push_back(g);
    }
  });
  return out;
}

}  // namespace queuectl
