// Multi-host PostgreSQL URLs (high availability through libpq): parsed, passed to libpq as
// its host and port lists, redacted like any URL.
#include <doctest/doctest.h>

#include <string>

#include "core/db_url.hpp"
#include "unit_helpers.hpp"

using queuectl::DbUrl;
using queuectl::test::usage_error_of;

TEST_CASE("core::DbUrl multi-host") {
  SUBCASE("every host and port, in order; the first is host and port") {
    DbUrl u = DbUrl::parse(
        "postgresql://app:pw@h1:5432,h2:5433,[::1]:5434/jobs?target_session_attrs=read-write");
    REQUIRE(u.hosts.size() == 3);
    CHECK(u.hosts[0] == std::make_pair(std::string("h1"), 5432));
    CHECK(u.hosts[1] == std::make_pair(std::string("h2"), 5433));
    CHECK(u.hosts[2] == std::make_pair(std::string("::1"), 5434));
    CHECK(u.host == "h1");
    CHECK(u.port == 5432);
    CHECK(u.database == "jobs");
    CHECK(u.params.at("target_session_attrs") == "read-write");
  }
  SUBCASE("libpq gets its lists, an empty port for a host without one") {
    const std::string s =
        DbUrl::parse("postgresql://app@h1:5432,h2/jobs?target_session_attrs=prefer-standby")
            .soci_connect_string();
    CHECK(s.find("host='h1,h2'") != std::string::npos);
    CHECK(s.find("port='5432,'") != std::string::npos);
    CHECK(s.find("target_session_attrs='prefer-standby'") != std::string::npos);
  }
  SUBCASE("redacted: every host, the password hidden") {
    DbUrl u = DbUrl::parse("postgresql://app:s3cret@h1:5432,h2:5433/jobs");
    CHECK(u.redacted() == "postgresql://app:***@h1:5432,h2:5433/jobs");
  }
  SUBCASE("one host: no list") {
    CHECK(DbUrl::parse("postgresql://app@h1:5432/jobs").hosts.empty());
  }
  SUBCASE("refused: an empty host, a bad port, several hosts on MySQL") {
    CHECK(usage_error_of([] { DbUrl::parse("postgresql://app@h1,,h2/jobs"); }).find("empty host") !=
          std::string::npos);
    CHECK(usage_error_of([] { DbUrl::parse("postgresql://app@h1:5432,h2:x/jobs"); }).find("port") !=
          std::string::npos);
    CHECK(usage_error_of([] {
            DbUrl::parse("mysql://app@h1:3306,h2:3306/jobs");
          }).find("several hosts") != std::string::npos);
  }
}
