// Which jobs a command means when it is given a filter instead of ids: `list` pages them,
// `cancel` and `retry` change them, a page at a time.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cli/context.hpp"
#include "db/admin_repository.hpp"
#include "db/job_repository.hpp"

namespace CLI {
class App;
}

namespace queuectl {

// Declares --group-key and --error on `sub`, into `group` and `error`. `scope` starts their
// help: "" for `list`, "With --queue: " for the commands that also take ids.
void add_filter_options(CLI::App& sub, std::optional<std::string>& group,
                        std::optional<std::string>& error, const std::string& scope);

// What a user typed: --status (a comma list of ready, waiting, processing, done, failed,
// canceled; "waiting" is a ready job held by --after, listed apart), --group-key, --error.
struct JobFilterText {
  std::string status;
  std::optional<std::string> group_key;
  std::optional<std::string> error;
  // The statuses the command takes, for the message on one it does not know
  // ("cancel takes --status ..."); empty: every status.
  std::string taken;
};

// Checks the text into `filter` (its statuses, ready_now/waiting, group key and error
// text). Throws UsageError naming the option that was wrong.
void apply_job_filter(const JobFilterText& text, ListFilter& filter);

// Changes every job that `filter` lists (oldest first), a page of `batch` ids at a time,
// each page by `change` in its own transaction, with a progress line on a terminal. A job
// that left the filter's statuses between its page and the change comes back in the
// outcome's `skipped` (`not_found` if deleted), not as an error: the filter named no job
// in particular. Only ids are read, never payloads.
IdOutcome change_matching(Context& ctx, ListFilter filter, int batch, const std::string& verb,
                          const std::function<IdOutcome(const std::vector<std::int64_t>&)>& change);

// The report of change_matching: the same document as report_outcome's, and notes on
// stderr for the jobs that had moved on or gone. Never throws for them.
void report_matching(Context& ctx, const IdOutcome& outcome, const std::string& verb);

}  // namespace queuectl
