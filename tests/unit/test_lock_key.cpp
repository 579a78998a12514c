// The key a named lock is taken under, per backend (no server needed). Every backend
// locks the name itself, as an application's own SQL does: PostgreSQL's statements hash
// it on the server (hashtextextended(name, 0)), MySQL/MariaDB's GET_LOCK takes it as it
// is, SQLite keys its lock row by it. Only a name the MySQL/MariaDB server refuses gets a
// stand-in: its leading ASCII characters (at most 40), ':' and 16 hex digits of FNV-1a 64.
// (Which names a server refuses is its own decision, tested against the real servers in
// tests/cli/test_shared_locks_cli.cpp.)
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "db/dialect.hpp"

using queuectl::Backend;
using queuectl::make_dialect;

namespace {

std::string repeat(const std::string& unit, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += unit;
  return out;
}

std::string stand_in(const std::string& name) {
  return make_dialect(Backend::mysql)->lock_key_for_refused(name);
}

bool ascii(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80 || static_cast<unsigned char>(c) < 0x20) return false;
  return true;
}

}  // namespace

TEST_CASE("db::lock_key: every backend locks the name as it is, however long or multibyte") {
  for (const std::string& name :
       {std::string("a"), std::string("queuectl:reap"), std::string(64, 'n'), std::string(65, 'n'),
        std::string(150, 'n'), std::string(192, 'n'), std::string(255, 'n'),
        repeat("\xED\x95\x9C", 30) /* 30 x 한, 90 bytes */, repeat("\xED\x95\x9C", 64),
        repeat("\xF0\x9F\x98\x80", 20), std::string("r\xC3\xA9sum\xC3\xA9-\xE2\x82\xAC")}) {
    CAPTURE(name);
    for (Backend b : {Backend::postgresql, Backend::mysql, Backend::sqlite})
      CHECK(make_dialect(b)->lock_key(name) == name);
  }
}

TEST_CASE("db::lock_key_for_refused mysql: at most 57 ASCII characters, deterministic") {
  for (const std::string& name :
       {std::string(193, 'n'), std::string(255, 'n'), repeat("\xED\x95\x9C", 65),
        repeat("\xF0\x9F\x98\x80", 60), "job-" + repeat("\xF0\x9F\x98\x80", 60)}) {
    CAPTURE(name);
    const std::string key = stand_in(name);
    CHECK(key.size() <= 57);
    CHECK(key.size() >= 17);
    CHECK(ascii(key));
    CHECK(stand_in(name) == key);
    CHECK(make_dialect(Backend::mysql)->lock_key_for_refused(name) == key);
  }
  // The leading ASCII characters stay readable (SHOW PROCESSLIST, IS_USED_LOCK).
  CHECK(stand_in("job-" + repeat("\xF0\x9F\x98\x80", 60)).rfind("job-:", 0) == 0);
  CHECK(stand_in(repeat("\xED\x95\x9C", 65)).front() == ':');
}

TEST_CASE("db::lock_key_for_refused mysql: pinned values, as earlier versions hashed") {
  // FNV-1a 64 of the whole name. ASCII names keep the form earlier versions gave every
  // name over 64 bytes, so that they still exclude each other where the server refuses
  // such a name (MySQL 8 over 64 characters, e.g. queuectl:reap:QUEUE for a long queue).
  CHECK(stand_in(std::string(200, 'n')) == std::string(40, 'n') + ":49d2e11f3349b4c5");
  CHECK(stand_in("queuectl:reap:" + std::string(64, 'q')) ==
        "queuectl:reap:" + std::string(26, 'q') + ":610e768b38c74c5d");
  CHECK(stand_in(repeat("\xC3\xA9", 100)) == ":b1c912a8e533f4b5");
  CHECK(queuectl::stable_hash64("") == 0xcbf29ce484222325ULL);
  CHECK(queuectl::stable_hash64("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(queuectl::stable_hash64("foobar") == 0x85944171f73967e8ULL);
}

TEST_CASE("db::lock_key_for_refused mysql: names that differ anywhere get different keys") {
  const std::string base(200, 'x');
  std::set<std::string> keys;
  std::vector<std::string> names = {base,
                                    base + "1",
                                    base + "2",
                                    base + "12",
                                    base + "21",
                                    "y" + base,
                                    std::string(254, 'q') + "a",
                                    std::string(254, 'q') + "b",
                                    repeat("\xED\x95\x9C", 70),
                                    repeat("\xED\x95\x9C", 71)};
  for (const std::string& name : names) keys.insert(stand_in(name));
  CHECK(keys.size() == names.size());
}
