#include "core/trace_context.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "core/backoff.hpp"

namespace queuectl {
namespace {

bool lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool all_zeros(std::string_view s) {
  return s.find_first_not_of('0') == std::string_view::npos;
}

// Shown in a warning: at most 60 characters, control characters as '?'.
std::string warning_text(std::string_view value) {
  std::string out;
  for (char c : value.substr(0, 60)) out += (c < 0x20 || c == 0x7f) ? '?' : c;
  if (value.size() > 60) out += "...";
  return out;
}

std::string random_hex(std::size_t digits) {
  std::string out;
  while (out.size() < digits) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(unguessable_u32()));
    out += buf;
  }
  out.resize(digits);
  // All zeros is invalid; a random 64 or 128 bits is never that, but say so anyway.
  if (all_zeros(out)) out.back() = '1';
  return out;
}

}  // namespace

bool is_traceparent(std::string_view v) {
  if (v.size() < 55) return false;
  if (v[2] != '-' || v[35] != '-' || v[52] != '-') return false;
  const std::string_view version = v.substr(0, 2), trace = v.substr(3, 32),
                         parent = v.substr(36, 16), flags = v.substr(53, 2);
  if (!lower_hex(version) || !lower_hex(trace) || !lower_hex(parent) || !lower_hex(flags))
    return false;
  if (version == "ff" || all_zeros(trace) || all_zeros(parent)) return false;
  if (version == "00") return v.size() == 55;
  // A later version: what follows the flags starts with '-'.
  return v.size() == 55 || v[55] == '-';
}

std::string stored_traceparent(std::string_view valid) {
  return "00" + std::string(valid.substr(2, 53));
}

bool is_tracestate(std::string_view v) {
  if (v.size() > 512) return false;
  int members = 0;
  std::size_t start = 0;
  while (start <= v.size()) {
    std::size_t comma = v.find(',', start);
    if (comma == std::string_view::npos) comma = v.size();
    std::string_view m = v.substr(start, comma - start);
    while (!m.empty() && (m.front() == ' ' || m.front() == '\t')) m.remove_prefix(1);
    while (!m.empty() && (m.back() == ' ' || m.back() == '\t')) m.remove_suffix(1);
    if (!m.empty()) {
      if (++members > 32) return false;
      const std::size_t eq = m.find('=');
      if (eq == std::string_view::npos || eq == 0 || eq + 1 == m.size()) return false;
      for (char c : m)
        if (c < 0x20 || c > 0x7e) return false;
    }
    start = comma + 1;
  }
  return true;
}

TraceContext trace_context(const char* traceparent, const char* tracestate) {
  TraceContext out;
  if (!traceparent || !*traceparent) {
    if (tracestate && *tracestate)
      out.warning = "TRACESTATE is set without TRACEPARENT: the job is stored without it";
    return out;
  }
  const std::string_view parent = traceparent;
  if (!is_traceparent(parent)) {
    out.warning = "TRACEPARENT '" + warning_text(parent) +
                  "' is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>): the job is "
                  "stored without trace context";
    return out;
  }
  out.parent = stored_traceparent(parent);
  if (tracestate && *tracestate) {
    if (is_tracestate(tracestate))
      out.state = std::string(tracestate);
    else
      out.warning = "TRACESTATE '" + warning_text(tracestate) +
                    "' is not a W3C tracestate (key=value,...; at most 512 characters): the "
                    "job keeps TRACEPARENT without it";
  }
  return out;
}

TraceContext trace_context_from_env() {
  return trace_context(std::getenv("TRACEPARENT"), std::getenv("TRACESTATE"));
}

std::string retry_traceparent(std::string_view original) {
  return std::string(original.substr(0, 2)) + "-" + random_hex(32) + "-" + random_hex(16) + "-" +
         std::string(original.substr(53, 2));
}

}  // namespace queuectl
