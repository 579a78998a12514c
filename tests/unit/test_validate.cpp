#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/validate.hpp"
#include "unit_helpers.hpp"

using queuectl::test::usage_error_of;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("core::validate_queue_name") {
  SUBCASE("valid names") {
    for (std::string name : {"emails", "a.b_c:d-1", "Q", "0", "prod:emails.high-priority_2"}) {
      CAPTURE(name);
      CHECK_NOTHROW(queuectl::validate_queue_name(name));
    }
    CHECK_NOTHROW(queuectl::validate_queue_name(std::string(64, 'q')));
  }
  SUBCASE("invalid names") {
    for (const std::string& name : std::vector<std::string>{
             "", "bad name", "x'; DROP TABLE job_queue;--", "\xc3\xbc", "caf\xc3\xa9", "a/b",
             "a\tb", "a\nb", "emails ", "*", "a%b", std::string("a\0b", 3)}) {
      CAPTURE(name);
      usage_error_of([&] { queuectl::validate_queue_name(name); });
    }
    usage_error_of([] { queuectl::validate_queue_name(std::string(65, 'q')); });
  }
  SUBCASE("the message names the queue and the rule") {
    std::string message = usage_error_of([] { queuectl::validate_queue_name("bad name"); });
    CHECK(contains(message, "'bad name'"));
    CHECK(contains(message, "queue name"));
    CHECK(contains(message, "64"));
  }
  SUBCASE("a long name is shortened in the message") {
    std::string name(1000, 'x');
    std::string message = usage_error_of([&] { queuectl::validate_queue_name(name); });
    CHECK(message.size() < 200);
  }
}

TEST_CASE("core::validate_json") {
  constexpr std::size_t kMax = queuectl::kDefaultMaxPayload;
  SUBCASE("valid documents are returned compacted") {
    CHECK(queuectl::validate_json(R"({"to": "a@b.c", "n": 1})", "payload", kMax) ==
          R"({"to":"a@b.c","n":1})");
    CHECK(queuectl::validate_json("[1, 2,\n 3]", "payload", kMax) == "[1,2,3]");
    CHECK(queuectl::validate_json(R"( "just text" )", "payload", kMax) == R"("just text")");
    CHECK(queuectl::validate_json("42", "payload", kMax) == "42");
    CHECK(queuectl::validate_json("null", "payload", kMax) == "null");
    CHECK(queuectl::validate_json("{}", "payload", kMax) == "{}");
  }
  SUBCASE("key order is preserved, not sorted") {
    CHECK(queuectl::validate_json(R"({"z": 1, "a": {"y": 2, "b": 3}, "m": [3, 1]})", "payload",
                                  kMax) == R"({"z":1,"a":{"y":2,"b":3},"m":[3,1]})");
  }
  SUBCASE("non-ASCII text survives") {
    CHECK(queuectl::validate_json("{\"name\": \"J\xc3\xbcrgen\"}", "payload", kMax) ==
          "{\"name\":\"J\xc3\xbcrgen\"}");
    CHECK(queuectl::validate_json(R"({"e": "\u00fc"})", "payload", kMax) == "{\"e\":\"\xc3\xbc\"}");
  }
  SUBCASE("invalid documents") {
    for (std::string text : {"{", "nope", "", "   ", "{'a': 1}", R"({"a": 1,})", R"({"a": 1} x)",
                             "[1, 2", "\"unterminated", "{\"a\": \"\xff\"}"}) {
      CAPTURE(text);
      std::string message = usage_error_of([&] { queuectl::validate_json(text, "payload", kMax); });
      CHECK(contains(message, "payload"));
      CHECK(contains(message, "JSON"));
    }
  }
  SUBCASE("a NUL character anywhere is refused: PostgreSQL's jsonb cannot store it") {
    for (std::string text : {R"({"a": "x\u0000y"})", R"(["\u0000"])", R"({"k\u0000": 1})",
                             R"("\u0000")", R"({"deep": [{"s": "\u0000"}]})"}) {
      CAPTURE(text);
      std::string message = usage_error_of([&] { queuectl::validate_json(text, "payload", kMax); });
      CHECK(contains(message, "payload"));
      CHECK(contains(message, "NUL"));
    }
    // A backslash followed by "u0000" is ordinary text.
    CHECK(queuectl::validate_json(R"({"a": "\\u0000"})", "payload", kMax) == R"({"a":"\\u0000"})");
  }
  SUBCASE("the message names the field") {
    std::string message = usage_error_of([] { queuectl::validate_json("nope", "--result", 100); });
    CHECK(contains(message, "--result"));
    CHECK(contains(message, "nope"));
  }
  SUBCASE("size limit") {
    std::string ten = R"(["12345"])";  // 9 bytes
    ten += " ";                        // 10 bytes
    REQUIRE(ten.size() == 10);
    CHECK(queuectl::validate_json(ten, "payload", 10) == R"(["12345"])");
    std::string message = usage_error_of([&] { queuectl::validate_json(ten, "payload", 9); });
    CHECK(contains(message, "payload"));
    CHECK(contains(message, "10"));
    CHECK(contains(message, "9"));
    CHECK(contains(message, "--max-payload"));
  }
  SUBCASE("the default cap is 1 MiB") {
    CHECK(queuectl::kDefaultMaxPayload == 1024 * 1024);
    std::string big = "\"" + std::string(queuectl::kDefaultMaxPayload - 2, 'a') + "\"";
    CHECK(queuectl::validate_json(big, "payload", kMax).size() == big.size());
    usage_error_of([&] { queuectl::validate_json(big + " ", "payload", kMax); });
  }
  SUBCASE("nesting: up to 31 levels (MariaDB's limit), then refused without touching the stack") {
    auto nested = [](std::size_t n) { return std::string(n, '[') + std::string(n, ']'); };
    CHECK(queuectl::validate_json(nested(31), "payload", kMax) == nested(31));
    CHECK(contains(usage_error_of([&] { queuectl::validate_json(nested(32), "payload", kMax); }),
                   "nested deeper than 31"));
    // Deep enough to overflow any recursive parser or printer.
    const std::string deep = nested(200000);
    CHECK(contains(usage_error_of([&] { queuectl::validate_json(deep, "payload", deep.size()); }),
                   "nested deeper"));
    CHECK(queuectl::json_depth(deep) == 200000);
    CHECK(queuectl::json_depth(R"({"a":"[[[{{{","b":[{"c":"\"]"}]})") == 3);
    CHECK(queuectl::json_depth("42") == 0);
  }
  SUBCASE("numbers keep the text they were written with") {
    CHECK(queuectl::validate_json(R"({"big": 12345678901234567890123, "f": 1.0000000000000000001})",
                                  "payload", kMax) ==
          R"({"big":12345678901234567890123,"f":1.0000000000000000001})");
    CHECK(queuectl::validate_json("[1e3, -0.5E-2, 18446744073709551615, -9223372036854775808]",
                                  "payload", kMax) ==
          "[1e3,-0.5E-2,18446744073709551615,-9223372036854775808]");
  }
  SUBCASE("strings, keys and empty containers are rewritten faithfully") {
    const std::string doc =
        R"({"q\"uote": "line\nbreak\t\\", "e": {}, "a": [], "n": [null, true, false], "u": "\u00e9"})";
    CHECK(queuectl::validate_json(doc, "payload", kMax) ==
          R"({"q\"uote":"line\nbreak\t\\","e":{},"a":[],"n":[null,true,false],"u":"é"})");
    CHECK(nlohmann::json::parse(queuectl::validate_json(doc, "payload", kMax)) ==
          nlohmann::json::parse(doc));
  }
  SUBCASE("an oversized invalid document is reported as oversized without being parsed") {
    std::string huge(2000, '{');
    std::string message = usage_error_of([&] { queuectl::validate_json(huge, "payload", 100); });
    CHECK(contains(message, "limit"));
    CHECK(message.size() < 300);
  }
}

TEST_CASE("core::parse_job_id") {
  SUBCASE("positive decimal integers") {
    CHECK(queuectl::parse_job_id("1") == 1);
    CHECK(queuectl::parse_job_id("42") == 42);
    CHECK(queuectl::parse_job_id("9223372036854775807") == INT64_MAX);
  }
  SUBCASE("rejected") {
    for (const char* text : {"0", "-1", "abc", "1.5", "", "99999999999999999999", " 1", "1 ", "+1",
                             "0x10", "1e3", "12abc", "00000000000000000000"}) {
      CAPTURE(text);
      std::string message = usage_error_of([&] { queuectl::parse_job_id(text); });
      CHECK(contains(message, "job id"));
      CHECK(contains(message, "'" + std::string(text) + "'"));
    }
    // A positive integer too large is named out of range, as other numbers are.
    CHECK(usage_error_of([] { queuectl::parse_job_id("9223372036854775808"); }) ==
          "job id '9223372036854775808' is out of range (at most 9223372036854775807)");
  }
}

TEST_CASE("core::validate_positive") {
  CHECK_NOTHROW(queuectl::validate_positive(1, "--limit"));
  CHECK_NOTHROW(queuectl::validate_positive(1'000'000'000'000LL, "--limit"));
  for (long long bad : {0LL, -1LL, -1'000'000LL}) {
    CAPTURE(bad);
    std::string message = usage_error_of([&] { queuectl::validate_positive(bad, "--batch"); });
    CHECK(contains(message, "--batch"));
    CHECK(contains(message, std::to_string(bad)));
  }
}

TEST_CASE("core::validate_worker") {
  SUBCASE("valid") {
    for (std::string worker : {"host:1234", "w", "worker 7", "k8s/pod-abc:1"}) {
      CAPTURE(worker);
      CHECK_NOTHROW(queuectl::validate_worker(worker));
    }
    CHECK_NOTHROW(queuectl::validate_worker(std::string(128, 'w')));
  }
  SUBCASE("invalid") {
    for (const std::string& worker :
         std::vector<std::string>{"", "a\nb", "a\tb", "bell\a", "del\x7f", std::string(129, 'w')}) {
      CAPTURE(worker);
      std::string message = usage_error_of([&] { queuectl::validate_worker(worker); });
      CHECK(contains(message, "worker"));
    }
  }
}

TEST_CASE("core::validate_token") {
  CHECK_NOTHROW(queuectl::validate_token("00000000-0000-4000-8000-000000000000"));
  CHECK_NOTHROW(queuectl::validate_token(std::string(255, 't')));
  for (const std::string& token : std::vector<std::string>{
           "", "\xff", "a\tb", std::string("a\0b", 3), std::string(256, 't')}) {
    CAPTURE(token);
    CHECK(contains(usage_error_of([&] { queuectl::validate_token(token); }), "--token"));
    CHECK(contains(usage_error_of([&] { queuectl::validate_token(token, "\"token\""); }),
                   "\"token\""));
  }
}

TEST_CASE("core::validate_json refuses a NUL byte instead of ending the document there") {
  const std::string text("{\"a\":1}\0GARBAGE", 15);
  CHECK(contains(usage_error_of([&] { queuectl::validate_json(text, "payload", 1024); }), "NUL"));
  CHECK(contains(
      usage_error_of([&] { queuectl::validate_json(std::string("\"a\0b\"", 5), "payload", 1024); }),
      "NUL"));
}

TEST_CASE("core::validate_key") {
  SUBCASE("valid") {
    CHECK_NOTHROW(queuectl::validate_key("k", "--dedupe-key"));
    CHECK_NOTHROW(queuectl::validate_key("order:42 / retry", "--dedupe-key"));
    CHECK_NOTHROW(queuectl::validate_key(std::string(255, 'k'), "--dedupe-key"));
  }
  SUBCASE("invalid") {
    for (const std::string& key : std::vector<std::string>{"", "a\nb", "\t", std::string("a\0b", 3),
                                                           std::string(256, 'k')}) {
      CAPTURE(key);
      std::string message = usage_error_of([&] { queuectl::validate_key(key, "--dedupe-key"); });
      CHECK(contains(message, "--dedupe-key"));
    }
  }
}

TEST_CASE("core::is_valid_utf8 and to_valid_utf8") {
  CHECK(queuectl::is_valid_utf8(""));
  CHECK(queuectl::is_valid_utf8("plain ascii"));
  CHECK(queuectl::is_valid_utf8("J\xc3\xbcrgen \xe2\x82\xac \xf0\x9f\x98\x80"));
  for (std::string bad : {std::string("\xff"), std::string("\xc3"), std::string("\xe2\x82"),
                          std::string("\xc0\xaf"),          // overlong '/'
                          std::string("\xed\xa0\x80"),      // a surrogate
                          std::string("\xf4\x90\x80\x80"),  // past U+10FFFF
                          std::string("\x80"
                                      "abc")}) {
    CAPTURE(bad);
    CHECK_FALSE(queuectl::is_valid_utf8(bad));
    std::string fixed = queuectl::to_valid_utf8(bad);
    CHECK(queuectl::is_valid_utf8(fixed));
    CHECK(contains(fixed, "\xef\xbf\xbd"));  // U+FFFD
  }
  // Valid text is left alone; a character cut at the end loses only its own bytes.
  CHECK(queuectl::to_valid_utf8("a\xe2\x82\xac") == "a\xe2\x82\xac");
  CHECK(queuectl::to_valid_utf8("ok \xe2\x82") == "ok \xef\xbf\xbd\xef\xbf\xbd");
  CHECK(queuectl::to_valid_utf8("\xff"
                                "abc") ==
        "\xef\xbf\xbd"
        "abc");
}
