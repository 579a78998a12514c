// queuectl show: one job, every column, described for people (or as JSON).
#include <memory>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "db/job_repository.hpp"

namespace queuectl {

void setup_show(CLI::App& app, Context& ctx) {
  auto id = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("show", "Show one job with every column");
  sub->add_option("ID", *id, "Job id")->required();
  sub->footer(
      "Prints a \"field:  value\" line per column, times with how long ago (or how soon) they\n"
      "are; the payload and result as indented JSON and the last error one line per line,\n"
      "each below its field. Control characters show as escapes (\\x1b). -o json prints the\n"
      "row as stored. Exit 4 when no job has that id.\n"
      "Examples:\n"
      "  queuectl show 42\n"
      "  queuectl show 42 -o json");
  sub->callback([&ctx, id] {
    std::int64_t job_id = parse_job_id(*id);
    ctx.access = Access::read;
    JobRepository repo(ctx.migrated_db());
    const Job job = repo.get(job_id);
    ctx.print(job_view(job, repo.now()));
  });
}

}  // namespace queuectl
