#include "cli/job_filter.hpp"

#include "cli/id_outcome.hpp"
#include "cli/terminal.hpp"
#include "core/errors.hpp"
#include "core/validate.hpp"

namespace queuectl {

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
    if (!others.empty()) f.statuses = parse_status_list(others);
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
    std::vector<std::int64_t> ids;
    for (const Job& job : jobs.list(filter)) ids.push_back(job.id);
    if (ids.empty()) break;
    IdOutcome page = change(ids);
    all.changed.insert(all.changed.end(), page.changed.begin(), page.changed.end());
    all.skipped.insert(all.skipped.end(), page.skipped.begin(), page.skipped.end());
    // A job purged between the page and the change has moved on too.
    for (std::int64_t id : page.not_found) all.skipped.emplace_back(id, Status::done);
    progress.update(verb, static_cast<std::int64_t>(all.changed.size()), std::nullopt, "job(s)");
    if (static_cast<int>(ids.size()) < batch) break;
    filter.after = ids.back();
  }
  return all;
}

void report_matching(Context& ctx, const IdOutcome& outcome, const std::string& verb) {
  Output out;
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const auto& [id, status] : outcome.skipped)
    skipped.push_back({{"id", id}, {"status", std::string(status_name(status))}});
  out.document = {{verb, outcome.changed.size()},
                  {verb + "_ids", outcome.changed},
                  {"not_found", 0},
                  {"not_found_ids", nlohmann::json::array()},
                  {"other_state", outcome.skipped.size()},
                  {"other_state_jobs", skipped}};
  out.lines.push_back(verb + " " + std::to_string(outcome.changed.size()) + " job(s)" +
                      (outcome.changed.empty() ? "" : ": " + first_ids(outcome.changed)));
  ctx.print_report(out);
  if (!outcome.skipped.empty())
    ctx.note(std::to_string(outcome.skipped.size()) +
             " matching job(s) changed state before they could be " + verb + ": " + first_ids([&] {
               std::vector<std::int64_t> ids;
               for (const auto& entry : outcome.skipped) ids.push_back(entry.first);
               return ids;
             }()) +
             " (left as they are)");
}

}  // namespace queuectl
