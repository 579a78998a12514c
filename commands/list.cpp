// queuectl list: jobs by queue and status, in id order, a page at a time.
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/job_filter.hpp"
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
  std::string before;
  bool newest_first = false;
  std::optional<std::string> group;
  std::optional<std::string> error;
};

// --after and --before: 0 (or nothing) is no bound, so that a paging script can start
// from 0.
std::int64_t id_bound(const std::string& text) {
  return text.empty() || text == "0" ? 0 : parse_job_id(text);
}

Output run_list(Context& ctx, const ListOptions& o) {
  ListFilter f;
  if (!o.queue.empty()) {
    validate_queue_name(o.queue);
    f.queue = o.queue;
  }
  apply_job_filter(JobFilterText{o.status, o.group, o.error, ""}, f);
  validate_positive(o.limit, "--limit");
  if (o.limit > 100000) throw UsageError("--limit " + std::to_string(o.limit) + " is over 100000");
  f.limit = o.limit;
  f.after = id_bound(o.after);
  f.before = id_bound(o.before);
  if (f.after != 0 && f.before != 0 && f.before <= f.after)
    throw UsageError("--before " + o.before + " is not above --after " + o.after);
  f.newest_first = o.newest_first;
  ctx.access = Access::read;
  JobRepository repo(ctx.migrated_db());
  auto jobs = repo.list(f);
  if (static_cast<int>(jobs.size()) == f.limit)
    ctx.note("more may follow: add " + std::string(o.newest_first ? "--before " : "--after ") +
             std::to_string(jobs.back().id));
  // The table's ages are seen from the database clock, never this host's.
  std::optional<std::string> now;
  if (ctx.format() == Format::table && !jobs.empty()) now = repo.now();
  return jobs_view(jobs, now, JobsTable::listing, ctx.format() == Format::table,
                   ctx.format() == Format::ndjson && ctx.options.fields.empty());
}

}  // namespace

void setup_list(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ListOptions>();
  auto* sub = app.add_subcommand("list", "List jobs, oldest (or newest) first, a page at a time");
  sub->add_option("QUEUE", o->queue, "Only this queue");
  sub->add_option("--status", o->status,
                  "Only these statuses: ready,waiting,processing,done,failed,canceled "
                  "(ready: due or scheduled; waiting: held by --after)");
  sub->add_option("--limit", o->limit, "Jobs per page (default 100)");
  sub->add_option("--after", o->after,
                  "Only ids above this one (paging oldest first: the last id shown)");
  sub->add_flag("--newest-first", o->newest_first, "Newest job first (highest id)");
  sub->add_option("--before", o->before,
                  "Only ids below this one (paging --newest-first: the last id shown)");
  add_filter_options(*sub, o->group, o->error, "");
  sub->footer(
      "Examples:\n"
      "  queuectl list emails --status failed\n"
      "  queuectl list --status ready,processing --limit 50 --after 1200 -o ndjson\n"
      "  queuectl list emails --newest-first --limit 20\n"
      "  queuectl list emails --status failed --error 'timed out' --group-key acct-42\n"
      "  queuectl list --after 1000 --before 2001     (ids 1001 to 2000)\n"
      "  queuectl -o wide list emails     (absolute times, worker, token, group key)");
  sub->callback([&ctx, o] { ctx.print(run_list(ctx, *o)); });
}

}  // namespace queuectl
