// claim -o ndjson and list -o ndjson write each job field by field (append_job_ndjson),
// without building a JSON document: the text must be exactly what the document printed,
// for every kind of value a row can hold.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/output.hpp"
#include "cli/views.hpp"

using queuectl::Format;
using queuectl::Job;

namespace {

Job plain_job() {
  Job j;
  j.id = 42;
  j.queue = "emails";
  j.status = queuectl::Status::processing;
  j.priority = -3;
  j.run_at = "2026-11-24T20:00:00.123456Z";
  j.attempts = 2;
  j.max_attempts = 5;
  j.payload = R"({"to":"a@example.com","n":1})";
  j.locked_by = "host:123";
  j.lock_token = "6b1f0c3e-0000-4000-8000-000000000001";
  j.locked_at = "2026-11-24T20:00:01.000000Z";
  j.lock_until = "2026-11-24T20:00:31.000000Z";
  j.created_at = "2026-11-24T19:59:59.999999Z";
  j.updated_at = "2026-11-24T20:00:01.000000Z";
  return j;
}

std::string via_document(const Job& j) {
  return queuectl::dump_json(queuectl::job_json(j)) + "\n";
}

std::string written(const Job& j) {
  std::string out;
  queuectl::append_job_ndjson(out, j);
  return out;
}

}  // namespace

TEST_CASE("append_job_ndjson writes what the job's document prints") {
  std::vector<std::pair<const char*, Job>> cases;
  cases.emplace_back("plain", plain_job());
  {
    Job j = plain_job();
    j.status = queuectl::Status::failed;
    j.result = R"({"ok" : false,  "list": [1, 2.50, -0, 1e400, 12345678901234567890123]})";
    j.last_error = "line one\nline \"two\"\ttabbed\\ \x01\x1f\x7f end";
    j.finished_at = "2026-11-24T20:01:00.000000Z";
    j.dedupe_key = "k\u00e9y \xe2\x80\xa8 sep";
    j.group_key = "order-42";
    j.dead_from = "old-queue";
    j.locked_by.reset();
    j.lock_token.reset();
    cases.emplace_back("every field, numbers kept as written, control characters", j);
  }
  {
    Job j = plain_job();
    j.payload = "not json at all {";
    j.result = "";
    cases.emplace_back("a payload and result that are not JSON (written by other SQL)", j);
  }
  {
    Job j = plain_job();
    j.payload = R"({"s":"\u00e9\/\u0041\ud83d\ude00", "nested": {"a": [true, null, {}]}})";
    cases.emplace_back("escapes in the stored JSON", j);
  }
  {
    Job j = plain_job();
    j.last_error = std::string("bad \xff\xfe utf-8 \xc3");
    j.payload = std::string("{\"s\":\"\xff\"}");
    cases.emplace_back("text that is not UTF-8 (a worker's stderr)", j);
  }
  {
    Job j = plain_job();
    j.payload = std::string(200, '[') + std::string(200, ']');
    cases.emplace_back("JSON nested deeper than the printer follows", j);
  }
  {
    Job j = plain_job();
    j.payload = "\"just a string\"";
    j.result = "  17  ";
    cases.emplace_back("scalar documents", j);
  }
  for (const auto& [name, job] : cases) {
    CAPTURE(name);
    const std::string expected = via_document(job);
    CHECK(written(job) == expected);
    // And through the view and printer the commands use.
    std::ostringstream stream;
    queuectl::print_output(
        stream,
        queuectl::jobs_view({job, job}, std::nullopt, queuectl::JobsTable::claimed, false, true),
        Format::ndjson);
    CHECK(stream.str() == expected + expected);
  }
}
