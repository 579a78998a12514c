// What a lease holder may report about its job, checked: from `extend`'s options, or from
// a line a command under `work` writes to its report descriptor (QUEUECTL_REPORT_FD).
//
// The line protocol, one report a line (a line end ends it):
//   progress N        N a whole number 0-100
//   note TEXT         TEXT one line of UTF-8, at most kMaxNoteBytes
//   checkpoint JSON   JSON a document (object, array, ...), at most kMaxCheckpointBytes
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/job.hpp"

namespace queuectl {

inline constexpr std::size_t kMaxNoteBytes = 1024;
// A checkpoint's most bytes (also under a smaller --max-payload): `work` hands it to the next
// attempt in one environment variable, and Linux refuses one over 128 KiB.
inline constexpr std::size_t kMaxCheckpointBytes = 64 * 1024;

// Each check throws UsageError naming `what` (an option or the line's word).
int parse_progress(std::string_view text, std::string_view what);
std::string checked_note(std::string_view text, std::string_view what);
std::string checked_checkpoint(std::string_view text, std::string_view what, std::size_t max_bytes);

// One line of the protocol. Throws UsageError saying what is wrong with it.
JobReport parse_report_line(std::string_view line, std::size_t max_checkpoint_bytes);

}  // namespace queuectl
