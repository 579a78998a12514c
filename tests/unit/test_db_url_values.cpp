// Query parameter values the driver would refuse at connect time are refused by
// DbUrl::parse, so that they are bad usage (exit 2) instead of a connection failure that
// looks temporary (exit 75).
#include <doctest/doctest.h>

#include <string>

#include "core/db_url.hpp"
#include "unit_helpers.hpp"

using queuectl::DbUrl;
using queuectl::resolve_db_url;
using queuectl::test::contains;
using queuectl::test::ScopedEnv;
using queuectl::test::usage_error_of;

namespace {

void rejects(const std::string& url, const std::string& needle) {
  CAPTURE(url);
  const std::string message = usage_error_of([&] { DbUrl::parse(url); });
  CHECK(contains(message, "invalid database URL"));
  CHECK(contains(message, needle));
  CHECK(!contains(message, "\n"));
}

}  // namespace

TEST_CASE("core::DbUrl::parse refuses MySQL parameter values SOCI cannot parse") {
  const std::string base = "mysql://app:pw@db/jobs?";
  for (const char* key : {"connect_timeout", "read_timeout", "write_timeout"}) {
    for (const char* bad : {"abc", "0", "-1", "1.5", "4294967296", "5s", " 5", "99999999999"})
      rejects(base + key + "=" + bad, std::string("'") + key + "' must be a whole number");
    CHECK(DbUrl::parse(base + key + "=4294967295").params.at(key) == "4294967295");
    CHECK(DbUrl::parse(base + key + "=1").params.at(key) == "1");
  }
  rejects(base + "connect_timeout=abc", "not 'abc'");
  rejects(base + "charset=", "'charset' is empty");
  rejects(base + "socket=", "'socket' is empty");
  CHECK(DbUrl::parse(base + "charset=latin1").params.at("charset") == "latin1");
}

TEST_CASE("core::DbUrl::parse refuses PostgreSQL parameter values libpq would refuse") {
  const std::string base = "postgresql://app:pw@db/jobs?";
  for (const char* key : {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout"}) {
    for (const char* bad : {"abc", "1.5", "5s", "99999999999", "-", "2147483648"})
      rejects(base + key + "=" + bad, std::string("'") + key + "' must be a whole number");
    // libpq reads any int; what a negative number means is libpq's business.
    for (const char* good : {"0", "10", "-1", "2147483647"})
      CHECK(DbUrl::parse(base + key + "=" + good).params.at(key) == good);
  }
  rejects(base + "sslmode=bogus", "'sslmode' must be one of disable, allow, prefer, require");
  rejects(base + "sslmode=REQUIRE", "not 'REQUIRE'");
  rejects(base + "gssencmode=always", "gssencmode");
  rejects(base + "channel_binding=yes", "channel_binding");
  rejects(base + "target_session_attrs=master", "target_session_attrs");
  rejects(base + "hostaddr=db.example.com", "'hostaddr' takes numeric IP addresses");
  rejects(base + "hostaddr=10.0.0.1,db", "hostaddr");
  rejects(base + "application_name=", "'application_name' is empty");
  for (const char* good :
       {"sslmode=verify-full", "gssencmode=disable", "channel_binding=require",
        "target_session_attrs=read-write", "hostaddr=10.0.0.1,::1", "hostaddr=10.0.0.1,,10.0.0.2"})
    CHECK_NOTHROW(DbUrl::parse(base + good));
}

TEST_CASE("core::DbUrl::parse refuses a password given twice in the URL, without showing it") {
  for (const char* url :
       {"mysql://app:first@db/jobs?password=second",
        "postgresql://app:first@db/jobs?password=second", "mysql://app:@db/jobs?password=second"}) {
    CAPTURE(url);
    const std::string message = usage_error_of([&] { DbUrl::parse(url); });
    CHECK(contains(message, "password is given twice"));
    CHECK(!contains(message, "first"));
    CHECK(!contains(message, "second"));
  }
  CHECK(usage_error_of([] { DbUrl::parse("mysql://app@db/jobs?password="); }).find("second") ==
        std::string::npos);
  CHECK(DbUrl::parse("mysql://app@db/jobs?password=only").params.at("password") == "only");
}

TEST_CASE("core::resolve_db_url: a password from the environment replaces ?password=") {
  ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::string("envpw"));
  for (const char* url : {"mysql://app@db/jobs?password=urlpw&connect_timeout=5",
                          "postgresql://app@db/jobs?password=urlpw&connect_timeout=5"}) {
    CAPTURE(url);
    DbUrl u = resolve_db_url({url, ""});
    CHECK(u.password.value_or("") == "envpw");
    CHECK(u.params.count("password") == 0);
    CHECK(u.params.at("connect_timeout") == "5");
    // One password reaches the driver, and it is the one from the environment.
    const std::string connect = u.soci_connect_string();
    CHECK(connect.find("password=") == connect.rfind("password="));
    CHECK(contains(connect, "password='envpw'"));
  }
}
