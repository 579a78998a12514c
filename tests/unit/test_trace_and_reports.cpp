// The W3C trace context checks and the report line protocol of `work` (issue 31).
#include <doctest/doctest.h>

#include "core/errors.hpp"
#include "core/job_report.hpp"
#include "core/trace_context.hpp"

namespace queuectl {

TEST_CASE("traceparent: the W3C shape, and what the spec refuses") {
  const std::string good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  CHECK(is_traceparent(good));
  CHECK(is_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"));
  CHECK_FALSE(is_traceparent(good + "-x"));  // version 00 is exactly 55 characters
  CHECK(is_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later"));
  CHECK_FALSE(is_traceparent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  CHECK_FALSE(is_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
  CHECK_FALSE(is_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
  CHECK_FALSE(is_traceparent("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
  CHECK_FALSE(is_traceparent("00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  CHECK_FALSE(is_traceparent(""));
  CHECK_FALSE(is_traceparent("garbage"));
}

TEST_CASE("tracestate: key=value members, at most 32 and 512 characters") {
  CHECK(is_tracestate("congo=t61rcWkgMzE"));
  CHECK(is_tracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"));
  CHECK(is_tracestate("a=b,,c=d"));
  CHECK_FALSE(is_tracestate("no-equals"));
  CHECK_FALSE(is_tracestate("=value"));
  CHECK_FALSE(is_tracestate(std::string(513, 'a')));
  std::string many;
  for (int i = 0; i < 33; ++i) many += (i ? "," : "") + std::string("k") + std::to_string(i) + "=v";
  CHECK_FALSE(is_tracestate(many));
}

TEST_CASE("trace_context: a malformed value is dropped with a warning, never an error") {
  const char* good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  TraceContext t = trace_context(good, "a=b");
  CHECK(t.parent == std::string(good));
  CHECK(t.state == std::string("a=b"));
  CHECK(t.warning.empty());
  t = trace_context("nope", "a=b");
  CHECK_FALSE(t.parent);
  CHECK_FALSE(t.state);
  CHECK(t.warning.find("TRACEPARENT") != std::string::npos);
  t = trace_context(good, "bad state");
  CHECK(t.parent);
  CHECK_FALSE(t.state);
  CHECK(t.warning.find("TRACESTATE") != std::string::npos);
  t = trace_context(nullptr, nullptr);
  CHECK_FALSE(t.parent);
  CHECK(t.warning.empty());
}

TEST_CASE("retry_traceparent: a new trace and parent, the original's version and flags") {
  const std::string original = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const std::string a = retry_traceparent(original), b = retry_traceparent(original);
  CHECK(is_traceparent(a));
  CHECK(a.substr(0, 3) == "00-");
  CHECK(a.substr(53) == "01");
  CHECK(a.substr(3, 32) != original.substr(3, 32));
  CHECK(a != b);
  CHECK(retry_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").substr(53) ==
        "00");
}

TEST_CASE("report lines: progress, note and checkpoint; anything else is refused") {
  JobReport r = parse_report_line("progress 40", 1024);
  CHECK(r.progress == 40);
  CHECK_FALSE(r.note);
  r = parse_report_line("note table 3 of 8", 1024);
  CHECK(r.note == std::string("table 3 of 8"));
  r = parse_report_line("checkpoint {\"a\": [1, 2]}", 1024);
  CHECK(r.checkpoint == std::string("{\"a\":[1,2]}"));
  CHECK_THROWS_AS(parse_report_line("progress 101", 1024), UsageError);
  CHECK_THROWS_AS(parse_report_line("progress", 1024), UsageError);
  CHECK_THROWS_AS(parse_report_line("progress 4.5", 1024), UsageError);
  CHECK_THROWS_AS(parse_report_line("note", 1024), UsageError);
  CHECK_THROWS_AS(parse_report_line("note a\tb", 1024), UsageError);
  CHECK_THROWS_AS(parse_report_line("checkpoint {", 1024), UsageError);
  CHECK_THROWS_AS(parse_report_line("checkpoint [1,2,3]", 4), UsageError);  // over the limit
  CHECK_THROWS_AS(parse_report_line("status done", 1024), UsageError);

  JobReport merged;
  merged.merge(parse_report_line("progress 10", 1024));
  merged.merge(parse_report_line("note first", 1024));
  merged.merge(parse_report_line("progress 20", 1024));
  CHECK(merged.progress == 20);
  CHECK(merged.note == std::string("first"));
  CHECK_FALSE(merged.checkpoint);
}

}  // namespace queuectl
