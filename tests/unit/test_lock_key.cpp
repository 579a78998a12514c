// The key a named lock is taken under, per backend (no server needed): MySQL's GET_LOCK
// takes names of at most 64 characters, so longer names are hashed to fit; PostgreSQL's
// advisory locks take a 64-bit integer, a stable hash of the name as decimal text.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdlib>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "db/dialect.hpp"

using queuectl::Backend;
using queuectl::make_dialect;

namespace {

std::string mysql_key(const std::string& name) {
  return make_dialect(Backend::mysql)->lock_key(name);
}

std::string pg_key(const std::string& name) {
  return make_dialect(Backend::postgresql)->lock_key(name);
}

// Whether `s` is UTF-8 with no cut or stray sequence (lead bytes and their continuations).
bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xE  ? 3
                      : (c >> 3) == 0x1E ? 4
                                         : 0;
    if (len == 0 || (len == 2 && c < 0xC2) || i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

std::string repeat(const std::string& unit, std::size_t times) {
  std::string out;
  for (std::size_t i = 0; i < times; ++i) out += unit;
  return out;
}

}  // namespace

TEST_CASE("db::lock_key mysql: names of up to 64 bytes are used as they are") {
  for (const std::string& name :
       {std::string("a"), std::string("queuectl:reap"), std::string("queuectl:reap:emails"),
        std::string(63, 'n'), std::string(64, 'n'), repeat("\xC3\xA9", 32) /* 32 x é */,
        std::string("r\xC3\xA9sum\xC3\xA9-\xE2\x82\xAC-\xF0\x9F\x98\x80")}) {
    CAPTURE(name);
    CHECK(mysql_key(name) == name);
  }
}

TEST_CASE("db::lock_key mysql: longer names fit in 64 bytes, deterministically") {
  for (std::size_t size : {65, 66, 100, 200, 255}) {
    CAPTURE(size);
    const std::string name(size, 'n');
    const std::string key = mysql_key(name);
    CHECK(!key.empty());
    CHECK(key.size() <= 64);
    CHECK(key != name.substr(0, 64));  // not simply cut: that would merge distinct names
    CHECK(mysql_key(name) == key);     // same name, same key
    CHECK(make_dialect(Backend::mysql)->lock_key(name) == key);  // from another instance too
  }
}

TEST_CASE("db::lock_key mysql: names that differ only after byte 64 get different keys") {
  const std::string base(64, 'x');
  std::set<std::string> keys;
  std::vector<std::string> names = {base,
                                    base + "1",
                                    base + "2",
                                    base + "12",
                                    base + "21",
                                    base + std::string(100, 'y'),
                                    base + std::string(100, 'y') + "z",
                                    std::string(254, 'q') + "a",
                                    std::string(254, 'q') + "b"};
  for (const std::string& name : names) {
    CAPTURE(name);
    std::string key = mysql_key(name);
    CHECK(key.size() <= 64);
    keys.insert(key);
  }
  CHECK(keys.size() == names.size());
}

TEST_CASE("db::lock_key mysql: a long name is never cut inside a UTF-8 sequence") {
  // Multi-byte characters of every length, shifted by 0..4 ASCII bytes so that every
  // byte position of a sequence meets every possible cut.
  const std::vector<std::string> chars = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                                          "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"};
  std::set<std::string> keys;
  int names = 0;
  for (const std::string& ch : chars) {
    for (std::size_t shift = 0; shift <= 4; ++shift) {
      const std::string name = std::string(shift, 'a') + repeat(ch, 200 / ch.size());
      CAPTURE(name);
      REQUIRE(valid_utf8(name));
      REQUIRE(name.size() > 64);
      const std::string key = mysql_key(name);
      CHECK(key.size() <= 64);
      CHECK(valid_utf8(key));
      CHECK(mysql_key(name) == key);
      keys.insert(key);
      ++names;
    }
  }
  CHECK(keys.size() == static_cast<std::size_t>(names));
}

TEST_CASE("db::lock_key postgresql: a stable 64-bit hash of the name, as decimal text") {
  static const std::regex decimal(R"(^-?[0-9]{1,19}$)");
  for (const std::string& name :
       {std::string("a"), std::string("queuectl:reap"), std::string("queuectl:reap:q1"),
        std::string(255, 'n'), std::string("r\xC3\xA9sum\xC3\xA9")}) {
    CAPTURE(name);
    const std::string key = pg_key(name);
    CHECK(std::regex_match(key, decimal));
    errno = 0;
    char* end = nullptr;
    std::strtoll(key.c_str(), &end, 10);
    CHECK(errno == 0);  // fits a bigint
    CHECK(*end == '\0');
    CHECK(pg_key(name) == key);
    CHECK(make_dialect(Backend::postgresql)->lock_key(name) == key);
  }
  CHECK(pg_key("queuectl:reap") != pg_key("queuectl:reap:q1"));
  CHECK(pg_key(std::string(200, 'n') + "a") != pg_key(std::string(200, 'n') + "b"));

  // Stable across builds and hosts: FNV-1a 64 (dialect.hpp), read as a signed bigint.
  // Published FNV-1a vectors: "" -> cbf29ce484222325, "a" -> af63dc4c8601ec8c,
  // "foobar" -> 85944171f73967e8. Every queuectl version must agree on these keys, or
  // two versions running side by side would not exclude each other.
  CHECK(pg_key("") == "-3750763034362895579");
  CHECK(pg_key("a") == "-5808556873153909620");
  CHECK(pg_key("foobar") == "-8821353812377114648");
  CHECK(pg_key("queuectl:reap") == "-4703943923067815083");
  CHECK(pg_key("nightly") == "9092923187768549258");
}
