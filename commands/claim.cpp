// queuectl claim: take due jobs with a lease and a fresh token.
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"
#include "db/job_repository.hpp"
#include "worker/announcements.hpp"

namespace queuectl {
namespace {

struct ClaimOptions {
  std::string queue;
  int limit = 1;
  std::string lease;
  std::string worker;
  std::string wait;
};

using Clock = std::chrono::steady_clock;

// --wait: sleeps until `until` or, where the backend announces new jobs, until a job of
// `queue` is announced. Jobs that become due by their run_at are not announced: the caller
// claims again at `until` in any case.
void wait_for_jobs(Announcements* announced, const std::string& queue, Clock::time_point until) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
    if (left.count() <= 0) return;
    const int fd = announced ? announced->fd() : -1;
    if (fd < 0) {
      std::this_thread::sleep_for(left);
      return;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count()) + 1) <= 0) continue;
    if (announced->take(queue)) return;
  }
}

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
  const Duration wait = duration_option(o.wait, "--wait", Duration());
  if (wait.ms() < 0) throw UsageError("--wait must not be negative");
  Database& db = ctx.migrated_db();
  JobRepository repo(db);
  auto jobs = repo.claim(r);
  // A queue name nobody has used (a typo): said once, with the nearest known name.
  if (jobs.empty()) {
    if (auto note = AdminRepository(db).unknown_queue_note(o.queue)) ctx.note(*note);
  }
  if (jobs.empty() && wait.positive()) {
    // Long polling, as SQS's WaitTimeSeconds: announced jobs wake the wait at once (LISTEN
    // on this connection, PostgreSQL); every backend also claims again on a timer that
    // grows from 50ms to 1s, for jobs that become due by their run_at.
    const Clock::time_point deadline = Clock::now() + wait.chrono();
    std::optional<Announcements> announced;
    // Not through a pooler, which may hand the listening server session to someone else.
    if (Announcements::available(db.url()) && !db.pooled()) {
      announced.emplace(db);
      jobs = repo.claim(r);  // a job announced before the LISTEN took effect is not missed
    }
    std::chrono::milliseconds step(50);
    while (jobs.empty() && Clock::now() < deadline) {
      wait_for_jobs(announced ? &*announced : nullptr, o.queue,
                    std::min(deadline, Clock::now() + step));
      step = std::min(step * 2, std::chrono::milliseconds(1000));
      jobs = repo.claim(r);
    }
  }
  const std::string waited = wait.positive() ? " (waited " + wait.str() + ")" : "";
  // A paused queue looks empty: say why (only then is it worth the extra read).
  if (jobs.empty())
    ctx.note(AdminRepository(db).settings(o.queue).paused
                 ? "queue " + o.queue + " is paused: no job is handed out until `queuectl " +
                       "resume " + o.queue + "`" + waited
                 : "no job due in queue " + o.queue + waited);
  return jobs_view(jobs, std::nullopt, JobsTable::claimed, ctx.format() == Format::table,
                   ctx.format() == Format::ndjson && ctx.options.fields.empty());
}

}  // namespace

void setup_claim(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<ClaimOptions>();
  auto* sub = app.add_subcommand("claim", "Take due jobs from a queue, each with a lease");
  sub->add_option("QUEUE", o->queue, "Queue name")->required();
  sub->add_option("--limit", o->limit, "Jobs to claim at most (default 1, at most 10000)");
  sub->add_option("--lease", o->lease, "Lease length (default 30s); extend it while working")
      ->type_name("DUR");
  sub->add_option("--worker", o->worker, "Worker identity (default host:pid)");
  sub->add_option("--wait", o->wait,
                  "When nothing is due, wait up to DUR for a job (default: return at once)")
      ->type_name("DUR");
  sub->footer(
      "Claims skip jobs other workers hold (SKIP LOCKED) and never wait on them. Exit 0\n"
      "with an empty result when nothing is due; with --wait DUR, claim returns as soon as\n"
      "a job is due (PostgreSQL: woken by LISTEN/NOTIFY; every backend also checks again\n"
      "every second at most) and the empty result only after DUR. Keep the lock_token:\n"
      "ack, fail, extend and release need it.\n"
      "Examples:\n"
      "  queuectl claim emails --lease 5m -o json\n"
      "  queuectl claim emails --limit 100 -o ndjson\n"
      "  queuectl claim emails --wait 20s -o json     # long polling");
  sub->callback([&ctx, o] { ctx.print(run_claim(ctx, *o)); });
}

}  // namespace queuectl
