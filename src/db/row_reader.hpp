// Binds the job columns of a statement as text and turns each fetched row into a Job.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include <soci/soci.h>

#include "core/job.hpp"
#include "core/job_fields.hpp"
#include "db/statements.hpp"

namespace queuectl {

class JobRowReader {
 public:
  static constexpr std::size_t kColumns = kJobFields.size();

  // Adds one into() per job column to `st`, in Job's order.
  void bind(soci::statement& st);
  // The job in the row last fetched. Its text moves out of the reader (the next fetch
  // writes each column that is not null afresh, and a null one is read by its indicator):
  // call it once a row.
  Job job();

 private:
  std::array<std::string, kColumns> values_;
  std::array<soci::indicator, kColumns> nulls_{};
};

// Prepares `st` (its intos and uses already exchanged) to run `sql` once: no server-side
// prepared statement to create and deallocate, so one round trip on PostgreSQL.
void prepare_once(soci::statement& st, const std::string& sql);

// `sql` with `elements` (soci::into and soci::use) exchanged, prepared to run once: what
// `session.prepare << sql, elements...` gives, in one round trip on PostgreSQL instead of
// three (PREPARE, EXECUTE, DEALLOCATE). For a statement run once, as most are.
template <typename... Elements>
soci::statement statement_once(soci::session& session, const std::string& sql,
                               Elements&&... elements) {
  soci::statement st(session);
  (st.exchange(std::forward<Elements>(elements)), ...);
  prepare_once(st, sql);
  return st;
}

// Prepares `sql` with the binds `add_uses(statement&)` adds, runs it, and collects the
// job rows it returns.
template <typename AddUses>
std::vector<Job> fetch_jobs(soci::session& session, const std::string& sql, AddUses add_uses) {
  soci::statement st(session);
  JobRowReader reader;
  reader.bind(st);
  add_uses(st);
  prepare_once(st, sql);
  std::vector<Job> jobs;
  for (bool got = st.execute(true); got; got = st.fetch()) jobs.push_back(reader.job());
  return jobs;
}

// Runs a statement that returns one integer column (ids) with the binds `add_uses`
// adds, and collects every row. Row by row on purpose: SOCI reads a one-element vector
// into() as a single row, which would make a LIMIT 1 pick wrong.
template <typename AddUses>
std::vector<long long> fetch_ids(soci::session& session, const std::string& sql, AddUses add_uses) {
  soci::statement st(session);
  long long one = 0;
  st.exchange(soci::into(one));
  add_uses(st);
  prepare_once(st, sql);
  std::vector<long long> ids;
  for (bool got = st.execute(true); got; got = st.fetch()) ids.push_back(one);
  return ids;
}

// values_rows's row with "{n}" replaced by `index` (text built from the count, never the
// values).
std::string values_row(const InsertValuesRows& rows, std::size_t index);

// Binds "{ids}" as :id0, :id1, ... in `sql` (text built from the count, never the values).
std::string expand_ids(const std::string& sql, std::size_t count);
// Adds use(ids[i], "id<i>") for each id; `ids` must outlive the statement's execution.
void bind_ids(soci::statement& st, std::vector<long long>& ids);
// Runs a "{ids}" statement over `ids` and returns its affected row count.
long long execute_on_ids(soci::session& session, const std::string& sql,
                         std::vector<long long>& ids);

}  // namespace queuectl
