#include <doctest/doctest.h>

#include <string>

#include "db/row_reader.hpp"

using queuectl::expand_ids;

TEST_CASE("db::expand_ids") {
  const std::string sql = "UPDATE job_queue SET status = 4 WHERE id IN ({ids})";
  SUBCASE("one placeholder per id, numbered from 0") {
    CHECK(expand_ids(sql, 1) == "UPDATE job_queue SET status = 4 WHERE id IN (:id0)");
    CHECK(expand_ids(sql, 3) == "UPDATE job_queue SET status = 4 WHERE id IN (:id0, :id1, :id2)");
  }
  SUBCASE("many ids") {
    std::string out = expand_ids(sql, 12);
    CHECK(out.find(":id11)") != std::string::npos);
    CHECK(out.find(":id12") == std::string::npos);
    CHECK(out.find("{ids}") == std::string::npos);
  }
  SUBCASE("text without {ids} is unchanged") {
    CHECK(expand_ids("SELECT 1", 3) == "SELECT 1");
  }
}
