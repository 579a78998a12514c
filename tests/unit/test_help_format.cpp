// How help text is folded to 80 columns (src/cli/help_format.hpp).
#include <doctest/doctest.h>

#include "cli/help_format.hpp"

using queuectl::wrap_help;

TEST_CASE("help_format: lines that fit are left alone") {
  CHECK(wrap_help("Usage: queuectl x\n  short line\n") == "Usage: queuectl x\n  short line\n");
  CHECK(wrap_help("") == "");
  CHECK(wrap_help("no newline") == "no newline");
}

TEST_CASE("help_format: an option's description goes on under itself, folded at a space") {
  const std::string name = "  --field NAME[,NAME...] ...  ";
  REQUIRE(name.size() == 30);
  const std::string line =
      name +
      "Print only these fields of each job, tab-separated (e.g. id,lock_token; the names "
      "`show` prints)";
  const std::string folded = wrap_help(line + "\n");
  // The first line fills the 80 columns exactly.
  CHECK(folded == name + "Print only these fields of each job, tab-separated\n" +
                      std::string(30, ' ') + "(e.g. id,lock_token; the names `show` prints)\n");
}

TEST_CASE("help_format: prose folded wider than 80 is joined and folded again") {
  const std::string prose =
      "Exit 3 when the lease was lost (token wrong, job reaped or no longer processing), 4 when\n"
      "the job does not exist.\n";
  CHECK(wrap_help(prose) ==
        "Exit 3 when the lease was lost (token wrong, job reaped or no longer\n"
        "processing), 4 when the job does not exist.\n");
  // A paragraph that fits is left as written, short lines and all.
  CHECK(wrap_help("One line.\nAnother line.\n") == "One line.\nAnother line.\n");
  // Items of their own ("Label: ...") and headings are not joined to the line before.
  const std::string items =
      "Database: --db URL, else $QUEUECTL_DB, else sqlite at $XDG_DATA_HOME/queuectl/queue.db.\n"
      "Exit codes: 0 ok, 1 error. And so on, a line long enough to be folded at 80 columns\n"
      "Examples:\n";
  CHECK(wrap_help(items) ==
        "Database: --db URL, else $QUEUECTL_DB, else sqlite at\n"
        "$XDG_DATA_HOME/queuectl/queue.db.\nExit codes: 0 ok, 1 error. And so on, a line long "
        "enough to be folded at 80\ncolumns\nExamples:\n");
  // A long line that ends in a colon is no heading: its paragraph is joined through it
  // (`stats --help` left "stays" and "(JSON:" on lines of their own).
  const std::string colon =
      "DONE, FAILED and CANCELED count up to 10000 jobs a queue each, so that stats stays\n"
      "fast however many finished jobs are kept: a count at the cap shows as 10000+ (JSON:\n"
      "named in \"at_least\").\n";
  CHECK(wrap_help(colon) ==
        "DONE, FAILED and CANCELED count up to 10000 jobs a queue each, so that stats\n"
        "stays fast however many finished jobs are kept: a count at the cap shows as\n"
        "10000+ (JSON: named in \"at_least\").\n");
  const std::string long_word = "x " + std::string(100, 'y') + " z";
  CHECK(wrap_help(long_word) == "x\n" + std::string(100, 'y') + "\nz");
}

TEST_CASE("help_format: an indented line (an example to copy whole) is never cut") {
  const std::string example =
      "  queuectl ack 42 --token 1b4e28ba-2fa1-4d3b-a3f5-ef19a1f3c2d0 --result '{\"ok\":true}'\n";
  REQUIRE(example.size() > 81);
  CHECK(wrap_help(example) == example);
}
