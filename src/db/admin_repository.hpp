// Operating a queue: requeue failed jobs, cancel, purge old rows, pause and resume.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/duration.hpp"
#include "core/job.hpp"
#include "core/rate_limit.hpp"
#include "db/database.hpp"
#include "db/lease_repository.hpp"

namespace queuectl {

// What happened to each id of a retry or cancel.
struct IdOutcome {
  std::vector<std::int64_t> changed;
  std::vector<std::int64_t> not_found;
  // Ids whose status did not allow the change, with the status they had.
  std::vector<std::pair<std::int64_t, Status>> skipped;
  // cancel: the jobs that waited for those canceled (enqueue --after, policy cancel) and were
  // canceled with them.
  std::vector<std::int64_t> dependents_canceled;
};

struct FinishedFilter {
  std::optional<std::string> queue;
  std::vector<Status> statuses;  // among done, failed, canceled
  Duration older_than;           // finished_at < now - older_than
  int batch = 1000;
  int max_batches = 0;  // purge stops after this many batches (0: until none is left)
};

enum class Force { no, yes };

// A queue's settings, kept beside each other in queuectl_queues.
struct QueueSettings {
  std::string queue;
  bool paused = false;
  bool strict_groups = false;  // a failed group head blocks its group
  // Where a job that gives up goes (a ready job there), instead of failed here.
  std::optional<std::string> dead_letter;
  // At most this many jobs processing at once; none: no limit.
  std::optional<int> max_processing;
  // Finished jobs older than this are deleted by the queue's workers; none: kept.
  std::optional<Duration> retain;
  // At most this many jobs started per period, saved up to a burst; none: no limit.
  std::optional<RateLimit> rate;
  // false: an ack deletes its job instead of keeping it done (JobRepository::ack_many).
  bool keep_done = true;
};

class AdminRepository {
 public:
  explicit AdminRepository(Database& db) : db_(db) {}

  // FAILED or CANCELED jobs back to READY now, attempts reset.
  IdOutcome retry(const std::vector<std::int64_t>& ids);
  // Every job matching the filter back to READY, a batch at a time; returns their ids.
  std::vector<std::int64_t> retry_matching(const FinishedFilter& filter);
  // Dead letters (ready or failed, with dead_from) back to `to`, or each to the queue it
  // gave up in: ready now, attempts from 0.
  IdOutcome move(const std::vector<std::int64_t>& ids, const std::optional<std::string>& to);
  // Every dead letter in `from` (all queues when none), a batch at a time, each batch its
  // own short transaction; DryRun::yes only lists them. Returns their ids; `progress`
  // gets the running count.
  // The first dead letter (lowest id) in `queue`, if it holds any.
  std::optional<std::int64_t> first_dead_letter(const std::string& queue);
  std::vector<std::int64_t> move_matching(const std::optional<std::string>& from,
                                          const std::optional<std::string>& to, DryRun dry_run,
                                          int batch,
                                          const std::function<void(std::int64_t)>& progress = {});
  // READY and FAILED jobs to CANCELED (a failed head then no longer blocks its group in a
  // strict queue); with Force::yes PROCESSING ones too (their holders' acks then fail with
  // lease lost).
  IdOutcome cancel(const std::vector<std::int64_t>& ids, Force force);
  // Deletes finished jobs matching the filter in primary-key batches, each its own short
  // transaction; DryRun::yes only counts. `progress` gets the running count.
  // How many finished jobs match the filter now (one count; for a progress line's total).
  std::int64_t count_finished(const FinishedFilter& filter);
  // `dependents_canceled`, when given, gets the jobs canceled because a job they waited for
  // (enqueue --after, policy wait) was purged before it was done.
  std::int64_t purge(const FinishedFilter& filter, DryRun dry_run,
                     const std::function<void(std::int64_t)>& progress = {},
                     std::vector<std::int64_t>* dependents_canceled = nullptr);
  void pause(const std::string& queue);
  // Returns false when the queue was not paused.
  bool resume(const std::string& queue);
  // Turns strict groups on or off; a queue with no settings yet gets them.
  void set_strict_groups(const std::string& queue, bool strict);
  void set_keep_done(const std::string& queue, bool keep);
  // Names the queue's dead-letter queue, or none. Throws UsageError (nothing written) when
  // the chain of dead-letter queues would lead back to `queue`.
  void set_dead_letter(const std::string& queue, const std::optional<std::string>& target);
  // Sets the queue's concurrency limit (> 0), or none.
  void set_max_processing(const std::string& queue, std::optional<int> max);
  // Retention of finished jobs (none: keep them).
  void set_retain(const std::string& queue, std::optional<Duration> retain);
  // Sets the queue's rate limit, or none, with a full bucket (its keys' buckets too).
  void set_rate(const std::string& queue, const std::optional<RateLimit>& rate);
  // For a worker whose claim came back empty: how long until the queue's rate limit has a
  // token for a job that is due; nullopt when the queue has no rate or no job is due, 0 when
  // the queue's bucket holds a token now. With a bucket per key, at most one token's time.
  std::optional<std::chrono::milliseconds> rate_wait(const std::string& queue);
  // The queue's settings (defaults when it has none).
  QueueSettings settings(const std::string& queue);
  // Every queue with jobs or settings, for completions and pause's check for a new name.
  std::vector<std::string> queue_names();
  // For a queue that has never had a job or a setting (a typo, often): what to say, with the
  // nearest known name; none for a queue that exists.
  std::optional<std::string> unknown_queue_note(const std::string& queue);
  // For completions: every queue with jobs or a setting that is not the default, and
  // whether it is paused, by name.
  std::vector<std::pair<std::string, bool>> named_queues();
  // Of `ids`, those that have no job row (in the order given), read in chunks.
  std::vector<std::int64_t> missing_ids(const std::vector<std::int64_t>& ids);

 private:
  // Dead letters in `queue` (every queue when none) with ids over `after`, at most `batch`,
  // in id order.
  std::vector<long long> pick_dead_letters(const std::optional<std::string>& queue,
                                           std::int64_t after, int batch);
  // Ids of finished jobs matching `filter` after `after`, at most filter.batch.
  std::vector<long long> pick_finished(const FinishedFilter& filter, std::int64_t after);
  // Applies a guarded "{ids}" write (its guard: the statuses it applies to) and sorts the
  // ids into changed, not found and skipped. `add_uses` adds the write's other binds;
  // `then`, given the changed ids, runs in the write's transaction after it.
  IdOutcome change_ids(const std::vector<std::int64_t>& ids, const GuardedWrite& write,
                       const std::function<void(soci::statement&)>& add_uses = {},
                       const std::function<void(std::vector<long long>)>& then = {});

  Database& db_;
};

}  // namespace queuectl
