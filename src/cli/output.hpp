// What a command hands back for printing, and the one place that writes it to stdout
// as a table (fitted to the terminal; -o wide for more columns), one JSON document, NDJSON
// or Prometheus text.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace queuectl {

enum class Format { table, json, ndjson, prometheus };

// Every value -o takes, in the order help lists them.
const std::vector<std::string>& output_format_names();
// Parses -o; "wide" is the table with more columns (Format::table, see is_wide_format).
// Throws UsageError.
Format parse_format(const std::string& text);
// Whether -o asks for the wide table: absolute times, tokens and the other columns the
// default table leaves out for width.
bool is_wide_format(const std::string& text);

// How a column gives way when a table is wider than the terminal: shrink_first columns
// (payloads, errors) are cut first, then shrink columns (names, keys); keep columns (ids,
// statuses, counts, times) are never cut.
enum class Fit { keep, shrink, shrink_first };

struct Table {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
  std::vector<Fit> fit = {};  // per column; a column without an entry is kept whole
};

// How the table view is printed: the wide table when the output has one, and the width to
// fit (none: rows are never cut).
struct TableStyle {
  bool wide = false;
  std::optional<std::size_t> width;
};

struct Output {
  nlohmann::ordered_json document;              // -o json, and -o ndjson when `items` is unset
  std::optional<nlohmann::ordered_json> items;  // -o ndjson: one element a line
  std::optional<Table> table;                   // -o table
  std::optional<Table> wide_table;              // -o wide, where it has more to show
  std::vector<std::string> lines;               // -o table: plain lines after the table
  std::optional<std::string> prometheus;        // -o prometheus, where the command supports it
  // -o ndjson: the lines already written (jobs_view's fast path); `document` is then unset.
  std::optional<std::string> ndjson_text;
  // -o ndjson (and --field) when `items` is unset: each element of the array `document`, one
  // a line (the same as items = document, without a copy of every element).
  bool elements = false;
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
// In the table view every cell and line has its control characters made visible
// (visible_text), so that data never drives the terminal.
void print_output(std::ostream& stream, const Output& out, Format format,
                  const TableStyle& style = {});

// --field: the named fields of each element of `out` (its items, else its document's elements,
// else the document itself), tab-separated, one line each: strings as they are (tabs and
// line ends escaped as \t, \n), null as nothing, anything else as JSON.
void print_fields(std::ostream& stream, const Output& out, const std::vector<std::string>& fields);

// Renders a table with columns aligned by display width (not bytes), control characters
// made visible. Given a `width`, columns give way as Table::fit says until the rows fit
// (cut on character boundaries, ending in "…"); without one, nothing is cut.
std::string render_table(const Table& table, std::optional<std::size_t> width = std::nullopt);

}  // namespace queuectl
