// Text as the terminal shows it: escapes, display widths, cuts on character boundaries,
// tables fitted to a width, human durations and relative times, progress text.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "cli/terminal.hpp"
#include "core/display_text.hpp"
#include "core/errors.hpp"
#include "core/human_time.hpp"
#include "core/validate.hpp"

using queuectl::display_width;
using queuectl::Fit;
using queuectl::fit_width;
using queuectl::Table;
using queuectl::visible_text;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("core::visible_text") {
  CHECK(visible_text("plain text: ok") == "plain text: ok");
  CHECK(visible_text("J\xc3\xbcrgen \xe6\x9d\xb1\xe4\xba\xac") ==
        "J\xc3\xbcrgen \xe6\x9d\xb1\xe4\xba\xac");
  CHECK(visible_text("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(visible_text("line\nnext\ttab\rcr") == "line\\nnext\\ttab\\rcr");
  CHECK(visible_text("del\x7f bell\a") == "del\\x7f bell\\x07");
  CHECK(visible_text(std::string("nul\0!", 5)) == "nul\\x00!");
  // C1 controls (U+009B is a one-character CSI), separators, bidi overrides.
  CHECK(visible_text("csi\xc2\x9b"
                     "2J") == "csi\\u009b2J");
  CHECK(visible_text("a\xe2\x80\xa8"
                     "b") == "a\\u2028b");
  CHECK(visible_text("\xe2\x80\xae"
                     "evil") == "\\u202eevil");
  // Bytes that are not UTF-8, one escape each, and a sequence cut short.
  CHECK(visible_text("\xff\xfe") == "\\xff\\xfe");
  CHECK(visible_text("\xe6\x9d") == "\\xe6\\x9d");
  // A backslash is not doubled: Windows paths and tracebacks stay readable.
  CHECK(visible_text("C:\\temp") == "C:\\temp");
  CHECK(visible_text("a\nb\x1b", true) == "a\nb\\x1b");

  CHECK_FALSE(queuectl::has_control_chars("w\xc3\xb6rker-\xe6\x9d\xb1\xe4\xba\xac"));
  for (const char* bad : {"a\x1b", "\n", "\x7f", "\xc2\x85", "\xe2\x81\xa6", "\xff"}) {
    CAPTURE(bad);
    CHECK(queuectl::has_control_chars(bad));
  }
}

TEST_CASE("core::display_width") {
  CHECK(display_width("") == 0);
  CHECK(display_width("abc") == 3);
  CHECK(display_width("w\xc3\xb6rker") == 6);             // ö: 2 bytes, 1 column
  CHECK(display_width("\xe6\x9d\xb1\xe4\xba\xac") == 4);  // 東京: 2 columns each
  CHECK(display_width("e\xcc\x81") == 1);                 // e + combining acute
  CHECK(display_width("\xf0\x9f\x98\x80") == 2);          // an emoji
  CHECK(display_width("\xe2\x80\xa6") == 1);              // the ellipsis itself
}

TEST_CASE("core::fit_width") {
  CHECK(fit_width("short", 10) == "short");
  CHECK(fit_width("exactly10!", 10) == "exactly10!");
  CHECK(fit_width("0123456789abc", 10) == "012345678\xe2\x80\xa6");
  CHECK(display_width(fit_width("0123456789abc", 10)) == 10);
  SUBCASE("never inside a UTF-8 sequence or a grapheme cluster") {
    const std::string umlauts = "\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc";  // üüüüü
    const std::string cut = fit_width(umlauts, 3);
    CHECK(cut == "\xc3\xbc\xc3\xbc\xe2\x80\xa6");
    CHECK(queuectl::is_valid_utf8(cut));
    // Wide characters: 東京都 is 6 columns; in 4 only 東 and the ellipsis fit (3).
    CHECK(fit_width("\xe6\x9d\xb1\xe4\xba\xac\xe9\x83\xbd", 4) == "\xe6\x9d\xb1\xe2\x80\xa6");
    // e + combining acute is one cluster: kept whole.
    CHECK(fit_width("e\xcc\x81"
                    "e\xcc\x81"
                    "e\xcc\x81",
                    2) == "e\xcc\x81\xe2\x80\xa6");
  }
  CHECK(fit_width("abc", 0).empty());
  CHECK(fit_width("abc", 1) == "\xe2\x80\xa6");
}

TEST_CASE("cli::render_table fits a width, by display columns") {
  SUBCASE("aligned by display width, not bytes") {
    Table t{{"WORKER", "N"}, {{"w\xc3\xb6rker", "1"}, {"\xe6\x9d\xb1\xe4\xba\xac", "2"}}};
    const auto lines = lines_of(queuectl::render_table(t));
    REQUIRE(lines.size() == 3);
    CHECK(lines[0] == "WORKER  N");
    CHECK(lines[1] == "w\xc3\xb6rker  1");
    CHECK(lines[2] == "\xe6\x9d\xb1\xe4\xba\xac    2");
  }
  SUBCASE("shrink_first columns give way first, then shrink; keep columns never") {
    Table t{{"ID", "QUEUE", "PAYLOAD"},
            {{"123456", "a-rather-long-queue-name", std::string(60, 'p')}},
            {Fit::keep, Fit::shrink, Fit::shrink_first}};
    const auto at44 = lines_of(queuectl::render_table(t, 44));
    REQUIRE(at44.size() == 2);
    for (const auto& l : at44) CHECK(display_width(l) <= 44);
    CHECK(at44[1] == "123456  a-rather-long-queue-name  ppppppppp\xe2\x80\xa6");
    // Narrower than the payload's floor: the queue gives way too, the id never.
    const auto at30 = lines_of(queuectl::render_table(t, 30));
    for (const auto& l : at30) CHECK(display_width(l) <= 30);
    CHECK(at30[1].rfind("123456  a-rather", 0) == 0);
    // Nothing left to shrink: the row is as narrow as it gets, never below the floors.
    const auto at5 = lines_of(queuectl::render_table(t, 5));
    CHECK(at5[1].rfind("123456  ", 0) == 0);
  }
  SUBCASE("without a width nothing is cut") {
    Table t{{"PAYLOAD"}, {{std::string(500, 'x')}}, {Fit::shrink_first}};
    CHECK(lines_of(queuectl::render_table(t))[1] == std::string(500, 'x'));
  }
  SUBCASE("control characters in cells are shown as escapes") {
    Table t{{"QUEUE"}, {{"evil\x1b[2J"}}};
    const std::string text = queuectl::render_table(t);
    CHECK(text.find('\x1b') == std::string::npos);
    CHECK(text.find("evil\\x1b[2J") != std::string::npos);
  }
}

TEST_CASE("cli::print_output: -o wide picks the wide table; lines are escaped") {
  queuectl::Output out;
  out.table = Table{{"A"}, {{"narrow"}}};
  out.wide_table = Table{{"A", "B"}, {{"wide", "more"}}};
  out.lines = {"line one\nline two \x1b]0;title\x07"};
  std::ostringstream narrow, wide;
  queuectl::print_output(narrow, out, queuectl::Format::table);
  queuectl::print_output(wide, out, queuectl::Format::table, {true, std::nullopt});
  CHECK(narrow.str() == "A\nnarrow\nline one\nline two \\x1b]0;title\\x07\n");
  CHECK(wide.str().rfind("A     B\nwide  more\n", 0) == 0);
  CHECK(queuectl::parse_format("wide") == queuectl::Format::table);
  CHECK(queuectl::is_wide_format("wide"));
  CHECK_FALSE(queuectl::is_wide_format("table"));
}

TEST_CASE("core::human_duration, kubectl's steps in hours") {
  using queuectl::human_duration;
  CHECK(human_duration(0.25) == "250ms");
  CHECK(human_duration(5) == "5s");
  CHECK(human_duration(119.9) == "119s");
  CHECK(human_duration(598.8) == "9m58s");
  CHECK(human_duration(600) == "10m");
  CHECK(human_duration(3599) == "59m");
  CHECK(human_duration(3 * 3600 - 1) == "2h59m");
  CHECK(human_duration(2 * 3600) == "2h");
  CHECK(human_duration(5 * 3600 + 30 * 60) == "5h30m");
  CHECK(human_duration(7 * 3600) == "7h");
  CHECK(human_duration(20 * 3600) == "20h");
  CHECK(human_duration(3 * 86400 + 4 * 3600) == "3d4h");
  CHECK(human_duration(12 * 86400) == "12d");
  CHECK(human_duration(800.0 * 86400) == "2y70d");
  CHECK(human_duration(-598.8) == "9m58s");
}

TEST_CASE("core::relative_time and age_text against a given now") {
  const std::string now = "2026-11-22T10:00:00.000000Z";
  CHECK(queuectl::relative_time("2026-11-22T10:00:25.000000Z", now) == "in 25s");
  CHECK(queuectl::relative_time("2026-11-22T09:57:00.000000Z", now) == "3m ago");
  CHECK(queuectl::relative_time("2026-11-22T10:00:00.400000Z", now) == "now");
  CHECK(queuectl::relative_time("2026-11-20T08:00:00Z", now) == "2d2h ago");
  CHECK(queuectl::age_text("2026-11-22T08:00:00.000000Z", now) == "2h");
  CHECK(queuectl::age_text("2026-11-22T10:00:05.000000Z", now) == "0s");
  CHECK(queuectl::relative_time("not a time", now) == "not a time");
  CHECK(queuectl::parse_utc_time_us("2026-11-22T10:00:00.5Z") ==
        queuectl::parse_utc_time_us("2026-11-22T10:00:00.500000Z"));
}

TEST_CASE("cli::progress_text: done of total, rate, time left") {
  using queuectl::progress_text;
  CHECK(progress_text("purged", 0, std::nullopt, "job(s)", 0) == "purged 0 job(s)");
  CHECK(progress_text("purged", 3000, std::nullopt, "job(s)", 2) == "purged 3000 job(s), 1500/s");
  CHECK(progress_text("reaped", 300, 1000, "job(s)", 2) ==
        "reaped 300 of 1000 job(s), 150/s, 4s left");
  CHECK(progress_text("x", 1, 10, "job(s)", 5) == "x 1 of 10 job(s), 0.2/s, 45s left");
}

TEST_CASE("core::validate: one rule for names and keys, C1 and bidi controls too") {
  for (const char* bad : {"w\x1b", "w\xc2\x9b", "w\xe2\x80\xae", "w\xe2\x80\xa8"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(queuectl::validate_worker(bad), queuectl::UsageError);
    CHECK_THROWS_AS(queuectl::validate_key(bad, "--group-key"), queuectl::UsageError);
    CHECK_THROWS_AS(queuectl::validate_token(bad), queuectl::UsageError);
  }
  CHECK_NOTHROW(queuectl::validate_worker("w\xc3\xb6rker-\xe6\x9d\xb1\xe4\xba\xac"));
  // The message shows the value with its control characters escaped.
  try {
    queuectl::validate_worker("w\x1b[2J");
    FAIL("accepted");
  } catch (const queuectl::UsageError& e) {
    CHECK(std::string(e.what()).find("w\\x1b[2J") != std::string::npos);
  }
}
