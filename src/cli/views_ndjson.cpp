// append_job_ndjson: a job as one NDJSON line, written without building a JSON document.
#include <string_view>

#include "cli/output.hpp"
#include "cli/views.hpp"
#include "core/json_text.hpp"
#include "core/validate.hpp"

namespace queuectl {
namespace {

// A text field as dump_json writes it: escaped as nlohmann escapes; text that is not UTF-8
// (a worker's stderr in last_error, say) through nlohmann's dump, which replaces it.
void append_text(std::string& out, std::string_view v) {
  if (is_valid_utf8(v)) {
    append_json_string(out, v);
    return;
  }
  out += nlohmann::ordered_json(std::string(v))
             .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

void append_opt(std::string& out, const std::optional<std::string>& v) {
  if (v)
    append_text(out, *v);
  else
    out += "null";
}

// A stored JSON column as json_or_text prints it: its compact text, numbers as written (the
// text the parsed document prints, or else the raw text spliced in), or a string of the
// text when it is not JSON or nests too deeply.
void append_stored_json(std::string& out, const std::string& text) {
  if (json_depth(text) <= 4 * kMaxJsonDepth) {
    CompactJson compact = compact_json(text, 4 * kMaxJsonDepth);
    if (compact.valid) {
      out += compact.text;
      return;
    }
  }
  append_text(out, text);
}

void append_field(std::string& out, const char* key, long long v) {
  out += key;
  out += std::to_string(v);
}

void append_field(std::string& out, const char* key, std::string_view v) {
  out += key;
  append_text(out, v);
}

void append_field(std::string& out, const char* key, const std::string& v) {
  append_field(out, key, std::string_view(v));
}

void append_field(std::string& out, const char* key, const std::optional<std::string>& v) {
  out += key;
  append_opt(out, v);
}

}  // namespace

// Written by hand for speed (a claim of thousands of jobs down a pipe); a unit test holds
// it to job_json, field for field.
void append_job_ndjson(std::string& out, const Job& j) {
  append_field(out, "{\"id\":", j.id);
  append_field(out, ",\"queue\":", j.queue);
  append_field(out, ",\"status\":", status_name(j.status));
  append_field(out, ",\"priority\":", j.priority);
  append_field(out, ",\"run_at\":", j.run_at);
  append_field(out, ",\"attempts\":", j.attempts);
  append_field(out, ",\"max_attempts\":", j.max_attempts);
  out += ",\"payload\":";
  append_stored_json(out, j.payload);
  out += ",\"result\":";
  if (j.result)
    append_stored_json(out, *j.result);
  else
    out += "null";
  append_field(out, ",\"last_error\":", j.last_error);
  append_field(out, ",\"locked_by\":", j.locked_by);
  append_field(out, ",\"lock_token\":", j.lock_token);
  append_field(out, ",\"locked_at\":", j.locked_at);
  append_field(out, ",\"lock_until\":", j.lock_until);
  append_field(out, ",\"dedupe_key\":", j.dedupe_key);
  append_field(out, ",\"group_key\":", j.group_key);
  append_field(out, ",\"created_at\":", j.created_at);
  append_field(out, ",\"updated_at\":", j.updated_at);
  append_field(out, ",\"finished_at\":", j.finished_at);
  append_field(out, ",\"dead_from\":", j.dead_from);
  append_field(out, ",\"trace_parent\":", j.trace_parent);
  append_field(out, ",\"trace_state\":", j.trace_state);
  out += ",\"progress\":";
  out += j.progress ? std::to_string(*j.progress) : "null";
  append_field(out, ",\"progress_note\":", j.progress_note);
  out += ",\"checkpoint\":";
  if (j.checkpoint)
    append_stored_json(out, *j.checkpoint);
  else
    out += "null";
  out += "}\n";
}

}  // namespace queuectl
