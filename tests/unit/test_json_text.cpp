#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/input.hpp"
#include "core/json_text.hpp"
#include "core/validate.hpp"
#include "unit_helpers.hpp"

using queuectl::compact_json;
using queuectl::test::usage_error_of;

namespace {

using Members = std::vector<std::pair<std::string, std::string>>;

// What a valid document compacts to.
std::string compacted(const std::string& text) {
  auto c = compact_json(text, queuectl::kMaxJsonDepth);
  INFO(text);
  REQUIRE(c.valid);
  return c.text;
}

}  // namespace

TEST_CASE("core::compact_json keeps every number as written") {
  // nlohmann alone would give 1.2345678901234568e+22, 1.5, 0, 100000.0, and refuse 1e400.
  CHECK(compacted(R"({"big": 12345678901234567890123, "scale": 1.50, "zero": -0, "e": 1E5})") ==
        R"({"big":12345678901234567890123,"scale":1.50,"zero":-0,"e":1E5})");
  CHECK(compacted("[ -0.0 , 0.1, 1e-400, 100e-2 ]") == "[-0.0,0.1,1e-400,100e-2]");
  CHECK(compacted("-0") == "-0");
  CHECK(compacted(" 1.50 ") == "1.50");
  SUBCASE("numbers past a double's range are valid JSON, and kept") {
    CHECK(compacted(R"({"huge": 1e400, "tiny": -1E+400, "n": [2e308]})") ==
          R"({"huge":1e400,"tiny":-1E+400,"n":[2e308]})");
    const std::string long_integer = "1" + std::string(400, '0');
    CHECK(compacted("[" + long_integer + "]") == "[" + long_integer + "]");
    nlohmann::ordered_json parsed;
    auto c = compact_json(R"({"huge": 1e400, "tiny": -1e400, "n": 1})", 5, &parsed);
    REQUIRE(c.valid);
    CHECK(parsed["huge"].get<double>() == 1e308);
    CHECK(parsed["tiny"].get<double>() == -1e308);
    CHECK(parsed["n"].get<int>() == 1);
  }
  SUBCASE("malformed numbers stay invalid, whatever their size") {
    for (const char* text : {"01", "01e400", "1.", "1.e400", "-", "1e", "1e+", ".5", "+1",
                             "1e400e1", "[1e400 1]", "[1e400x]", "--1e400", "0x10", "1e400,"}) {
      CAPTURE(text);
      CHECK_FALSE(compact_json(text, 5).valid);
    }
  }
  SUBCASE("strings that look like numbers are left alone") {
    CHECK(compacted(R"(["1e400", "-0", "a\"1.50\\", 1.50])") ==
          R"(["1e400","-0","a\"1.50\\",1.50])");
    CHECK(compacted(R"({"1.50": -0})") == R"({"1.50":-0})");
  }
}

TEST_CASE("core::compact_json lists the members of a top-level object") {
  auto c = compact_json(R"({"queue": "q", "payload": {"n": [1.50, {"a": -0}]}, "p": 1e400,
                            "e": {}, "payload": 2})",
                        5);
  REQUIRE(c.valid);
  CHECK(c.members == Members{{"queue", R"("q")"},
                             {"payload", R"({"n":[1.50,{"a":-0}]})"},
                             {"p", "1e400"},
                             {"e", "{}"},
                             {"payload", "2"}});
  CHECK(compact_json("[1, {\"a\": 2}]", 5).members.empty());
  CHECK(compact_json("{}", 5).members.empty());
}

TEST_CASE("core::compact_json refuses, and says why") {
  auto deep = compact_json("[[[1]]]", 2);
  CHECK_FALSE(deep.valid);
  CHECK(deep.too_deep);
  CHECK(compact_json("[[[1]]]", 3).valid);
  auto nul = compact_json(R"({"a\u0000": 1})", 5);
  CHECK(nul.nul_in_string);
  CHECK(compact_json(R"(["x\u0000"])", 5).nul_in_string);
  CHECK_FALSE(compact_json(R"(["x\\u0000"])", 5).nul_in_string);
  auto bad = compact_json(R"({"a": 1.50,})", 5);
  CHECK_FALSE(bad.valid);
  CHECK(bad.text.empty());
  CHECK(bad.members.empty());
}

TEST_CASE("core::validate_json keeps -0 and 1e400 as written") {
  CHECK(queuectl::validate_json(R"({"z": -0, "h": 1e400})", "payload", 1024) ==
        R"({"z":-0,"h":1e400})");
  CHECK(usage_error_of([] {
          queuectl::validate_json("01e400", "payload", 1024);
        }).find("not valid JSON") != std::string::npos);
}

TEST_CASE("cli::parse_line_object: a member's text() is its text as written") {
  const auto doc = queuectl::parse_line_object(
      R"({"queue": "last", "payload": {"n": 12345678901234567890123, "s": 1.50, "z": -0, "h": 1e400},)"
      R"( "priority": -0, "delay": 1.50})");
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc.items()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"queue", "payload", "priority", "delay"});
  for (const auto& [key, value] : doc.items()) {
    CAPTURE(key);
    if (key == "queue") {
      CHECK(value.get<std::string>() == "last");
      CHECK(value.text() == R"("last")");
    } else if (key == "payload") {
      CHECK(value.is_object());
      CHECK(value.text() == R"({"n":12345678901234567890123,"s":1.50,"z":-0,"h":1e400})");
    } else if (key == "priority") {
      CHECK(value.is_number_integer());
      CHECK(value.get<long long>() == 0);
      CHECK(value.text() == "-0");
    } else {
      CHECK(value.is_number_float());
      CHECK(value.text() == "1.50");
    }
  }
  CHECK(usage_error_of([] { queuectl::parse_line_object("[1]"); }).find("not a JSON object") !=
        std::string::npos);
  CHECK(usage_error_of([] {
          queuectl::parse_line_object(R"({"a": 01})");
        }).find("not a JSON object") != std::string::npos);
}

TEST_CASE("storable_json_number: the numbers every backend stores (PostgreSQL's numeric bounds)") {
  using queuectl::storable_json_number;
  for (const char* ok :
       {"0", "-0", "0.000", "0e999999999", "1", "-12.5e3", "1e400", "1e131071", "9.99e131071",
        "123.4e131069", "1e-16383", "0.001e-16380", "100e-16385", "12345678901234567890123"})
    CHECK_MESSAGE(storable_json_number(ok), ok);
  for (const char* bad : {"1e131072", "10e131071", "0.1e131073", "1e999999999", "-1e999999999",
                          "1e-16384", "1.5e-16383", "1e-999999999", "1e99999999999999999999999999"})
    CHECK_MESSAGE(!storable_json_number(bad), bad);
}

TEST_CASE("validate_json refuses a number no backend stores, naming it") {
  CHECK(usage_error_of([] {
          queuectl::validate_json("1e999999999", "payload", 1 << 20);
        }).find("payload holds the number 1e999999999, beyond what every backend stores") !=
        std::string::npos);
  CHECK(usage_error_of([] {
          queuectl::validate_json(R"({"a":[1,2e-20000]})", "payload", 1 << 20);
        }).find("2e-20000") != std::string::npos);
  CHECK(queuectl::validate_json("[1e400, 1e131071]", "payload", 1 << 20) == "[1e400,1e131071]");
}
