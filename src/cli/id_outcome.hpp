// Shared by retry and cancel: parsing id lists and reporting what happened to each id.
#pragma once

#include <string>
#include <vector>

#include "cli/context.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {

// "1 2 3 ... and 1990 more": the first ten ids of `ids`, so that a report (a cron mail)
// stays short; -o json has them all.
std::string first_ids(const std::vector<std::int64_t>& ids);

// Parses every argument as a job id; throws UsageError at the first bad one.
std::vector<std::int64_t> parse_job_ids(const std::vector<std::string>& args);

// The report of an outcome (`verb` e.g. "retried"): the JSON document every such report
// shares, and one line naming every changed id, or the first ten when not `every_id`.
Output outcome_output(const IdOutcome& outcome, const std::string& verb, bool every_id);

// Prints the outcome (`verb` e.g. "retried"), then throws NotFound when some ids do not
// exist, or an Error naming the ids whose status did not allow the change and `hint`.
// Says on stderr which jobs were canceled with the ones `because` names (they waited for them
// with enqueue --after); nothing when none.
void note_dependents_canceled(Context& ctx, const std::vector<std::int64_t>& ids,
                              const std::string& because);
void report_outcome(Context& ctx, const IdOutcome& outcome, const std::string& verb,
                    const std::string& hint);

}  // namespace queuectl
