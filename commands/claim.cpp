// queuectl claim: take due jobs with a lease and a fresh token.
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct ClaimOptions {
  std::string queue;
  int limit = 1;
  std::string lease;
  std::string worker;
};

Output run_claim(Context& ctx, const ClaimOptions& o) {
  validate_queue_name(o.queue);
  validate_positive(o.limit, "--limit");
  if (o.limit > 10000) throw UsageError("--limit " + std::to_string(o.limit) + " is over 10000");
  ClaimRequest r;
  r.queue = o.queue;
  r.limit = o.limit;
  r.lease = duration_option(o.lease, "--lease", Duration::seconds(30));
  if (!r.lease.positive()) throw UsageError("--lease must be positive");
  r.worker = o.worker.empty() ? default_worker_id() : o.worker;
  validate_worker(r.worker);
  Database& db = ctx.migrated_db();
  auto jobs = JobRepository(db).claim(r);
  // A paused queue looks empty: say why (only then is it worth the extra read).
  if (jobs.empty())
    ctx.note(AdminRepository(db).settings(o.queue).paused
                 ? "queue " + o.queue + " is paused: no job is handed out until `queuectl " +
                       "resume " + o.queue + "`"
                 : "no job due in queue " + o.queue);
  return jobs_view(jobs);
}

}  // namespace

void setup_claim(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ClaimOptions>();
  auto* sub = app.add_subcommand("claim", "Take due jobs from a queue, each with a lease");
  sub->add_option("queue", o->queue, "Queue name")->required();
  sub->add_option("--limit", o->limit, "Jobs to claim at most (default 1)");
  sub->add_option("--lease", o->lease, "Lease length (default 30s); extend it while working");
  sub->add_option("--worker", o->worker, "Worker identity (default host:pid)");
  sub->footer(
      "Claims skip jobs other workers hold (SKIP LOCKED) and never wait. Exit 0 with an\n"
      "empty result when nothing is due. Keep the lock_token: ack, fail, extend and\n"
      "release need it.\n"
      "Examples:\n"
      "  queuectl claim emails --lease 5m -o json\n"
      "  queuectl claim emails --limit 100 -o ndjson");
  sub->callback([&ctx, o] { ctx.print(run_claim(ctx, *o)); });
}

}  // namespace queuectl
