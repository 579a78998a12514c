// queuectl queue: a queue's settings, shown or changed in one place (pausing has its own
// commands, pause and resume, and is shown here too).
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {
namespace {

struct QueueOptions {
  std::string queue;
  std::string strict_groups;
  std::string dead_letter;
  std::string max_processing;
  std::string retain;
};

// --max-processing: a whole number from 0 (no limit) to 1,000,000.
std::optional<int> parse_limit(const std::string& text) {
  std::size_t used = 0;
  long long n = -1;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || text[0] == '+' || text[0] == '-' || n < 0 ||
      n > 1000000)
    throw UsageError("--max-processing must be a whole number from 0 (no limit) to 1000000, not '" +
                     text.substr(0, 64) + "'");
  if (n == 0) return std::nullopt;
  return static_cast<int>(n);
}

nlohmann::ordered_json settings_json(const QueueSettings& s) {
  return {
      {"queue", s.queue},
      {"paused", s.paused},
      {"strict_groups", s.strict_groups},
      {"dead_letter", s.dead_letter ? nlohmann::ordered_json(*s.dead_letter) : nullptr},
      {"max_processing", s.max_processing ? nlohmann::ordered_json(*s.max_processing) : nullptr},
      {"retain", s.retain ? nlohmann::ordered_json(s.retain->str()) : nullptr}};
}

Output run_queue(Context& ctx, const QueueOptions& o) {
  validate_queue_name(o.queue);
  // Everything is checked before anything is written.
  std::optional<bool> strict;
  if (!o.strict_groups.empty()) strict = o.strict_groups == "on";  // CLI11 checked on|off
  bool set_dead_letter = !o.dead_letter.empty();
  std::optional<std::string> dead_letter;
  if (set_dead_letter && o.dead_letter != "none") {
    validate_queue_name(o.dead_letter);
    if (o.dead_letter == o.queue)
      throw UsageError("--dead-letter must name another queue, not " + o.queue +
                       " itself (none clears it)");
    dead_letter = o.dead_letter;
  }
  bool set_limit = !o.max_processing.empty();
  std::optional<int> limit;
  if (set_limit) limit = parse_limit(o.max_processing);

  bool set_retain = !o.retain.empty();
  std::optional<Duration> retain;
  if (set_retain && o.retain != "none") {
    retain = Duration::parse(o.retain, "--retain");
    if (retain->ms() < 1000)
      throw UsageError("--retain must be at least 1s (none keeps finished jobs), not '" +
                       o.retain.substr(0, 32) + "'");
  }

  // Only showing the settings is a read: it may run on a standby.
  if (!strict && !set_dead_letter && !set_limit && !set_retain) ctx.access = Access::read;
  AdminRepository admin(ctx.migrated_db());
  std::vector<std::string> changed;
  if (set_dead_letter) {
    admin.set_dead_letter(o.queue, dead_letter);
    changed.push_back("dead-letter queue " + dead_letter.value_or("none"));
  }
  if (set_limit) {
    admin.set_max_processing(o.queue, limit);
    changed.push_back("max processing " + (limit ? std::to_string(*limit) : "none (no limit)"));
  }
  if (set_retain) {
    admin.set_retain(o.queue, retain);
    changed.push_back("retain finished jobs " + (retain ? retain->str() : "forever (none)"));
  }
  if (strict) {
    admin.set_strict_groups(o.queue, *strict);
    changed.push_back(std::string("strict groups ") + (*strict ? "on" : "off"));
  }
  const QueueSettings s = admin.settings(o.queue);
  Output out = object_view(settings_json(s));
  if (!changed.empty()) {
    out.table.reset();
    std::string line = "queue " + o.queue + ":";
    for (std::size_t i = 0; i < changed.size(); ++i) line += (i ? ", " : " ") + changed[i];
    out.lines.push_back(line);
  }
  return out;
}

}  // namespace

void setup_queue(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<QueueOptions>();
  auto* sub = app.add_subcommand(
      "queue", "Show or change a queue's settings (dead letters, limit, strict groups)");
  sub->add_option("QUEUE", o->queue, "Queue name")->required();
  sub->add_option("--dead-letter", o->dead_letter,
                  "Where a job that gives up goes (out of attempts, or fail --permanent): a "
                  "ready job in that queue, instead of failed here; none: stay failed here")
      ->type_name("QUEUE|none");
  sub->add_option("--max-processing", o->max_processing,
                  "At most N jobs of this queue processing at once, across every worker and "
                  "host; 0: no limit (the default)")
      ->type_name("N");
  sub->add_option("--strict-groups", o->strict_groups,
                  "on: a failed job blocks the rest of its group until it is retried, "
                  "canceled or purged; off (default): the group moves on")
      ->check(CLI::IsMember({"on", "off"}));
  sub->add_option("--retain", o->retain,
                  "Workers of this queue delete its finished jobs (done, failed, canceled) "
                  "older than DUR; none: keep them (the default)")
      ->type_name("DUR|none");
  sub->footer(
      "Without an option, prints the settings: paused (see pause and resume), strict_groups,\n"
      "dead_letter, max_processing and retain (every `work` of the queue deletes what is past\n"
      "it, in batches). `stats` shows them for every queue; `groups QUEUE\n"
      "--blocked` lists the groups a failed head blocks; `move` sends dead letters back.\n"
      "A dead letter keeps its id, payload, group key and last error, starts again from 0\n"
      "attempts, gives up its dedupe key, and names its old queue in dead_from.\n"
      "Examples:\n"
      "  queuectl queue orders\n"
      "  queuectl queue orders --dead-letter orders-dead --max-processing 5\n"
      "  queuectl queue orders --max-processing 0        # no limit\n"
      "  queuectl queue orders --strict-groups on\n"
      "  queuectl queue orders --retain 14d");
  sub->callback([&ctx, o] { ctx.print(run_queue(ctx, *o)); });
}

}  // namespace queuectl
