// Reading what users hand in: files or stdin, line by line, and small option parsers.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
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
// What `--from` reads: NDJSON, one object a line, or one JSON array of objects (what
// `claim -o json` prints), whose elements then take the place of the lines.
struct InputRecords {
  std::vector<std::string> items;  // each line, or each element's text as written
  const char* unit = "line";       // "line" or "element", for messages
};
InputRecords read_records(const std::string& path);
// "host:pid", the default worker identity.
std::string default_worker_id();
// An optional duration option: empty text means `fallback`.
Duration duration_option(const std::string& text, const char* what, Duration fallback);

}  // namespace queuectl
