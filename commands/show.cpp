// queuectl show: one job, every column, described for people (or as JSON).
#include <memory>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "db/dependencies.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

// "key:" padded as job_view pads its fields.
std::string field_line(const std::string& key, const std::string& value) {
  std::string head = key + ":";
  return head + std::string(head.size() < kJobKeyWidth ? kJobKeyWidth - head.size() : 1, ' ') +
         value;
}

// What a job waits for (enqueue --after), and which jobs wait for it.
void add_dependencies(Output& out, const JobWaits& w) {
  nlohmann::ordered_json parents = nlohmann::ordered_json::array();
  std::string text;
  for (const ParentLink& p : w.parents) {
    parents.push_back({{"id", p.id}, {"state", p.state}});
    text += (text.empty() ? "" : ", ") + std::to_string(p.id) + " (" + p.state + ")";
  }
  nlohmann::ordered_json children = nlohmann::ordered_json::array();
  std::string kids;
  for (std::int64_t c : w.children) {
    children.push_back(c);
    kids += (kids.empty() ? "" : ", ") + std::to_string(c);
  }
  if (w.children_total > static_cast<std::int64_t>(w.children.size()))
    kids += ", ... (" + std::to_string(w.children_total) + " in all)";
  if (!w.parents.empty()) {
    out.document["after"] = parents;
    out.document["waiting_for"] = w.pending;
    out.document["on_parent_failure"] = std::string(parent_failure_name(w.on_parent_failure));
    out.lines.push_back(field_line("after", text));
    out.lines.push_back(
        field_line("waiting_for", std::to_string(w.pending) + " job(s); if one fails: " +
                                      std::string(parent_failure_name(w.on_parent_failure))));
  }
  if (!w.children.empty()) {
    out.document["dependents"] = children;
    out.lines.push_back(field_line("dependents", kids));
  }
  out.items = nlohmann::ordered_json::array({out.document});
}

}  // namespace

void setup_show(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("show", "Show one job with every column");
  sub->add_option("ID", *id, "Job id")->required();
  sub->footer(
      "Prints a \"field:  value\" line per column, times with how long ago (or how soon) they\n"
      "are; the payload and result as indented JSON and the last error one line per line,\n"
      "each below its field. Control characters show as escapes (\\x1b). -o json prints the\n"
      "row as stored. Exit 4 when no job has that id. A job enqueued with --after also shows\n"
      "its parents (each waiting, done, canceled-child, gave-up or missing), how many it still\n"
      "waits for and its --on-parent-failure; a job others wait for lists them as dependents.\n"
      "Examples:\n"
      "  queuectl show 42\n"
      "  queuectl show 42 -o json");
  sub->callback([&ctx, id] {
    std::int64_t job_id = parse_job_id(*id);
    ctx.access = Access::read;
    JobRepository repo(ctx.migrated_db());
    const Job job = repo.get(job_id);
    Output out = job_view(job, repo.now());
    if (auto waits = Dependencies(ctx.migrated_db()).waits_of(job_id))
      add_dependencies(out, *waits);
    ctx.print(out);
  });
}

}  // namespace queuectl
