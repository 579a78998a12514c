// `queuectl top`'s frame: the data of one TopSnapshot as lines of text for a terminal of a
// given size, and as JSON for --once -o json. Pure: no terminal, no database.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/top_repository.hpp"

namespace queuectl {

// What the frame says about itself, beside the data.
struct TopFrameInfo {
  std::string source;    // the database, its URL redacted
  std::string interval;  // "1s"; empty: not refreshing (--once)
  bool keys = false;     // the footer names the keys (q quits)
  // Set while the database does not answer: the frame keeps the last data it read (its
  // clock says when) and says this on the line after the title.
  std::string trouble;
};

// Most workers and failures a frame shows (the statements' limits).
inline constexpr int kTopWorkers = 5;
inline constexpr int kTopFailures = 5;

// The frame in lines of at most `width` display columns, each escaped (visible_text) so
// that no text from the table can drive the terminal. With a `height`, at most that many
// lines: workers and failures give way first (down to one each), then queues, with a line
// saying how many more there are.
std::vector<std::string> render_top(const TopSnapshot& snap, const TopFrameInfo& info,
                                    std::size_t width, std::optional<std::size_t> height);

// The frame's data as one JSON object: now, queues, workers, failures.
nlohmann::ordered_json top_json(const TopSnapshot& snap);

// A count in at most `width` columns: as it is when it fits, else shortened ("12.3k",
// "4.5M", "12G").
std::string compact_count(std::int64_t n, std::size_t width);

}  // namespace queuectl
