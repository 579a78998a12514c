#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/job.hpp"
#include "unit_helpers.hpp"

using queuectl::Status;
using queuectl::test::usage_error_of;

TEST_CASE("core::status_name") {
  SUBCASE("names and numbers as DESIGN.md gives them") {
    CHECK(queuectl::status_name(Status::ready) == "ready");
    CHECK(queuectl::status_name(Status::processing) == "processing");
    CHECK(queuectl::status_name(Status::done) == "done");
    CHECK(queuectl::status_name(Status::failed) == "failed");
    CHECK(queuectl::status_name(Status::canceled) == "canceled");
    CHECK(static_cast<int>(Status::ready) == 0);
    CHECK(static_cast<int>(Status::processing) == 1);
    CHECK(static_cast<int>(Status::done) == 2);
    CHECK(static_cast<int>(Status::failed) == 3);
    CHECK(static_cast<int>(Status::canceled) == 4);
  }
  SUBCASE("round trips through parse_status") {
    for (Status s :
         {Status::ready, Status::processing, Status::done, Status::failed, Status::canceled}) {
      CAPTURE(static_cast<int>(s));
      CHECK(queuectl::parse_status(queuectl::status_name(s)) == s);
    }
  }
}

TEST_CASE("core::parse_status") {
  SUBCASE("the British spelling is accepted") {
    CHECK(queuectl::parse_status("cancelled") == Status::canceled);
  }
  SUBCASE("unknown names are usage errors naming them") {
    for (const char* bad : {"bogus", "", "Ready", "done ", "queued", "0", "done,failed"}) {
      CAPTURE(bad);
      std::string message = usage_error_of([&] { queuectl::parse_status(bad); });
      CHECK(message.find("'" + std::string(bad) + "'") != std::string::npos);
      CHECK(message.find("ready") != std::string::npos);  // lists the valid names
    }
  }
}

TEST_CASE("core::parse_status_list") {
  SUBCASE("one") {
    CHECK(queuectl::parse_status_list("failed") == std::vector<Status>{Status::failed});
  }
  SUBCASE("several, in the order given") {
    CHECK(queuectl::parse_status_list("done,failed") ==
          std::vector<Status>{Status::done, Status::failed});
    CHECK(queuectl::parse_status_list("canceled,ready,processing") ==
          std::vector<Status>{Status::canceled, Status::ready, Status::processing});
  }
  SUBCASE("duplicates are dropped") {
    CHECK(queuectl::parse_status_list("done,done") == std::vector<Status>{Status::done});
    CHECK(queuectl::parse_status_list("done,failed,done,cancelled,canceled") ==
          std::vector<Status>{Status::done, Status::failed, Status::canceled});
  }
  SUBCASE("all five") {
    CHECK(queuectl::parse_status_list("ready,processing,done,failed,canceled").size() == 5);
  }
  SUBCASE("an unknown entry is named") {
    std::string message = usage_error_of([] { queuectl::parse_status_list("done,bogus"); });
    CHECK(message.find("'bogus'") != std::string::npos);
  }
  SUBCASE("empty entries are rejected") {
    for (const char* bad : {"", ",", "done,", ",done", "done,,failed"}) {
      CAPTURE(bad);
      usage_error_of([&] { queuectl::parse_status_list(bad); });
    }
  }
}

TEST_CASE("core::Job defaults") {
  queuectl::Job job;
  CHECK(job.status == Status::ready);
  CHECK(job.priority == 0);
  CHECK(job.attempts == 0);
  CHECK(job.max_attempts == 25);
  CHECK_FALSE(job.lock_token.has_value());
  CHECK_FALSE(job.finished_at.has_value());
}
