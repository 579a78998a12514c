#include "cli/views.hpp"

#include <cstdio>

#include "cli/output.hpp"
#include "core/json_text.hpp"
#include "core/validate.hpp"

namespace queuectl {
namespace {

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

// One table cell: null as "-", line breaks shown as \n so that rows stay rows.
std::string cell(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "-";
  std::string s = v.is_string() && !is_raw_json(v) ? v.get<std::string>() : dump_json(v);
  // Control characters (a job's stderr may carry terminal escapes) never reach the
  // terminal raw: line breaks and tabs as \n and \t, the rest as \xHH.
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

std::string shorten(std::string s, std::size_t n) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  return s;
}

}  // namespace

nlohmann::ordered_json job_json(const Job& j) {
  return {
      {"id", j.id},
      {"queue", j.queue},
      {"status", std::string(status_name(j.status))},
      {"priority", j.priority},
      {"run_at", j.run_at},
      {"attempts", j.attempts},
      {"max_attempts", j.max_attempts},
      {"payload", json_or_text(j.payload)},
      {"result", j.result ? json_or_text(*j.result) : nlohmann::ordered_json(nullptr)},
      {"last_error", opt(j.last_error)},
      {"locked_by", opt(j.locked_by)},
      {"lock_token", opt(j.lock_token)},
      {"locked_at", opt(j.locked_at)},
      {"lock_until", opt(j.lock_until)},
      {"dedupe_key", opt(j.dedupe_key)},
      {"group_key", opt(j.group_key)},
      {"created_at", j.created_at},
      {"updated_at", j.updated_at},
      {"finished_at", opt(j.finished_at)},
  };
}

Output job_view(const Job& job) {
  Output out;
  out.document = job_json(job);
  out.items = nlohmann::ordered_json::array({out.document});
  // items() of an object iterates in key order; keep the column order of the schema.
  Table ordered{{"FIELD", "VALUE"}, {}};
  for (const char* key :
       {"id", "queue", "status", "priority", "run_at", "attempts", "max_attempts", "payload",
        "result", "last_error", "locked_by", "lock_token", "locked_at", "lock_until", "dedupe_key",
        "group_key", "created_at", "updated_at", "finished_at"})
    ordered.rows.push_back({key, cell(out.document[key])});
  out.table = ordered;
  return out;
}

Output jobs_view(const std::vector<Job>& jobs) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  Table t{{"ID", "QUEUE", "STATUS", "PRI", "ATTEMPTS", "RUN_AT", "LOCK_UNTIL", "TOKEN", "PAYLOAD"},
          {}};
  for (const Job& j : jobs) {
    out.document.push_back(job_json(j));
    t.rows.push_back({std::to_string(j.id), j.queue, std::string(status_name(j.status)),
                      std::to_string(j.priority),
                      std::to_string(j.attempts) + "/" + std::to_string(j.max_attempts), j.run_at,
                      j.lock_until.value_or("-"), j.lock_token.value_or("-"),
                      shorten(j.payload, 40)});
  }
  out.items = out.document;
  out.table = t;
  return out;
}

Output stats_view(const std::vector<QueueStats>& stats) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  Table t{{"QUEUE", "READY", "SCHEDULED", "PROCESSING", "EXPIRED", "UNLEASED", "DONE", "FAILED",
           "CANCELED", "PAUSED", "STRICT", "OLDEST_READY"},
          {}};
  for (const QueueStats& s : stats) {
    nlohmann::ordered_json age = s.oldest_ready_age_seconds
                                     ? nlohmann::ordered_json(*s.oldest_ready_age_seconds)
                                     : nlohmann::ordered_json(nullptr);
    out.document.push_back({{"queue", s.queue},
                            {"ready", s.ready},
                            {"scheduled", s.scheduled},
                            {"processing", s.processing},
                            {"expired_leases", s.expired},
                            {"unleased", s.unleased},
                            {"done", s.done},
                            {"failed", s.failed},
                            {"canceled", s.canceled},
                            {"paused", s.paused},
                            {"strict_groups", s.strict_groups},
                            {"oldest_ready_age_seconds", age}});
    char age_text[32] = "-";
    if (s.oldest_ready_age_seconds)
      std::snprintf(age_text, sizeof age_text, "%.1fs", *s.oldest_ready_age_seconds);
    t.rows.push_back({s.queue, std::to_string(s.ready), std::to_string(s.scheduled),
                      std::to_string(s.processing), std::to_string(s.expired),
                      std::to_string(s.unleased), std::to_string(s.done), std::to_string(s.failed),
                      std::to_string(s.canceled), s.paused ? "yes" : "no",
                      s.strict_groups ? "yes" : "no", age_text});
  }
  out.items = out.document;
  out.table = t;
  return out;
}

Output groups_view(const std::vector<GroupHead>& groups) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  Table t{{"GROUP", "STATE", "HEAD", "ATTEMPTS", "AGE", "RUN_AT", "WAITING", "LAST_ERROR"}, {}};
  for (const GroupHead& g : groups) {
    // processing; waiting: ready, but not due before run_at (a retry backoff); blocked:
    // failed, in a strict queue.
    const char* state = g.status == Status::processing ? "processing"
                        : g.status == Status::ready    ? "waiting"
                                                       : "blocked";
    out.document.push_back({{"group_key", g.group_key},
                            {"state", state},
                            {"head_id", g.id},
                            {"head_status", std::string(status_name(g.status))},
                            {"attempts", g.attempts},
                            {"age_seconds", g.age_seconds},
                            {"run_at", g.run_at},
                            {"waiting", g.waiting},
                            {"last_error", opt(g.last_error)}});
    char age[32];
    std::snprintf(age, sizeof age, "%.1fs", g.age_seconds);
    std::string error = g.last_error ? g.last_error->substr(0, g.last_error->find('\n')) : "";
    t.rows.push_back({shorten(cell(g.group_key), 32), state, std::to_string(g.id),
                      std::to_string(g.attempts), age, g.run_at, std::to_string(g.waiting),
                      error.empty() ? "-" : shorten(cell(error), 40)});
  }
  out.items = out.document;
  out.table = t;
  return out;
}

Output migrations_view(const std::vector<MigrationState>& states, bool applied_now) {
  Output out;
  out.document = nlohmann::ordered_json::array();
  Table t{{"VERSION", "NAME", "STATE", "APPLIED_AT"}, {}};
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
  out.items = out.document;
  out.table = t;
  return out;
}

Output object_view(const nlohmann::ordered_json& object) {
  Output out;
  out.document = object;
  Table t{{"FIELD", "VALUE"}, {}};
  for (const auto& [key, value] : object.items()) t.rows.push_back({key, cell(value)});
  out.table = t;
  return out;
}

}  // namespace queuectl
