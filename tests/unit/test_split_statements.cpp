#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "db/migrations.hpp"

using queuectl::split_statements;
using Statements = std::vector<std::string>;

TEST_CASE("db::split_statements") {
  SUBCASE("splits at semicolons that end a line, dropping them") {
    CHECK(split_statements("CREATE TABLE a (x INT);\nCREATE INDEX a_x ON a (x);\n") ==
          Statements{"CREATE TABLE a (x INT)", "CREATE INDEX a_x ON a (x)"});
  }
  SUBCASE("no trailing newline") {
    CHECK(split_statements("SELECT 1;") == Statements{"SELECT 1"});
  }
  SUBCASE("skips leading comment lines") {
    Statements out = split_statements(
        "-- 001_job_queue.sql\n-- The job table.\nCREATE TABLE a (x INT);\n"
        "-- an index for the claim\nCREATE INDEX a_x ON a (x);\n");
    CHECK(out == Statements{"CREATE TABLE a (x INT)", "CREATE INDEX a_x ON a (x)"});
  }
  SUBCASE("drops comment lines between statements, after blank lines too") {
    // A comment kept at the head of a statement reached MySQL cut at its first colon.
    Statements out = split_statements(
        "DROP TRIGGER IF EXISTS t;\n\n-- one statement: all or nothing\n"
        "ALTER TABLE a ADD COLUMN y INT;\n");
    REQUIRE(out.size() == 2);
    CHECK(out[1].find("--") == std::string::npos);
    CHECK(out[1].find("ALTER TABLE a ADD COLUMN y INT") != std::string::npos);
  }
  SUBCASE("keeps a multi-line statement whole") {
    const std::string sql =
        "CREATE TABLE job_queue (\n"
        "  id INTEGER PRIMARY KEY,\n"
        "  queue TEXT NOT NULL,\n"
        "  payload TEXT NOT NULL CHECK (json_valid(payload))\n"
        ");\n"
        "\n"
        "CREATE INDEX job_queue_ready\n"
        "  ON job_queue (queue, priority DESC, run_at, id)\n"
        "  WHERE status = 0;\n";
    Statements out = split_statements(sql);
    REQUIRE(out.size() == 2);
    CHECK(out[0] ==
          "CREATE TABLE job_queue (\n"
          "  id INTEGER PRIMARY KEY,\n"
          "  queue TEXT NOT NULL,\n"
          "  payload TEXT NOT NULL CHECK (json_valid(payload))\n"
          ")");
    CHECK(out[1].find("CREATE INDEX job_queue_ready\n") != std::string::npos);
    CHECK(out[1].find("WHERE status = 0") != std::string::npos);
    CHECK(out[1].back() != ';');
  }
  SUBCASE("a trigger body from BEGIN to END; is one statement") {
    Statements out = split_statements(
        "CREATE TRIGGER t BEFORE UPDATE ON a FOR EACH ROW\n"
        "BEGIN\n"
        "  DECLARE v INT DEFAULT NULL;\n"
        "  IF NEW.x = 1 THEN\n"
        "    SET NEW.y = 2;\n"
        "  END IF;\n"
        "END;\n"
        "CREATE TRIGGER u AFTER UPDATE ON a\n"
        "BEGIN\n"
        "  UPDATE a SET y = 1 WHERE x = NEW.x;\n"
        "  UPDATE a SET y = 2 WHERE x = NEW.y; END;\n"
        "SELECT 1;\n");
    REQUIRE(out.size() == 3);
    CHECK(out[0].find("SET NEW.y = 2;\n  END IF;\nEND") != std::string::npos);
    CHECK(out[1].find("WHERE x = NEW.x;\n") != std::string::npos);
    CHECK(out[1].substr(out[1].size() - 4) == " END");
    CHECK(out[2] == "SELECT 1");
  }
  SUBCASE("a semicolon inside a line does not split") {
    CHECK(split_statements("INSERT INTO t VALUES ('a;b');\n") ==
          Statements{"INSERT INTO t VALUES ('a;b')"});
  }
  SUBCASE("trailing spaces and CRLF line ends") {
    CHECK(split_statements("SELECT 1;  \r\nSELECT 2;\r\n") == Statements{"SELECT 1", "SELECT 2"});
  }
  SUBCASE("blank input and blank lines give nothing") {
    CHECK(split_statements("").empty());
    CHECK(split_statements("\n\n   \n").empty());
    CHECK(split_statements("-- only a comment\n").empty());
    CHECK(split_statements(";\n").empty());
  }
  SUBCASE("a $$-quoted function body stays whole") {
    Statements out = split_statements(
        "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        "BEGIN\n  PERFORM 1;\n  RETURN NULL;\nEND\n$$;\nCREATE TABLE b (x INT);\n");
    REQUIRE(out.size() == 2);
    CHECK(out[0] ==
          "CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\n"
          "BEGIN\n  PERFORM 1;\n  RETURN NULL;\nEND\n$$");
    CHECK(out[1] == "CREATE TABLE b (x INT)");
    CHECK(split_statements("SELECT $$a;$$;\nSELECT 2;\n") ==
          Statements{"SELECT $$a;$$", "SELECT 2"});
  }
  SUBCASE("a last statement without a semicolon is kept") {
    Statements out = split_statements("SELECT 1;\nSELECT 2\n");
    REQUIRE(out.size() == 2);
    CHECK(out[0] == "SELECT 1");
    CHECK(out[1].rfind("SELECT 2", 0) == 0);
  }
}

TEST_CASE("db::split_statements on the embedded migrations") {
  for (auto backend :
       {queuectl::Backend::sqlite, queuectl::Backend::postgresql, queuectl::Backend::mysql}) {
    CAPTURE(queuectl::backend_name(backend));
    int last_version = 0;
    for (const queuectl::Migration& m : queuectl::migrations_for(backend)) {
      CAPTURE(m.name);
      CHECK(m.version > last_version);
      last_version = m.version;
      Statements out = split_statements(m.sql);
      CHECK_FALSE(out.empty());
      for (const std::string& stmt : out) {
        CAPTURE(stmt);
        CHECK(stmt.find_first_not_of(" \t\r\n") != std::string::npos);
        CHECK(stmt.back() != ';');
        // SOCI's MySQL backend takes a colon outside a literal for a placeholder and cuts
        // a statement run without binds there: a MySQL migration statement has none.
        if (backend == queuectl::Backend::mysql) CHECK(stmt.find(':') == std::string::npos);
      }
    }
  }
  CHECK_FALSE(queuectl::migrations_for(queuectl::Backend::sqlite).empty());
}
