#include "cli/input.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "core/errors.hpp"
#include "core/json_text.hpp"
#include "core/validate.hpp"

namespace queuectl {

std::string read_input(const std::string& path) {
  std::ostringstream buf;
  if (path == "-") {
    buf << std::cin.rdbuf();
    return buf.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read '" + path + "': no such file or not readable");
  buf << in.rdbuf();
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

std::string default_worker_id() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "unknown");
  return std::string(host) + ":" + std::to_string(getpid());
}

Duration duration_option(const std::string& text, const char* what, Duration fallback) {
  return text.empty() ? fallback : Duration::parse(text, what);
}

LineObject parse_line_object(const std::string& line) {
  // The line is an object around its values: one level more than a value may nest.
  if (json_depth(line) > kMaxJsonDepth + 1)
    throw UsageError("nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  // A NUL byte is not JSON (the parser would stop there and drop the rest of the line).
  if (line.find('\0') != std::string::npos)
    throw UsageError("not valid JSON: it contains a NUL byte");
  nlohmann::ordered_json doc;
  CompactJson compact = compact_json(line, kMaxJsonDepth + 1, &doc);
  if (!compact.valid || !doc.is_object()) throw UsageError("not a JSON object");
  // The parsed object holds each key once, with its last value: so does the text.
  std::map<std::string, std::string> texts;
  for (auto& [key, text] : compact.members) texts[key] = std::move(text);
  std::vector<LineObject::Member> members;
  for (auto& [key, value] : doc.items())
    members.emplace_back(key, LineValue(std::move(value), std::move(texts[key])));
  return LineObject(std::move(members));
}

}  // namespace queuectl
