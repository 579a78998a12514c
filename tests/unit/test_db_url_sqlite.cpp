// sqlite: URLs: the documented forms, ?mode=, and the two-slash form with a host refused.
#include <doctest/doctest.h>

#include <string>

#include "core/db_url.hpp"
#include "unit_helpers.hpp"

using queuectl::Backend;
using queuectl::DbUrl;
using queuectl::test::contains;
using queuectl::test::ScopedEnv;
using queuectl::test::usage_error_of;

namespace {

std::string refusal(const std::string& url) {
  return usage_error_of([&] { DbUrl::parse(url); });
}

}  // namespace

TEST_CASE("core::DbUrl sqlite: forms") {
  CHECK(DbUrl::parse("sqlite:rel/q.db").database == "rel/q.db");
  CHECK(DbUrl::parse("sqlite:///abs/q.db").database == "/abs/q.db");
  CHECK(DbUrl::parse("sqlite:/abs/q.db").database == "/abs/q.db");
  CHECK(DbUrl::parse("sqlite:////abs/q.db").database == "//abs/q.db");
  CHECK(DbUrl::parse("sqlite::memory:").database == ":memory:");
  CHECK(DbUrl::parse("sqlite:///abs/q.db").params.empty());
  CHECK_FALSE(DbUrl::parse("sqlite:///abs/q.db").embedded_default);
}

TEST_CASE("core::DbUrl sqlite: ?mode=ro and ?mode=rw") {
  DbUrl ro = DbUrl::parse("sqlite:///abs/q.db?mode=ro");
  CHECK(ro.database == "/abs/q.db");
  CHECK(ro.sqlite_read_only());
  CHECK(ro.sqlite_no_create());
  CHECK(contains(ro.soci_connect_string(), "db=\"/abs/q.db\""));
  CHECK(contains(ro.soci_connect_string(), " readonly=1"));
  CHECK(ro.redacted() == "sqlite:///abs/q.db?mode=ro");

  DbUrl rw = DbUrl::parse("sqlite:rel.db?mode=rw");
  CHECK(rw.database == "rel.db");
  CHECK_FALSE(rw.sqlite_read_only());
  CHECK(rw.sqlite_no_create());
  CHECK_FALSE(contains(rw.soci_connect_string(), "readonly"));

  DbUrl plain = DbUrl::parse("sqlite:rel.db");
  CHECK_FALSE(plain.sqlite_read_only());
  CHECK_FALSE(plain.sqlite_no_create());
}

TEST_CASE("core::DbUrl sqlite: other query parameters are refused, naming them") {
  CHECK(contains(refusal("sqlite:///q.db?cache=shared"), "unknown query parameter 'cache'"));
  CHECK(contains(refusal("sqlite:///q.db?mode=ro&vfs=unix"), "'vfs'"));
  CHECK(contains(refusal("sqlite:///q.db?mode=rwc"), "'mode' must be ro"));
  CHECK(contains(refusal("sqlite:///q.db?mode="), "'mode' must be ro"));
  CHECK(contains(refusal("sqlite:///q.db?mode"), "'mode' needs a value"));
  CHECK(contains(refusal("sqlite:///q.db?"), "'?'"));
}

TEST_CASE("core::DbUrl sqlite://host/path is refused with both right spellings") {
  const std::string why = refusal("sqlite://tmp/x.db");
  CHECK(contains(why, "sqlite://tmp/x.db names a host ('tmp')"));
  CHECK(contains(why, "sqlite:///tmp/x.db"));
  CHECK(contains(why, "sqlite:tmp/x.db"));
  CHECK(contains(refusal("sqlite://localhost/var/q.db"), "('localhost')"));
}

TEST_CASE("core::DbUrl the embedded default is an absolute sqlite: URL, marked as such") {
  ScopedEnv xdg("XDG_DATA_HOME", std::string("/data/home"));
  ScopedEnv db("QUEUECTL_DB", std::nullopt);
  ScopedEnv pw("QUEUECTL_DB_PASSWORD", std::nullopt);
  DbUrl url = queuectl::resolve_db_url({});
  CHECK(url.database == "/data/home/queuectl/queue.db");
  CHECK(url.redacted() == "sqlite:///data/home/queuectl/queue.db");
  CHECK(url.embedded_default);
}

TEST_CASE("core::DbUrl with_connect_timeout bounds every server backend's connect") {
  DbUrl pg = DbUrl::parse("postgresql://app@db/jobs?connect_timeout=60");
  CHECK(pg.with_connect_timeout(1).params.at("connect_timeout") == "2");  // libpq's floor
  CHECK(contains(pg.with_connect_timeout(1).soci_connect_string(), "connect_timeout='2'"));
  DbUrl my = DbUrl::parse("mysql://app@db/jobs").with_connect_timeout(1);
  CHECK(my.params.at("connect_timeout") == "1");
  CHECK(my.params.at("read_timeout") == "1");
}
