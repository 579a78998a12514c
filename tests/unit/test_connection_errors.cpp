// Connection and schema errors without a server: reading --db-password-file, where the
// password came from, how each dialect classifies the drivers' errors (missing table,
// refused login, a setting waiting will not fix, everything else temporary), and the
// reason shown for a failed PostgreSQL connect.
#include <doctest/doctest.h>

#include <soci/mysql/soci-mysql.h>
#include <soci/postgresql/soci-postgresql.h>
#include <soci/sqlite3/soci-sqlite3.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "core/db_url.hpp"
#include "db/database.hpp"
#include "db/dialect.hpp"
#include "unit_helpers.hpp"

using queuectl::DbUrl;
using queuectl::Dialect;
using queuectl::resolve_db_url;
using queuectl::test::contains;
using queuectl::test::ScopedEnv;
using queuectl::test::usage_error_of;

namespace {

// A temporary folder, removed with what it holds at the end of the test.
class TempFolder {
 public:
  TempFolder() {
    char name[] = "/tmp/queuectl-unit-pw-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path_ = name;
  }
  ~TempFolder() {
    for (const std::string& f : files_) std::remove(f.c_str());
    ::rmdir(path_.c_str());
  }
  // Writes `content` to a file in the folder; returns its path.
  std::string write(const std::string& name, const std::string& content) {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << content;
    files_.push_back(file);
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// SOCI's PostgreSQL backend: its own line, then libpq's message.
soci::soci_error pg_connect_error(const std::string& libpq) {
  return soci::soci_error("Cannot establish connection to the database.\n" + libpq + "\n");
}

}  // namespace

TEST_CASE("core::resolve_db_url: a password file that would give an empty password is refused") {
  ScopedEnv no_password("QUEUECTL_DB_PASSWORD", std::nullopt);
  TempFolder dir;
  const std::string url = "postgresql://app:urlpw@db/jobs";

  SUBCASE("a folder") {
    std::string message = usage_error_of([&] { resolve_db_url({url, dir.path()}); });
    CHECK(contains(message, dir.path()));
    CHECK(contains(message, "folder"));
  }
  SUBCASE("an empty file, or one holding only a newline") {
    for (const char* content : {"", "\n", "\r\n"}) {
      CAPTURE(content);
      std::string file = dir.write("pw", content);
      std::string message = usage_error_of([&] { resolve_db_url({url, file}); });
      CHECK(contains(message, file));
      CHECK(contains(message, "is empty"));
    }
  }
  SUBCASE("an empty first line") {
    std::string file = dir.write("pw", "\nsecret\n");
    std::string message = usage_error_of([&] { resolve_db_url({url, file}); });
    CHECK(contains(message, file));
    CHECK(contains(message, "first line"));
  }
  SUBCASE("a path that cannot be opened (a file used as a folder)") {
    std::string file = dir.write("pw", "secret\n") + "/inside";
    std::string message = usage_error_of([&] { resolve_db_url({url, file}); });
    CHECK(contains(message, file));
    CHECK(contains(message, "Not a directory"));
  }
  SUBCASE("on SQLite as well, which has no use for a password") {
    std::string message = usage_error_of([&] {
      resolve_db_url({"sqlite::memory:", dir.write("pw", "")});
    });
    CHECK(contains(message, "is empty"));
  }
  SUBCASE("one trailing newline is not part of the password; inner spaces are") {
    std::string file = dir.write("pw", " pass word \n");
    CHECK(resolve_db_url({url, file}).password.value_or("") == " pass word ");
  }
}

TEST_CASE("core::resolve_db_url: password_origin names where the password came from") {
  ScopedEnv no_password("QUEUECTL_DB_PASSWORD", std::nullopt);
  TempFolder dir;

  CHECK(resolve_db_url({"postgresql://app@db/jobs", ""}).password_origin.empty());
  CHECK(resolve_db_url({"sqlite::memory:", ""}).password_origin.empty());
  CHECK(resolve_db_url({"postgresql://app:urlpw@db/jobs", ""}).password_origin == "the URL");
  CHECK(resolve_db_url({"mysql://app@db/jobs?password=x", ""}).password_origin == "the URL");
  {
    ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::string("envpw"));
    CHECK(resolve_db_url({"postgresql://app:urlpw@db/jobs", ""}).password_origin ==
          "QUEUECTL_DB_PASSWORD");
    std::string file = dir.write("pw", "filepw\n");
    DbUrl u = resolve_db_url({"postgresql://app:urlpw@db/jobs", file});
    CHECK(u.password_origin == "--db-password-file '" + file + "'");
    CHECK(u.password.value_or("") == "filepw");
  }
  {
    // An empty variable is ignored: the URL's password stays, and so does its origin.
    ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::string(""));
    CHECK(resolve_db_url({"postgresql://app:urlpw@db/jobs", ""}).password_origin == "the URL");
  }
}

TEST_CASE("db::Dialect::is_missing_table: only a missing table, never a permission error") {
  auto pg = queuectl::make_postgresql_dialect();
  CHECK(pg->is_missing_table(soci::postgresql_soci_error(
      "ERROR:  relation \"queuectl_schema_migrations\" does not exist", "42P01")));
  CHECK_FALSE(pg->is_missing_table(soci::postgresql_soci_error(
      "ERROR:  permission denied for table queuectl_schema_migrations", "42501")));
  CHECK_FALSE(pg->is_missing_table(soci::postgresql_soci_error(
      "ERROR:  canceling statement due to statement timeout", "57014")));
  CHECK_FALSE(pg->is_missing_table(
      soci::postgresql_soci_error("ERROR:  column \"version\" does not exist", "42703")));

  auto my = queuectl::make_mysql_dialect();
  CHECK(my->is_missing_table(
      soci::mysql_soci_error("Table 'q.queuectl_schema_migrations' doesn't exist", 1146)));
  CHECK_FALSE(my->is_missing_table(soci::mysql_soci_error(
      "SELECT command denied to user 'app'@'localhost' for table `q`.`queuectl_schema_migrations`",
      1142)));
  CHECK_FALSE(my->is_missing_table(
      soci::mysql_soci_error("Unknown column 'version' in 'field list'", 1054)));

  auto lite = queuectl::make_sqlite_dialect();
  CHECK(lite->is_missing_table(soci::sqlite3_soci_error(
      "sqlite3_statement_backend::prepare: no such table: queuectl_schema_migrations",
      SQLITE_ERROR)));
  CHECK_FALSE(lite->is_missing_table(soci::sqlite3_soci_error(
      "sqlite3_statement_backend::prepare: no such column: version", SQLITE_ERROR)));
  CHECK_FALSE(lite->is_missing_table(soci::sqlite3_soci_error(
      "sqlite3_statement_backend::loadOne: database is locked", SQLITE_BUSY)));
}

// How Database sorts a failed connect: a bad setting or a refused login is exit 1, anything
// else (nothing listening, no such host, a timeout, a busy server) stays temporary, 75.
TEST_CASE("db::PostgreSQL connect failures: settings that waiting will not fix vs. temporary") {
  auto pg = queuectl::make_postgresql_dialect();
  const std::string at = "connection to server at \"127.0.0.1\", port 5432 failed: ";

  for (const std::string& setting :
       {at + "server does not support SSL, but SSL was required",
        at + "root certificate file \"/root/.postgresql/root.crt\" does not exist",
        at + "SSL error: certificate verify failed",
        at + "FATAL:  unrecognized configuration parameter \"bogus\"",
        at + "FATAL:  invalid value for parameter \"statement_timeout\": \"x\"",
        std::string("invalid sslmode value: \"sometimes\""),
        at + "channel binding required, but server authenticated client without channel binding"}) {
    CAPTURE(setting);
    CHECK(pg->is_bad_connection_setting(pg_connect_error(setting)));
  }
  for (const std::string& login :
       {at + "FATAL:  password authentication failed for user \"app\"",
        at + "fe_sendauth: no password supplied", at + "FATAL:  database \"nope\" does not exist",
        at + "FATAL:  role \"app\" is not permitted to log in"}) {
    CAPTURE(login);
    CHECK(pg->is_access_denied(pg_connect_error(login)));
    CHECK_FALSE(pg->is_bad_connection_setting(pg_connect_error(login)));
  }
  for (const std::string& temporary :
       {at + "Connection refused",
        std::string("could not translate host name \"db.invalid\" to address: Name or service "
                    "not known"),
        at + "timeout expired", at + "FATAL:  sorry, too many clients already",
        at + "FATAL:  the database system is starting up", at + "SSL SYSCALL error: EOF detected",
        std::string("connection to server on socket \"/run/postgresql/.s.PGSQL.5432\" failed: "
                    "No such file or directory")}) {
    CAPTURE(temporary);
    CHECK_FALSE(pg->is_bad_connection_setting(pg_connect_error(temporary)));
    CHECK_FALSE(pg->is_access_denied(pg_connect_error(temporary)));
  }
}

TEST_CASE("db::MySQL connect failures: settings that waiting will not fix vs. temporary") {
  auto my = queuectl::make_mysql_dialect();
  CHECK(my->is_bad_connection_setting(soci::mysql_soci_error("SSL connection error", 2026)));
  CHECK(my->is_access_denied(soci::mysql_soci_error("Access denied for user", 1045)));
  CHECK(my->is_access_denied(soci::mysql_soci_error("Host 'x' is not allowed to connect", 1130)));
  for (int code : {2002, 2003, 2013, 1040}) {  // socket, TCP, lost, too many connections
    CAPTURE(code);
    soci::mysql_soci_error e("temporary", code);
    CHECK_FALSE(my->is_bad_connection_setting(e));
    CHECK_FALSE(my->is_access_denied(e));
  }
}

TEST_CASE("db::driver_reason: libpq's reason instead of SOCI's line, one line") {
  CHECK(queuectl::driver_reason(
            "Cannot establish connection to the database.\nconnection to server at \"h\", port 1 "
            "failed: FATAL:  password authentication failed for user \"app\"\n") ==
        "connection to server at \"h\", port 1 failed: FATAL:  password authentication failed "
        "for user \"app\"");
  // Several addresses tried: the first reason, without libpq's indented hint.
  CHECK(queuectl::driver_reason(
            "Cannot establish connection to the database.\nconnection to server at \"localhost\" "
            "(::1), port 1 failed: Connection refused\n\tIs the server running on that host and "
            "accepting TCP/IP connections?\nconnection to server at \"localhost\" (127.0.0.1), "
            "port 1 failed: Connection refused\n") ==
        "connection to server at \"localhost\" (::1), port 1 failed: Connection refused");
  CHECK(queuectl::driver_reason("Cannot establish connection to the database.") ==
        "Cannot establish connection to the database.");
  CHECK(queuectl::driver_reason("Cannot execute query. Fatal error. ERROR:  permission denied "
                                "for sequence job_queue_id_seq\n") ==
        "ERROR:  permission denied for sequence job_queue_id_seq");
  // A connection lost mid-statement: libpq's words, without SOCI's sentences before them.
  CHECK(queuectl::driver_reason("Cannot execute query. Fatal error. Connection failed. server "
                                "closed the connection unexpectedly\n\tThis probably means the "
                                "server terminated abnormally\n") ==
        "server closed the connection unexpectedly");
  // Nothing but SOCI's words: kept, rather than an empty reason...
  CHECK(queuectl::driver_reason("Cannot execute query. Fatal error.") ==
        "Cannot execute query. Fatal error.");
  // ... unless they say the connection failed (a statement on a connection already lost,
  // libpq saying nothing more): that, in our words.
  CHECK(queuectl::driver_reason("Cannot execute query. Fatal error. Connection failed.") ==
        "the connection is lost");
  CHECK(queuectl::driver_reason("ERROR:  permission denied for table job_queue\n") ==
        "ERROR:  permission denied for table job_queue");
  CHECK(queuectl::driver_reason("Access denied for user 'app'@'localhost' (using password: YES)") ==
        "Access denied for user 'app'@'localhost' (using password: YES)");
}
