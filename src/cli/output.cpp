#include "cli/output.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <random>

#include "core/display_text.hpp"
#include "core/errors.hpp"

namespace queuectl {

namespace {
constexpr auto kReplace = nlohmann::ordered_json::error_handler_t::replace;

// A raw_json value is the string "\x01" + a per-run random tag + ":" + hex of its text +
// "\x01". Hex and the tag pass through the dump unescaped, and the dump writes \x01 as
// \u0001. A payload's own string cannot pass for one: it would need the tag, which is
// drawn afresh in every run and never printed.
const std::string& raw_tag() {
  static const std::string tag = [] {
    std::random_device rd;
    std::string t;
    for (int i = 0; i < 4; ++i) {
      char part[9];
      std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(rd()));
      t += part;
    }
    return t;
  }();
  return tag;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

nlohmann::ordered_json raw_json(const std::string& compact_text) {
  static const char* digits = "0123456789abcdef";
  std::string marked = "\x01" + raw_tag() + ":";
  marked.reserve(compact_text.size() * 2 + 40);
  for (unsigned char c : compact_text) {
    marked += digits[c >> 4];
    marked += digits[c & 15];
  }
  marked += "\x01";
  return nlohmann::ordered_json(marked);
}

bool is_raw_json(const nlohmann::ordered_json& value) {
  if (!value.is_string()) return false;
  const auto& text = value.get_ref<const std::string&>();
  const std::string start = "\x01" + raw_tag() + ":";
  return text.size() > start.size() && text.compare(0, start.size(), start) == 0 &&
         text.back() == '\x01';
}

std::string dump_json(const nlohmann::ordered_json& value, int indent) {
  std::string text = value.dump(indent, ' ', false, kReplace);
  const std::string start = "\"\\u0001" + raw_tag() + ":", end = "\\u0001\"";
  std::string out;
  std::size_t from = 0;
  for (auto at = text.find(start); at != std::string::npos; at = text.find(start, from)) {
    const std::size_t hex = at + start.size();
    const std::size_t stop = text.find(end, hex);
    if (stop == std::string::npos) break;
    std::string raw;
    bool ok = (stop - hex) % 2 == 0;
    for (std::size_t i = hex; ok && i < stop; i += 2) {
      const int hi = hex_value(text[i]), lo = hex_value(text[i + 1]);
      ok = hi >= 0 && lo >= 0;
      raw += static_cast<char>(hi * 16 + lo);
    }
    out.append(text, from, at - from);
    if (ok)
      out += raw;
    else
      out.append(text, at, stop + end.size() - at);
    from = stop + end.size();
  }
  out.append(text, from, std::string::npos);
  return out;
}

const std::vector<std::string>& output_format_names() {
  static const std::vector<std::string> names = {"table", "wide", "json", "ndjson", "prometheus"};
  return names;
}

Format parse_format(const std::string& text) {
  if (text == "table" || text == "wide") return Format::table;
  if (text == "json") return Format::json;
  if (text == "ndjson") return Format::ndjson;
  if (text == "prometheus") return Format::prometheus;
  throw UsageError("unknown output format '" + text +
                   "': expected table, wide, json, ndjson or prometheus");
}

bool is_wide_format(const std::string& text) {
  return text == "wide";
}

namespace {

// Column widths that fit `limit` columns in all: the widest shrinkable column gives one
// column at a time, shrink_first columns before shrink ones, none below its header (or 8).
void fit_columns(std::vector<std::size_t>& width, const std::vector<std::size_t>& least,
                 const std::vector<Fit>& fit, std::size_t limit) {
  auto total = [&] {
    std::size_t t = 2 * (width.size() - 1);
    for (std::size_t w : width) t += w;
    return t;
  };
  for (Fit pass : {Fit::shrink_first, Fit::shrink}) {
    while (total() > limit) {
      std::size_t widest = width.size();
      for (std::size_t c = 0; c < width.size(); ++c)
        if (c < fit.size() && fit[c] == pass && width[c] > least[c] &&
            (widest == width.size() || width[c] > width[widest]))
          widest = c;
      if (widest == width.size()) break;
      --width[widest];
    }
  }
}

}  // namespace

std::string render_table(const Table& table, std::optional<std::size_t> limit) {
  const std::size_t columns = table.headers.size();
  if (columns == 0) return "";
  std::vector<std::vector<std::string>> cells;
  cells.reserve(table.rows.size() + 1);
  cells.emplace_back();
  for (const auto& h : table.headers) cells.back().push_back(visible_text(h));
  for (const auto& row : table.rows) {
    cells.emplace_back();
    for (std::size_t c = 0; c < row.size() && c < columns; ++c)
      cells.back().push_back(visible_text(row[c]));
  }
  std::vector<std::size_t> width(columns, 0), least(columns, 0);
  for (const auto& row : cells)
    for (std::size_t c = 0; c < row.size(); ++c)
      width[c] = std::max(width[c], display_width(row[c]));
  for (std::size_t c = 0; c < columns; ++c)
    least[c] = std::min(width[c], std::max<std::size_t>(display_width(cells[0][c]), 8));
  if (limit) fit_columns(width, least, table.fit, *limit);
  std::string out;
  for (const auto& row : cells) {
    std::string l;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string shown = fit_width(row[c], width[c]);
      l += c + 1 < row.size() ? pad_to_width(shown, width[c] + 2) : shown;
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  }
  return out;
}

void print_fields(std::ostream& stream, const Output& out, const std::vector<std::string>& fields) {
  const nlohmann::ordered_json& all = out.items ? *out.items : out.document;
  auto print_one = [&](const nlohmann::ordered_json& element) {
    std::string line;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i) line += '\t';
      if (!element.is_object() || !element.contains(fields[i])) continue;
      const auto& v = element.at(fields[i]);
      if (v.is_null()) continue;
      if (!v.is_string() || is_raw_json(v)) {
        line += dump_json(v);
        continue;
      }
      for (char c : v.get<std::string>()) {
        if (c == '\t')
          line += "\\t";
        else if (c == '\n')
          line += "\\n";
        else if (c == '\\')
          line += "\\\\";
        else
          line += c;
      }
    }
    stream << line << "\n";
  };
  if (all.is_array())
    for (const auto& element : all) print_one(element);
  else if (!all.is_null())
    print_one(all);
  stream.flush();
}

void print_output(std::ostream& stream, const Output& out, Format format, const TableStyle& style) {
  switch (format) {
    case Format::json:
      // Invalid UTF-8 (a worker's stderr, say) is replaced, never a reason to fail.
      stream << dump_json(out.document, 2) << "\n";
      break;
    case Format::ndjson:
      if (out.ndjson_text) {
        stream << *out.ndjson_text;
      } else if (out.items || out.elements) {
        for (const auto& item : out.items ? *out.items : out.document)
          stream << dump_json(item) << "\n";
      } else {
        stream << dump_json(out.document) << "\n";
      }
      break;
    case Format::prometheus:
      if (!out.prometheus) throw UsageError("-o prometheus is only available for `stats`");
      stream << *out.prometheus;
      break;
    case Format::table: {
      const auto& table = style.wide && out.wide_table ? out.wide_table : out.table;
      if (table) stream << render_table(*table, style.width);
      for (const auto& l : out.lines) stream << visible_text(l, true) << "\n";
      break;
    }
  }
  stream.flush();
}

}  // namespace queuectl
