// Reading what users hand in: files or stdin, line by line, and small option parsers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/duration.hpp"

namespace queuectl {

// The whole of FILE, or of stdin for "-". Throws UsageError when it cannot be read.
std::string read_input(const std::string& path);
// The lines of FILE or stdin ("-"), without their line ends.
std::vector<std::string> read_lines(const std::string& path);
// One NDJSON line of `--from` input as a JSON object. Throws UsageError ("not a JSON
// object", or nested too deeply for its values to stay within kMaxJsonDepth) before any
// recursive parser or printer sees it.
nlohmann::ordered_json parse_line_object(const std::string& line);
// "host:pid", the default worker identity.
std::string default_worker_id();
// An optional duration option: empty text means `fallback`.
Duration duration_option(const std::string& text, const char* what, Duration fallback);

}  // namespace queuectl
