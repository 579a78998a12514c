// JSON text checked and rewritten compactly in one pass, every number kept exactly as it
// was written. A parsed nlohmann document holds a number as a double or a 64-bit integer,
// so printing it back rounds 12345678901234567890123, prints 1.50 as 1.5 and -0 as 0, and
// its parser refuses 1e400; all three databases store each of them as written.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace queuectl {

// Follows a left-to-right scan of JSON text: fed each character in order, tells whether it
// belongs to a string (its quotes included), so that brackets and digits inside strings are
// not taken for structure.
class JsonStringTracker {
 public:
  bool in_string(char c) {
    if (inside_) {
      if (escaped_)
        escaped_ = false;
      else if (c == '\\')
        escaped_ = true;
      else if (c == '"')
        inside_ = false;
      return true;
    }
    inside_ = c == '"';
    return inside_;
  }

 private:
  bool inside_ = false, escaped_ = false;
};

struct CompactJson {
  bool valid = false;          // one JSON document, nested at most max_depth levels
  bool too_deep = false;       // refused because it nests deeper than max_depth
  bool nul_in_string = false;  // some string or key holds \u0000
  // The first number no backend stores (see storable_json_number), as written; empty if none.
  std::string unstorable_number;
  // The document without insignificant white space; numbers as written.
  std::string text;
  // When the document is an object: each member's key and the compact text of its value,
  // in document order (a repeated key appears each time).
  std::vector<std::pair<std::string, std::string>> members;
};

// Checks `text` as one JSON document and compacts it. Parsing is not recursive, so no
// nesting can overflow the stack; objects and arrays nested deeper than `max_depth` stop it.
// With `parsed`, a valid document is also parsed into it, each number past a double's range
// read as +-1e308 (only `text` keeps such a number as written).
CompactJson compact_json(std::string_view text, std::size_t max_depth,
                         nlohmann::ordered_json* parsed = nullptr);

// Whether a JSON number (well-formed) is one every backend stores: PostgreSQL's jsonb keeps
// numbers as numeric, whose first significant digit may stand at most 131,071 places
// before the decimal point and whose last at most 16,383 places after it (1e131071 and
// 1e-16383 are stored; 1e131072 and 1e-16384 are refused). MariaDB and SQLite store the text.
bool storable_json_number(std::string_view number);

// Appends `v` as a JSON string, escaped exactly as nlohmann's dump() escapes it (", \ and
// the control characters; b, f, n, r and t by name, the others as \u00xx). `v` must be
// valid UTF-8.
void append_json_string(std::string& out, std::string_view v);

}  // namespace queuectl
