// The SQL of `bench`'s own scratch tables, one set per backend, chosen once from the URL:
// seed 001's table (an id and an "assigned" flag), the ledger every client writes the ids
// it processed to, and the counts read back at the end. queuectl's own claim and ack come
// from the dialect instead (see scratch.hpp).
//
// Statements name their tables as {jobs} and {ledger}; ScratchTables::render puts in the
// generated names. Values are bound (:limit, :client, ...); "{ids}" stands for :id0, :id1,
// ... as in statements.hpp, and "{rows}" for the rows of a multi-row insert.
#pragma once

#include <string>

#include "core/db_url.hpp"

namespace queuectl::bench {

struct BenchSql {
  // FOR UPDATE and SKIP LOCKED exist: a client can hold rows locked while it works on them.
  bool row_locks = true;
  // Why not, for the strategies that need them (empty when row_locks).
  std::string no_row_locks_reason;

  std::string create_jobs;    // seed 001's table: id, assigned (0/1), client
  std::string create_pick;    // its index for the pick: (assigned, id)
  std::string create_ledger;  // job_id, client
  std::string create_ledger_index;
  std::string seed_prefix;  // INSERT INTO {jobs} (assigned) VALUES, then seed_row n times
  std::string seed_row;

  // The first :limit unassigned ids, in id order (the article's SELECT ... LIMIT).
  std::string pick;
  std::string for_update;   // appended to pick
  std::string skip_locked;  // appended to pick
  std::string mark;         // {ids} :client -> assigned = 1
  // One ledger row per processed job: {rows} of ledger_row, with {n} its index.
  std::string record_prefix;
  std::string ledger_row;  // (:job{n}, :client{n})

  std::string unassigned;  // -> unassigned jobs left in {jobs}
  std::string ready;       // -> ready jobs left in a queuectl scratch table {jobs}
  // -> ledger rows, distinct job ids in them.
  std::string ledger_counts;
  // -> job ids in the ledger more than once.
  std::string duplicates;
  // -> jobs of {jobs} not finished: not assigned, or without a ledger row (seed 001's
  // table; unfinished_claim: queuectl's, where done is status 2).
  std::string unfinished;
  std::string unfinished_claim;
  std::string table_exists;  // :name -> 1 when a table of that name exists, else 0
  std::string drop;          // {table}: DROP TABLE IF EXISTS
};

// The statements for `backend`.
const BenchSql& bench_sql(Backend backend);

}  // namespace queuectl::bench
