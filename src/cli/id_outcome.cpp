#include "cli/id_outcome.hpp"

#include "core/errors.hpp"
#include "core/validate.hpp"

namespace queuectl {

std::string first_ids(const std::vector<std::int64_t>& ids) {
  constexpr std::size_t kShown = 10;
  std::string s;
  for (std::size_t i = 0; i < ids.size() && i < kShown; ++i)
    s += (i ? " " : "") + std::to_string(ids[i]);
  if (ids.size() > kShown) s += " ... and " + std::to_string(ids.size() - kShown) + " more";
  return s;
}

std::vector<std::int64_t> parse_job_ids(const std::vector<std::string>& args) {
  std::vector<std::int64_t> ids;
  for (const auto& a : args) ids.push_back(parse_job_id(a));
  if (ids.empty()) throw UsageError("no job ids given");
  if (ids.size() > 10000) throw UsageError("at most 10000 job ids at once");
  return ids;
}

Output outcome_output(const IdOutcome& outcome, const std::string& verb, bool every_id) {
  Output out;
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const auto& [id, status] : outcome.skipped)
    skipped.push_back({{"id", id}, {"status", std::string(status_name(status))}});
  // The shape of every report: a count under the outcome's name, the ids beside it.
  out.document = {{verb, outcome.changed.size()},          {verb + "_ids", outcome.changed},
                  {"not_found", outcome.not_found.size()}, {"not_found_ids", outcome.not_found},
                  {"other_state", outcome.skipped.size()}, {"other_state_jobs", skipped}};
  std::string ids;
  if (every_id)
    for (auto id : outcome.changed) ids += (ids.empty() ? "" : " ") + std::to_string(id);
  else
    ids = first_ids(outcome.changed);
  out.lines.push_back(verb + " " + std::to_string(outcome.changed.size()) + " job(s)" +
                      (ids.empty() ? "" : ": " + ids));
  return out;
}

void note_dependents_canceled(Context& ctx, const std::vector<std::int64_t>& ids,
                              const std::string& because) {
  if (ids.empty()) return;
  ctx.note("also canceled " + std::to_string(ids.size()) + " job(s) that waited for " + because +
           " (enqueue --after): " + first_ids(ids));
}

void report_outcome(Context& ctx, const IdOutcome& outcome, const std::string& verb,
                    const std::string& hint) {
  ctx.print_report(outcome_output(outcome, verb, true));
  note_dependents_canceled(ctx, outcome.dependents_canceled, "them");
  // One error line names every id that was not changed: those in another state (exit 1),
  // then those that do not exist (exit 4 when they are the only ones).
  std::string missing;
  for (auto id : outcome.not_found) missing += (missing.empty() ? "" : ", ") + std::to_string(id);
  if (!outcome.skipped.empty()) {
    std::string list;
    for (const auto& [id, status] : outcome.skipped)
      list += (list.empty() ? "" : ", ") + std::to_string(id) + " (" +
              std::string(status_name(status)) + ")";
    throw Error("not " + verb + ": " + list + "; " + hint +
                (missing.empty() ? "" : "; no such job: " + missing));
  }
  if (!outcome.not_found.empty()) throw NotFound("no such job: " + missing);
}

}  // namespace queuectl
