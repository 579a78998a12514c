#include "core/validate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <utility>

#include "core/display_text.hpp"
#include "core/errors.hpp"
#include "core/json_text.hpp"

namespace queuectl {
namespace {

// Shows an input in a one-line error message: at most 40 bytes, control characters
// escaped (\x1b), so that a rejected value never drives the terminal.
std::string shown(std::string_view text) {
  std::string s = visible_text(text.substr(0, 40));
  if (text.size() > 40) s += "...";
  return s;
}

// No character a terminal would act on (C0 and C1 controls, DEL, line separators,
// bidirectional overrides: has_control_chars), and valid UTF-8: one rule for every name
// and key queuectl writes, so that whatever it stores is safe to show.
bool printable(std::string_view s) {
  return !has_control_chars(s);
}

// Length of the well-formed UTF-8 sequence at s[i], or 0 when there is none.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

void validate_queue_name(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 64;
  for (unsigned char c : name)
    ok = ok && (std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-');
  if (!ok)
    throw UsageError("invalid queue name '" + shown(name) +
                     "': use 1 to 64 of A-Z a-z 0-9 . _ : -");
}

std::string validate_json(std::string_view text, std::string_view what, std::size_t max_bytes) {
  if (text.size() > max_bytes)
    throw UsageError(std::string(what) + " is " + std::to_string(text.size()) +
                     " bytes, over the limit of " + std::to_string(max_bytes) +
                     " (raise it with --max-payload)");
  // JSON text cannot hold a raw NUL byte; a C-string reader would end the document there
  // and drop the rest without a word.
  if (text.find('\0') != std::string_view::npos)
    throw UsageError(std::string(what) + " is not valid JSON: it contains a NUL byte");
  CompactJson json = compact_json(text, kMaxJsonDepth);
  if (json.too_deep)
    throw UsageError(std::string(what) + " is nested deeper than " + std::to_string(kMaxJsonDepth) +
                     " levels");
  // PostgreSQL's jsonb cannot store a NUL character (\u0000), so no backend takes it, and
  // a payload moves between backends unchanged.
  if (json.nul_in_string)
    throw UsageError(std::string(what) +
                     " contains \\u0000 (a NUL character), which cannot be stored");
  if (!json.valid)
    throw UsageError(std::string(what) + " is not valid JSON: '" + shown(text) + "'");
  if (!json.unstorable_number.empty())
    throw UsageError(std::string(what) + " holds the number " + shown(json.unstorable_number) +
                     ", beyond what every backend stores (magnitudes from 1e-16383 to "
                     "1e131071; write it as a string)");
  return std::move(json.text);
}

std::size_t json_depth(std::string_view text) {
  std::size_t depth = 0, deepest = 0;
  JsonStringTracker strings;
  for (char c : text) {
    if (strings.in_string(c)) continue;
    if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

void validate_key(std::string_view key, std::string_view what) {
  if (key.empty() || key.size() > 255 || !printable(key) || !is_valid_utf8(key))
    throw UsageError("invalid " + std::string(what) + " '" + shown(key) +
                     "': use 1 to 255 printable characters");
}

std::int64_t parse_job_id(std::string_view text) {
  bool ok = !text.empty();
  for (unsigned char c : text) ok = ok && std::isdigit(c);
  std::int64_t id = 0;
  if (ok) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec == std::errc::result_out_of_range)
      throw UsageError("job id '" + shown(text) + "' is out of range (at most " +
                       std::to_string(std::numeric_limits<std::int64_t>::max()) + ")");
    ok = ec == std::errc() && end == text.data() + text.size();
  }
  if (!ok || id <= 0)
    throw UsageError("invalid job id '" + shown(text) + "': expected a positive integer");
  return id;
}

void validate_positive(long long value, std::string_view what) {
  if (value <= 0)
    throw UsageError("invalid " + std::string(what) + " " + std::to_string(value) +
                     ": must be a positive integer");
}

void validate_token(std::string_view token, std::string_view what) {
  if (token.empty() || token.size() > 255 || !printable(token) || !is_valid_utf8(token))
    throw UsageError("invalid " + std::string(what) + " '" + shown(token) +
                     "': a lock token is 1 to 255 printable characters (claim prints it)");
}

void validate_worker(std::string_view worker) {
  if (worker.empty() || worker.size() > 128 || !printable(worker) || !is_valid_utf8(worker))
    throw UsageError("invalid worker id '" + shown(worker) +
                     "': use 1 to 128 printable characters");
}

void validate_text(std::string_view text, std::string_view what, std::size_t max_bytes) {
  if (text.size() > max_bytes)
    throw UsageError(std::string(what) + " is longer than " + std::to_string(max_bytes) + " bytes");
  if (!is_valid_utf8(text)) throw UsageError(std::string(what) + " is not valid UTF-8 text");
}

}  // namespace queuectl
