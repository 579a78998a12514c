#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "unit_helpers.hpp"

using queuectl::Format;
using queuectl::Output;
using queuectl::Table;
using queuectl::test::usage_error_of;
using json = nlohmann::ordered_json;

namespace {

std::string printed(const Output& out, Format format) {
  std::ostringstream stream;
  queuectl::print_output(stream, out, format);
  return stream.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

Output sample() {
  Output out;
  out.document = json::array({json{{"id", 1}, {"queue", "emails"}, {"status", "ready"}},
                              json{{"id", 2}, {"queue", "sms"}, {"status", "done"}}});
  out.items = out.document;
  out.table = Table{{"ID", "QUEUE", "STATUS"}, {{"1", "emails", "ready"}, {"2", "sms", "done"}}};
  out.lines = {"2 jobs"};
  return out;
}

}  // namespace

TEST_CASE("cli::render_table") {
  SUBCASE("columns are aligned two spaces past the widest cell") {
    Table t{{"ID", "QUEUE", "STATUS"}, {{"1", "emails", "ready"}, {"1234", "q", "processing"}}};
    CHECK(queuectl::render_table(t) ==
          "ID    QUEUE   STATUS\n"
          "1     emails  ready\n"
          "1234  q       processing\n");
  }
  SUBCASE("every column starts at the same offset on every line") {
    Table t{{"A", "LONG HEADER", "C"}, {{"xxxxxxxx", "y", "z"}, {"", "", "w"}, {"v", "vv", "vvv"}}};
    std::vector<std::string> lines = lines_of(queuectl::render_table(t));
    REQUIRE(lines.size() == 4);
    // col 2 starts at 8 + 2 = 10; col 3 at 10 + 11 + 2 = 23
    CHECK(lines[0] == "A         LONG HEADER  C");
    for (const std::string& line : lines) {
      CAPTURE(line);
      REQUIRE(line.size() >= 24);
      CHECK(line[9] == ' ');
      CHECK(line[22] == ' ');
      CHECK(line[23] != ' ');
    }
  }
  SUBCASE("no trailing spaces when last cells are empty") {
    Table t{{"A", "B"}, {{"x", ""}, {"", ""}}};
    std::string text = queuectl::render_table(t);
    CHECK(text == "A  B\nx\n\n");
    CHECK(text.find(" \n") == std::string::npos);
  }
  SUBCASE("headers only") {
    CHECK(queuectl::render_table(Table{{"QUEUE", "READY"}, {}}) == "QUEUE  READY\n");
  }
  SUBCASE("short rows are allowed") {
    Table t{{"A", "B", "C"}, {{"1"}, {"22", "3"}}};
    CHECK(queuectl::render_table(t) ==
          "A   B  C\n"
          "1\n"
          "22  3\n");
  }
  SUBCASE("cells beyond the headers are not printed") {
    Table t{{"A"}, {{"1", "extra"}}};
    std::string text = queuectl::render_table(t);
    CHECK(text.find("extra") == std::string::npos);
    CHECK(text == "A\n1\n");
  }
}

TEST_CASE("cli::print_output") {
  Output out = sample();
  SUBCASE("json: one indented document, key order kept") {
    std::string text = printed(out, Format::json);
    CHECK(json::parse(text) == out.document);
    CHECK(text.back() == '\n');
    CHECK(text.find("\n  ") != std::string::npos);
    CHECK(text.find("\"id\"") < text.find("\"queue\""));
    CHECK(text.find("\"queue\"") < text.find("\"status\""));
    CHECK(text.find("2 jobs") == std::string::npos);
  }
  SUBCASE("json: an object document") {
    Output o;
    o.document = json{{"zeta", 1}, {"alpha", nullptr}};
    CHECK(printed(o, Format::json) == "{\n  \"zeta\": 1,\n  \"alpha\": null\n}\n");
  }
  SUBCASE("ndjson: one compact object a line") {
    std::string text = printed(out, Format::ndjson);
    CHECK(text ==
          "{\"id\":1,\"queue\":\"emails\",\"status\":\"ready\"}\n"
          "{\"id\":2,\"queue\":\"sms\",\"status\":\"done\"}\n");
  }
  SUBCASE("ndjson: empty items print nothing") {
    Output o;
    o.document = json::array();
    o.items = json::array();
    CHECK(printed(o, Format::ndjson).empty());
    CHECK(printed(o, Format::json) == "[]\n");
  }
  SUBCASE("ndjson without items: the document on one line") {
    Output o;
    o.document = json{{"applied", 2}, {"pending", json::array({"003_x"})}};
    CHECK(printed(o, Format::ndjson) == "{\"applied\":2,\"pending\":[\"003_x\"]}\n");
  }
  SUBCASE("table: the table, then the plain lines") {
    CHECK(printed(out, Format::table) ==
          "ID  QUEUE   STATUS\n"
          "1   emails  ready\n"
          "2   sms     done\n"
          "2 jobs\n");
  }
  SUBCASE("table: lines only") {
    Output o;
    o.lines = {"applied 001_job_queue", "schema is current"};
    CHECK(printed(o, Format::table) == "applied 001_job_queue\nschema is current\n");
  }
  SUBCASE("prometheus: the text as given") {
    Output o;
    o.prometheus = "# TYPE queuectl_jobs gauge\nqueuectl_jobs{queue=\"emails\"} 3\n";
    CHECK(printed(o, Format::prometheus) == *o.prometheus);
  }
  SUBCASE("prometheus on an output without it is a usage error") {
    std::ostringstream stream;
    std::string message =
        usage_error_of([&] { queuectl::print_output(stream, out, Format::prometheus); });
    CHECK(message.find("prometheus") != std::string::npos);
    CHECK(stream.str().empty());
  }
}

TEST_CASE("cli::parse_format") {
  CHECK(queuectl::parse_format("table") == Format::table);
  CHECK(queuectl::parse_format("json") == Format::json);
  CHECK(queuectl::parse_format("ndjson") == Format::ndjson);
  CHECK(queuectl::parse_format("prometheus") == Format::prometheus);
  for (const char* bad : {"yaml", "", "JSON", "csv"}) {
    CAPTURE(bad);
    std::string message = usage_error_of([&] { queuectl::parse_format(bad); });
    CHECK(message.find("'" + std::string(bad) + "'") != std::string::npos);
  }
}
