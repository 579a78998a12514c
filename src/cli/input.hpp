// Reading what users hand in: files or stdin, line by line, and small option parsers.
#pragma once

#include <string>
#include <vector>

#include "core/duration.hpp"

namespace queuectl {

// The whole of FILE, or of stdin for "-". Throws UsageError when it cannot be read.
std::string read_input(const std::string& path);
// The lines of FILE or stdin ("-"), without their line ends.
std::vector<std::string> read_lines(const std::string& path);
// "host:pid", the default worker identity.
std::string default_worker_id();
// An optional duration option: empty text means `fallback`.
Duration duration_option(const std::string& text, const char* what, Duration fallback);

}  // namespace queuectl
