// Batches: jobs enqueued together (`enqueue --batch ID`) and one callback job, enqueued once
// when the batch is closed and every member has finished.
//
// queuectl_batches counts a batch's members: total, pending (not yet finished), and how the
// finished ones ended. A member is marked has_dependents, so that its end is counted in the
// transaction that finishes it (Dependencies::parents_done and parents_gave_up call
// Batches::settle). The batch row is locked by each count and by `batch close`, and only the
// transaction whose guarded UPDATE sets finished_at (pending = 0, closed, not yet finished)
// enqueues the callback: exactly once, whichever comes last, the close or the last member.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/database.hpp"

namespace queuectl {

struct BatchCallback {
  std::string queue;
  std::string payload;  // a JSON object, compact
};

struct Batch {
  std::int64_t id = 0;
  std::int64_t total = 0;
  std::int64_t pending = 0;
  std::int64_t done = 0;
  std::int64_t failed = 0;
  std::int64_t canceled = 0;
  std::optional<BatchCallback> on_success;
  std::optional<BatchCallback> on_failure;
  std::optional<std::int64_t> callback_job_id;
  std::string created_at;  // RFC 3339 UTC
  std::optional<std::string> closed_at;
  std::optional<std::string> finished_at;
};

// How a member ended.
enum class MemberEnd { done, failed, canceled };

class Batches {
 public:
  explicit Batches(Database& db) : db_(db) {}

  // A new, open batch; returns it.
  Batch create(const std::optional<BatchCallback>& on_success,
               const std::optional<BatchCallback>& on_failure);
  // Closes the batch (no more members; closing twice is no error) and, if every member has
  // finished, enqueues its callback. Throws NotFound.
  Batch close(std::int64_t id);
  // Throws NotFound.
  Batch get(std::int64_t id);

  // In the caller's transaction: locks the batch for adding a member; throws UsageError when
  // it does not exist or is closed.
  void lock_open(std::int64_t id);
  // In the caller's transaction, after lock_open: `job` joins the batch.
  void add_member(std::int64_t id, std::int64_t job);
  // In the caller's transaction: the members among `jobs` ended as `end` (those already
  // counted, and jobs of no batch, are left alone); a batch this finishes calls back.
  void settle(std::vector<long long> jobs, MemberEnd end);

 private:
  // The guarded finish, and the callback when it is this transaction's.
  void try_finish(long long id);
  std::optional<Batch> read(long long id);

  Database& db_;
};

}  // namespace queuectl
