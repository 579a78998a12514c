// queuectl leases: processing jobs, who holds them and for how long.
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "core/human_time.hpp"
#include "db/job_repository.hpp"
#include "db/lease_repository.hpp"

namespace queuectl {
namespace {

struct LeasesOptions {
  std::string queue;
  bool expired = false;
  bool unleased = false;
  std::string expiring_within;
  std::string older_than;
  std::string worker;
  int limit = 1000;
};

// A row without a lease (lock_until NULL, set to processing by other code): seconds_left
// null, "unleased": true, and "no lease" in the table; no reaper returns it by itself.
// `summary` counts every matching lease per worker, however many rows `leases` holds.
Output leases_view(const std::vector<Lease>& leases, const std::vector<WorkerLeases>& summary,
                   const std::optional<std::string>& now) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  const std::vector<Fit> fit = {Fit::keep, Fit::shrink, Fit::shrink,      Fit::keep,
                                Fit::keep, Fit::keep,   Fit::shrink_first};
  Table t{{"ID", "QUEUE", "WORKER", "HELD", "LEFT", "ATTEMPTS", "PROGRESS"}, {}, fit};
  Table wide{
      {"ID", "QUEUE", "WORKER", "LOCKED_AT", "LOCK_UNTIL", "LEFT", "ATTEMPTS", "TOKEN", "PROGRESS"},
      {},
      {Fit::keep, Fit::shrink, Fit::shrink, Fit::keep, Fit::keep, Fit::keep, Fit::keep, Fit::keep,
       Fit::shrink_first}};
  for (const Lease& l : leases) {
    const bool expired = l.seconds_left && *l.seconds_left < 0;
    auto doc = job_json(l.job);
    doc["seconds_left"] =
        l.seconds_left ? nlohmann::ordered_json(*l.seconds_left) : nlohmann::ordered_json();
    doc["expired"] = expired;
    doc["unleased"] = !l.seconds_left;
    out.document.push_back(doc);
    const std::string id = std::to_string(l.job.id), worker = l.job.locked_by.value_or("-");
    const std::string left = time_left_text(l.seconds_left);
    const std::string attempts =
        std::to_string(l.job.attempts) + "/" + std::to_string(l.job.max_attempts);
    // HELD: how long the worker has had it (since locked_at, else updated_at).
    const std::string since = l.job.locked_at.value_or(l.job.updated_at);
    t.rows.push_back({id, l.job.queue, worker, now ? age_text(since, *now) : since, left, attempts,
                      progress_text(l.job)});
    wide.rows.push_back({id, l.job.queue, worker, l.job.locked_at.value_or("-"),
                         l.job.lock_until.value_or("-"), left, attempts,
                         l.job.lock_token.value_or("-"), progress_text(l.job)});
  }
  out.elements = true;
  out.table = t;
  out.wide_table = wide;
  if (!summary.empty()) {
    // Per worker, over every matching lease: a worker whose leases all expired has most
    // likely died.
    Table per_worker{{"WORKER", "LEASES", "EXPIRED", "UNLEASED", "SOONEST"}, {}, {Fit::shrink}};
    for (const WorkerLeases& w : summary)
      per_worker.rows.push_back(
          {w.worker.value_or("-"), std::to_string(w.leases), std::to_string(w.expired),
           std::to_string(w.unleased),
           w.soonest_seconds_left ? time_left_text(w.soonest_seconds_left) : "-"});
    out.lines.push_back("");
    // Not fitted to the terminal: it sits in the plain lines after the table.
    std::string rendered = render_table(per_worker);
    if (!rendered.empty() && rendered.back() == '\n') rendered.pop_back();
    out.lines.push_back(rendered);
  }
  return out;
}

Output run_leases(Context& ctx, const LeasesOptions& o) {
  LeaseFilter f;
  if (!o.queue.empty()) {
    validate_queue_name(o.queue);
    f.queue = o.queue;
  }
  if (!o.worker.empty()) {
    validate_worker(o.worker);
    f.worker = o.worker;
  }
  if (o.expired + o.unleased + !o.expiring_within.empty() > 1)
    throw UsageError("--expired, --expiring-within and --unleased exclude each other");
  if (o.expired) f.kind = LeaseKind::expired;
  if (o.unleased) f.kind = LeaseKind::unleased;
  if (!o.expiring_within.empty()) {
    f.kind = LeaseKind::expiring;
    f.expiring_within = Duration::parse(o.expiring_within, "--expiring-within");
    if (f.expiring_within.ms() < 0) throw UsageError("--expiring-within must not be negative");
  }
  if (!o.older_than.empty()) {
    f.older_than = Duration::parse(o.older_than, "--older-than");
    if (f.older_than->ms() < 0) throw UsageError("--older-than must not be negative");
  }
  validate_positive(o.limit, "--limit");
  f.limit = o.limit;
  ctx.access = Access::read;
  Database& db = ctx.migrated_db();
  LeaseRepository repo(db);
  auto leases = repo.leases(f);
  if (leases.empty()) {
    ctx.note("no leases match");
    return leases_view(leases, {}, std::nullopt);
  }
  auto summary = repo.lease_summary(f, leases);
  std::int64_t total = 0;
  for (const WorkerLeases& w : summary) total += w.leases;
  // Said on stderr, as list says "more may follow": the summary still counts them all.
  if (static_cast<std::int64_t>(leases.size()) < total)
    ctx.note("showing " + std::to_string(leases.size()) + " of " + std::to_string(total) +
             " leases: raise --limit for more (the summary per worker counts all " +
             std::to_string(total) + ")");
  std::optional<std::string> now;
  if (ctx.format() == Format::table) now = JobRepository(db).now();
  return leases_view(leases, summary, now);
}

}  // namespace

void setup_leases(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<LeasesOptions>();
  auto* sub = app.add_subcommand("leases", "Show processing jobs, their workers and time left");
  sub->add_option("QUEUE", o->queue, "Only this queue");
  sub->add_flag("--expired", o->expired, "Only leases that have already expired");
  sub->add_flag("--unleased", o->unleased,
                "Only processing jobs without a lease (lock_until NULL, set by other code)");
  sub->add_option("--expiring-within", o->expiring_within, "Only leases ending within DUR")
      ->type_name("DUR");
  sub->add_option("--older-than", o->older_than,
                  "Only jobs in processing for more than DUR (since locked_at, else updated_at)")
      ->type_name("DUR");
  sub->add_option("--worker", o->worker, "Only leases held by this worker");
  sub->add_option("--limit", o->limit, "At most N leases (default 1000)");
  sub->footer(
      "HELD is how long the worker has held the job, LEFT the time left on its lease; -o wide\n"
      "shows LOCKED_AT, LOCK_UNTIL and the token. The table ends with a summary per worker,\n"
      "over every matching lease even when --limit cuts the rows (stderr says so): a worker\n"
      "whose leases have all expired has most likely died, and `queuectl reap` will return\n"
      "its jobs. A job set to processing by other code without a lease (lock_until NULL) is\n"
      "listed first, LEFT \"no lease\" (JSON: \"seconds_left\": null, \"unleased\": true); no\n"
      "reaper returns it by itself: see `queuectl reap --unleased --older-than DUR`.\n"
      "Examples:\n"
      "  queuectl leases --expired\n"
      "  queuectl leases emails --expiring-within 30s -o json");
  sub->callback([&ctx, o] { ctx.print(run_leases(ctx, *o)); });
}

}  // namespace queuectl
