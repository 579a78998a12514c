// New jobs announced by the database, where the backend can (PostgreSQL: LISTEN on a
// connection, NOTIFY from the trigger on job_queue), so that an idle `work` or `claim --wait`
// wakes when a job arrives instead of at its next poll. Jobs that become due by their
// run_at are never announced: the callers poll besides.
#pragma once

#include <string>

#include "db/database.hpp"

namespace queuectl {

class Announcements {
 public:
  // Whether the backend of `url` announces new jobs at all.
  static bool available(const DbUrl& url);

  // Starts listening on `db` (its own connection under `work`, the claiming one under
  // `claim --wait`). Throws what the LISTEN throws.
  explicit Announcements(Database& db);

  // The socket to poll: readable when an announcement may have come (-1: none to poll).
  int fd() const;
  // Reads what has come; true when a job of `queue` was announced. Throws on connection
  // trouble.
  bool take(const std::string& queue);

 private:
  Database& db_;
};

}  // namespace queuectl
