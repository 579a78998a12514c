// Jobs that wait for other jobs (`enqueue --after ID,...`): the edges, and the writes that
// settle them in the transaction that finishes a parent.
//
// A waiting job is a ready job (status 0) whose run_at is kWaitingRunAt, far beyond any
// claim. queuectl_job_waits counts the parents it still waits for; queuectl_job_deps holds
// one row per (parent, child). The transaction that finishes a parent settles its edges in
// statements after the parent's own write, so that they read the edges as committed after
// that write took the parent's row lock (an enqueue --after holds that lock while it adds an
// edge): a parent done takes one off each child's count, and the child whose count reaches
// 0 gets run_at = now in that same transaction. A parent that failed for good or was
// canceled applies each waiting child's policy (cancel, run or wait).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "db/database.hpp"
#include "db/job_repository.hpp"

namespace queuectl {

// What a parent that failed for good, or was canceled, does to a job waiting for it.
enum class ParentFailure : int { cancel = 0, run = 1, wait = 2 };
std::string_view parent_failure_name(ParentFailure p);
// "cancel", "run" or "wait"; throws UsageError otherwise.
ParentFailure parse_parent_failure(std::string_view text);

// Parses "12,13,14" (ids > 0, at most kMaxParents, duplicates dropped); throws UsageError
// naming `what`.
std::vector<std::int64_t> parse_parent_ids(const std::string& text, const std::string& what);
inline constexpr std::size_t kMaxParents = 1000;

struct NewJobAfter {
  NewJob job;
  std::vector<std::int64_t> after;  // parents, sorted, no duplicates; empty: none
  ParentFailure on_parent_failure = ParentFailure::cancel;
  std::optional<std::int64_t> batch;  // joins this open batch (enqueue --batch)
  std::size_t line = 0;               // enqueue --from: the input line it came from
};

// One parent of a job, as `show` tells it.
struct ParentLink {
  std::int64_t id = 0;
  // "waiting" (not finished yet), "done", "canceled-child" (its failure canceled this job),
  // "gave-up" (failed for good or canceled; the policy let this job run, or it had already
  // left the waiting state), or "missing" (purged).
  std::string state;
  std::optional<Status> status;  // the parent's status now; none when purged
};

struct JobWaits {
  int pending = 0;  // parents not yet settled
  ParentFailure on_parent_failure = ParentFailure::cancel;
  std::vector<ParentLink> parents;
  std::vector<std::int64_t> children;  // jobs that named this one (the first 100)
  std::int64_t children_total = 0;
};

// A job of `enqueue` or `enqueue_bulk` refused for what it names (a parent with no job, a
// batch that does not exist or is closed): `index` is its place in the jobs given, so that
// `enqueue --from` can name the input line. The message names the option (--after, --batch).
class JobInputError : public UsageError {
 public:
  JobInputError(std::size_t index, const std::string& message)
      : UsageError(message), index(index) {}
  std::size_t index;
};

class Dependencies {
 public:
  explicit Dependencies(Database& db) : db_(db) {}

  // Enqueues each job after its parents, and into its batch, all in one transaction. A
  // parent id with no job, or a batch that does not exist or is closed, is refused
  // (JobInputError, nothing written). A parent already done counts as met; one failed or
  // canceled gets the job's policy at once.
  std::vector<EnqueueResult> enqueue(const std::vector<NewJobAfter>& jobs);
  // The same for many jobs, none with a dedupe key or a batch (`enqueue --from`): the
  // parents of all locked at once, the jobs, edges and counts in multi-row statements.
  // Returns how many were enqueued (all of them).
  std::int64_t enqueue_bulk(const std::vector<NewJobAfter>& jobs);

  // In the caller's transaction, after the write that finished them (each also counts the
  // end of the batch members among them):
  // `ids` are done: their waiting children count them as met.
  void parents_done(std::vector<long long> ids);
  // `ids` failed for good, or were canceled (`how`: "failed", "was canceled"): each
  // waiting child's policy is applied, and a child canceled by it passes it on.
  // Returns the jobs it canceled (those waiting with policy cancel, and theirs in turn).
  std::vector<long long> parents_gave_up(std::vector<long long> ids, const std::string& how);
  // `ids` were just retried: those still waiting for parents wait again, and the jobs
  // their failure canceled wait for them again.
  void retried(std::vector<long long> ids);

  // In the caller's transaction, after a purge's DELETE: the edges, counts and batch
  // memberships of the jobs among `ids` that no longer exist. (An edge from a purged parent
  // stays: `show` names that parent as missing.)
  // Returns the jobs it canceled, as parents_gave_up.
  std::vector<long long> purged(std::vector<long long> ids);

  // Acks jobs that have children (the plain ack refuses them), each with its children's
  // release in one transaction; returns the ids whose lease was lost.
  std::vector<std::int64_t> ack_parents(const std::vector<const AckItem*>& items);

  // What `show` prints; nothing when the job has no edges.
  std::optional<JobWaits> waits_of(std::int64_t id);

 private:
  // In the caller's transaction: settles again the edges of `child` from parents that gave
  // up, by their status now (still failed or canceled: gave up; done: met; else waiting),
  // recounts, and holds or releases it. `direct`: the child itself was retried; else it is
  // a job a parent's failure canceled, revived only when no parent of it is still failed
  // or canceled. Returns whether it was revived (or, direct, had a count).
  bool reconcile(long long child, bool direct);

  Database& db_;
};

}  // namespace queuectl
