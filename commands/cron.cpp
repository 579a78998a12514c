// queuectl cron: recurring schedules kept in the database, fired by `cron tick` and by every
// `work` of the schedule's queue, each tick one job whoever fires it.
#include <algorithm>
#include <map>
#include <memory>

#include "cli/commands.hpp"
#include "cli/cron_views.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/cron_schedule.hpp"
#include "core/errors.hpp"
#include "core/validate.hpp"
#include "db/schedule_repository.hpp"

namespace queuectl {
namespace {

// What `cron add` takes, as given (and what a line of `cron apply` sets).
struct AddOptions {
  std::string name, schedule, queue, payload = "{}";
  std::string tz = "UTC", misfire = "once", misfire_after = "60s", overlap = "allow";
  int misfire_limit = 100;
  bool misfire_limit_given = false;  // a limit given for another mode than all is refused
  int priority = 0;
  int max_attempts = 25;
  std::string group_key;
  bool group_key_given = false;
};

void validate_schedule_name(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (unsigned char c : name)
    ok = ok && (std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-');
  if (!ok)
    throw UsageError("invalid schedule name '" + name.substr(0, 64) +
                     "': use 1 to 64 of A-Z a-z 0-9 . _ : -");
}

// Every check, before anything is written.
ScheduleDefinition definition(const AddOptions& o, std::size_t max_payload) {
  ScheduleDefinition d;
  validate_schedule_name(o.name);
  d.name = o.name;
  d.schedule = CronSchedule::parse(o.schedule).text();
  if (d.schedule.size() > 200)
    throw UsageError("the schedule is " + std::to_string(d.schedule.size()) +
                     " characters; at most 200");
  validate_queue_name(o.queue);
  d.queue = o.queue;
  d.payload = validate_json(o.payload == "-" ? read_input("-") : o.payload, "payload", max_payload);
  find_zone(o.tz);
  d.time_zone = o.tz;
  d.misfire.mode = parse_misfire(o.misfire);
  validate_positive(o.misfire_limit, "--misfire-limit");
  if (o.misfire_limit_given && d.misfire.mode != Misfire::all)
    throw UsageError(
        "--misfire-limit goes with --misfire all (the most missed ticks it runs), "
        "not with --misfire " +
        o.misfire);
  d.misfire.limit = o.misfire_limit;
  const Duration after = Duration::parse(o.misfire_after, "--misfire-after");
  if (after.ms() < 1000 || after.ms() % 1000 != 0)
    throw UsageError("--misfire-after must be whole seconds, at least 1s, not '" + o.misfire_after +
                     "'");
  d.misfire.after = std::chrono::seconds(after.ms() / 1000);
  if (o.overlap != "allow" && o.overlap != "skip")
    throw UsageError("--overlap must be allow or skip, not '" + o.overlap.substr(0, 32) + "'");
  d.overlap_skip = o.overlap == "skip";
  d.priority = o.priority;
  validate_positive(o.max_attempts, "--max-attempts");
  d.max_attempts = o.max_attempts;
  if (o.group_key_given) {
    validate_key(o.group_key, "--group-key");
    d.group_key = o.group_key;
  }
  return d;
}

// One line of a `cron apply` file: a JSON object with the keys below.
ScheduleDefinition definition_from_line(const std::string& line, std::size_t max_payload) {
  AddOptions o;
  bool has_name = false, has_schedule = false, has_queue = false;
  const LineObject object = parse_line_object(line);
  for (const auto& [key, v] : object.items()) {
    auto text = [&, &key = key, &v = v]() -> std::string {
      if (!v.is_string()) throw UsageError("\"" + key + "\" must be a string");
      return v.get<std::string>();
    };
    auto whole = [&, &key = key, &v = v]() -> int {
      if (!v.is_number_integer()) throw UsageError("\"" + key + "\" must be a whole number");
      const auto n = v.get<long long>();
      if (n < -2147483647 || n > 2147483647) throw UsageError("\"" + key + "\" is out of range");
      return static_cast<int>(n);
    };
    if (key == "name")
      o.name = text(), has_name = true;
    else if (key == "schedule")
      o.schedule = text(), has_schedule = true;
    else if (key == "queue")
      o.queue = text(), has_queue = true;
    else if (key == "payload")
      o.payload = v.text();
    else if (key == "tz")
      o.tz = text();
    else if (key == "misfire")
      o.misfire = text();
    else if (key == "misfire_limit")
      o.misfire_limit = whole(), o.misfire_limit_given = true;
    else if (key == "misfire_after")
      o.misfire_after = text();
    else if (key == "overlap")
      o.overlap = text();
    else if (key == "priority")
      o.priority = whole();
    else if (key == "max_attempts")
      o.max_attempts = whole();
    else if (key == "group_key")
      o.group_key = text(), o.group_key_given = true;
    else
      throw UsageError("unknown key \"" + key.substr(0, 40) +
                       "\" (keys: name schedule queue payload tz misfire misfire_limit "
                       "misfire_after overlap priority max_attempts group_key)");
  }
  if (!has_name) throw UsageError("\"name\" is missing");
  if (!has_schedule) throw UsageError("\"schedule\" is missing");
  if (!has_queue) throw UsageError("\"queue\" is missing");
  try {
    return definition(o, max_payload);
  } catch (const UsageError& e) {
    // The checks are `cron add`'s: their messages name options, the line has keys.
    throw UsageError(
        with_line_keys(e.what(), {"tz", "misfire", "misfire_limit", "misfire_after", "overlap",
                                  "priority", "max_attempts", "group_key"}));
  }
}

// A `cron apply` file: one JSON object a line; blank lines and lines starting with # are
// skipped. Errors name the line; a name given twice is an error.
std::vector<ScheduleDefinition> read_schedule_file(const std::string& path,
                                                   std::size_t max_payload) {
  const std::string text = read_input(path);
  std::vector<ScheduleDefinition> defs;
  std::map<std::string, std::size_t> seen;
  std::size_t number = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    try {
      defs.push_back(definition_from_line(line, max_payload));
    } catch (const UsageError& e) {
      throw UsageError(path + ": line " + std::to_string(number) + ": " + e.what());
    }
    auto [it, fresh] = seen.emplace(defs.back().name, number);
    if (!fresh)
      throw UsageError(path + ": line " + std::to_string(number) + ": schedule " +
                       defs.back().name + " is also on line " + std::to_string(it->second));
  }
  return defs;
}

void add_job_options(CLI::App* sub, AddOptions& o) {
  sub->add_option("--tz", o.tz, "IANA time zone of the schedule (default UTC)")->type_name("ZONE");
  sub->add_option("--misfire", o.misfire,
                  "Ticks missed while nothing fired: once (default: one job for them all), "
                  "skip (none), all (each, at most --misfire-limit)")
      ->type_name("once|skip|all");
  sub->add_option("--misfire-limit", o.misfire_limit,
                  "With --misfire all: at most N missed ticks run, the latest (default 100)")
      ->type_name("N");
  sub->add_option("--misfire-after", o.misfire_after,
                  "A tick later than this counts as missed (default 60s)")
      ->type_name("DUR");
  sub->add_option("--overlap", o.overlap,
                  "allow (default), or skip: no new job while the last one is ready or processing")
      ->type_name("allow|skip");
  sub->add_option("--priority", o.priority, "Priority of each job (default 0)");
  sub->add_option("--max-attempts", o.max_attempts, "Attempts of each job (default 25)");
  sub->add_option("--group-key", o.group_key, "Ordered group of each job");
}

}  // namespace

void setup_cron(CLI::App& app, Context& ctx) {
  auto* cron =
      app.add_subcommand("cron", "Recurring jobs: schedules in the database, each tick one job");
  cron->require_subcommand(1);
  cron->footer(
      "Schedules are 5-field cron (`*/15 * * * *`, `0 3 * * MON-FRI`, ranges, steps, lists,\n"
      "JAN-DEC, SUN-SAT; day-of-month and day-of-week as Vixie cron: both restricted means\n"
      "either), @hourly, @daily, @weekly, @monthly, @yearly, or @every DUR (`@every 10s`).\n"
      "Each runs in its time zone (--tz, default UTC) with Debian cron's daylight-saving rules.\n"
      "Every `queuectl work Q` fires the due schedules of Q; `cron tick` fires them from a\n"
      "system cron or a Kubernetes CronJob. Any number may run at once: each tick makes one job,\n"
      "run_at the tick, kept by the schedule row itself. `queuectl cron add -h` and so on\n"
      "explain each subcommand.\n"
      "Examples:\n"
      "  queuectl cron add nightly-report '0 3 * * *' reports '{\"kind\":\"nightly\"}' --tz "
      "Europe/Berlin\n"
      "  queuectl cron add heartbeat '@every 30s' pings --overlap skip\n"
      "  queuectl cron list\n"
      "  queuectl cron show nightly-report\n"
      "  queuectl cron apply schedules.ndjson --prune --dry-run");

  {
    auto o = std::make_shared<AddOptions>();
    auto* sub = cron->add_subcommand("add", "Add a schedule, or replace the one of that name");
    sub->add_option("NAME", o->name, "Schedule name, [A-Za-z0-9._:-]{1,64}")->required();
    sub->add_option("SCHEDULE", o->schedule,
                    "`m h dom mon dow`, @daily, @every 10s, ... (quote it)")
        ->required();
    sub->add_option("QUEUE", o->queue, "Queue of its jobs")->required();
    sub->add_option("PAYLOAD", o->payload,
                    "Payload of each job as JSON (default {}; - reads stdin)");
    add_job_options(sub, *o);
    sub->footer(
        "Re-adding a name replaces its definition and keeps its pause and counts; with the same\n"
        "schedule and zone its ticks go on as before, otherwise the next tick is computed from "
        "now.\n"
        "Examples:\n"
        "  queuectl cron add nightly '30 2 * * *' reports --tz Europe/Berlin\n"
        "  queuectl cron add sync '@every 10s' sync '{\"full\":false}' --overlap skip\n"
        "  queuectl cron add monthly '0 9 1 * *' billing --misfire all --misfire-limit 3");
    sub->callback([&ctx, o, sub] {
      o->group_key_given = sub->count("--group-key") > 0;
      o->misfire_limit_given = sub->count("--misfire-limit") > 0;
      const ScheduleDefinition def = definition(*o, ctx.options.max_payload);
      ScheduleRepository repo(ctx.migrated_db());
      const PutOutcome outcome = repo.put(def);
      const auto s = repo.find(def.name);
      if (!s) throw Error("schedule " + def.name + " vanished after it was written");
      const std::int64_t now = repo.now();
      nlohmann::ordered_json doc = schedule_json(*s, now);
      doc["change"] = outcome_name(outcome);  // added, replaced or unchanged, as cron apply
      Output out = object_view(doc);
      out.table.reset();
      out.lines = {"schedule " + def.name + " " + outcome_name(outcome) + "; next run " +
                   epoch_local(s->next_fire, def.time_zone) + " (" + epoch_utc(s->next_fire) + ")" +
                   (s->paused ? ", paused" : "")};
      ctx.print_report(out);
    });
  }
  {
    auto name = std::make_shared<std::string>();
    auto* sub = cron->add_subcommand("remove", "Remove a schedule and its history (its jobs stay)");
    sub->add_option("NAME", *name, "Schedule name")->required();
    sub->footer("Exit 4 when there is no such schedule.\nExample:\n  queuectl cron remove nightly");
    sub->callback([&ctx, name] {
      validate_schedule_name(*name);
      if (!ScheduleRepository(ctx.migrated_db()).remove(*name))
        throw NotFound("no schedule named " + *name + " (see queuectl cron list)");
      Output out;
      out.document = {{"name", *name}, {"removed", true}};
      out.lines = {"schedule " + *name + " removed"};
      ctx.print_report(out);
    });
  }
  for (const bool pause : {true, false}) {
    auto name = std::make_shared<std::string>();
    auto* sub = cron->add_subcommand(
        pause ? "pause" : "resume",
        pause ? "Stop a schedule firing (its ticks meanwhile are not run later)"
              : "Let a paused schedule fire again, from its next tick after now");
    sub->add_option("NAME", *name, "Schedule name")->required();
    sub->footer(
        pause ? "Ticks while paused are neither fired nor counted missed.\nExample:\n"
                "  queuectl cron pause nightly"
              : "The next tick is the first after now.\nExample:\n  queuectl cron resume nightly");
    sub->callback([&ctx, name, pause] {
      validate_schedule_name(*name);
      bool changed = false;
      try {
        changed = ScheduleRepository(ctx.migrated_db()).set_paused(*name, pause);
      } catch (const UsageError& e) {
        // Resuming computes the next tick: stored text or a zone this host lacks is the
        // schedule's fault, not the command line's.
        throw Error("schedule " + *name + " cannot fire: " + e.what() +
                    "; fix it with queuectl cron add " + *name + " (same name), or remove it");
      }
      Output out;
      out.document = {{"name", *name}, {"paused", pause}, {"changed", changed}};
      out.lines = {"schedule " + *name +
                   (changed ? (pause ? " paused" : " resumed")
                            : (pause ? " was already paused" : " was not paused"))};
      ctx.print_report(out);
    });
  }
  {
    auto* sub = cron->add_subcommand(
        "list", "The schedules: next run in their zone and in UTC, last run and its job");
    sub->footer(
        "STATE is ok, paused, or LATE: the next tick is older than its --misfire-after window, so\n"
        "nothing is firing it (no worker of its queue, no cron tick).\n"
        "Examples:\n"
        "  queuectl cron list\n"
        "  queuectl cron list -o json");
    sub->callback([&ctx] {
      ctx.access = Access::read;
      ScheduleRepository repo(ctx.migrated_db());
      const auto all = repo.list();
      ctx.print(schedules_view(all, repo.now()));
    });
  }
  {
    auto name = std::make_shared<std::string>();
    auto next = std::make_shared<int>(5);
    auto fires = std::make_shared<int>(10);
    auto* sub = cron->add_subcommand(
        "show", "One schedule: its next fire times and its recent fires with their jobs");
    sub->add_option("NAME", *name, "Schedule name")->required();
    sub->add_option("--next", *next, "How many coming fire times to show (default 5, at most 1000)")
        ->type_name("N");
    sub->add_option("--fires", *fires,
                    "How many recent fires to show (default 10, at most 100 are kept)")
        ->type_name("N");
    sub->footer(
        "The coming fire times are shown in the schedule's zone and in UTC, so daylight saving\n"
        "can be seen at work.\n"
        "Examples:\n"
        "  queuectl cron show nightly --next 10");
    sub->callback([&ctx, name, next, fires] {
      validate_schedule_name(*name);
      validate_positive(*next, "--next");
      validate_positive(*fires, "--fires");
      if (*next > 1000) throw UsageError("--next must be at most 1000");
      ctx.access = Access::read;
      ScheduleRepository repo(ctx.migrated_db());
      const auto s = repo.find(*name);
      if (!s) throw NotFound("no schedule named " + *name + " (see queuectl cron list)");
      std::vector<std::int64_t> coming{s->next_fire};
      try {
        const CronSchedule cron = CronSchedule::parse(s->def.schedule);
        const auto* zone = find_zone(s->def.time_zone);
        for (const SysSeconds t :
             cron.next_n(SysSeconds(std::chrono::seconds(s->next_fire)), zone, *next - 1))
          coming.push_back(t.time_since_epoch().count());
        // No fire time is shown past 9999, the last year the backends store.
        constexpr std::int64_t kYear10000 = 253402300800;
        const auto past = std::find_if(coming.begin(), coming.end(),
                                       [](std::int64_t t) { return t >= kYear10000; });
        if (past != coming.end()) {
          coming.erase(past, coming.end());
          ctx.note("queuectl: schedule " + *name + " fires no more before the year 10000");
        }
      } catch (const UsageError& e) {
        // Stored text or a zone this host lacks: the schedule is still shown, as list does.
        ctx.note("queuectl: schedule " + *name + " cannot fire: " + e.what());
      }
      ctx.print(schedule_view(*s, repo.now(), coming, repo.recent_fires(*name, *fires)));
    });
  }
  {
    auto name = std::make_shared<std::string>();
    auto* sub =
        cron->add_subcommand("trigger", "Fire a schedule now, once (its ticks go on as before)");
    sub->add_option("NAME", *name, "Schedule name")->required();
    sub->footer(
        "One job now, whatever the schedule, its pause or --overlap say; shown by cron show\n"
        "as a fire by hand.\nExample:\n  queuectl cron trigger nightly");
    sub->callback([&ctx, name] {
      validate_schedule_name(*name);
      const FireEvent e = ScheduleRepository(ctx.migrated_db()).trigger(*name);
      Output out;
      out.document = {{"schedule", e.name}, {"queue", e.queue}, {"job_id", *e.job_id}};
      out.lines = {"schedule " + e.name + ": job " + std::to_string(*e.job_id) + " in " + e.queue};
      ctx.print_report(out);
    });
  }
  {
    auto path = std::make_shared<std::string>();
    auto prune = std::make_shared<bool>(false);
    auto dry_run = std::make_shared<bool>(false);
    auto* sub = cron->add_subcommand(
        "apply", "Make a file of schedules the truth (for CI and configuration management)");
    sub->add_option("FILE", *path,
                    "One JSON object a line (- reads stdin); # starts a comment line")
        ->required();
    sub->add_flag("--prune", *prune, "Also remove the schedules the file does not name");
    sub->add_flag("--dry-run", *dry_run, "Print what would change; write nothing");
    sub->footer(
        "Keys of a line: name, schedule, queue (required); payload (JSON), tz, misfire,\n"
        "misfire_limit, misfire_after, overlap, priority, max_attempts, group_key, as cron add\n"
        "takes them. The whole file is checked first (an error names its line and nothing is\n"
        "written), then applied in one transaction. Applying the same file again changes nothing.\n"
        "Example line:\n"
        "  {\"name\":\"nightly\",\"schedule\":\"30 2 * * "
        "*\",\"tz\":\"Europe/Berlin\",\"queue\":\"reports\"}\n"
        "Examples:\n"
        "  queuectl cron apply schedules.ndjson --dry-run\n"
        "  queuectl cron apply schedules.ndjson --prune");
    sub->callback([&ctx, path, prune, dry_run] {
      const auto defs = read_schedule_file(*path, ctx.options.max_payload);
      ScheduleRepository repo(ctx.migrated_db());
      ctx.print(apply_view(repo.apply(defs, *prune, *dry_run), *dry_run));
    });
  }
  {
    auto queue = std::make_shared<std::string>();
    auto batch = std::make_shared<int>(100);
    auto* sub = cron->add_subcommand(
        "tick", "Fire what is due now, once, and exit (for a system cron or a CronJob)");
    sub->add_option("--queue", *queue, "Only the schedules of this queue (default: all)");
    sub->add_option("--batch", *batch, "Schedules per transaction (default 100)")->type_name("N");
    sub->footer(
        "Safe to run on many hosts at once, beside workers that fire too: each tick is one job.\n"
        "Examples:\n"
        "  * * * * * queuectl cron tick -q          # crontab: every minute\n"
        "  queuectl cron tick --queue reports -o json");
    sub->callback([&ctx, queue, batch] {
      std::optional<std::string> q;
      if (!queue->empty()) {
        validate_queue_name(*queue);
        q = *queue;
      }
      validate_positive(*batch, "--batch");
      if (*batch > 1000) throw UsageError("--batch must be at most 1000");
      const TickResult r = ScheduleRepository(ctx.migrated_db()).tick(q, *batch);
      ctx.print(tick_view(r));
      if (!r.errors.empty())
        throw Error(r.errors.front() + (r.errors.size() > 1
                                            ? " (and " + std::to_string(r.errors.size() - 1) +
                                                  " more; see queuectl cron list)"
                                            : ""));
    });
  }
}

}  // namespace queuectl
