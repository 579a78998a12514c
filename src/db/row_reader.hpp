// Binds the job columns of a statement as text and turns each fetched row into a Job.
#pragma once

#include <array>
#include <string>

#include <soci/soci.h>

#include "core/job.hpp"

namespace queuectl {

class JobRowReader {
 public:
  static constexpr std::size_t kColumns = 19;

  // Adds one into() per job column to `st`, in Job's order.
  void bind(soci::statement& st);
  // The job in the row last fetched.
  Job job() const;

 private:
  std::array<std::string, kColumns> values_;
  std::array<soci::indicator, kColumns> nulls_{};
};

// Binds "{ids}" as :id0, :id1, ... in `sql` (text built from the count, never the values).
std::string expand_ids(const std::string& sql, std::size_t count);

}  // namespace queuectl
