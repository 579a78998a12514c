#include "core/json_text.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace queuectl {
namespace {

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool is_number_char(char c) {
  return is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// The numbers of `text` in document order: each run of number characters outside strings
// that starts with '-' or a digit. In a valid document these are exactly the numbers the
// parser reports, in the order it reports them, which is how the writer below finds the
// text of each (nlohmann hands over the text of floats only, not of integers such as -0).
std::vector<std::string_view> number_tokens(std::string_view text) {
  std::vector<std::string_view> tokens;
  JsonStringTracker strings;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (strings.in_string(c)) continue;
    if (c == '-' || is_digit(c)) {
      const std::size_t start = i;
      while (i + 1 < text.size() && is_number_char(text[i + 1])) ++i;
      tokens.push_back(text.substr(start, i + 1 - start));
    }
  }
  return tokens;
}

// RFC 8259's number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
bool is_json_number(std::string_view s) {
  std::size_t i = 0;
  auto digits = [&] {
    const std::size_t start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i < s.size() && s[i] == '0')
    ++i;
  else if (!digits())
    return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

bool storable_number(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && s[i] == '-') ++i;
  std::string_view whole, fraction;
  std::size_t start = i;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  whole = s.substr(start, i - start);
  if (i < s.size() && s[i] == '.') {
    start = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    fraction = s.substr(start, i - start);
  }
  long long exponent = 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
    for (; i < s.size(); ++i) {
      // Saturates far beyond any bound below, so that 1e999999999999999999999 cannot wrap.
      if (exponent < 1000000000) exponent = exponent * 10 + (s[i] - '0');
    }
    if (negative) exponent = -exponent;
  }
  // Places of the first and the last significant digit (0: units, -1: tenths).
  long long first = 0, last = 0;
  bool any = false;
  for (std::size_t k = 0; k < whole.size(); ++k) {
    if (whole[k] == '0') continue;
    const long long place = static_cast<long long>(whole.size() - 1 - k);
    if (!any) first = place;
    last = place;
    any = true;
  }
  for (std::size_t k = 0; k < fraction.size(); ++k) {
    if (fraction[k] == '0') continue;
    const long long place = -static_cast<long long>(k + 1);
    if (!any) first = place;
    last = place;
    any = true;
  }
  if (!any) return true;  // zero, however written
  return first + exponent <= 131071 && last + exponent >= -16383;
}

// `text` with each well-formed number too large for a double (1e400) replaced by +-1e308
// and spaces, of the same length: nlohmann's parser refuses such a number, though JSON
// allows it and every backend stores it. The numbers' positions do not move.
std::string with_finite_numbers(std::string_view text,
                                const std::vector<std::string_view>& tokens) {
  std::string out(text);
  for (std::string_view token : tokens) {
    if (!is_json_number(token) || std::isfinite(std::strtod(std::string(token).c_str(), nullptr)))
      continue;
    // Such a number is at least five characters long ("2e308"), so the stand-in fits.
    std::string stand_in = token.front() == '-' ? "-1e308" : "1e308";
    stand_in.resize(token.size(), ' ');
    out.replace(static_cast<std::size_t>(token.data() - text.data()), token.size(), stand_in);
  }
  return out;
}

// Rewrites a document compactly while it is parsed, one token at a time (nlohmann's SAX
// interface), each number as the text it was written with.
class CompactWriter {
 public:
  using json = nlohmann::json;

  CompactWriter(std::vector<std::string_view> numbers, std::size_t max_depth, CompactJson& result)
      : numbers_(std::move(numbers)), max_depth_(max_depth), result_(result), out_(result.text) {}

  bool null() { return scalar("null"); }
  bool boolean(bool v) { return scalar(v ? "true" : "false"); }
  bool number_integer(json::number_integer_t) { return number(); }
  bool number_unsigned(json::number_unsigned_t) { return number(); }
  bool number_float(json::number_float_t, const std::string&) { return number(); }
  bool string(std::string& v) {
    note_nul(v);
    separate();
    append_json_string(out_, v);
    end_of_value();
    return true;
  }
  bool binary(json::binary_t&) { return false; }  // not produced by the text parser
  bool start_object(std::size_t) { return open('{'); }
  bool key(std::string& k) {
    note_nul(k);
    separate();
    append_json_string(out_, k);
    out_ += ':';
    after_key_ = true;
    if (first_.size() == 1) {
      member_key_ = k;
      member_start_ = out_.size();
      in_member_ = true;
    }
    return true;
  }
  bool end_object() { return close('}'); }
  bool start_array(std::size_t) { return open('['); }
  bool end_array() { return close(']'); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  // A comma before every element of an object or array but its first; none after a key.
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  bool scalar(std::string_view token) {
    separate();
    out_ += token;
    end_of_value();
    return true;
  }
  bool number() {
    if (next_number_ >= numbers_.size()) return false;  // cannot happen in a valid document
    std::string_view token = numbers_[next_number_++];
    if (result_.unstorable_number.empty() && !storable_number(token))
      result_.unstorable_number = std::string(token);
    return scalar(token);
  }
  bool open(char bracket) {
    if (first_.size() >= max_depth_) {
      result_.too_deep = true;
      return false;
    }
    separate();
    out_ += bracket;
    first_.push_back(true);
    return true;
  }
  bool close(char bracket) {
    out_ += bracket;
    first_.pop_back();
    end_of_value();
    return true;
  }
  // A value directly inside the top-level object has ended: record it as a member.
  void end_of_value() {
    if (!in_member_ || first_.size() != 1) return;
    result_.members.emplace_back(member_key_, out_.substr(member_start_));
    in_member_ = false;
  }
  void note_nul(const std::string& v) {
    if (v.find('\0') != std::string::npos) result_.nul_in_string = true;
  }

  std::vector<std::string_view> numbers_;
  std::size_t next_number_ = 0;
  std::size_t max_depth_;
  CompactJson& result_;
  std::string& out_;
  std::vector<bool> first_;  // per open object or array: no element written yet
  bool after_key_ = false;
  bool in_member_ = false;  // a member of the top-level object is being written
  std::string member_key_;
  std::size_t member_start_ = 0;
};

}  // namespace

// Appends `v` as a JSON string, escaped as nlohmann's dump() escapes it (", \\ and the
// control characters; b, f, n, r and t by name, the others as \u00xx), without building a
// serializer for each string. `v` must be valid UTF-8 (the parser has refused anything else).
void append_json_string(std::string& out, std::string_view v) {
  static const char* const kHex = "0123456789abcdef";
  out += '"';
  for (const char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c <= 0x1f) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

CompactJson compact_json(std::string_view text, std::size_t max_depth,
                         nlohmann::ordered_json* parsed) {
  CompactJson result;
  std::vector<std::string_view> numbers = number_tokens(text);
  const std::string finite = with_finite_numbers(text, numbers);
  CompactWriter writer(std::move(numbers), max_depth, result);
  result.valid = nlohmann::json::sax_parse(finite.begin(), finite.end(), &writer);
  if (result.valid && parsed) {
    *parsed = nlohmann::ordered_json::parse(finite.begin(), finite.end(), nullptr, false);
    result.valid = !parsed->is_discarded();
  }
  if (!result.valid) {
    result.text.clear();
    result.members.clear();
  }
  return result;
}

bool storable_json_number(std::string_view number) {
  return storable_number(number);
}

}  // namespace queuectl
