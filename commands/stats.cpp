// queuectl stats: per-queue counts for people, scripts and Prometheus.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/cron_views.hpp"
#include "cli/views.hpp"
#include "core/display_text.hpp"
#include "db/job_repository.hpp"
#include "db/schedule_repository.hpp"

namespace queuectl {
namespace {

// A label value in the exposition format: backslash, double quote and line feed escaped
// as the format defines. (queuectl validates queue names, but rows inserted by plain SQL,
// as in the outbox pattern, may carry anything.) The format has no other escapes, so any
// other control character, and any byte that is not UTF-8, is written as the visible text
// \x1b (its backslash escaped): the file stays valid and a terminal showing it stays sane.
std::string label(const std::string& value) {
  std::string out;
  for (std::size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\' || c == '"' || c == '\n') {
      out += c == '\n' ? "\\n" : std::string("\\") + c;
      ++i;
      continue;
    }
    std::size_t n = 1;
    const std::string escape = visible_escape(std::string_view(value).substr(i), &n);
    if (escape.empty())
      out.append(value, i, n);
    else
      out += "\\" + escape;
    i += n;
  }
  return out;
}

// Text exposition format for node_exporter's textfile collector.
std::string prometheus_text(const std::vector<QueueStats>& stats) {
  std::string out;
  auto num = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return std::string(buf);
  };
  out +=
      "# HELP queuectl_jobs Jobs by queue and status (ready = due now; done, failed and "
      "canceled count up to 10000 unless stats --exact).\n";
  out += "# TYPE queuectl_jobs gauge\n";
  for (const auto& s : stats) {
    const std::pair<const char*, std::int64_t> rows[] = {
        {"ready", s.ready},           {"scheduled", s.scheduled}, {"waiting", s.waiting},
        {"processing", s.processing}, {"done", s.done},           {"failed", s.failed},
        {"canceled", s.canceled}};
    for (const auto& [status, count] : rows)
      out += "queuectl_jobs{queue=\"" + label(s.queue) + "\",status=\"" + status + "\"} " +
             std::to_string(count) + "\n";
  }
  out +=
      "# HELP queuectl_jobs_capped 1 when the finished count of queuectl_jobs reached the cap "
      "of stats: the count is at least the value shown.\n";
  out += "# TYPE queuectl_jobs_capped gauge\n";
  for (const auto& s : stats)
    for (const char* status : {"done", "failed", "canceled"}) {
      const bool capped =
          std::find(s.at_least.begin(), s.at_least.end(), status) != s.at_least.end();
      out += "queuectl_jobs_capped{queue=\"" + label(s.queue) + "\",status=\"" + status + "\"} " +
             (capped ? "1" : "0") + "\n";
    }
  out += "# HELP queuectl_expired_leases Processing jobs whose lease has lapsed.\n";
  out += "# TYPE queuectl_expired_leases gauge\n";
  for (const auto& s : stats)
    out += "queuectl_expired_leases{queue=\"" + label(s.queue) + "\"} " +
           std::to_string(s.expired) + "\n";
  out +=
      "# HELP queuectl_unleased_jobs Processing jobs without a lease (lock_until NULL), which "
      "no reaper returns by itself.\n";
  out += "# TYPE queuectl_unleased_jobs gauge\n";
  for (const auto& s : stats)
    out += "queuectl_unleased_jobs{queue=\"" + label(s.queue) + "\"} " +
           std::to_string(s.unleased) + "\n";
  out += "# HELP queuectl_oldest_ready_age_seconds Age of the oldest due ready job.\n";
  out += "# TYPE queuectl_oldest_ready_age_seconds gauge\n";
  for (const auto& s : stats)
    out += "queuectl_oldest_ready_age_seconds{queue=\"" + label(s.queue) + "\"} " +
           num(s.oldest_ready_age_seconds.value_or(0)) + "\n";
  out += "# HELP queuectl_queue_paused 1 while the queue is paused.\n";
  out += "# TYPE queuectl_queue_paused gauge\n";
  for (const auto& s : stats)
    out +=
        "queuectl_queue_paused{queue=\"" + label(s.queue) + "\"} " + (s.paused ? "1" : "0") + "\n";
  out += "# HELP queuectl_queue_strict_groups 1 while a failed group head blocks its group.\n";
  out += "# TYPE queuectl_queue_strict_groups gauge\n";
  for (const auto& s : stats)
    out += "queuectl_queue_strict_groups{queue=\"" + label(s.queue) + "\"} " +
           (s.strict_groups ? "1" : "0") + "\n";
  out += "# HELP queuectl_queue_max_processing The queue's concurrency limit (0: none).\n";
  out += "# TYPE queuectl_queue_max_processing gauge\n";
  for (const auto& s : stats)
    out += "queuectl_queue_max_processing{queue=\"" + label(s.queue) + "\"} " +
           std::to_string(s.max_processing.value_or(0)) + "\n";
  out +=
      "# HELP queuectl_queue_rate_limit_per_second The queue's rate limit in starts per "
      "second (0: none; per group key when queuectl_queue_rate_per_key is 1).\n";
  out += "# TYPE queuectl_queue_rate_limit_per_second gauge\n";
  for (const auto& s : stats) {
    std::ostringstream rate;
    rate << (s.rate ? s.rate->per_ms() * 1000 : 0.0);
    out += "queuectl_queue_rate_limit_per_second{queue=\"" + label(s.queue) + "\"} " + rate.str() +
           "\n";
  }
  out +=
      "# HELP queuectl_queue_rate_burst The starts the queue's rate limit saves up (0: no "
      "limit).\n";
  out += "# TYPE queuectl_queue_rate_burst gauge\n";
  for (const auto& s : stats)
    out += "queuectl_queue_rate_burst{queue=\"" + label(s.queue) + "\"} " +
           std::to_string(s.rate ? s.rate->burst : 0) + "\n";
  out +=
      "# HELP queuectl_queue_rate_per_key 1 when each group key has its own bucket of the rate.\n";
  out += "# TYPE queuectl_queue_rate_per_key gauge\n";
  for (const auto& s : stats)
    out += "queuectl_queue_rate_per_key{queue=\"" + label(s.queue) + "\"} " +
           (s.rate && s.rate->per_key ? "1" : "0") + "\n";
  return out;
}

// What `stats` counts of each queue's done, failed and canceled jobs unless --exact: enough
// to see a backlog of failures, cheap however long the history (db/dialects/count_sql.hpp).
constexpr std::int64_t kFinishedCap = 10000;

}  // namespace

void setup_stats(CLI::App& app, Context& ctx) {
  auto queues = std::make_shared<std::vector<std::string>>();
  auto exact = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("stats", "Per-queue counts: ready, scheduled, processing, ...");
  sub->add_option("QUEUE", *queues, "Only these queues");
  sub->add_flag("--exact", *exact,
                "Count every done, failed and canceled job (reads the whole history)");
  sub->footer(
      "DONE, FAILED and CANCELED count up to 10000 jobs a queue each, so that stats\n"
      "stays fast however many finished jobs are kept: a count at the cap shows as\n"
      "10000+ (JSON: named in \"at_least\"). --exact counts them all, reading every\n"
      "finished row.\n"
      "UNLEASED (JSON \"unleased\") counts processing jobs without a lease (lock_until\n"
      "NULL, set by other code): they are in PROCESSING too, never expire, and come\n"
      "back only with `queuectl reap --unleased --older-than DUR`.\n"
      "Also -o prometheus, for node_exporter's textfile collector: write a temporary\n"
      "file, then rename it, so that the collector never reads half a file. A queue\n"
      "named twice is reported once. The prometheus view also has each schedule's next\n"
      "and last run, fires, missed and skipped ticks, and whether it is late\n"
      "(queuectl_schedule_*).\n"
      "The table fits 80 columns: SCHED is scheduled, PROC processing, OLDEST the age\n"
      "of the oldest due ready job, FLAGS waiting=N (jobs waiting for others), paused,\n"
      "strict, max=N (at most N processing at once), rate=N/s, dlq=QUEUE (dead-letter\n"
      "queue), retain=DUR and keep-done=off (see `queuectl queue`); -o wide has every\n"
      "count (CANCELED too) and each setting in its own column.\n"
      "Examples:\n"
      "  queuectl stats\n"
      "  queuectl stats emails -o json\n"
      "  queuectl -q stats -o prometheus > /var/lib/node_exporter/textfile/queuectl.prom.$$ \\\n"
      "    && mv /var/lib/node_exporter/textfile/queuectl.prom.$$ "
      "/var/lib/node_exporter/textfile/queuectl.prom");
  sub->callback([&ctx, queues, exact] {
    ctx.prometheus_view = true;
    // Each queue once, in the order first given: a repeated series would make
    // node_exporter drop the whole file.
    std::vector<std::string> unique;
    for (const auto& q : *queues) {
      validate_queue_name(q);
      if (std::find(unique.begin(), unique.end(), q) == unique.end()) unique.push_back(q);
    }
    ctx.access = Access::read;
    auto stats = JobRepository(ctx.migrated_db()).stats(unique, *exact ? 0 : kFinishedCap);
    Output out = stats_view(stats);
    out.prometheus = prometheus_text(stats);
    // Only the prometheus view reads the schedules: the table and JSON stay as they were.
    if (ctx.format() == Format::prometheus) {
      ScheduleRepository schedules(ctx.migrated_db());
      std::vector<Schedule> shown;
      for (Schedule& s : schedules.list())
        if (unique.empty() || std::find(unique.begin(), unique.end(), s.def.queue) != unique.end())
          shown.push_back(std::move(s));
      if (!shown.empty()) *out.prometheus += schedules_prometheus(shown, schedules.now());
    }
    ctx.print(out);
  });
}

}  // namespace queuectl
