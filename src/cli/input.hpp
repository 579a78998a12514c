// Reading what users hand in: files or stdin, line by line, and small option parsers.
#pragma once

#include <algorithm>
#include <exception>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/duration.hpp"

namespace queuectl {

// The whole of FILE, or of stdin for "-". Throws UsageError when it cannot be read.
std::string read_input(const std::string& path);
// The lines of FILE or stdin ("-"), without their line ends.
std::vector<std::string> read_lines(const std::string& path);
// One value of an NDJSON line: the parsed value, for reading small fields such as
// "priority", and, from text(), its text as written on the line without white space, so
// that a payload or result keeps every digit of its numbers (nlohmann's own dump would
// print them back from a double: 12345678901234567890123 as 1.2345678901234568e+22).
class LineValue : public nlohmann::ordered_json {
 public:
  LineValue(nlohmann::ordered_json value, std::string text)
      : nlohmann::ordered_json(std::move(value)), text_(std::move(text)) {}
  // The value as written, compacted: numbers exactly as written. (dump() would print them
  // back from a double.)
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The members of an NDJSON line's object, in order; a repeated key appears once, with its
// last value, as a JSON parser reads it.
class LineObject {
 public:
  using Member = std::pair<std::string, LineValue>;
  explicit LineObject(std::vector<Member> members) : members_(std::move(members)) {}
  const std::vector<Member>& items() const { return members_; }

 private:
  std::vector<Member> members_;
};

// One NDJSON line of `--from` input as a JSON object. Throws UsageError ("not a JSON
// object", or nested too deeply for its values to stay within kMaxJsonDepth) before any
// recursive parser or printer sees it.
LineObject parse_line_object(const std::string& line);
// The same, keeping only the members named in `keys` (every member is still checked as
// JSON): for a caller that reads a few fields of long lines, such as `ack --from` fed by
// `claim -o ndjson`, the values it ignores are never built.
LineObject parse_line_object(const std::string& line, std::initializer_list<std::string_view> keys);
// `message` (an error about a line's value, said by a check shared with the command line)
// with each option named by a key of the line instead: `--max-attempts` becomes
// "max_attempts" for the key max_attempts, so that the message names what the line holds.
std::string with_line_keys(std::string message, std::initializer_list<std::string_view> keys);
// What `--from` reads: NDJSON, one object a line, or one JSON array of objects (what
// `claim -o json` prints), whose elements then take the place of the lines.
struct InputRecords {
  std::vector<std::string> items;  // each line, or each element's text as written
  const char* unit = "line";       // "line" or "element", for messages
};
InputRecords read_records(const std::string& path);
// Reads `lines` with `parse(line, number)` (numbers from 1), skipping lines of nothing but
// characters of `blank`, in up to four slices side by side once each slice would have
// `per_slice` lines: the results in input order, and for bad input what `parse` threw for
// the first bad line (each slice stops at its first).
template <typename T, typename Parse>
std::vector<T> parse_in_slices(const std::vector<std::string>& lines, std::size_t per_slice,
                               const char* blank, Parse parse) {
  const std::size_t slices_wanted =
      std::min<std::size_t>(std::max(std::thread::hardware_concurrency(), 1u), 4);
  const std::size_t slices =
      std::clamp<std::size_t>(lines.size() / std::max<std::size_t>(per_slice, 1), 1, slices_wanted);
  struct Slice {
    std::vector<T> items;
    std::exception_ptr error;
  };
  std::vector<Slice> out(slices);
  auto read_slice = [&](std::size_t k) {
    const std::size_t begin = lines.size() * k / slices, end = lines.size() * (k + 1) / slices;
    try {
      for (std::size_t i = begin; i < end; ++i) {
        if (lines[i].find_first_not_of(blank) == std::string::npos) continue;
        out[k].items.push_back(parse(lines[i], i + 1));
      }
    } catch (...) {
      out[k].error = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  for (std::size_t k = 1; k < slices; ++k) helpers.emplace_back(read_slice, k);
  read_slice(0);
  for (std::thread& t : helpers) t.join();
  std::vector<T> items;
  items.reserve(lines.size());
  for (Slice& slice : out) {
    if (slice.error) std::rethrow_exception(slice.error);
    std::move(slice.items.begin(), slice.items.end(), std::back_inserter(items));
  }
  return items;
}
// "host:pid", the default worker identity.
std::string default_worker_id();
// An optional duration option: empty text means `fallback`.
Duration duration_option(const std::string& text, const char* what, Duration fallback);

}  // namespace queuectl
