// Scratch tables: where `bench` runs each strategy, so that the real job_queue is never
// touched. Their names come from the process id and a constant per strategy only, never
// from input; the command creates them, remembers what it created, and drops exactly that
// at the end, on error and on SIGINT/SIGTERM.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/bench_sql.hpp"
#include "bench/strategy.hpp"
#include "db/database.hpp"

namespace queuectl::bench {

// One strategy's tables: queuectl_bench_<pid>_<strategy> (seed 001's table, or for claim
// the copy of job_queue), its ledger <jobs>_ledger and, for claim, the copies of
// queuectl_queues <jobs>_queues and queuectl_rate_keys <jobs>_rate_keys. Lower-case
// letters, digits and underscores only.
struct ScratchTables {
  std::string jobs, ledger, queues, rate_keys;

  // `sql` with {jobs}, {ledger} and {table} (= `table`) replaced by the names.
  std::string render(const std::string& sql, const std::string& table = "") const;
  // Every name, for checking and dropping.
  std::vector<std::string> all() const;
};

ScratchTables scratch_tables(long pid, Strategy strategy);

// `sql` with every job_queue, queuectl_queues and queuectl_rate_keys renamed to `t.jobs`,
// `t.queues` and `t.rate_keys`: the
// tables, and with them the indexes, keys and constraints named after them
// (job_queue_claim, ix_job_queue_claim, ...).
std::string rename_tables(const std::string& sql, const ScratchTables& t);

// queuectl's claim, ack and bulk insert statements (what `claim` and its seeding run), with
// the tables renamed. Every other statement stays empty (the bulk insert of arrays too: the
// copy is seeded with VALUES rows), so that nothing run through the copy can reach the real
// tables. The copy's queue has no concurrency or rate limit, so PostgreSQL's calls of the
// functions that enforce them (which the copy does not have: a database never migrated
// has none) become the numbers they return without a limit.
Statements claim_statements(const Statements& real, const ScratchTables& t);

// The statements of `backend`'s migrations that build the copy of queuectl's schema:
// CREATE TABLE, CREATE INDEX, CREATE TRIGGER and ALTER TABLE, renamed, each kept only when
// every queuectl object it names is a scratch one. So not SQLite's queuectl_locks, and no
// function: PostgreSQL's triggers, which call functions shared by the schema (the
// wake-ups would notify real workers), stay out; their WHEN clauses keep them from firing
// on queuectl's claim and ack anyway. MySQL's and SQLite's triggers are copied.
std::vector<std::string> schema_copy(Backend backend, const ScratchTables& t);
// The same for any list of statements.
std::vector<std::string> copy_ddl(const std::vector<std::string>& statements,
                                  const ScratchTables& t);

// Creates one strategy's tables on `db` and drops what it created, last first, when told
// to or when destroyed (on an error or a signal). `warn` hears about a table it could not
// drop.
class ScratchSchema {
 public:
  ScratchSchema(Database& db, const BenchSql& sql, ScratchTables tables,
                std::function<void(const std::string&)> warn);
  ~ScratchSchema();
  ScratchSchema(const ScratchSchema&) = delete;
  ScratchSchema& operator=(const ScratchSchema&) = delete;

  // Seed 001's table, its pick index and the ledger. Throws Error when a name is taken
  // (left by a bench that was killed, or another process with this pid on another host).
  void create_seed_table();
  // The copy of queuectl's schema and the ledger.
  void create_schema_copy();
  // Drops what was created; returns one message per table it could not drop.
  std::vector<std::string> drop();

  const ScratchTables& tables() const { return tables_; }

 private:
  void refuse_taken_names();
  void run_ddl(const std::string& ddl, const std::string& creates);

  Database& db_;
  const BenchSql& sql_;
  ScratchTables tables_;
  std::function<void(const std::string&)> warn_;
  std::vector<std::string> created_;
};

}  // namespace queuectl::bench
