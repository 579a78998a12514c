// Fault-battery finding: `enqueue --from` and `ack --from` stored numbers as a double
// printed them back (12345678901234567890123 as 1.2345678901234568e+22, 1.50 as 1.5, -0 as
// 0) and refused 1e400, while the one-job forms kept them. Every path that takes JSON now
// stores the same text. Runs unchanged on every backend.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"
#include "core/json_text.hpp"

namespace queuectl::testing::cli {

namespace {

// Numbers a double cannot carry as written: too many digits, a trailing zero, a negative
// zero, an exponent, a magnitude past a double's range either way.
const std::string kDocument =
    R"({"big": 12345678901234567890123, "tenth": 0.1, "huge": 1e400, "zero": -0,)"
    R"( "scale": 1.50, "exp": 1E5, "tiny": -1E-400, "list": [-0.0, 18446744073709551616]})";
const std::string kCompact =
    R"({"big":12345678901234567890123,"tenth":0.1,"huge":1e400,"zero":-0,)"
    R"("scale":1.50,"exp":1E5,"tiny":-1E-400,"list":[-0.0,18446744073709551616]})";

// `column` of every job, as the database holds it, in id order.
std::vector<std::string> stored(FreshDatabase& fixture, const std::string& column) {
  std::vector<std::string> values;
  std::string text = table_text(fixture, "job_queue", {column}, "id");
  for (std::size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos;
       start = nl + 1)
    values.push_back(text.substr(start, nl - start));
  return values;
}

// All values are the same text, and that text keeps the numbers: PostgreSQL's jsonb
// re-renders a document (spaces, 1E5 as 100000, -0 as 0) but keeps numeric digits and
// scale; SQLite and MariaDB store the text they are given.
void check_kept(const std::vector<std::string>& values, std::size_t expected) {
  REQUIRE(values.size() == expected);
  for (const std::string& v : values) {
    INFO(v);
    CHECK(v == values.front());
    CHECK(v.find("12345678901234567890123") != std::string::npos);
    CHECK(v.find("18446744073709551616") != std::string::npos);
    CHECK(v.find("1.50") != std::string::npos);
    if (backend_under_test() != Backend::postgresql) CHECK(v == kCompact);
  }
}

}  // namespace

TEST_CASE("cli: numbers in a payload are stored as written by enqueue and enqueue --from") {
  FreshDatabase fixture;
  const std::string url = fixture.url();
  ok(url, {"enqueue", "nums", kDocument});
  ok(url, {"enqueue", "nums", "-"}, kDocument);
  ok(url, {"enqueue", "--from", "-"}, "{\"queue\": \"nums\", \"payload\": " + kDocument + "}\n");
  // A payload that is a number itself.
  ok(url, {"enqueue", "--from", "-"}, "{\"queue\":\"nums\",\"payload\":1e400}\n");
  ok(url, {"enqueue", "nums", "1e400"});
  std::vector<std::string> payloads = stored(fixture, "payload");
  REQUIRE(payloads.size() == 5);
  check_kept({payloads[0], payloads[1], payloads[2]}, 3);
  CHECK(payloads[3] == payloads[4]);
  if (backend_under_test() != Backend::postgresql) CHECK(payloads[3] == "1e400");
  // The largest and smallest magnitudes every backend stores go in; one past is refused
  // before the INSERT (it reached PostgreSQL, which refused it with exit 1), nothing written.
  ok(url, {"enqueue", "nums", "[1e131071, 1e-16383]"});
  rejects(fixture, {"enqueue", "nums", "1e999999999"}, "payload holds the number 1e999999999");
  rejects(fixture, {"enqueue", "nums", "1e131072"}, "1e131072");
  rejects(fixture, {"enqueue", "--from", "-"}, "1e-16384",
          "{\"queue\":\"nums\",\"payload\":{\"x\":1e-16384}}\n");
}

TEST_CASE("cli: numbers in a result are stored as written by ack --result, ack --from and work") {
  FreshDatabase fixture;
  const std::string url = fixture.url();
  for (int i = 0; i < 3; ++i) enqueue(url, "nums");

  json first = claim_one(url, "nums");
  ok(url, {"ack", id_text(first), "--token", first["lock_token"].get<std::string>(), "--result",
           kDocument});
  json second = claim_one(url, "nums");
  ok(url, {"ack", "--from", "-"},
     "{\"id\": " + id_text(second) + ", \"token\": \"" + second["lock_token"].get<std::string>() +
         "\", \"result\": " + kDocument + "}\n");
  // A command's stdout becomes the job's result.
  ok(url, {"work", "nums", "--drain", "--", "printf", "%s", kDocument});
  check_kept(stored(fixture, "result"), 3);
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

TEST_CASE("cli: show, list and claim print stored numbers as stored, in every format") {
  FreshDatabase fixture;
  const std::string url = fixture.url();
  ok(url, {"enqueue", "nums", kDocument});
  const std::string payload = stored(fixture, "payload").at(0);
  // The stored text without insignificant white space (PostgreSQL's jsonb adds some).
  std::string compact;
  bool in_string = false;
  for (std::size_t i = 0; i < payload.size(); ++i) {
    const char c = payload[i];
    if (in_string && c == '\\') {
      compact += payload.substr(i++, 2);
      continue;
    }
    if (c == '"') in_string = !in_string;
    if (in_string || (c != ' ' && c != '\n')) compact += c;
  }
  const std::string needle = "\"payload\":" + compact;
  CAPTURE(compact);
  CHECK(ok(url, {"list", "nums", "-o", "ndjson"}).out.find(needle) != std::string::npos);
  CHECK(ok(url, {"show", "1", "-o", "ndjson"}).out.find(needle) != std::string::npos);
  CHECK(ok(url, {"show", "1"}).out.find(compact) != std::string::npos);
  // -o json is indented, but the payload is printed as one compact value.
  RunResult json_out = ok(url, {"show", "1", "-o", "json"});
  CHECK(json_out.out.find("\"payload\": " + compact) != std::string::npos);
  // Valid JSON (nlohmann itself refuses 1e400, so check with queuectl's own reader).
  nlohmann::ordered_json doc;
  REQUIRE(compact_json(json_out.out, 64, &doc).valid);
  CHECK(doc["payload"].is_object());
  CHECK(ok(url, {"claim", "nums", "-o", "ndjson"}).out.find(needle) != std::string::npos);
  // A payload's own string that looks like queuectl's marker is printed as the string it is.
  enqueue(url, "marker", R"({"x":"\u0001raw:7b7d\u0001"})");
  CHECK(ok(url, {"list", "marker", "-o", "ndjson"})
            .out.find(R"("payload":{"x":"\u0001raw:7b7d\u0001"})") != std::string::npos);
}

}  // namespace queuectl::testing::cli
