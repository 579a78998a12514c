// queuectl enqueue: add one job, or many from NDJSON in one transaction.
#include <algorithm>
#include <limits>
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "core/time_text.hpp"
#include "core/validate.hpp"
#include "db/job_repository.hpp"

namespace queuectl {
namespace {

struct EnqueueOptions {
  std::string queue;
  std::string payload = "{}";
  int priority = 0;
  std::string delay;
  std::string run_at;
  int max_attempts = 25;
  std::string dedupe_key;
  std::string group_key;
  std::string from;
  // Whether PAYLOAD and the keys were given at all (their values cannot tell: an empty
  // key is refused, not taken for "no key").
  bool payload_given = false;
  bool dedupe_key_given = false;
  bool group_key_given = false;
};

// Builds a validated job from the one-job options.
NewJob job_from_options(const EnqueueOptions& o, std::size_t max_payload) {
  NewJob job;
  validate_queue_name(o.queue);
  job.queue = o.queue;
  std::string payload = o.payload == "-" ? read_input("-") : o.payload;
  job.payload = validate_json(payload, "payload", max_payload);
  job.priority = o.priority;
  if (!o.delay.empty() && !o.run_at.empty())
    throw UsageError("--delay and --run-at exclude each other");
  job.delay = duration_option(o.delay, "--delay", Duration());
  if (job.delay.ms() < 0) throw UsageError("--delay must not be negative");
  if (!o.run_at.empty()) job.run_at = parse_time_to_utc(o.run_at);
  validate_positive(o.max_attempts, "--max-attempts");
  job.max_attempts = o.max_attempts;
  if (o.dedupe_key_given) {
    validate_key(o.dedupe_key, "--dedupe-key");
    job.dedupe_key = o.dedupe_key;
  }
  if (o.group_key_given) {
    validate_key(o.group_key, "--group-key");
    job.group_key = o.group_key;
  }
  return job;
}

// Builds a validated job from one NDJSON line; errors name the line.
NewJob job_from_line(const std::string& line, std::size_t number, const EnqueueOptions& o,
                     std::size_t max_payload) {
  const std::string where = "line " + std::to_string(number) + ": ";
  try {
    const auto doc = parse_line_object(line);
    // QUEUE and the per-job options given with --from are defaults for the lines that do
    // not set them; a line's "delay" or "run_at" replaces both --delay and --run-at.
    EnqueueOptions one;
    one.queue = o.queue;
    one.priority = o.priority;
    one.delay = o.delay;
    one.run_at = o.run_at;
    one.max_attempts = o.max_attempts;
    one.group_key = o.group_key;
    one.group_key_given = o.group_key_given;
    bool line_delay = false, line_run_at = false;
    for (const auto& [key, value] : doc.items()) {
      // A string; an empty one is a mistake, not "not given" (as for options).
      auto text = [&]() {
        if (!value.is_string()) throw UsageError("\"" + key + "\" must be a string");
        if (value.get<std::string>().empty()) throw UsageError("\"" + key + "\" must not be empty");
        return value.get<std::string>();
      };
      // A 32-bit integer, checked before it is narrowed (no silent wrap-around).
      auto integer = [&]() {
        const bool fits = value.is_number_unsigned()
                              ? value.get<unsigned long long>() <= std::numeric_limits<int>::max()
                              : value.is_number_integer() &&
                                    value.get<long long>() >= std::numeric_limits<int>::min() &&
                                    value.get<long long>() <= std::numeric_limits<int>::max();
        if (!fits)
          throw UsageError("\"" + key + "\" must be an integer between " +
                           std::to_string(std::numeric_limits<int>::min()) + " and " +
                           std::to_string(std::numeric_limits<int>::max()));
        return static_cast<int>(value.get<long long>());
      };
      if (key == "queue") {
        one.queue = text();
      } else if (key == "payload") {
        one.payload = value.text();
      } else if (key == "priority") {
        one.priority = integer();
      } else if (key == "delay") {
        one.delay = value.is_number() ? value.text() : text();
        line_delay = true;
      } else if (key == "run_at") {
        one.run_at = text();
        line_run_at = true;
      } else if (key == "max_attempts") {
        one.max_attempts = integer();
      } else if (key == "dedupe_key") {
        one.dedupe_key = text();
        one.dedupe_key_given = true;
      } else if (key == "group_key") {
        one.group_key = text();
        one.group_key_given = true;
      } else {
        throw UsageError("unknown field \"" + key + "\"");
      }
    }
    if (line_delay && !line_run_at) one.run_at.clear();
    if (line_run_at && !line_delay) one.delay.clear();
    if (one.queue.empty()) throw UsageError("no \"queue\" (give one per line, or QUEUE)");
    return job_from_options(one, max_payload);
  } catch (const UsageError& e) {
    throw UsageError(where + e.what());
  }
}

// The jobs of the NDJSON lines, in their order; blank lines are skipped. Reading and
// checking a line takes longer than the database takes to insert it, so a long input is
// cut into one slice per core, read side by side. A bad line is reported as a sequential
// read would report it: the first one in the input.
std::vector<NewJob> jobs_from_lines(const std::vector<std::string>& lines, const EnqueueOptions& o,
                                    std::size_t max_payload) {
  // Below 2,000 lines a slice, a thread costs more than it saves.
  return parse_in_slices<NewJob>(lines, 2000, " \t", [&](const std::string& line, std::size_t n) {
    return job_from_line(line, n, o, max_payload);
  });
}

Output run_bulk(Context& ctx, const EnqueueOptions& o) {
  // Each line carries its own payload and dedupe key: neither has a sensible default.
  if (o.payload_given)
    throw UsageError("PAYLOAD and --from exclude each other (give \"payload\" on each line)");
  if (o.dedupe_key_given)
    throw UsageError(
        "--dedupe-key and --from exclude each other (give \"dedupe_key\" on each line)");
  // The defaults are checked once, before any line, so that their errors name the option.
  {
    if (!o.run_at.empty()) {
      try {
        parse_time_to_utc(o.run_at);
      } catch (const UsageError& e) {
        throw UsageError(std::string("--run-at: ") + e.what());
      }
    }
    EnqueueOptions defaults = o;
    if (defaults.queue.empty()) defaults.queue = "q";
    defaults.payload = "{}";
    job_from_options(defaults, ctx.options.max_payload);
  }
  const std::vector<NewJob> jobs = jobs_from_lines(read_lines(o.from), o, ctx.options.max_payload);
  BulkEnqueueResult r;
  // Empty input enqueues nothing and is not an error; the database is not even opened.
  if (!jobs.empty()) r = JobRepository(ctx.migrated_db()).enqueue_many(jobs);
  Output out = object_view({{"enqueued", r.enqueued}, {"duplicates", r.duplicates}});
  out.table.reset();
  out.lines.push_back(
      "enqueued " + std::to_string(r.enqueued) + " job(s)" +
      (r.duplicates ? ", skipped " + std::to_string(r.duplicates) + " duplicate(s) by dedupe key"
                    : ""));
  return out;
}

Output run_enqueue(Context& ctx, const EnqueueOptions& o) {
  if (!o.from.empty()) return run_bulk(ctx, o);
  if (o.queue.empty()) throw UsageError("enqueue needs a QUEUE (or --from FILE)");
  NewJob job = job_from_options(o, ctx.options.max_payload);
  JobRepository repo(ctx.migrated_db());
  EnqueueResult r = repo.enqueue(job);
  if (r.duplicate)
    ctx.note("job " + std::to_string(r.job.id) + " already holds dedupe key '" + *job.dedupe_key +
             "' in queue " + job.queue + "; nothing enqueued");
  Output out = job_view(r.job);
  out.document["deduplicated"] = r.duplicate;
  out.items = nlohmann::ordered_json::array({out.document});
  return out;
}

}  // namespace

void setup_enqueue(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<EnqueueOptions>();
  auto* sub = app.add_subcommand("enqueue", "Add a job to a queue (or many with --from)");
  sub->add_option("QUEUE", o->queue, "Queue name, [A-Za-z0-9._:-]{1,64}");
  auto* payload =
      sub->add_option("PAYLOAD", o->payload, "Job payload as JSON (default {}; - reads stdin)");
  sub->add_option("--priority", o->priority, "Larger runs first (default 0)");
  sub->add_option("--delay", o->delay, "Run no earlier than now + DUR (e.g. 30s, 5m)")
      ->type_name("DUR");
  sub->add_option("--run-at", o->run_at,
                  "Run no earlier than TIME (RFC 3339; without an offset, local time in $TZ)")
      ->type_name("TIME");
  sub->add_option("--max-attempts", o->max_attempts, "Attempts before the job fails (default 25)");
  auto* dedupe_key =
      sub->add_option("--dedupe-key", o->dedupe_key,
                      "Unique per queue: an existing job with this key is returned instead");
  auto* group_key =
      sub->add_option("--group-key", o->group_key,
                      "Ordered group: jobs of a queue with one key run one at a time, in id order");
  sub->add_option("--from", o->from,
                  "Read NDJSON jobs from FILE or - (one object a line: "
                  "queue, payload, priority, delay, run_at, max_attempts, dedupe_key, "
                  "group_key); all lines or none");
  sub->footer(
      "With --from, QUEUE, --priority, --delay, --run-at, --max-attempts and --group-key are\n"
      "defaults for lines that do not set them (a line's delay or run_at replaces both);\n"
      "PAYLOAD and --dedupe-key are refused. Empty input enqueues nothing and exits 0.\n"
      "Examples:\n"
      "  queuectl enqueue emails '{\"to\":\"a@example.com\"}' --priority 10\n"
      "  queuectl enqueue reports '{}' --delay 5m --dedupe-key report-2026-11\n"
      "  queuectl enqueue orders '{\"step\":1}' --group-key order-42   (runs before step 2)\n"
      "  queuectl enqueue --from jobs.ndjson\n"
      "  queuectl enqueue emails --priority 5 --from -   (lines without queue/priority get these)");
  sub->callback([&ctx, o, payload, dedupe_key, group_key] {
    o->payload_given = payload->count() > 0;
    o->dedupe_key_given = dedupe_key->count() > 0;
    o->group_key_given = group_key->count() > 0;
    ctx.print(run_enqueue(ctx, *o));
  });
}

}  // namespace queuectl
