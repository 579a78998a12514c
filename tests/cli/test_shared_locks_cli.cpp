// Named locks shared with applications: an application that takes a lock with its own,
// hand-written SQL, as docs/named-locks.md documents it (MySQL/MariaDB: GET_LOCK(name, 0), as in
// the articles; PostgreSQL: pg_try_advisory_lock(hashtextextended(name, 0)); SQLite: a
// queuectl_locks row), and `queuectl lock NAME` exclude each other, multibyte and long
// names included. The application's SQL runs on a connection of its own, never through
// queuectl's statements.
#include <doctest/doctest.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

const std::string kHangul = "\xED\x95\x9C";  // 한: 3 bytes in UTF-8

std::string repeat(const std::string& unit, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += unit;
  return out;
}

// The names every backend must share: short, 30 Hangul characters (90 bytes), ASCII of 150
// bytes, and 64 Hangul characters (192 bytes, the longest name MariaDB takes).
std::vector<std::string> shared_names() {
  return {"nightly-report", repeat(kHangul, 30), "report:" + std::string(143, 'x'),
          repeat(kHangul, 64)};
}

std::string shown(const std::string& name) {
  return name.size() <= 40 ? name
                           : name.substr(0, 20) + "... (" + std::to_string(name.size()) + " bytes)";
}

// An application's own session and its own lock SQL.
class Application {
 public:
  explicit Application(FreshDatabase& fixture) : db_(fixture.connect()) {}

  // Tries once to take `name`, without waiting: 1 taken, 0 held elsewhere (-1: NULL).
  long long take(const std::string& name) {
    std::string n = name;
    long long got = -1;
    soci::indicator ind = soci::i_null;
    soci::session& s = db_->session();
    switch (backend_under_test()) {
      case Backend::mysql:
        s << "SELECT GET_LOCK(:name, 0)", soci::into(got, ind), soci::use(n, "name");
        return ind == soci::i_null ? -1 : got;
      case Backend::postgresql:
        s << "SELECT CASE WHEN pg_try_advisory_lock(hashtextextended(:name, 0)) THEN 1 ELSE 0 END",
            soci::into(got, ind), soci::use(n, "name");
        return got;
      case Backend::sqlite:
        break;
    }
    // The row queuectl's own lock writes: taken when it is new or its holder's has expired.
    soci::statement st = (s.prepare << R"(
        INSERT INTO queuectl_locks (name, token, expires_at)
        VALUES (:name, 'app', strftime('%Y-%m-%d %H:%M:%f', 'now', '+30 seconds'))
        ON CONFLICT (name) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
         WHERE queuectl_locks.expires_at < strftime('%Y-%m-%d %H:%M:%f', 'now'))",
                          soci::use(n, "name"));
    st.execute(true);
    return st.get_affected_rows();
  }

  // Gives `name` back: 1 when this session held it.
  long long release(const std::string& name) {
    std::string n = name;
    long long got = -1;
    soci::indicator ind = soci::i_null;
    soci::session& s = db_->session();
    switch (backend_under_test()) {
      case Backend::mysql:
        s << "SELECT RELEASE_LOCK(:name)", soci::into(got, ind), soci::use(n, "name");
        return ind == soci::i_null ? -1 : got;
      case Backend::postgresql:
        s << "SELECT CASE WHEN pg_advisory_unlock(hashtextextended(:name, 0)) THEN 1 ELSE 0 END",
            soci::into(got, ind), soci::use(n, "name");
        return got;
      case Backend::sqlite:
        break;
    }
    soci::statement st =
        (s.prepare << "DELETE FROM queuectl_locks WHERE name = :name AND token = 'app'",
         soci::use(n, "name"));
    st.execute(true);
    return st.get_affected_rows();
  }

  Database& db() { return *db_; }

 private:
  std::unique_ptr<Database> db_;
};

}  // namespace

TEST_CASE("cli: lock: a lock an application holds with its own SQL makes `queuectl lock` exit 5" *
          doctest::skip(lock_rows_forced() || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  TempDir dir;
  Application app(fixture);
  for (const std::string& name : shared_names()) {
    CAPTURE(shown(name));
    const std::string marker = dir.path() + "/ran";
    REQUIRE(app.take(name) == 1);
    // Held by the application: queuectl's command never runs.
    RunResult busy = queuectl(url, {"lock", name, "--", "touch", marker});
    check_error(busy, 5, "held by someone else");
    CHECK(!file_exists(marker));
    // Given back: now queuectl takes it, and gives it back when its command ends.
    REQUIRE(app.release(name) == 1);
    RunResult free = queuectl(url, {"lock", name, "--", "touch", marker});
    INFO(dump(free));
    CHECK(free.exit_code == 0);
    CHECK(file_exists(marker));
    std::remove(marker.c_str());
    CHECK(app.take(name) == 1);
    CHECK(app.release(name) == 1);
  }
}

TEST_CASE("cli: lock: while `queuectl lock` holds a name, an application cannot take it" *
          doctest::skip(lock_rows_forced() || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  Application app(fixture);
  for (const std::string& name : shared_names()) {
    CAPTURE(shown(name));
    TempDir dir;
    Cleanup cleanup;
    const std::string go = dir.path() + "/go";
    int holder = hold_lock(url, name, dir.path(), go, cleanup);
    CHECK(app.take(name) == 0);
    touch(go);
    CHECK(wait_child(cleanup, holder) == 0);
    // queuectl gave it back when its command ended: the application takes it now.
    CHECK(app.take(name) == 1);
    CHECK(app.release(name) == 1);
  }
}

// MySQL/MariaDB refuse some names in GET_LOCK (MariaDB: over 192 bytes; MySQL 8: over 64
// characters). No application can lock such a name, so queuectl locks a stand-in key,
// which --print-key shows, and an application that wants that lock takes the stand-in.
TEST_CASE("cli: lock: a name the server refuses is locked under the stand-in --print-key shows" *
          doctest::skip(backend_under_test() != Backend::mysql || lock_rows_forced())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  Application app(fixture);
  const std::string name = "report:" + std::string(243, 'z');  // 250 bytes: over 192
  REQUIRE_THROWS_AS(app.take(name), soci::soci_error);         // the server's own verdict

  const std::string key = ok(url, {"lock", "--print-key", name}).out;
  REQUIRE(key.size() > 1);
  REQUIRE(key.back() == '\n');
  const std::string stand_in = key.substr(0, key.size() - 1);
  CHECK(stand_in.size() <= 57);
  CHECK(stand_in.rfind("report:zzz", 0) == 0);

  REQUIRE(app.take(stand_in) == 1);
  check_error(queuectl(url, {"lock", name, "--", "true"}), 5, "held by someone else");
  REQUIRE(app.release(stand_in) == 1);

  TempDir dir;
  Cleanup cleanup;
  const std::string go = dir.path() + "/go";
  int holder = hold_lock(url, name, dir.path(), go, cleanup);
  CHECK(app.take(stand_in) == 0);
  check_error(queuectl(url, {"lock", name, "--", "true"}), 5, "held by someone else");
  touch(go);
  CHECK(wait_child(cleanup, holder) == 0);
  CHECK(app.take(stand_in) == 1);
  CHECK(app.release(stand_in) == 1);
}

TEST_CASE("cli: lock --print-key prints what the database locks for a name" *
          doctest::skip(lock_rows_forced() || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  for (const std::string& name : shared_names()) {
    CAPTURE(shown(name));
    std::string expected = name;
    if (backend_under_test() == Backend::postgresql) {
      // The key docs/named-locks.md's SQL computes, asked of the server by the test itself.
      std::string n = name;
      fixture.db().session() << "SELECT CAST(hashtextextended(:name, 0) AS text)",
          soci::into(expected), soci::use(n, "name");
    }
    CHECK(ok(url, {"lock", "--print-key", name}).out == expected + "\n");
    json doc = ok_json(url, {"lock", "--print-key", name});
    CHECK(doc["name"] == name);
    CHECK(doc["key"] == expected);
    CHECK(doc["taken_with"].is_string());
  }
  // It takes nothing: the name is free afterwards.
  Application app(fixture);
  CHECK(app.take("nightly-report") == 1);
  CHECK(app.release("nightly-report") == 1);
}

TEST_CASE("cli: lock: bad names and --print-key misuse are refused with exit 2") {
  FreshDatabase fixture;
  TempDir dir;
  const std::string marker = dir.path() + "/ran";
  rejects(fixture, {"lock", "bad\xFF\xFEname", "--", "touch", marker}, "not valid UTF-8");
  rejects(fixture, {"lock", "", "--", "touch", marker}, "lock name");
  rejects(fixture, {"lock", std::string(256, 'n'), "--", "touch", marker}, "1 to 255 bytes");
  rejects(fixture, {"lock", "--print-key", "nightly", "--", "touch", marker}, "--print-key");
  rejects(fixture, {"lock", "--print-key", "nightly", "--wait", "5s"}, "--print-key");
  rejects(fixture, {"lock", "--print-key", "bad\xFF"}, "not valid UTF-8");
  rejects(fixture, {"lock", "nightly"}, "needs a command");
  CHECK(!file_exists(marker));
}

}  // namespace queuectl::testing::cli
