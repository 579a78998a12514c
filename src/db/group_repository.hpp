// Ordered groups as operators see them: which groups of a queue are busy or blocked, and
// what each group's head is doing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/job.hpp"
#include "db/database.hpp"

namespace queuectl {

// The head of a group: its oldest job that still holds the group (processing, ready, or
// failed in a strict queue), and how many jobs wait behind it.
struct GroupHead {
  std::string group_key;
  std::int64_t id = 0;
  Status status = Status::ready;
  int attempts = 0;
  double age_seconds = 0;  // since the head was enqueued
  std::string run_at;      // RFC 3339; for a waiting head, when it is due
  std::int64_t waiting = 0;
  std::optional<std::string> last_error;
};

struct GroupFilter {
  std::string queue;
  bool blocked_only = false;  // only failed heads of a strict queue
  int limit = 100;
};

class GroupRepository {
 public:
  explicit GroupRepository(Database& db) : db_(db) {}

  // The groups of a queue that cannot hand out a job now: the head is processing, waiting
  // for its run_at (a retry backoff), or failed in a strict queue (blocked). Processing
  // first, then waiting, then blocked; by head id within each.
  std::vector<GroupHead> busy_groups(const GroupFilter& filter);

 private:
  Database& db_;
};

}  // namespace queuectl
