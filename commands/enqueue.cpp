// queuectl enqueue: add one job, or many from NDJSON in one transaction.
#include <algorithm>
#include <limits>
#include <memory>

#include "cli/commands.hpp"
#include "cli/input.hpp"
#include "cli/views.hpp"
#include "core/errors.hpp"
#include "core/time_text.hpp"
#include "core/trace_context.hpp"
#include "core/validate.hpp"
#include "db/dependencies.hpp"
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
  std::string after;              // --after ID[,ID...]
  std::string on_parent_failure;  // --on-parent-failure cancel|run|wait
  std::string batch;              // --batch ID
  std::string traceparent;        // a --from line's "traceparent" (else TRACEPARENT's)
  std::string tracestate;         // a --from line's "tracestate"
  // Whether PAYLOAD and the keys were given at all (their values cannot tell: an empty
  // key is refused, not taken for "no key").
  bool payload_given = false;
  bool dedupe_key_given = false;
  bool group_key_given = false;
};

// Builds a validated job from the one-job options.
NewJobAfter job_from_options(const EnqueueOptions& o, std::size_t max_payload) {
  NewJobAfter with;
  NewJob& job = with.job;
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
  if (!o.after.empty()) with.after = parse_parent_ids(o.after, "--after");
  if (!o.on_parent_failure.empty()) {
    if (o.after.empty()) throw UsageError("--on-parent-failure needs --after");
    with.on_parent_failure = parse_parent_failure(o.on_parent_failure);
  }
  if (!o.batch.empty()) {
    try {
      with.batch = parse_job_id(o.batch);
    } catch (const UsageError&) {
      throw UsageError("--batch: '" + o.batch.substr(0, 40) + "' is not a batch id");
    }
  }
  if (!o.tracestate.empty() && o.traceparent.empty())
    throw UsageError("\"tracestate\" needs \"traceparent\"");
  if (!o.traceparent.empty()) {
    if (!is_traceparent(o.traceparent))
      throw UsageError("\"traceparent\" is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)");
    if (!o.tracestate.empty() && !is_tracestate(o.tracestate))
      throw UsageError(
          "\"tracestate\" is not a W3C tracestate (key=value,...; at most 512 "
          "characters)");
    job.trace_parent = stored_traceparent(o.traceparent);
    if (!o.tracestate.empty()) job.trace_state = o.tracestate;
  }
  if (!with.after.empty() && (job.run_at || job.delay.ms() > 0))
    throw UsageError(
        "--after with --delay or --run-at is not supported: a job with --after runs when its "
        "parents are done");
  return with;
}

// Builds a validated job from one NDJSON line; errors name the line.
NewJobAfter job_from_line(const std::string& line, std::size_t number, const EnqueueOptions& o,
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
    one.after = o.after;
    one.on_parent_failure = o.on_parent_failure;
    one.batch = o.batch;
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
      } else if (key == "after") {
        // An array of ids, or one id.
        if (value.is_number_unsigned()) {
          one.after = std::to_string(value.get<unsigned long long>());
        } else if (value.is_array() && !value.empty()) {
          one.after.clear();
          for (const auto& v : value) {
            if (!v.is_number_unsigned()) throw UsageError("\"after\" must list job ids");
            one.after +=
                (one.after.empty() ? "" : ",") + std::to_string(v.get<unsigned long long>());
          }
        } else {
          throw UsageError("\"after\" must be a job id or a non-empty array of job ids");
        }
      } else if (key == "on_parent_failure") {
        one.on_parent_failure = text();
      } else if (key == "traceparent") {
        one.traceparent = text();
      } else if (key == "tracestate") {
        one.tracestate = text();
      } else if (key == "batch") {
        if (!value.is_number_unsigned()) throw UsageError("\"batch\" must be a batch id");
        one.batch = std::to_string(value.get<unsigned long long>());
      } else {
        throw UsageError("unknown field \"" + key + "\"");
      }
    }
    if (line_delay && !line_run_at) one.run_at.clear();
    if (line_run_at && !line_delay) one.delay.clear();
    if (one.queue.empty()) throw UsageError("no \"queue\" (give one per line, or QUEUE)");
    NewJobAfter job = job_from_options(one, max_payload);
    job.line = number;
    return job;
  } catch (const UsageError& e) {
    // The checks are the command line's: their messages name options, the line has keys.
    throw UsageError(
        where + with_line_keys(e.what(), {"priority", "delay", "run_at", "max_attempts",
                                          "dedupe_key", "group_key", "after", "on_parent_failure",
                                          "traceparent", "tracestate", "batch"}));
  }
}

// The jobs of the NDJSON lines, in their order; blank lines are skipped. Reading and
// checking a line takes longer than the database takes to insert it, so a long input is
// cut into one slice per core, read side by side. A bad line is reported as a sequential
// read would report it: the first one in the input.
std::vector<NewJobAfter> jobs_from_lines(const std::vector<std::string>& lines,
                                         const EnqueueOptions& o, std::size_t max_payload) {
  // Below 2,000 lines a slice, a thread costs more than it saves.
  return parse_in_slices<NewJobAfter>(lines, 2000, " \t",
                                      [&](const std::string& line, std::size_t n) {
                                        return job_from_line(line, n, o, max_payload);
                                      });
}

// The caller's trace context (TRACEPARENT, TRACESTATE) on every job that has none of its
// own. A malformed value is dropped with a warning: never an error that loses the job.
void add_trace_context(Context& ctx, std::vector<NewJob*> jobs) {
  const TraceContext trace = trace_context_from_env();
  if (!trace.warning.empty()) ctx.say("queuectl: warning: " + trace.warning);
  if (!trace.parent) return;
  for (NewJob* job : jobs)
    if (!job->trace_parent) {
      job->trace_parent = trace.parent;
      job->trace_state = trace.state;
    }
}

Output run_bulk(Context& ctx, const EnqueueOptions& o) {
  // Each line carries its own payload and dedupe key: neither has a sensible default.
  if (o.payload_given)
    throw UsageError("PAYLOAD and --from exclude each other (give \"payload\" on each line)");
  if (o.dedupe_key_given)
    throw UsageError(
        "--dedupe-key and --from exclude each other (give \"dedupe_key\" on each line)");
  // It prints counts, not jobs: --field would print nothing, and a script would take that for
  // no ids.
  if (!ctx.options.fields.empty())
    throw UsageError(
        "--field picks fields of jobs, and `enqueue --from` prints only counts: use -o json "
        "for them");
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
  std::vector<NewJobAfter> lines = jobs_from_lines(read_lines(o.from), o, ctx.options.max_payload);
  {
    std::vector<NewJob*> jobs;
    for (NewJobAfter& l : lines) jobs.push_back(&l.job);
    add_trace_context(ctx, jobs);
  }
  BulkEnqueueResult r;
  // Empty input enqueues nothing and is not an error; the database is not even opened.
  const bool any_after = std::any_of(lines.begin(), lines.end(), [](const NewJobAfter& j) {
    return !j.after.empty() || j.batch.has_value();
  });
  const bool one_by_one = std::any_of(lines.begin(), lines.end(), [](const NewJobAfter& j) {
    return j.job.dedupe_key.has_value() || j.batch.has_value();
  });
  // A parent or batch the database refuses is named with its line, as the line's own checks.
  auto on_lines = [&](auto&& enqueue_all) {
    try {
      enqueue_all();
    } catch (const JobInputError& e) {
      throw UsageError("line " + std::to_string(lines.at(e.index).line) + ": " +
                       with_line_keys(e.what(), {"after", "batch"}));
    }
  };
  if (any_after && !one_by_one) {
    // Every line's parents locked at once, then multi-row inserts; one transaction.
    on_lines([&] { r.enqueued = Dependencies(ctx.migrated_db()).enqueue_bulk(lines); });
  } else if (any_after) {
    // With dedupe keys or batches, one line at a time; still one transaction.
    on_lines([&] {
      for (const EnqueueResult& e : Dependencies(ctx.migrated_db()).enqueue(lines))
        ++(e.duplicate ? r.duplicates : r.enqueued);
    });
  } else if (!lines.empty()) {
    std::vector<NewJob> jobs;
    jobs.reserve(lines.size());
    for (NewJobAfter& l : lines) jobs.push_back(std::move(l.job));
    r = JobRepository(ctx.migrated_db()).enqueue_many(jobs);
  }
  Output out = object_view({{"enqueued", r.enqueued}, {"duplicates", r.duplicates}});
  out.table.reset();
  out.report = true;  // counts of what was done: -q prints none of it
  out.lines.push_back(
      "enqueued " + std::to_string(r.enqueued) + " job(s)" +
      (r.duplicates ? ", skipped " + std::to_string(r.duplicates) + " duplicate(s) by dedupe key"
                    : ""));
  return out;
}

Output run_enqueue(Context& ctx, const EnqueueOptions& o) {
  if (!o.from.empty()) return run_bulk(ctx, o);
  if (o.queue.empty()) throw UsageError("enqueue needs a QUEUE (or --from FILE)");
  NewJobAfter with = job_from_options(o, ctx.options.max_payload);
  add_trace_context(ctx, {&with.job});
  const NewJob& job = with.job;
  EnqueueResult r = with.after.empty() && !with.batch
                        ? JobRepository(ctx.migrated_db()).enqueue(job)
                        : Dependencies(ctx.migrated_db()).enqueue({with}).front();
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
  sub->add_option("--after", o->after,
                  "Run only after these jobs are done (ids, comma-separated); until then the "
                  "job is waiting")
      ->type_name("ID[,ID...]");
  sub->add_option("--on-parent-failure", o->on_parent_failure,
                  "When a job named by --after fails for good or is canceled: cancel this job "
                  "(default), run it anyway, or wait (for a retry of the parent)")
      ->type_name("cancel|run|wait");
  sub->add_option("--batch", o->batch,
                  "Add the job to this open batch (queuectl batch create); its end counts there")
      ->type_name("ID");
  sub->add_option("--from", o->from,
                  "Read NDJSON jobs from FILE or - (one object a line: "
                  "queue, payload, priority, delay, run_at, max_attempts, dedupe_key, "
                  "group_key, after, on_parent_failure, batch, traceparent, tracestate); all "
                  "lines or none")
      ->type_name("FILE");
  sub->footer(
      "With --from, QUEUE, --priority, --delay, --run-at, --max-attempts and --group-key are\n"
      "defaults for lines that do not set them (a line's delay or run_at replaces both);\n"
      "PAYLOAD and --dedupe-key are refused. Empty input enqueues nothing and exits 0.\n"
      "A job with --after waits (status waiting) until every job it names is done; the ack of\n"
      "the last one makes it ready, in the same transaction. An id with no job is refused\n"
      "(exit 2); a parent already done counts as met. A parent that fails for good or is\n"
      "canceled cancels the job, with the reason in last_error (see --on-parent-failure);\n"
      "`retry` of that parent makes the job wait again.\n"
      "Trace context: TRACEPARENT and TRACESTATE in the environment (W3C Trace Context, as\n"
      "OpenTelemetry's SDKs set them) are stored with the job (a --from line's traceparent and\n"
      "tracestate win); `work` hands them to the first attempt. A malformed TRACEPARENT is\n"
      "dropped with a warning and the job is enqueued without it.\n"
      "Examples:\n"
      "  queuectl enqueue emails '{\"to\":\"a@example.com\"}' --priority 10\n"
      "  queuectl enqueue reports '{}' --delay 5m --dedupe-key report-2026-11\n"
      "  queuectl enqueue orders '{\"step\":1}' --group-key order-42   (runs before step 2)\n"
      "  queuectl enqueue --from jobs.ndjson\n"
      "  queuectl enqueue publish '{}' --after 41,42,43   (runs when all three are done)\n"
      "  queuectl enqueue emails --priority 5 --from -   (lines without queue/priority get these)");
  sub->callback([&ctx, o, payload, dedupe_key, group_key] {
    o->payload_given = payload->count() > 0;
    o->dedupe_key_given = dedupe_key->count() > 0;
    o->group_key_given = group_key->count() > 0;
    ctx.print(run_enqueue(ctx, *o));
  });
}

}  // namespace queuectl
