#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cli/top_view.hpp"
#include "core/display_text.hpp"

using queuectl::compact_count;
using queuectl::display_width;
using queuectl::render_top;
using queuectl::TopFailure;
using queuectl::TopFrameInfo;
using queuectl::TopQueue;
using queuectl::TopSnapshot;
using queuectl::TopWorker;

namespace {

TopQueue queue(const std::string& name, std::int64_t ready) {
  TopQueue q;
  q.queue = name;
  q.ready = ready;
  return q;
}

TopSnapshot sample() {
  TopSnapshot s;
  s.now = "2024-05-01T12:00:03.123456Z";
  TopQueue emails = queue("emails", 120);
  emails.scheduled = 3;
  emails.processing = 3;
  emails.expired = 1;
  emails.failed = 4;
  emails.done_last_minute = 310;
  emails.oldest_ready_age_seconds = 125;
  emails.paused = true;
  emails.strict_groups = true;
  emails.max_processing = 10;
  TopQueue sms = queue("sms", 0);
  sms.retain_ms = 7LL * 24 * 3600 * 1000;
  sms.keep_done = false;
  s.queues = {emails, sms};
  s.workers = {{std::string("host-a:41"), 2, 0}, {std::nullopt, 1, 1}};
  TopFailure f;
  f.id = 42;
  f.queue = "emails";
  f.attempts = 25;
  f.age_seconds = 180;
  f.error = "timeout after 30s\nat line 2";
  s.failures = {f};
  return s;
}

const TopFrameInfo kInfo{"postgresql://app:***@db/jobs", "1s", false};

bool has_line(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const auto& l : lines)
    if (l.rfind(prefix, 0) == 0) return true;
  return false;
}

std::string find_line(const std::vector<std::string>& lines, const std::string& prefix) {
  for (const auto& l : lines)
    if (l.rfind(prefix, 0) == 0) return l;
  return {};
}

}  // namespace

TEST_CASE("top_view: compact_count shortens only what does not fit") {
  CHECK(compact_count(0, 6) == "0");
  CHECK(compact_count(999999, 6) == "999999");
  CHECK(compact_count(1234567, 6) == "1235k");
  CHECK(compact_count(1234567, 4) == "1.2M");
  CHECK(compact_count(12345, 4) == "12k");
  CHECK(compact_count(123456789012, 6) == "123G");
  CHECK(compact_count(12345678, 5) == "12.3M");
  CHECK(compact_count(123456789012, 5) == "123G");
}

TEST_CASE("top_view: a frame of 80 columns: title, totals, queue rows, workers, failures") {
  const auto lines = render_top(sample(), kInfo, 80, std::nullopt);
  for (const auto& l : lines) {
    INFO(l);
    CHECK(display_width(l) <= 80);
  }
  REQUIRE(lines.size() > 10);
  CHECK(lines[0].rfind("queuectl top  postgresql://app:***@db/jobs", 0) == 0);
  CHECK(lines[0].find("12:00:03Z  every 1s") != std::string::npos);
  CHECK(lines[1] == "2 queues  ready 120  sched 3  proc 3  expired 1  failed 4  done/min 310");
  CHECK(find_line(lines, "QUEUE") ==
        "QUEUE     READY  SCHED    PROC EXPIRED FAILED DONE/M OLDEST FLAGS");
  // PROC shows the limit; FLAGS paused, strict, limit; retention and no done jobs kept.
  CHECK(find_line(lines, "emails") ==
        "emails      120      3    3/10       1      4    310   2m5s PSL");
  CHECK(find_line(lines, "sms") ==
        "sms           0      0       0       0      0      0      - TN");
  CHECK(has_line(lines, "WORKER"));
  CHECK(find_line(lines, "host-a:41").find("      2       0") != std::string::npos);
  CHECK(find_line(lines, "-  ").size() > 0);  // a worker without a name
  CHECK(has_line(lines, "JOB QUEUE  FAILED   ERROR"));
  CHECK(find_line(lines, " 42 emails 3m ago   timeout after 30s") ==
        " 42 emails 3m ago   timeout after 30s");
  CHECK(lines.back() == "FLAGS P paused S strict L limit R rate T retain N acks delete");
}

TEST_CASE("top_view: text from the table is escaped and cut, never passed to the terminal") {
  TopSnapshot s = sample();
  s.queues[1].queue = "evil\x1b[2J" + std::string(80, 'x');
  s.workers[0].worker = "w\x1b]0;title\x07";
  s.failures[0].error = "bad\x1b[31m\xff red";
  for (std::size_t width : {80u, 50u, 30u}) {
    const auto lines = render_top(s, kInfo, width, std::nullopt);
    for (const auto& l : lines) {
      INFO(width << ": " << l);
      CHECK(display_width(l) <= width);
      CHECK(l.find('\x1b') == std::string::npos);
      CHECK(l.find('\x07') == std::string::npos);
    }
  }
  const auto lines = render_top(s, kInfo, 80, std::nullopt);
  CHECK(has_line(lines, "evil\\x1b[2Jxxx"));
  CHECK(has_line(lines, "w\\x1b]0;title\\x07"));
  CHECK(find_line(lines, " 42").find("bad\\x1b[31m\\xff red") != std::string::npos);
}

TEST_CASE("top_view: with a height, the frame fits it: workers and failures give way first") {
  TopSnapshot s = sample();
  for (int i = 0; i < 30; ++i) s.queues.push_back(queue("q" + std::to_string(100 + i), i));
  for (int i = 0; i < 3; ++i) s.workers.push_back({std::string("w") + std::to_string(i), 1, 0});
  s.failures.push_back(s.failures[0]);
  TopFrameInfo info = kInfo;
  info.keys = true;
  const auto lines = render_top(s, info, 80, 24);
  CHECK(lines.size() == 24);
  CHECK(has_line(lines, "+"));  // "+N more queue(s)"
  CHECK(find_line(lines, "+").find("more queue(s)") != std::string::npos);
  CHECK(has_line(lines, "host-a:41"));
  CHECK_FALSE(has_line(lines, "w0"));  // one worker row left
  CHECK(lines.back().rfind("q quit  r refresh", 0) == 0);
  // The database does not answer: the frame says so under the title, and still fits.
  info.trouble = "no answer from the database for 12s; trying again every 1s";
  const auto troubled = render_top(s, info, 80, 24);
  CHECK(troubled.size() == 24);
  CHECK(troubled[1] == "! no answer from the database for 12s; trying again every 1s");
  CHECK(troubled.back().rfind("q quit  r refresh", 0) == 0);
  info.trouble.clear();
  // Tall enough: everything, no "more" line.
  const auto tall = render_top(s, info, 80, 100);
  CHECK_FALSE(has_line(tall, "+"));
  CHECK(has_line(tall, "w2"));
  CHECK(has_line(tall, "q129"));
}

TEST_CASE("top_view: an empty database says so in each section") {
  TopSnapshot s;
  s.now = "2024-05-01T12:00:03.123456Z";
  const auto lines = render_top(s, TopFrameInfo{"sqlite:///q.db", "", false}, 80, std::nullopt);
  CHECK(lines[0] == "queuectl top  sqlite:///q.db" + std::string(80 - 28 - 9, ' ') + "12:00:03Z");
  CHECK(has_line(lines, "no queue has jobs"));
  CHECK(has_line(lines, "no worker holds a lease"));
  CHECK(has_line(lines, "no failed jobs"));
}

TEST_CASE("top_view: top_json carries every number and null for what is unknown") {
  auto doc = queuectl::top_json(sample());
  CHECK(doc["now"] == "2024-05-01T12:00:03.123456Z");
  CHECK(doc["queues"][0]["max_processing"] == 10);
  CHECK(doc["queues"][1]["max_processing"].is_null());
  CHECK(doc["queues"][1]["oldest_ready_age_seconds"].is_null());
  CHECK(doc["queues"][0]["retain"].is_null());
  CHECK(doc["queues"][0]["keep_done"] == true);
  CHECK(doc["queues"][1]["retain"] == "7d");
  CHECK(doc["queues"][1]["keep_done"] == false);
  CHECK(doc["workers"][1]["worker"].is_null());
  CHECK(doc["failures"][0]["error"] == "timeout after 30s");
}
