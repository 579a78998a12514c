// What a command hands back for printing, and the one place that writes it to stdout
// as a table, one JSON document, NDJSON or Prometheus text.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace queuectl {

enum class Format { table, json, ndjson, prometheus };

// Parses -o; throws UsageError.
Format parse_format(const std::string& text);

struct Table {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
};

struct Output {
  nlohmann::ordered_json document;              // -o json, and -o ndjson when `items` is unset
  std::optional<nlohmann::ordered_json> items;  // -o ndjson: one element a line
  std::optional<Table> table;                   // -o table
  std::vector<std::string> lines;               // -o table: plain lines after the table
  std::optional<std::string> prometheus;        // -o prometheus, where the command supports it
  // -o table: a report of what was done (acked, paused, the job as extend left it), not
  // data asked for: -q prints none of it.
  bool report = false;
};

// A JSON value printed exactly as `compact_text` (compact, valid JSON): for a stored payload
// or result whose numbers a parsed document would change (12345678901234567890123, 1.50,
// -0, 1e400). It is a string holding a marker until dump_json splices the text in.
nlohmann::ordered_json raw_json(const std::string& compact_text);
// Whether `value` is one made by raw_json.
bool is_raw_json(const nlohmann::ordered_json& value);
// `value` as JSON text (indent as nlohmann's dump; -1 for one line), with every raw_json
// value written as its text. Invalid UTF-8 is replaced, never a reason to fail.
std::string dump_json(const nlohmann::ordered_json& value, int indent = -1);

// Writes `out` in `format` to `stream`. Throws UsageError when the command has no such view.
void print_output(std::ostream& stream, const Output& out, Format format);

// --field: the named fields of each element of `out` (its items, else its document's elements,
// else the document itself), tab-separated, one line each: strings as they are (tabs and
// line ends escaped as \t, \n), null as nothing, anything else as JSON.
void print_fields(std::ostream& stream, const Output& out, const std::vector<std::string>& fields);

// Renders a table with aligned columns.
std::string render_table(const Table& table);

}  // namespace queuectl
