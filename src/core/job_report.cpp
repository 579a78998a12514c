#include "core/job_report.hpp"

#include <algorithm>

#include "core/errors.hpp"
#include "core/validate.hpp"

namespace queuectl {

int parse_progress(std::string_view text, std::string_view what) {
  int value = 0;
  bool ok = !text.empty() && text.size() <= 3;
  for (char c : text) {
    if (c < '0' || c > '9') ok = false;
    value = value * 10 + (c - '0');
  }
  if (!ok || value > 100)
    throw UsageError(std::string(what) + " must be a whole number from 0 to 100, not '" +
                     std::string(text.substr(0, 20)) + "'");
  return value;
}

std::string checked_note(std::string_view text, std::string_view what) {
  if (text.empty()) throw UsageError(std::string(what) + " needs a text");
  validate_text(text, what, kMaxNoteBytes);
  for (char c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      throw UsageError(std::string(what) + " must be one line without control characters");
  return std::string(text);
}

std::string checked_checkpoint(std::string_view text, std::string_view what,
                               std::size_t max_bytes) {
  // The 64 KiB cap is fixed (the next attempt gets the checkpoint in its environment, where
  // Linux takes at most 128 KiB a variable): --max-payload can only lower it.
  if (max_bytes >= kMaxCheckpointBytes && text.size() > kMaxCheckpointBytes)
    throw UsageError(std::string(what) + " is " + std::to_string(text.size()) +
                     " bytes, over the limit of " + std::to_string(kMaxCheckpointBytes) +
                     " for a checkpoint: keep the bulk elsewhere (a file, a table) and checkpoint "
                     "where to find it");
  return validate_json(text, what, std::min(max_bytes, kMaxCheckpointBytes));
}

JobReport parse_report_line(std::string_view line, std::size_t max_checkpoint_bytes) {
  const std::size_t space = line.find(' ');
  const std::string_view word = line.substr(0, space);
  const std::string_view rest =
      space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
  JobReport r;
  if (word == "progress")
    r.progress = parse_progress(rest, "progress");
  else if (word == "note")
    r.note = checked_note(rest, "note");
  else if (word == "checkpoint")
    r.checkpoint = checked_checkpoint(rest, "checkpoint", max_checkpoint_bytes);
  else
    throw UsageError("'" + std::string(word.substr(0, 20)) +
                     "' is not a report (progress N, note TEXT or checkpoint JSON)");
  return r;
}

}  // namespace queuectl
