// Leases of processing jobs: who holds what until when, and the reaper that returns
// jobs whose workers died.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backoff.hpp"
#include "core/duration.hpp"
#include "core/job.hpp"
#include "db/database.hpp"

namespace queuectl {

enum class DryRun { no, yes };

struct LeaseFilter {
  std::optional<std::string> queue;
  std::optional<std::string> worker;
  bool expired_only = false;
  std::optional<Duration> expiring_within;  // lock_until < now + this
  std::optional<Duration> older_than;       // locked_at <= now - this
  int limit = 1000;
};

struct Lease {
  Job job;
  double seconds_left = 0;  // negative once expired
};

struct ReapOptions {
  std::optional<std::string> queue;
  int batch = 1000;
  DryRun dry_run = DryRun::no;
  BackoffPolicy backoff;
};

struct ReapResult {
  std::vector<std::int64_t> requeued;  // back to ready, with backoff
  std::vector<std::int64_t> failed;    // out of attempts
  int batches = 0;
};

class LeaseRepository {
 public:
  explicit LeaseRepository(Database& db) : db_(db) {}

  // Processing jobs matching the filter, soonest expiry first.
  std::vector<Lease> leases(const LeaseFilter& filter);

  // Returns expired leases in batches of `batch`, each batch one short transaction that
  // re-checks status and expiry, so a job finished meanwhile is never touched. With
  // DryRun::yes, reports what would happen and changes nothing. `progress` is called
  // after each batch.
  ReapResult reap(const ReapOptions& options,
                  const std::function<void(const ReapResult&)>& progress = {});

 private:
  Database& db_;
};

}  // namespace queuectl
