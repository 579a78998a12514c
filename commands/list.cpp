// queuectl list: jobs by queue and status, in id order, a page at a time.
#include <memory>
#include <optional>

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
  std::string before;
  bool newest_first = false;
};

Output run_list(Context& ctx, const ListOptions& o) {
  ListFilter f;
  if (!o.queue.empty()) {
    validate_queue_name(o.queue);
    f.queue = o.queue;
  }
  if (!o.status.empty()) {
    // "waiting" (a ready job held by --after, as list shows it) is a status of its own
    // here: `--status ready` lists the others, `--status waiting` those alone.
    std::string others;
    bool ready = false, waiting = false;
    std::size_t start = 0;
    while (start <= o.status.size()) {
      std::size_t comma = o.status.find(',', start);
      if (comma == std::string::npos) comma = o.status.size();
      const std::string item = o.status.substr(start, comma - start);
      if (item.empty()) throw UsageError("empty status in --status '" + o.status + "'");
      if (item == "waiting")
        waiting = true;
      else
        others += (others.empty() ? "" : ",") + item;
      if (item == "ready") ready = true;
      start = comma + 1;
    }
    if (!others.empty()) f.statuses = parse_status_list(others);
    if (waiting && !ready) f.statuses.push_back(Status::ready);
    f.ready_now = ready || !waiting;
    f.waiting = waiting || !ready;
  }
  validate_positive(o.limit, "--limit");
  if (o.limit > 100000) throw UsageError("--limit " + std::to_string(o.limit) + " is over 100000");
  f.limit = o.limit;
  if (!o.before.empty() && !o.newest_first)
    throw UsageError("--before pages newest first: add --newest-first");
  if (!o.after.empty() && o.newest_first)
    throw UsageError("--after pages oldest first: with --newest-first, page with --before");
  // --after 0 (--before 0) is the first page, so that a paging script can start from 0.
  const std::string& from = o.newest_first ? o.before : o.after;
  f.after = from.empty() || from == "0" ? 0 : parse_job_id(from);
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
  sub->add_option("--after", o->after, "Start after this job id (keyset paging)");
  sub->add_flag("--newest-first", o->newest_first, "Newest job first (highest id)");
  sub->add_option("--before", o->before, "With --newest-first: start before this job id");
  sub->footer(
      "Examples:\n"
      "  queuectl list emails --status failed\n"
      "  queuectl list --status ready,processing --limit 50 --after 1200 -o ndjson\n"
      "  queuectl list emails --newest-first --limit 20\n"
      "  queuectl -o wide list emails     (absolute times, worker, token, group key)");
  sub->callback([&ctx, o] { ctx.print(run_list(ctx, *o)); });
}

}  // namespace queuectl
