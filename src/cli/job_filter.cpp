#include "cli/job_filter.hpp"

#include <CLI/CLI.hpp>

#include "cli/id_outcome.hpp"
#include "cli/terminal.hpp"
#include "core/errors.hpp"
#include "core/validate.hpp"

namespace queuectl {

void add_filter_options(CLI::App& sub, std::optional<std::string>& group,
                        std::optional<std::string>& error, const std::string& scope) {
  const std::string only = scope.empty() ? "Only" : scope + "only";
  sub.add_option("--group-key", group, only + " jobs of this group key");
  sub.add_option("--error", error,
                 only + " jobs whose last error contains this text (case-sensitive)");
}

void apply_job_filter(const JobFilterText& text, ListFilter& f) {
  if (!text.status.empty()) {
    // "waiting" (a ready job held by --after, as list shows it) is a status of its own
    // here: `--status ready` means the others, `--status waiting` those alone.
    std::string others;
    bool ready = false, waiting = false;
    std::size_t start = 0;
    while (start <= text.status.size()) {
      std::size_t comma = text.status.find(',', start);
      if (comma == std::string::npos) comma = text.status.size();
      const std::string item = text.status.substr(start, comma - start);
      if (item.empty()) throw UsageError("empty status in --status '" + text.status + "'");
      if (item == "waiting")
        waiting = true;
      else
        others += (others.empty() ? "" : ",") + item;
      if (item == "ready") ready = true;
      start = comma + 1;
    }
    f.statuses.clear();
    if (!others.empty()) f.statuses = parse_status_list(others, text.taken);
    if (waiting && !ready) f.statuses.push_back(Status::ready);
    f.ready_now = ready || !waiting;
    f.waiting = waiting || !ready;
  }
  if (text.group_key) {
    validate_key(*text.group_key, "--group-key");
    f.group_key = *text.group_key;
  }
  if (text.error) {
    if (text.error->empty()) throw UsageError("--error is empty");
    f.error_text = *text.error;
  }
}

IdOutcome change_matching(
    Context& ctx, ListFilter filter, int batch, const std::string& verb,
    const std::function<IdOutcome(const std::vector<std::int64_t>&)>& change) {
  filter.newest_first = false;
  filter.limit = batch;
  IdOutcome all;
  JobRepository jobs(ctx.migrated_db());
  ProgressLine progress = ctx.progress_line();
  for (;;) {
    const std::vector<std::int64_t> ids = jobs.list_ids(filter);
    if (ids.empty()) break;
    IdOutcome page = change(ids);
    all.changed.insert(all.changed.end(), page.changed.begin(), page.changed.end());
    all.skipped.insert(all.skipped.end(), page.skipped.begin(), page.skipped.end());
    // Purged between the page and the change.
    all.not_found.insert(all.not_found.end(), page.not_found.begin(), page.not_found.end());
    all.dependents_canceled.insert(all.dependents_canceled.end(), page.dependents_canceled.begin(),
                                   page.dependents_canceled.end());
    progress.update(verb, static_cast<std::int64_t>(all.changed.size()), std::nullopt, "job(s)");
    if (static_cast<int>(ids.size()) < batch) break;
    filter.after = ids.back();
  }
  return all;
}

void report_matching(Context& ctx, const IdOutcome& outcome, const std::string& verb) {
  ctx.print_report(outcome_output(outcome, verb, false));
  note_dependents_canceled(ctx, outcome.dependents_canceled, "them");
  if (!outcome.skipped.empty()) {
    std::vector<std::int64_t> ids;
    for (const auto& entry : outcome.skipped) ids.push_back(entry.first);
    ctx.note(std::to_string(ids.size()) + " matching job(s) changed state before they could be " +
             verb + ": " + first_ids(ids) + " (left as they are)");
  }
  if (!outcome.not_found.empty())
    ctx.note(std::to_string(outcome.not_found.size()) +
             " matching job(s) were deleted before they could be " + verb + ": " +
             first_ids(outcome.not_found));
}

}  // namespace queuectl
