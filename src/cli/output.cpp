#include "cli/output.hpp"

#include <algorithm>
#include <ostream>

#include "core/errors.hpp"

namespace queuectl {

namespace {
constexpr auto kReplace = nlohmann::ordered_json::error_handler_t::replace;
}  // namespace

Format parse_format(const std::string& text) {
  if (text == "table") return Format::table;
  if (text == "json") return Format::json;
  if (text == "ndjson") return Format::ndjson;
  if (text == "prometheus") return Format::prometheus;
  throw UsageError("unknown output format '" + text +
                   "': expected table, json, ndjson or prometheus");
}

std::string render_table(const Table& table) {
  std::vector<std::size_t> width(table.headers.size());
  for (std::size_t c = 0; c < width.size(); ++c) width[c] = table.headers[c].size();
  for (const auto& row : table.rows)
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < cells.size() && c < width.size(); ++c) {
      l += cells[c];
      if (c + 1 < cells.size()) l += std::string(width[c] - cells[c].size() + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(table.headers);
  for (const auto& row : table.rows) line(row);
  return out;
}

void print_output(std::ostream& stream, const Output& out, Format format) {
  switch (format) {
    case Format::json:
      // Invalid UTF-8 (a worker's stderr, say) is replaced, never a reason to fail.
      stream << out.document.dump(2, ' ', false, kReplace) << "\n";
      break;
    case Format::ndjson:
      if (out.items) {
        for (const auto& item : *out.items) stream << item.dump(-1, ' ', false, kReplace) << "\n";
      } else {
        stream << out.document.dump(-1, ' ', false, kReplace) << "\n";
      }
      break;
    case Format::prometheus:
      if (!out.prometheus) throw UsageError("-o prometheus is only available for `stats`");
      stream << *out.prometheus;
      break;
    case Format::table:
      if (out.table) stream << render_table(*out.table);
      for (const auto& l : out.lines) stream << l << "\n";
      break;
  }
  stream.flush();
}

}  // namespace queuectl
