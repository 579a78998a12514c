#include "core/display_text.hpp"

#include <utf8proc.h>

#include <algorithm>
#include <cstdio>

namespace queuectl {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026, one column

// The code point at text[i] and the bytes it takes; -1 for a byte that starts no
// well-formed UTF-8 sequence (length 1).
utf8proc_int32_t code_point(std::string_view text, std::size_t i, std::size_t* length) {
  utf8proc_int32_t cp = -1;
  const auto* at = reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i);
  utf8proc_ssize_t n = utf8proc_iterate(at, static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
  if (n <= 0 || cp < 0) {
    *length = 1;
    return -1;
  }
  *length = static_cast<std::size_t>(n);
  return cp;
}

bool is_control(utf8proc_int32_t cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

// Columns of one code point inside a grapheme cluster (emoji presentation selector: 2).
int code_point_width(utf8proc_int32_t cp) {
  if (cp < 0) return 1;
  if (cp == 0xfe0f) return 2;
  return utf8proc_charwidth(cp);
}

// Calls `each(start, length, columns)` for each grapheme cluster of `text`.
template <typename Each>
void for_each_grapheme(std::string_view text, Each each) {
  utf8proc_int32_t state = 0, previous = -1;
  std::size_t start = 0;
  int columns = 0;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = 0;
    const utf8proc_int32_t cp = code_point(text, i, &n);
    const bool breaks =
        i == 0 || previous < 0 || cp < 0 || utf8proc_grapheme_break_stateful(previous, cp, &state);
    if (breaks && i > 0) {
      if (!each(start, i - start, columns)) return;
      start = i;
      columns = 0;
    }
    // A cluster is as wide as its widest code point: "e" + combining accent is 1, an
    // emoji joined by ZWJ is 2, not the sum.
    columns = std::max(columns, code_point_width(cp));
    previous = cp;
    i += n;
  }
  if (start < text.size()) each(start, text.size() - start, columns);
}

}  // namespace

std::string visible_escape(std::string_view text, std::size_t* length) {
  *length = 0;
  if (text.empty()) return "";
  std::size_t n = 0;
  const utf8proc_int32_t cp = code_point(text, 0, &n);
  *length = n;
  char buf[12];
  if (cp < 0) {
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[0]));
    return buf;
  }
  if (!is_control(cp)) return "";
  if (cp == '\n') return "\\n";
  if (cp == '\t') return "\\t";
  if (cp == '\r') return "\\r";
  if (cp < 0x80)
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
  else
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
  return buf;
}

bool has_control_chars(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = 0;
    const utf8proc_int32_t cp = code_point(text, i, &n);
    if (cp < 0 || is_control(cp)) return true;
    i += n;
  }
  return false;
}

std::string visible_text(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    // Plain ASCII, the common case, without a decode.
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c == '\n' && keep_newlines) {
      out += '\n';
      ++i;
      continue;
    }
    std::size_t n = 0;
    std::string escape = visible_escape(text.substr(i), &n);
    if (escape.empty())
      out.append(text.substr(i, n));
    else
      out += escape;
    i += n;
  }
  return out;
}

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for_each_grapheme(text, [&](std::size_t, std::size_t, int columns) {
    width += static_cast<std::size_t>(columns);
    return true;
  });
  return width;
}

std::string fit_width(std::string_view text, std::size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return "";
  // Room for the ellipsis: take whole clusters up to width - 1 columns.
  std::size_t used = 0, end = 0;
  for_each_grapheme(text, [&](std::size_t start, std::size_t length, int columns) {
    if (used + static_cast<std::size_t>(columns) > width - 1) return false;
    used += static_cast<std::size_t>(columns);
    end = start + length;
    return true;
  });
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::string pad_to_width(std::string_view text, std::size_t width) {
  const std::size_t w = display_width(text);
  std::string out(text);
  if (w < width) out.append(width - w, ' ');
  return out;
}

}  // namespace queuectl
