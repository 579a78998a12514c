// queuectl list: jobs by queue and status, in id order, a page at a time.
#include <memory>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct ListOptions {
  std::string queue;
  std::string status;
  int limit = 100;
  std::string after;
};

Output run_list(Context& ctx, const ListOptions& o) {
  ListFilter f;
  if (!o.queue.empty()) {
    validate_queue_name(o.queue);
    f.queue = o.queue;
  }
  if (!o.status.empty()) f.statuses = parse_status_list(o.status);
  validate_positive(o.limit, "--limit");
  if (o.limit > 100000) throw UsageError("--limit " + std::to_string(o.limit) + " is over 100000");
  f.limit = o.limit;
  // --after 0 is the first page, so that a paging script can start from 0.
  f.after = o.after.empty() || o.after == "0" ? 0 : parse_job_id(o.after);
  auto jobs = JobRepository(ctx.migrated_db()).list(f);
  if (static_cast<int>(jobs.size()) == f.limit)
    ctx.note("more may follow: add --after " + std::to_string(jobs.back().id));
  return jobs_view(jobs);
}

}  // namespace

void setup_list(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ListOptions>();
  auto* sub = app.add_subcommand("list", "List jobs, oldest id first, a page at a time");
  sub->add_option("queue", o->queue, "Only this queue");
  sub->add_option("--status", o->status,
                  "Only these statuses: ready,processing,done,failed,canceled");
  sub->add_option("--limit", o->limit, "Jobs per page (default 100)");
  sub->add_option("--after", o->after, "Start after this job id (keyset paging)");
  sub->footer(
      "Examples:\n"
      "  queuectl list emails --status failed\n"
      "  queuectl list --status ready,processing --limit 50 --after 1200 -o ndjson");
  sub->callback([&ctx, o] { ctx.print(run_list(ctx, *o)); });
}

}  // namespace queuectl
