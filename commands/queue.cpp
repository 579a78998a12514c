// queuectl queue: a queue's settings, shown or changed in one place (pausing has its own
// commands, pause and resume, and is shown here too).
#include <memory>
#include <optional>

#include "cli/commands.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "core/rate_limit.hpp"
#include "db/admin_repository.hpp"

namespace queuectl {
namespace {

struct QueueOptions {
  std::string queue;
  std::string strict_groups;
  std::string dead_letter;
  std::string max_processing;
  std::string retain;
  std::string rate;
  std::string burst;
  std::string rate_per_key;
  std::string keep_done;
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
      {"retain", s.retain ? nlohmann::ordered_json(s.retain->str()) : nullptr},
      {"rate", s.rate ? nlohmann::ordered_json(s.rate->rate_text()) : nullptr},
      {"burst", s.rate ? nlohmann::ordered_json(s.rate->burst) : nullptr},
      {"rate_per_key", s.rate && s.rate->per_key},
      {"keep_done", s.keep_done}};
}

// --rate, --burst and --rate-per-key, checked together: the rate and its burst are one
// setting (a new rate starts with a full bucket).
std::optional<std::optional<RateLimit>> parse_rate_options(const QueueOptions& o) {
  if (o.rate.empty()) {
    if (!o.burst.empty() || !o.rate_per_key.empty())
      throw UsageError(std::string(o.burst.empty() ? "--rate-per-key" : "--burst") +
                       " needs --rate: the rate, its burst and its buckets are set together "
                       "(queuectl queue Q --rate 20/s --burst 40)");
    return std::nullopt;
  }
  if (o.rate == "none") {
    if (!o.burst.empty() || !o.rate_per_key.empty())
      throw UsageError("--rate none removes the limit: it takes no --burst or --rate-per-key");
    return std::optional<RateLimit>();
  }
  RateLimit rate = parse_rate(o.rate);
  if (!o.burst.empty()) rate.burst = parse_burst(o.burst);
  rate.per_key = o.rate_per_key == "on";  // CLI11 checked on|off
  return std::optional<RateLimit>(rate);
}

std::string rate_change(const std::optional<RateLimit>& rate) {
  if (!rate) return "rate none (no limit)";
  return "rate " + rate->rate_text() + " burst " + std::to_string(rate->burst) +
         (rate->per_key ? " per group key" : "");
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

  const std::optional<std::optional<RateLimit>> rate = parse_rate_options(o);

  // Only showing the settings is a read: it may run on a standby.
  const bool set_keep_done = !o.keep_done.empty();
  if (!strict && !set_dead_letter && !set_limit && !set_retain && !rate && !set_keep_done)
    ctx.access = Access::read;
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
  if (rate) {
    admin.set_rate(o.queue, *rate);
    changed.push_back(rate_change(*rate));
  }
  if (strict) {
    admin.set_strict_groups(o.queue, *strict);
    changed.push_back(std::string("strict groups ") + (*strict ? "on" : "off"));
  }
  if (set_keep_done) {
    admin.set_keep_done(o.queue, o.keep_done == "on");
    changed.push_back(o.keep_done == "on" ? "keep done jobs on"
                                          : "keep done jobs off (an ack deletes its job)");
  }
  const QueueSettings s = admin.settings(o.queue);
  Output out = object_view(settings_json(s));
  if (!changed.empty()) {
    out.table.reset();
    std::string line = "queue " + o.queue + ":";
    for (std::size_t i = 0; i < changed.size(); ++i) line += (i ? ", " : " ") + changed[i];
    out.lines.push_back(line);
    out.report = true;  // what was changed: -q prints none of it
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
  sub->add_option("--keep-done", o->keep_done,
                  "off: an ack deletes its job instead of keeping it done (no history of "
                  "done jobs; failed and canceled ones are kept); on: keep them (the default)")
      ->check(CLI::IsMember({"on", "off"}));
  sub->add_option("--rate", o->rate,
                  "At most N jobs of this queue started per second, minute or hour, across "
                  "every worker and host (N/s, N/m, N/h); none: no limit (the default)")
      ->type_name("N/s|N/m|N/h|none");
  sub->add_option("--burst", o->burst,
                  "With --rate: at most N starts saved up while the queue is quiet, taken at "
                  "once after it (default: N of the rate)")
      ->type_name("N");
  sub->add_option("--rate-per-key", o->rate_per_key,
                  "With --rate: on gives each group key its own bucket of the rate, so one "
                  "busy key never holds back the others (jobs without a key share one); "
                  "off (default): one bucket for the queue")
      ->check(CLI::IsMember({"on", "off"}));
  sub->footer(
      "Without an option, prints the settings: paused (see pause and resume), strict_groups,\n"
      "dead_letter, max_processing, retain (every `work` of the queue deletes what is past\n"
      "it, in batches), rate, burst, rate_per_key and keep_done. `stats` shows them for every\n"
      "queue; `groups QUEUE --blocked` lists the groups a failed head blocks; `move` sends dead\n"
      "letters back.\n"
      "With --keep-done off an ack (of `work` or `queuectl ack`) deletes its job: no new row\n"
      "version, the cheapest ack there is. A job other jobs wait for, or with a group key, is\n"
      "still marked done (`--retain` or `purge` deletes it); an ack's --result goes with its job,\n"
      "and the same ack repeated finds no job (exit 4). A worker sees the change within a minute.\n"
      "A dead letter keeps its id, payload, group key and last error, starts again from 0\n"
      "attempts, gives up its dedupe key, and names its old queue in dead_from.\n"
      "Examples:\n"
      "  queuectl queue orders\n"
      "  queuectl queue orders --dead-letter orders-dead --max-processing 5\n"
      "  queuectl queue orders --max-processing 0        # no limit\n"
      "  queuectl queue orders --strict-groups on\n"
      "  queuectl queue orders --retain 14d\n"
      "  queuectl queue thumbnails --keep-done off   # an ack deletes its job\n"
      "  queuectl queue mail --rate 20/s --burst 40   # 20 starts a second, 40 at once\n"
      "  queuectl queue api --rate 100/m --rate-per-key on   # per group key\n"
      "  queuectl queue mail --rate none\n"
      "A rate counts starts (claims), a token each, refilled continuously up to the burst; a\n"
      "claim takes only the jobs there are tokens for and never waits. `work` sleeps until\n"
      "the next token. A group runs one job at a time, so with --rate-per-key each key also\n"
      "starts its jobs one after another.");
  sub->callback([&ctx, o] { ctx.print(run_queue(ctx, *o)); });
}

}  // namespace queuectl
