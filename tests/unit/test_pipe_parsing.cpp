// The `ack --from` side of `claim -o ndjson | ack --from -`: lines parsed for a few keys
// only, and compact JSON text whose strings are escaped without nlohmann's serializer.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/input.hpp"
#include "cli/output.hpp"
#include "core/json_text.hpp"
#include "core/validate.hpp"
#include "unit_helpers.hpp"

using queuectl::test::usage_error_of;

TEST_CASE("core::compact_json escapes strings and keys as nlohmann's dump") {
  // Every byte below 0x20, the quote, the backslash, the slash, DEL and multi-byte UTF-8.
  std::string raw;
  for (int c = 1; c < 0x20; ++c) raw += static_cast<char>(c);
  raw += "\"\\/\x7f\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 end";
  const std::string doc = nlohmann::json({{raw, raw}}).dump();
  const auto c = queuectl::compact_json(doc, queuectl::kMaxJsonDepth);
  REQUIRE(c.valid);
  CHECK(c.text == doc);
  REQUIRE(c.members.size() == 1);
  CHECK(c.members[0].second == nlohmann::json(raw).dump());
  // A string written with escapes nlohmann would not use comes out in its own spelling.
  CHECK(queuectl::compact_json(R"(["\u0041\/\u00e9\u001F"])", 4).text == "[\"A/\xc3\xa9\\u001f\"]");
}

TEST_CASE("cli::parse_line_object with keys keeps only those members") {
  const std::string line =
      R"({"id": 7, "queue": "q", "payload": {"n": [1, 2e400, "x"]}, "token": "t-1",)"
      R"( "result": {"big": 12345678901234567890123, "f": 1.50}, "other": null})";
  const auto doc = queuectl::parse_line_object(line, {"id", "token", "result", "absent"});
  REQUIRE(doc.items().size() == 3);
  CHECK(doc.items()[0].first == "id");
  CHECK(doc.items()[0].second.get<long long>() == 7);
  CHECK(doc.items()[1].first == "token");
  CHECK(doc.items()[1].second.get<std::string>() == "t-1");
  CHECK(doc.items()[2].first == "result");
  CHECK(doc.items()[2].second.text() == R"({"big":12345678901234567890123,"f":1.50})");
  CHECK(doc.items()[2].second.is_object());

  SUBCASE("a key given twice is refused, by the partial parse as by the full one") {
    const std::string twice = R"({"id": 1, "token": "a", "id": 2})";
    CHECK(usage_error_of([&] {
            queuectl::parse_line_object(twice, {"id", "token"});
          }) == "\"id\" is given twice: give each key once");
    CHECK(usage_error_of([&] { queuectl::parse_line_object(twice); }) ==
          "\"id\" is given twice: give each key once");
    // Also a key the partial parse leaves out, and a key given twice inside a value is the
    // value's own business.
    CHECK(usage_error_of([] {
            queuectl::parse_line_object(R"({"id": 1, "x": 1, "x": 2})", {"id"});
          }).find("\"x\" is given twice") != std::string::npos);
    CHECK(queuectl::parse_line_object(R"({"id": 1, "payload": {"a": 1, "a": 2}})", {"id"})
              .items()
              .size() == 1);
  }
  SUBCASE("a number past a double's range reads as the full parse reads it") {
    const auto some = queuectl::parse_line_object(R"({"id": 1e400})", {"id"});
    const auto all = queuectl::parse_line_object(R"({"id": 1e400})");
    CHECK(some.items()[0].second == all.items()[0].second);
    CHECK(some.items()[0].second.text() == "1e400");
  }
  SUBCASE("members left out are still checked: bad JSON anywhere is refused") {
    CHECK(usage_error_of([] {
            queuectl::parse_line_object(R"({"id": 1, "payload": {"a": 01}})", {"id"});
          }).find("not a JSON object") != std::string::npos);
    CHECK(usage_error_of([] {
            queuectl::parse_line_object("[1]", {"id"});
          }).find("not a JSON object") != std::string::npos);
    CHECK(usage_error_of([] {
            queuectl::parse_line_object("{\"id\": 1, \"p\": \"\xff\"}", {"id"});
          }).find("not a JSON object") != std::string::npos);
    std::string deep = "{\"id\": 1, \"p\": " + std::string(200, '[') + std::string(200, ']') + "}";
    CHECK(usage_error_of([&] {
            queuectl::parse_line_object(deep, {"id"});
          }).find("nested deeper") != std::string::npos);
  }
}

TEST_CASE("cli::read_records splits lines as getline does") {
  const std::string path = "/tmp/queuectl_unit_read_records.ndjson";
  auto lines_of = [&](const std::string& text) {
    {
      std::ofstream f(path, std::ios::binary);
      f << text;
    }
    return queuectl::read_records(path).items;
  };
  using V = std::vector<std::string>;
  CHECK(lines_of("") == V{});
  CHECK(lines_of("a") == V{"a"});
  CHECK(lines_of("a\n") == V{"a"});
  CHECK(lines_of("a\r\nb\r\n") == V{"a", "b"});
  CHECK(lines_of("\n\nx") == V{"", "", "x"});
  CHECK(lines_of("a\rb\n") == V{"a\rb"});
  std::remove(path.c_str());
}

TEST_CASE("cli::print_output: -o ndjson prints each element of a document marked elements") {
  queuectl::Output out;
  out.document = nlohmann::ordered_json::array({{{"id", 1}}, {{"id", 2}}});
  out.elements = true;
  std::ostringstream ndjson, json_text;
  queuectl::print_output(ndjson, out, queuectl::Format::ndjson);
  CHECK(ndjson.str() == "{\"id\":1}\n{\"id\":2}\n");
  queuectl::print_output(json_text, out, queuectl::Format::json);
  CHECK(json_text.str() == "[\n  {\n    \"id\": 1\n  },\n  {\n    \"id\": 2\n  }\n]\n");
  out.elements = false;
  std::ostringstream one_line;
  queuectl::print_output(one_line, out, queuectl::Format::ndjson);
  CHECK(one_line.str() == "[{\"id\":1},{\"id\":2}]\n");
}
