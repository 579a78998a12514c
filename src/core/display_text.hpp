// Text as a terminal shows it: characters a terminal would act on made visible, widths in
// columns (not bytes), and cuts on character boundaries. Widths come from libutf8proc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace queuectl {

// Whether `text` holds a character that visible_text escapes: a byte that is not part of
// well-formed UTF-8, a C0 or C1 control character, DEL, a line or paragraph separator
// (U+2028, U+2029) or a bidirectional embedding, override or isolate (U+202A-U+202E,
// U+2066-U+2069), any of which makes a terminal move, clear or reorder what it shows.
bool has_control_chars(std::string_view text);

// `text` with each such character written as a visible escape: \n, \r and \t; \xHH for
// other C0 controls, DEL and bytes that are not UTF-8; \uHHHH for C1 controls and the
// separators and bidirectional controls above. A backslash is left as it is. With
// `keep_newlines`, line feeds stay line feeds (for multi-line text printed as lines).
std::string visible_text(std::string_view text, bool keep_newlines = false);

// The same escape for one character that needs one ("\x1b", "\u009b"), or "" when `text`
// starts with a character that does not; `*length` gets the bytes the character took.
std::string visible_escape(std::string_view text, std::size_t* length);

// Columns that `text` takes on a terminal, counted per grapheme cluster: East Asian wide
// characters and emoji 2, combining marks 0. `text` is valid UTF-8 without control
// characters, as visible_text returns it (other bytes count 1 column each).
std::size_t display_width(std::string_view text);

// `text` in at most `width` columns: as it is when it fits, else cut at a grapheme
// boundary and ended with "…" (one column). Never splits a UTF-8 sequence.
std::string fit_width(std::string_view text, std::size_t width);

// `text` followed by spaces up to `width` columns (nothing added when it is wider).
std::string pad_to_width(std::string_view text, std::size_t width);

}  // namespace queuectl
