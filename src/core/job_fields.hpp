// The job's fields, once: their names in the order every layer uses (the dialects'
// column lists, the row reader, JSON and NDJSON, `show`, `--field` and the shell
// completions, which ask the binary through `queuectl __complete fields`), and how each
// is printed. A field added to Job is added here, and the tests that compare this table
// with the dialects' column lists and with `show` say what else is missing.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace queuectl {

// How a field's value is shown: a JSON document (payload, result), a time (RFC 3339
// UTC text, shown by `show` with how long ago), text that may span lines (last_error),
// or a plain value. `optional` fields may be null.
enum class FieldKind { plain, time, json, multiline };

struct JobField {
  std::string_view name;
  FieldKind kind;
  bool optional;                // may be null
  bool shown_when_null = true;  // `show` prints "-"; else leaves the line out
};

inline constexpr std::array<JobField, 25> kJobFields = {{
    {"id", FieldKind::plain, false},
    {"queue", FieldKind::plain, false},
    {"status", FieldKind::plain, false},
    {"priority", FieldKind::plain, false},
    {"run_at", FieldKind::time, false},
    {"attempts", FieldKind::plain, false},
    {"max_attempts", FieldKind::plain, false},
    {"payload", FieldKind::json, false},
    {"result", FieldKind::json, true},
    {"last_error", FieldKind::multiline, true},
    {"locked_by", FieldKind::plain, true},
    {"lock_token", FieldKind::plain, true},
    {"locked_at", FieldKind::time, true},
    {"lock_until", FieldKind::time, true},
    {"dedupe_key", FieldKind::plain, true},
    {"group_key", FieldKind::plain, true},
    {"created_at", FieldKind::time, false},
    {"updated_at", FieldKind::time, false},
    {"finished_at", FieldKind::time, true},
    {"dead_from", FieldKind::plain, true, false},
    {"trace_parent", FieldKind::plain, true, false},
    {"trace_state", FieldKind::plain, true, false},
    {"progress", FieldKind::plain, true, false},
    {"progress_note", FieldKind::plain, true, false},
    {"checkpoint", FieldKind::json, true, false},
}};

// The position of the field `name` in kJobFields, at compile time: a name that is not
// there does not compile (`case job_field("dead_form"):`).
constexpr std::size_t job_field(std::string_view name) {
  for (std::size_t i = 0; i < kJobFields.size(); ++i)
    if (kJobFields[i].name == name) return i;
  throw "no such job field";
}

// The names alone, in order.
std::vector<std::string> job_field_names();

}  // namespace queuectl
