// The SQL of jobs that wait for other jobs (Dependencies, src/db/dependencies.*) and of
// batches (Batches, src/db/batches.*), per backend. Kept apart from Statements: only those
// two classes run it. Each statement binds its values; "{ids}" is a list of :idN
// (expand_ids).
#pragma once

#include <string>

#include "core/db_url.hpp"

namespace queuectl {

struct DependencySql {
  std::string lock_jobs;         // {ids} -> id, status; the rows locked for this transaction
  std::string mark_parents;      // {ids}
  std::string insert_edge;       // :parent :child :state
  std::string insert_wait;       // :child :pending :policy
  std::string hold;              // :id -> run_at = waiting
  std::string waiting_value;     // the waiting run_at as NewJob::run_at text
  std::string cancel_new;        // :id :error
  std::string open_edges;        // {ids} -> parent, child, policy; edges still waiting
  std::string set_edge;          // :state :parent :child
  std::string count_down;        // :n :child
  std::string pending;           // :child -> pending
  std::string release;           // :child
  std::string lock_waits;        // {ids} -> child_id; the counts locked, in child order
  std::string meet_edges;        // {ids}: the parents' edges still waiting are met
  std::string count_down_many;   // :n {ids}
  std::string released_among;    // {ids} -> child_id of those with no parent left to wait for
  std::string release_many;      // {ids}; PostgreSQL: -> count (release_selects)
  bool release_selects = false;  // release is a SELECT (PostgreSQL: it also sends a NOTIFY)
  std::string cancel_child;      // :error :child
  std::string revive_edges;      // {ids} -> parent, child (edges whose parent canceled the child)
  std::string revive_child;      // :child
  std::string lock_wait;         // :child -> pending, the row locked
  std::string recount;           // :child :child2 (the same) -> pending = edges in state 0 or 2
  std::string children_among;    // {ids} -> those with a count (enqueued with --after)
  std::string ack_parent;        // :result :id :token
  std::string wait_row;          // :id -> pending, policy
  std::string parents;           // :id -> parent, state, status (NULL: purged)
  std::string children;          // :id -> child (first 100)
  std::string children_count;    // :id -> count
  std::string insert_edges;      // "INSERT ... (parent_id, child_id, state)" before VALUES rows
  std::string insert_waits;      // "INSERT ... (child_id, pending, on_parent_failure)" likewise
  // PostgreSQL: the same rows as three array parameters :a :b :c, one statement for any number
  // of rows (empty: VALUES rows, above).
  std::string insert_edges_arrays;
  std::string insert_waits_arrays;
  std::string ackable_parents;  // {ids} :token -> id; the jobs with children this token acks,
                                // locked
  std::string ack_parents_ids;  // {ids}: acked, with no result (rows checked by ackable_parents)
  std::string orphaned_edges;   // {ids} -> parent, child, policy; edges open to a purged job
  std::string purge_edges;      // {ids}: edges of jobs that no longer exist
  std::string purge_waits;      // {ids}: counts of jobs that no longer exist
};

struct BatchSql {
  std::string insert;         // :sq :sp :fq :fp
  std::string read;           // :id -> the columns of Batch, in its order
  std::string lock;           // :id -> closed (0/1), the row locked for this transaction
  std::string member;         // :job :id
  std::string mark_job;       // :job
  std::string grow;           // :id
  std::string members;        // {ids} -> job_id, batch_id (not yet settled)
  std::string settled;        // {ids}
  std::string count;          // :n :d :f :c :id
  std::string close;          // :id
  std::string finish;         // :id
  std::string callback;       // :job :id
  std::string purge_members;  // {ids}: memberships of jobs that no longer exist
};

const DependencySql& dependency_sql(Backend backend);
const BatchSql& batch_sql(Backend backend);

}  // namespace queuectl
