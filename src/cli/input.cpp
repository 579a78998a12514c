#include "cli/input.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "core/errors.hpp"
#include "core/json_text.hpp"
#include "core/validate.hpp"

namespace queuectl {

namespace {

// Standard input, whole, by read(2) in large chunks. (Through std::cin, in sync with stdio,
// every byte was a getc and often an ungetc: a third of `ack --from -`'s time on 1,000
// lines.) Nothing else in queuectl reads standard input, so no buffer holds any of it.
std::string read_stdin() {
  std::string text;
  std::vector<char> chunk(1 << 16);
  for (;;) {
    const ssize_t n = ::read(STDIN_FILENO, chunk.data(), chunk.size());
    if (n > 0) {
      text.append(chunk.data(), static_cast<std::size_t>(n));
    } else if (n == 0) {
      return text;
    } else if (errno != EINTR) {
      throw UsageError(std::string("cannot read standard input: ") + std::strerror(errno));
    }
  }
}

}  // namespace

std::string read_input(const std::string& path) {
  if (path == "-") return read_stdin();
  // A folder opens as a stream on Linux and reads as nothing: `--from DIR` took it for an
  // empty file, printed "0 job(s)" and exited 0, so a CI step with a wrong path passed.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError("cannot read '" + path + "': it is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read '" + path + "': no such file or not readable");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw UsageError("cannot read '" + path + "': " + std::strerror(errno));
  return buf.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_input(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

namespace {

// The top-level elements of a JSON array, each as its text, split at the commas outside
// strings at depth 1. The array is checked first, so the text is known to be valid.
std::vector<std::string> array_elements(const std::string& text) {
  if (json_depth(text) > kMaxJsonDepth + 2)
    throw UsageError("input: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  nlohmann::ordered_json doc;
  if (!compact_json(text, kMaxJsonDepth + 2, &doc).valid || !doc.is_array())
    throw UsageError("input starts with '[' but is not a JSON array");
  std::vector<std::string> out;
  JsonStringTracker strings;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (strings.in_string(c)) continue;
    if (c == '[' || c == '{') {
      if (++depth == 1) start = i + 1;
    } else if ((c == ']' || c == '}') && --depth == 0) {
      if (text.find_first_not_of(" \t\r\n", start) < i)
        out.push_back(text.substr(start, i - start));
    } else if (c == ',' && depth == 1) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace

InputRecords read_records(const std::string& path) {
  const std::string text = read_input(path);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') return {array_elements(text), "element"};
  InputRecords out;
  // Each line without its end (\n, or \r\n), as std::getline splits them: no line after
  // a final \n.
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::size_t stop = end;
    if (stop > at && text[stop - 1] == '\r') --stop;
    out.items.emplace_back(text, at, stop - at);
    at = end + 1;
  }
  return out;
}

std::string default_worker_id() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  return std::string(host) + ":" + std::to_string(getpid());
}

Duration duration_option(const std::string& text, const char* what, Duration fallback) {
  return text.empty() ? fallback : Duration::parse(text, what);
}

namespace {

// What every line must pass before any parser sees it.
void check_line(const std::string& line) {
  // The line is an object around its values: one level more than a value may nest.
  if (json_depth(line) > kMaxJsonDepth + 1)
    throw UsageError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  // A NUL byte is not JSON (the parser would stop there and drop the rest of the line).
  if (line.find('\0') != std::string::npos)
    throw UsageError("not valid JSON: it contains a NUL byte");
}

// A key given twice in one line is refused, as a URL's parameter is: a parser would take
// the last value unseen (`{"schedule": "@daily", ..., "schedule": "@hourly"}`).
void refuse_repeated_keys(const std::vector<std::pair<std::string, std::string>>& members) {
  std::vector<std::string_view> keys;
  keys.reserve(members.size());
  for (const auto& member : members) keys.push_back(member.first);
  std::sort(keys.begin(), keys.end());
  const auto twice = std::adjacent_find(keys.begin(), keys.end());
  if (twice != keys.end())
    throw UsageError("\"" + std::string(twice->substr(0, 40)) +
                     "\" is given twice: give each key once");
}

}  // namespace

LineObject parse_line_object(const std::string& line,
                             std::initializer_list<std::string_view> keys) {
  check_line(line);
  // One pass checks and compacts the whole line; only the kept members are parsed again,
  // each from its own compact text (numbers past a double's range read as in the whole
  // line's parse).
  CompactJson compact = compact_json(line, kMaxJsonDepth + 1);
  if (!compact.valid || compact.text.empty() || compact.text.front() != '{')
    throw UsageError("not a JSON object");
  refuse_repeated_keys(compact.members);
  std::vector<LineObject::Member> members;
  for (auto& [key, text] : compact.members) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    nlohmann::ordered_json value;
    compact_json(text, kMaxJsonDepth, &value);
    members.emplace_back(key, LineValue(std::move(value), std::move(text)));
  }
  return LineObject(std::move(members));
}

std::string with_line_keys(std::string message, std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    std::string option = "--" + std::string(key);
    std::replace(option.begin(), option.end(), '_', '-');
    const std::string quoted = "\"" + std::string(key) + "\"";
    for (std::size_t at = message.find(option); at != std::string::npos;
         at = message.find(option, at)) {
      const std::size_t end = at + option.size();
      // A whole option name only: --delay, not the start of --delay-more.
      if (end < message.size() &&
          (std::isalnum(static_cast<unsigned char>(message[end])) || message[end] == '-')) {
        at = end;
        continue;
      }
      message.replace(at, option.size(), quoted);
      at += quoted.size();
    }
  }
  return message;
}

LineObject parse_line_object(const std::string& line) {
  check_line(line);
  nlohmann::ordered_json doc;
  CompactJson compact = compact_json(line, kMaxJsonDepth + 1, &doc);
  if (!compact.valid || !doc.is_object()) throw UsageError("not a JSON object");
  refuse_repeated_keys(compact.members);
  std::map<std::string, std::string> texts;
  for (auto& [key, text] : compact.members) texts[key] = std::move(text);
  std::vector<LineObject::Member> members;
  for (auto& [key, value] : doc.items())
    members.emplace_back(key, LineValue(std::move(value), std::move(texts[key])));
  return LineObject(std::move(members));
}

}  // namespace queuectl
