// W3C Trace Context (https://www.w3.org/TR/trace-context/) as OpenTelemetry's environment
// carriers hold it: TRACEPARENT and TRACESTATE. `enqueue` stores the caller's with the job;
// `work` hands them to the job's first attempt, and gives a retry a new trace that links
// back to the first (QUEUECTL_TRACE_LINK). No exporter: queuectl only carries the context.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace queuectl {

// A traceparent: "VV-TTTT...(32)-PPPP...(16)-FF" in lowercase hex, version not "ff", trace id
// and parent id not all zeros; version 00 is exactly 55 characters, a later version may add
// "-..." after the flags (the spec's forward compatibility).
bool is_traceparent(std::string_view value);
// What is stored of a valid traceparent: its first 55 characters as version 00 (what the
// spec says a version-00 reader takes from a later version), so that it fits every backend's
// column and every reader.
std::string stored_traceparent(std::string_view valid);
// A tracestate: at most 512 characters of printable ASCII, at most 32 comma-separated
// "key=value" members (empty members allowed), no member without '='.
bool is_tracestate(std::string_view value);

// What enqueue stores: the context in `traceparent` and `tracestate` (the environment's,
// unset when null), or none. A malformed value is dropped with `warning` set to say so:
// never an error that loses the job. A tracestate without a valid traceparent is dropped.
struct TraceContext {
  std::optional<std::string> parent;
  std::optional<std::string> state;
  std::string warning;  // empty when nothing was dropped
};
TraceContext trace_context(const char* traceparent, const char* tracestate);
// The environment's TRACEPARENT and TRACESTATE.
TraceContext trace_context_from_env();

// A traceparent for a retry: a new random trace id and parent id, the version and the
// flags (sampled or not) of `original`, which must be valid.
std::string retry_traceparent(std::string_view original);

}  // namespace queuectl
