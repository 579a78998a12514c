// Leases of processing jobs: who holds what until when, and the reaper that returns
// jobs whose workers died. A processing row without a lease (lock_until NULL: set to
// processing by other code) is shown too, and returned only when asked, by its age.
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

// Which processing rows: with a lease (all, expired, or expiring soon) and without one.
enum class LeaseKind { all, expired, expiring, unleased };

struct LeaseFilter {
  std::optional<std::string> queue;
  std::optional<std::string> worker;
  // all: every processing row, leased or not; expired: lock_until < now; expiring:
  // lock_until < now + expiring_within; unleased: lock_until NULL.
  LeaseKind kind = LeaseKind::all;
  Duration expiring_within;
  // In processing for at least this long: locked_at <= now - this (updated_at when
  // locked_at is NULL, as other code may leave it).
  std::optional<Duration> older_than;
  int limit = 1000;
};

struct Lease {
  Job job;
  std::optional<double> seconds_left;  // negative once expired; none without a lease
};

// The leases of one worker among all those a filter matches (its limit aside).
struct WorkerLeases {
  std::optional<std::string> worker;  // locked_by; none for rows that name no worker
  std::int64_t leases = 0;
  std::int64_t expired = 0;
  std::int64_t unleased = 0;                   // processing without a lease
  std::optional<double> soonest_seconds_left;  // none when no row has a lease
};

struct ReapOptions {
  std::optional<std::string> queue;
  // Unset: expired leases. Set: processing rows without a lease (lock_until NULL) in
  // processing (since locked_at, else updated_at) for more than this.
  std::optional<Duration> unleased_older_than;
  int batch = 1000;
  int max_batches = 0;  // stop after this many batches (0: until none is left)
  DryRun dry_run = DryRun::no;
  BackoffPolicy backoff;
};

// How many jobs of one queue, last held by one worker, a reap returned.
struct ReapCount {
  std::string queue;
  std::optional<std::string> worker;  // the former holder (locked_by); none if it had none
  std::int64_t requeued = 0;
  std::int64_t failed = 0;
};

struct ReapResult {
  std::vector<std::int64_t> requeued;  // back to ready, with backoff
  std::vector<std::int64_t> failed;    // out of attempts
  // Of `failed`, those that moved to their queue's dead-letter queue (ready there).
  std::vector<std::int64_t> dead_lettered;
  std::vector<ReapCount> counts;  // by queue and former worker, in that order
  int batches = 0;
};

class LeaseRepository {
 public:
  explicit LeaseRepository(Database& db) : db_(db) {}

  // Processing jobs matching the filter, soonest expiry first.
  std::vector<Lease> leases(const LeaseFilter& filter);
  // Every processing job the filter matches, however many its limit lets leases() return,
  // counted per worker by one GROUP BY statement; in worker order (no worker first).
  std::vector<WorkerLeases> lease_summary(const LeaseFilter& filter);
  // The same summary for `shown`, what leases(filter) returned: counted from those rows
  // when they are all the filter matches (fewer than its limit), else by lease_summary.
  std::vector<WorkerLeases> lease_summary(const LeaseFilter& filter,
                                          const std::vector<Lease>& shown);

  // Returns expired leases (or, with unleased_older_than, rows without a lease that old)
  // in batches of `batch`, each batch one short transaction that re-checks status and
  // expiry (age), so a job finished meanwhile is never touched: to ready with backoff, or
  // to failed when out of attempts. With DryRun::yes, reports what would happen and
  // changes nothing. `progress` is called after each batch.
  ReapResult reap(const ReapOptions& options,
                  const std::function<void(const ReapResult&)>& progress = {});

 private:
  Database& db_;
};

}  // namespace queuectl
