// queuectl leases: processing jobs, who holds them and for how long.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>

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
  bool unleased = false;
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

// A row without a lease (lock_until NULL, set to processing by other code): seconds_left
// null, "unleased": true, and "no lease" in the table; no reaper returns it by itself.
Output leases_view(const std::vector<Lease>& leases) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  Table t{{"ID", "QUEUE", "WORKER", "LOCKED_AT", "LOCK_UNTIL", "LEFT", "ATTEMPTS"}, {}};
  struct WorkerSummary {
    int held = 0, expired = 0, unleased = 0;
    std::optional<double> least_left;
  };
  std::map<std::string, WorkerSummary> workers;
  for (const Lease& l : leases) {
    const bool expired = l.seconds_left && *l.seconds_left < 0;
    auto doc = job_json(l.job);
    doc["seconds_left"] =
        l.seconds_left ? nlohmann::ordered_json(*l.seconds_left) : nlohmann::ordered_json();
    doc["expired"] = expired;
    doc["unleased"] = !l.seconds_left;
    out.document.push_back(doc);
    const std::string worker = l.job.locked_by.value_or("-");
    const std::string left = !l.seconds_left ? "no lease"
                             : expired       ? "expired " + seconds_text(*l.seconds_left)
                                             : seconds_text(*l.seconds_left);
    t.rows.push_back({std::to_string(l.job.id), l.job.queue, worker, l.job.locked_at.value_or("-"),
                      l.job.lock_until.value_or("-"), left,
                      std::to_string(l.job.attempts) + "/" + std::to_string(l.job.max_attempts)});
    WorkerSummary& w = workers[worker];
    ++w.held;
    if (expired) ++w.expired;
    if (!l.seconds_left) ++w.unleased;
    if (l.seconds_left) w.least_left = std::min(w.least_left.value_or(1e18), *l.seconds_left);
  }
  out.items = out.document;
  out.table = t;
  if (!workers.empty()) {
    // Per worker: a worker whose leases all expired has most likely died.
    Table summary{{"WORKER", "LEASES", "EXPIRED", "UNLEASED", "SOONEST"}, {}};
    for (const auto& [name, w] : workers)
      summary.rows.push_back({name, std::to_string(w.held), std::to_string(w.expired),
                              std::to_string(w.unleased),
                              w.least_left ? seconds_text(*w.least_left) : "-"});
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
  sub->add_flag("--unleased", o->unleased,
                "Only processing jobs without a lease (lock_until NULL, set by other code)");
  sub->add_option("--expiring-within", o->expiring_within, "Only leases ending within DUR");
  sub->add_option("--older-than", o->older_than,
                  "Only jobs in processing for more than DUR (since locked_at, else updated_at)");
  sub->add_option("--worker", o->worker, "Only leases held by this worker");
  sub->add_option("--limit", o->limit, "At most N leases (default 1000)");
  sub->footer(
      "The table ends with a summary per worker: a worker whose leases have all expired\n"
      "has most likely died, and `queuectl reap` will return its jobs. A job set to\n"
      "processing by other code without a lease (lock_until NULL) is listed first, LEFT\n"
      "\"no lease\" (JSON: \"seconds_left\": null, \"unleased\": true); no reaper returns it\n"
      "by itself: see `queuectl reap --unleased --older-than DUR`.\n"
      "Examples:\n"
      "  queuectl leases --expired\n"
      "  queuectl leases emails --expiring-within 30s -o json");
  sub->callback([&ctx, o] { ctx.print(run_leases(ctx, *o)); });
}

}  // namespace queuectl
