#include "cli/views.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "cli/output.hpp"
#include "core/display_text.hpp"
#include "core/human_time.hpp"
#include "core/job_fields.hpp"
#include "core/json_text.hpp"
#include "core/validate.hpp"

namespace queuectl {
namespace {

// A rate limit in a table cell: "20/s", "20/s/key" with a bucket per group key.
std::string rate_label(const RateLimit& r) {
  return r.rate_text() + (r.per_key ? "/key" : "");
}

// A stored JSON column as JSON, or as text when it is not JSON or nests too deeply for the
// recursive printer (a row written by other means than queuectl).
nlohmann::ordered_json json_or_text(const std::string& text) {
  if (json_depth(text) > 4 * kMaxJsonDepth) return nlohmann::ordered_json(text);
  nlohmann::ordered_json doc;
  CompactJson compact = compact_json(text, 4 * kMaxJsonDepth, &doc);
  if (!compact.valid) return nlohmann::ordered_json(text);
  // Printed from the parsed document unless that would change a number (digits past a
  // double's, 1.50, -0, 1e400): then as stored.
  return doc.dump() == compact.text ? doc : raw_json(compact.text);
}

nlohmann::ordered_json opt(const std::optional<std::string>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

// One table cell: null as "-", strings as they are, anything else as JSON. (render_table
// makes control characters visible.)
std::string cell(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "-";
  return v.is_string() && !is_raw_json(v) ? v.get<std::string>() : dump_json(v);
}

std::string opt_text(const std::optional<std::string>& v) {
  return v ? *v : "-";
}

// A time for the table: relative to `now` ("3m ago", "in 25s"); "-" for none.
std::string when(const std::optional<std::string>& time, const std::string& now) {
  return time ? relative_time(*time, now) : "-";
}

std::string attempts_text(const Job& j) {
  return std::to_string(j.attempts) + "/" + std::to_string(j.max_attempts);
}

}  // namespace

std::string progress_text(const Job& j) {
  std::string out = j.progress ? std::to_string(*j.progress) + "%" : "";
  if (j.progress_note) out += (out.empty() ? "" : " ") + *j.progress_note;
  return out.empty() ? "-" : out;
}

namespace {

// The describe view's lines for one field: "key:  value", control characters escaped.
// A `block` value of more than one line (a traceback, indented JSON) goes below "key:"
// instead, a line per line, indented.
void describe(std::vector<std::string>& lines, const std::string& key, const std::string& value,
              bool block = false, std::size_t key_width = 14) {
  std::string head = key + ":";
  if (!block || value.find('\n') == std::string::npos) {
    lines.push_back(head + std::string(key_width - std::min(key_width - 1, head.size()), ' ') +
                    visible_text(value));
    return;
  }
  lines.push_back(head);
  std::size_t from = 0;
  while (from <= value.size()) {
    std::size_t end = value.find('\n', from);
    if (end == std::string::npos) end = value.size();
    std::string line = value.substr(from, end - from);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (end < value.size() || !line.empty()) lines.push_back("  " + visible_text(line));
    from = end + 1;
  }
}

}  // namespace

// Field `i` of kJobFields of job `j`, as JSON (payload and result as the JSON they hold).
nlohmann::ordered_json field_json(const Job& j, std::size_t i) {
  switch (i) {
    case job_field("id"):
      return j.id;
    case job_field("queue"):
      return j.queue;
    case job_field("status"):
      return std::string(job_status_text(j));
    case job_field("priority"):
      return j.priority;
    case job_field("run_at"):
      return j.run_at;
    case job_field("attempts"):
      return j.attempts;
    case job_field("max_attempts"):
      return j.max_attempts;
    case job_field("payload"):
      return json_or_text(j.payload);
    case job_field("result"):
      return j.result ? json_or_text(*j.result) : nullptr;
    case job_field("last_error"):
      return opt(j.last_error);
    case job_field("locked_by"):
      return opt(j.locked_by);
    case job_field("lock_token"):
      return opt(j.lock_token);
    case job_field("locked_at"):
      return opt(j.locked_at);
    case job_field("lock_until"):
      return opt(j.lock_until);
    case job_field("dedupe_key"):
      return opt(j.dedupe_key);
    case job_field("group_key"):
      return opt(j.group_key);
    case job_field("created_at"):
      return j.created_at;
    case job_field("updated_at"):
      return j.updated_at;
    case job_field("finished_at"):
      return opt(j.finished_at);
    case job_field("dead_from"):
      return opt(j.dead_from);
    case job_field("trace_parent"):
      return opt(j.trace_parent);
    case job_field("trace_state"):
      return opt(j.trace_state);
    case job_field("progress"):
      return j.progress ? nlohmann::ordered_json(*j.progress) : nullptr;
    case job_field("progress_note"):
      return opt(j.progress_note);
    case job_field("checkpoint"):
      return j.checkpoint ? json_or_text(*j.checkpoint) : nullptr;
    default:
      throw std::logic_error("job field " + std::to_string(i) + " has no value");
  }
}

nlohmann::ordered_json job_json(const Job& j) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < kJobFields.size(); ++i)
    doc[std::string(kJobFields[i].name)] = field_json(j, i);
  return doc;
}

Output job_view(const Job& job, const std::optional<std::string>& now_given) {
  Output out;
  out.document = job_json(job);
  out.items = nlohmann::ordered_json::array({out.document});
  const std::string now = now_given.value_or(job.updated_at);
  std::vector<std::string>& lines = out.lines;
  // Times: as stored, and how far from now.
  auto time = [&](const char* key, const std::optional<std::string>& t) {
    std::string v = t ? *t : "-";
    if (t && parse_utc_time_us(*t)) {
      const std::string rel = relative_time(*t, now);
      if (rel != *t) v += " (" + rel + ")";
    }
    describe(lines, key, v, false, kJobKeyWidth);
  };
  // JSON values indented, under their field once they take more than a line.
  auto json_value = [&](const char* key) {
    const auto& v = out.document[key];
    describe(lines, key,
             v.is_null()                        ? "-"
             : v.is_string() && !is_raw_json(v) ? v.get<std::string>()
                                                : dump_json(v, 2),
             true, kJobKeyWidth);
  };
  for (const JobField& f : kJobFields) {
    const std::string name(f.name);
    const auto& v = out.document[name];
    if (v.is_null() && !f.shown_when_null) continue;
    switch (f.kind) {
      case FieldKind::time:
        // A waiting job's run_at is a stand-in far off, not a time to show as one.
        if (name == "run_at" && is_waiting(job)) {
          describe(lines, name, "- (waiting for other jobs)", false, kJobKeyWidth);
          break;
        }
        time(name.c_str(),
             v.is_null() ? std::nullopt : std::optional<std::string>(v.get<std::string>()));
        break;
      case FieldKind::json:
        json_value(name.c_str());
        break;
      case FieldKind::multiline:
        describe(lines, name, v.is_null() ? "-" : cell(v), true, kJobKeyWidth);
        break;
      case FieldKind::plain:
        describe(lines, name, v.is_null() ? "-" : cell(v), false, kJobKeyWidth);
        break;
    }
  }
  return out;
}

Output jobs_view(const std::vector<Job>& jobs, const std::optional<std::string>& now,
                 JobsTable kind, bool tables, bool ndjson) {
  Output out;
  if (ndjson) {
    std::string text;
    text.reserve(jobs.size() * 512);
    for (const Job& j : jobs) append_job_ndjson(text, j);
    out.ndjson_text = std::move(text);
    return out;
  }
  out.document = nlohmann::ordered_json::array();
  Table t;
  if (kind == JobsTable::claimed)
    t = {{"ID", "QUEUE", "ATTEMPTS", "LOCK_UNTIL", "TOKEN", "PAYLOAD"},
         {},
         {Fit::keep, Fit::shrink, Fit::keep, Fit::keep, Fit::keep, Fit::shrink_first}};
  else
    t = {{"ID", "QUEUE", "STATUS", "PRI", "ATTEMPTS", "AGE", "RUN_AT", "LOCK_UNTIL", "PAYLOAD"},
         {},
         {Fit::keep, Fit::shrink, Fit::keep, Fit::keep, Fit::keep, Fit::keep, Fit::keep, Fit::keep,
          Fit::shrink_first}};
  Table wide{{"ID", "QUEUE", "STATUS", "PRI", "ATTEMPTS", "CREATED_AT", "RUN_AT", "LOCK_UNTIL",
              "WORKER", "TOKEN", "GROUP", "PROGRESS", "PAYLOAD"},
             {},
             {Fit::keep, Fit::shrink, Fit::keep, Fit::keep, Fit::keep, Fit::keep, Fit::keep,
              Fit::keep, Fit::shrink, Fit::keep, Fit::shrink, Fit::shrink, Fit::shrink_first}};
  for (const Job& j : jobs) {
    out.document.push_back(job_json(j));
    if (!tables) continue;
    const std::string& at = now ? *now : j.updated_at;
    std::string status(job_status_text(j));
    // A running job's last reported progress with its status ("processing 40%").
    if (j.status == Status::processing && j.progress)
      status += " " + std::to_string(*j.progress) + "%";
    // A waiting job's run_at is a stand-in far off (9999-12-31), not a time: shown as `-`,
    // as `show` does; its STATUS says why.
    const bool waiting = is_waiting(j);
    if (kind == JobsTable::claimed)
      t.rows.push_back({std::to_string(j.id), j.queue, attempts_text(j), when(j.lock_until, at),
                        opt_text(j.lock_token), j.payload});
    else
      t.rows.push_back({std::to_string(j.id), j.queue, status, std::to_string(j.priority),
                        attempts_text(j), age_text(j.created_at, at),
                        waiting ? "-" : relative_time(j.run_at, at), when(j.lock_until, at),
                        j.payload});
    wide.rows.push_back({std::to_string(j.id), j.queue, status, std::to_string(j.priority),
                         attempts_text(j), j.created_at, waiting ? "-" : j.run_at,
                         opt_text(j.lock_until), opt_text(j.locked_by), opt_text(j.lock_token),
                         opt_text(j.group_key), progress_text(j), j.payload});
  }
  out.elements = true;
  if (!tables) return out;
  out.table = t;
  out.wide_table = wide;
  return out;
}

Output stats_view(const std::vector<QueueStats>& stats) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  // Narrow enough for 80 columns; -o wide has every count under its JSON name.
  Table t{{"QUEUE", "READY", "SCHED", "PROC", "EXPIRED", "UNLEASED", "DONE", "FAILED", "OLDEST",
           "FLAGS"},
          {},
          {Fit::shrink}};
  Table wide{{"QUEUE", "READY", "SCHEDULED", "WAITING", "PROCESSING", "EXPIRED", "UNLEASED", "DONE",
              "FAILED", "CANCELED", "PAUSED", "STRICT", "MAX_PROCESSING", "RATE", "DEAD_LETTER",
              "RETAIN", "KEEP_DONE", "OLDEST_READY"},
             {},
             {Fit::shrink}};
  for (const QueueStats& s : stats) {
    nlohmann::ordered_json age = s.oldest_ready_age_seconds
                                     ? nlohmann::ordered_json(*s.oldest_ready_age_seconds)
                                     : nlohmann::ordered_json(nullptr);
    out.document.push_back(
        {{"queue", s.queue},
         {"ready", s.ready},
         {"scheduled", s.scheduled},
         {"waiting", s.waiting},
         {"processing", s.processing},
         {"expired_leases", s.expired},
         {"unleased", s.unleased},
         {"done", s.done},
         {"failed", s.failed},
         {"canceled", s.canceled},
         {"paused", s.paused},
         {"strict_groups", s.strict_groups},
         {"max_processing", s.max_processing ? nlohmann::ordered_json(*s.max_processing)
                                             : nlohmann::ordered_json(nullptr)},
         {"rate",
          s.rate ? nlohmann::ordered_json(s.rate->rate_text()) : nlohmann::ordered_json(nullptr)},
         {"burst",
          s.rate ? nlohmann::ordered_json(s.rate->burst) : nlohmann::ordered_json(nullptr)},
         {"rate_per_key", s.rate && s.rate->per_key},
         {"dead_letter",
          s.dead_letter ? nlohmann::ordered_json(*s.dead_letter) : nlohmann::ordered_json(nullptr)},
         {"retain",
          s.retain ? nlohmann::ordered_json(s.retain->str()) : nlohmann::ordered_json(nullptr)},
         {"keep_done", s.keep_done},
         {"oldest_ready_age_seconds", age},
         {"at_least", s.at_least}});
    const std::string oldest =
        s.oldest_ready_age_seconds ? human_duration(*s.oldest_ready_age_seconds) : "-";
    std::string flags;
    auto flag = [&](const std::string& f) { flags += (flags.empty() ? "" : ",") + f; };
    if (s.waiting) flag("waiting=" + std::to_string(s.waiting));
    if (s.paused) flag("paused");
    if (s.strict_groups) flag("strict");
    if (s.max_processing) flag("max=" + std::to_string(*s.max_processing));
    if (s.rate) flag("rate=" + rate_label(*s.rate));
    if (s.dead_letter) flag("dlq=" + *s.dead_letter);
    if (s.retain) flag("retain=" + s.retain->str());
    if (!s.keep_done) flag("keep-done=off");
    if (flags.empty()) flags = "-";
    // A count that reached the cap of `stats` (without --exact) is "at least": 100000+.
    auto finished = [&s](const char* status, std::int64_t n) {
      const bool capped =
          std::find(s.at_least.begin(), s.at_least.end(), status) != s.at_least.end();
      return std::to_string(n) + (capped ? "+" : "");
    };
    t.rows.push_back({s.queue, std::to_string(s.ready), std::to_string(s.scheduled),
                      std::to_string(s.processing), std::to_string(s.expired),
                      std::to_string(s.unleased), finished("done", s.done),
                      finished("failed", s.failed), oldest, flags});
    wide.rows.push_back(
        {s.queue, std::to_string(s.ready), std::to_string(s.scheduled), std::to_string(s.waiting),
         std::to_string(s.processing), std::to_string(s.expired), std::to_string(s.unleased),
         finished("done", s.done), finished("failed", s.failed), finished("canceled", s.canceled),
         s.paused ? "yes" : "no", s.strict_groups ? "yes" : "no",
         s.max_processing ? std::to_string(*s.max_processing) : "-",
         s.rate ? rate_label(*s.rate) : "-", s.dead_letter.value_or("-"),
         s.retain ? s.retain->str() : "-", s.keep_done ? "yes" : "no", oldest});
  }
  out.elements = true;
  out.table = t;
  out.wide_table = wide;
  return out;
}

Output groups_view(const std::vector<GroupHead>& groups, const std::optional<std::string>& now) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  const std::vector<Fit> fit = {Fit::shrink, Fit::keep, Fit::keep, Fit::keep,
                                Fit::keep,   Fit::keep, Fit::keep, Fit::shrink_first};
  Table t{
      {"GROUP", "STATE", "HEAD", "ATTEMPTS", "AGE", "RUN_AT", "WAITING", "LAST_ERROR"}, {}, fit};
  Table wide = t;
  for (const GroupHead& g : groups) {
    // processing; waiting: ready, but not due before run_at (a retry backoff, a delay), or
    // waiting for other jobs (enqueue --after: no run_at yet); blocked: failed, in a strict
    // queue.
    const char* state = g.status == Status::processing ? "processing"
                        : g.status == Status::ready    ? "waiting"
                                                       : "blocked";
    const bool after_others = g.status == Status::ready && is_waiting_run_at(g.run_at);
    out.document.push_back({{"group_key", g.group_key},
                            {"state", state},
                            {"head_id", g.id},
                            {"head_status", after_others ? std::string("waiting")
                                                         : std::string(status_name(g.status))},
                            {"attempts", g.attempts},
                            {"age_seconds", g.age_seconds},
                            {"run_at", after_others ? nlohmann::ordered_json(nullptr)
                                                    : nlohmann::ordered_json(g.run_at)},
                            {"waiting", g.waiting},
                            {"last_error", opt(g.last_error)}});
    // The table shows the error's first line; `show HEAD` has all of it.
    std::string error = g.last_error ? g.last_error->substr(0, g.last_error->find('\n')) : "";
    if (error.empty()) error = "-";
    std::vector<std::string> row = {g.group_key,
                                    state,
                                    std::to_string(g.id),
                                    std::to_string(g.attempts),
                                    human_duration(g.age_seconds),
                                    after_others ? "-"
                                    : now        ? relative_time(g.run_at, *now)
                                                 : g.run_at,
                                    std::to_string(g.waiting),
                                    error};
    t.rows.push_back(row);
    row[5] = after_others ? "-" : g.run_at;
    wide.rows.push_back(row);
  }
  out.elements = true;
  out.table = t;
  out.wide_table = wide;
  return out;
}

Output migrations_view(const std::vector<MigrationState>& states, bool applied_now) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  Table t{{"VERSION", "NAME", "STATE", "APPLIED_AT"}, {}, {Fit::keep, Fit::shrink}};
  for (const auto& s : states) {
    out.document.push_back(
        {{"version", s.version},
         {"name", s.name},
         {"applied", s.applied},
         {"applied_at", s.applied_at.empty() ? nlohmann::ordered_json(nullptr)
                                             : nlohmann::ordered_json(s.applied_at)}});
    t.rows.push_back({std::to_string(s.version), s.name,
                      applied_now ? "applied now" : (s.applied ? "applied" : "pending"),
                      s.applied_at.empty() ? "-" : s.applied_at});
  }
  out.elements = true;
  out.table = t;
  return out;
}

Output object_view(const nlohmann::ordered_json& object) {
  Output out;
  out.document = object;
  Table t{{"FIELD", "VALUE"}, {}, {Fit::keep, Fit::shrink_first}};
  for (const auto& [key, value] : object.items()) t.rows.push_back({key, cell(value)});
  out.table = t;
  return out;
}

std::string time_left_text(std::optional<double> seconds_left) {
  if (!seconds_left) return "no lease";
  if (*seconds_left < 0) return "expired " + human_duration(*seconds_left) + " ago";
  return human_duration(*seconds_left);
}

}  // namespace queuectl
