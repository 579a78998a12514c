#include <doctest/doctest.h>

#include "core/engine.hpp"

using namespace queuectl;

TEST_CASE("core::mysql_engine_refusal") {
  SUBCASE("supported servers") {
    CHECK(mysql_engine_refusal("10.11.19-MariaDB-0+deb12u1").empty());
    CHECK(mysql_engine_refusal("10.6.0-MariaDB").empty());
    CHECK(mysql_engine_refusal("11.4.2-MariaDB-log").empty());
    CHECK(mysql_engine_refusal("5.5.5-10.6.12-MariaDB").empty());
    CHECK(mysql_engine_refusal("8.0.1").empty());
    CHECK(mysql_engine_refusal("8.0.36-0ubuntu0.22.04.1").empty());
    CHECK(mysql_engine_refusal("8.4.0").empty());
    CHECK(mysql_engine_refusal("9.1.0").empty());
  }
  SUBCASE("TiDB, whatever version it claims") {
    const std::string why = mysql_engine_refusal("8.0.11-TiDB-v7.5.0");
    CHECK(why.find("TiDB") == 0);
    CHECK(why.find("not supported") != std::string::npos);
    CHECK_FALSE(mysql_engine_refusal("5.7.25-TiDB-v6.1.0").empty());
  }
  SUBCASE("MariaDB before 10.6") {
    const std::string why = mysql_engine_refusal("10.5.23-MariaDB");
    CHECK(why == "MariaDB 10.5.23-MariaDB is too old: queuectl needs 10.6 or later (SKIP LOCKED)");
    CHECK_FALSE(mysql_engine_refusal("5.5.5-10.4.29-MariaDB").empty());
  }
  SUBCASE("MySQL before 8.0.1") {
    CHECK(mysql_engine_refusal("8.0.0-dmr") ==
          "MySQL 8.0.0-dmr is too old: queuectl needs 8.0.1 or later (SKIP LOCKED)");
    CHECK_FALSE(mysql_engine_refusal("5.7.44").empty());
  }
}

TEST_CASE("core::postgresql_engine_refusal") {
  CHECK(postgresql_engine_refusal(150004, false).empty());
  CHECK(postgresql_engine_refusal(120000, false).empty());
  CHECK(postgresql_engine_refusal(110022, false) ==
        "PostgreSQL 11 is too old: queuectl needs 12 or later");
  CHECK(postgresql_engine_refusal(130000, true).find("CockroachDB") == 0);
}
