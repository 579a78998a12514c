// Rate limits' buckets as the repositories read and write them where the claim statement
// does not do it itself (RateSteps: SQLite, MySQL and MariaDB), and for a worker that waits
// for the next token (QueueStatements::rate_state, every backend).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/rate_limit.hpp"
#include "db/statements.hpp"

namespace soci {
class session;
}

namespace queuectl {

// A rate-limited queue's bucket as read, with the database's time.
struct RateRead {
  RateLimit limit;
  RateBucket bucket;
  std::int64_t now_ms = 0;
  bool due = false;  // a job of the queue is due to start (rate_state only)

  double tokens_now() const { return tokens_at(limit, bucket, now_ms); }
};

// Runs `sql`, RateSteps::read or (with `with_due`) QueueStatements::rate_state, for `queue`:
// nullopt when the queue has no rate.
std::optional<RateRead> read_rate(soci::session& s, const std::string& sql,
                                  const std::string& queue, bool with_due = false);

// After a claim that took `keyless` jobs from the queue's bucket (which held `tokens` at
// rate.now_ms) and one job of each of `keys` (rate_per_key): the buckets written.
void spend_rate(soci::session& s, const RateSteps& q, const std::string& queue,
                const RateRead& rate, double tokens, int keyless,
                const std::vector<std::string>& keys);

}  // namespace queuectl
