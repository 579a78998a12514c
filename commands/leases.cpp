// queuectl leases: processing jobs, who holds them and for how long.
#include <cstdio>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/lease_repository.hpp"

namespace queuectl {
namespace {

struct LeasesOptions {
  std::string queue;
  bool expired = false;
  std::string expiring_within;
  std::string older_than;
  std::string worker;
  int limit = 1000;
};

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1fs", s);
  return buf;
}

Output leases_view(const std::vector<Lease>& leases) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  Table t{{"ID", "QUEUE", "WORKER", "LOCKED_AT", "LOCK_UNTIL", "LEFT", "ATTEMPTS"}, {}};
  struct WorkerSummary {
    int held = 0, expired = 0;
    double least_left = 1e18;
  };
  std::map<std::string, WorkerSummary> workers;
  for (const Lease& l : leases) {
    auto doc = job_json(l.job);
    doc["seconds_left"] = l.seconds_left;
    doc["expired"] = l.seconds_left < 0;
    out.document.push_back(doc);
    const std::string worker = l.job.locked_by.value_or("-");
    t.rows.push_back({std::to_string(l.job.id), l.job.queue, worker, l.job.locked_at.value_or("-"),
                      l.job.lock_until.value_or("-"),
                      l.seconds_left < 0 ? "expired " + seconds_text(l.seconds_left)
                                         : seconds_text(l.seconds_left),
                      std::to_string(l.job.attempts) + "/" + std::to_string(l.job.max_attempts)});
    WorkerSummary& w = workers[worker];
    ++w.held;
    if (l.seconds_left < 0) ++w.expired;
    w.least_left = std::min(w.least_left, l.seconds_left);
  }
  out.items = out.document;
  out.table = t;
  if (!workers.empty()) {
    // Per worker: a worker whose leases all expired has most likely died.
    Table summary{{"WORKER", "LEASES", "EXPIRED", "SOONEST"}, {}};
    for (const auto& [name, w] : workers)
      summary.rows.push_back(
          {name, std::to_string(w.held), std::to_string(w.expired), seconds_text(w.least_left)});
    out.lines.push_back("");
    std::string rendered = render_table(summary);
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
  f.expired_only = o.expired;
  if (!o.expiring_within.empty()) {
    if (o.expired) throw UsageError("--expired and --expiring-within exclude each other");
    f.expiring_within = Duration::parse(o.expiring_within, "--expiring-within");
    if (f.expiring_within->ms() < 0) throw UsageError("--expiring-within must not be negative");
  }
  if (!o.older_than.empty()) {
    f.older_than = Duration::parse(o.older_than, "--older-than");
    if (f.older_than->ms() < 0) throw UsageError("--older-than must not be negative");
  }
  validate_positive(o.limit, "--limit");
  f.limit = o.limit;
  auto leases = LeaseRepository(ctx.migrated_db()).leases(f);
  if (leases.empty()) ctx.note("no leases match");
  return leases_view(leases);
}

}  // namespace

void setup_leases(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<LeasesOptions>();
  auto* sub = app.add_subcommand("leases", "Show processing jobs, their workers and time left");
  sub->add_option("queue", o->queue, "Only this queue");
  sub->add_flag("--expired", o->expired, "Only leases that have already expired");
  sub->add_option("--expiring-within", o->expiring_within, "Only leases ending within DUR");
  sub->add_option("--older-than", o->older_than, "Only leases taken more than DUR ago");
  sub->add_option("--worker", o->worker, "Only leases held by this worker");
  sub->add_option("--limit", o->limit, "At most N leases (default 1000)");
  sub->footer(
      "The table ends with a summary per worker: a worker whose leases have all expired\n"
      "has most likely died, and `queuectl reap` will return its jobs.\n"
      "Examples:\n"
      "  queuectl leases --expired\n"
      "  queuectl leases emails --expiring-within 30s -o json");
  sub->callback([&ctx, o] { ctx.print(run_leases(ctx, *o)); });
}

}  // namespace queuectl
