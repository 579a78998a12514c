// Checks on input, done before anything is written. Each throws UsageError naming
// the field and the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace queuectl {

constexpr std::size_t kDefaultMaxPayload = 1024 * 1024;

// Queue names: [A-Za-z0-9._:-]{1,64}.
void validate_queue_name(std::string_view name);
// JSON nested deeper than this many arrays or objects is refused: MariaDB's JSON_VALID
// refuses 32, and one limit for all backends keeps a payload portable.
constexpr std::size_t kMaxJsonDepth = 31;
// A JSON document, at most `max_bytes` long, nested at most kMaxJsonDepth levels, with no
// NUL character; returns it compacted (numbers keep the text they were written with).
std::string validate_json(std::string_view text, std::string_view what, std::size_t max_bytes);
// How deeply objects and arrays nest in `text` (a quick scan that tolerates invalid JSON),
// for checking a document before a recursive parser or printer sees it.
std::size_t json_depth(std::string_view text);
// "Printable", for every name and key below: valid UTF-8 without a character a terminal
// would act on (C0 and C1 controls, DEL, line separators, bidirectional overrides; see
// has_control_chars in core/display_text.hpp).
// Dedupe keys: 1 to 255 bytes of printable text.
void validate_key(std::string_view key, std::string_view what);
// A job id: a positive 64-bit integer written in decimal.
std::int64_t parse_job_id(std::string_view text);
// A positive integer option such as --limit or --batch.
void validate_positive(long long value, std::string_view what);
// Worker identities: 1 to 128 printable characters.
// A lock token as given on the command line or in ack --from: printable UTF-8, so that no
// backend meets bytes its text type refuses. Throws UsageError naming `what`.
void validate_token(std::string_view token, std::string_view what = "--token");
void validate_worker(std::string_view worker);
// Free text such as --error: valid UTF-8, at most `max_bytes`.
void validate_text(std::string_view text, std::string_view what, std::size_t max_bytes);

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or values past
// U+10FFFF).
bool is_valid_utf8(std::string_view text);
// `text` with every byte that is not part of a well-formed UTF-8 sequence replaced by
// U+FFFD, so that a command's raw output can be stored in a text column.
std::string to_valid_utf8(std::string_view text);

}  // namespace queuectl
