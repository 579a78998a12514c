#include <doctest/doctest.h>

#include <climits>
#include <regex>
#include <set>
#include <string>

#include "core/backoff.hpp"

using queuectl::BackoffPolicy;
using queuectl::Duration;

TEST_CASE("core::backoff_ceiling") {
  BackoffPolicy policy;  // defaults: base 5s, cap 1h
  SUBCASE("defaults are 5s and 1h") {
    CHECK(policy.base == Duration::seconds(5));
    CHECK(policy.cap == Duration::seconds(3600));
  }
  SUBCASE("doubles from the base") {
    CHECK(queuectl::backoff_ceiling(policy, 1) == Duration::seconds(5));
    CHECK(queuectl::backoff_ceiling(policy, 2) == Duration::seconds(10));
    CHECK(queuectl::backoff_ceiling(policy, 3) == Duration::seconds(20));
    CHECK(queuectl::backoff_ceiling(policy, 4) == Duration::seconds(40));
    CHECK(queuectl::backoff_ceiling(policy, 10) == Duration::seconds(5 * 512));
  }
  SUBCASE("reaches the cap and stays there") {
    CHECK(queuectl::backoff_ceiling(policy, 11) == Duration::seconds(3600));  // 5120s > 1h
    CHECK(queuectl::backoff_ceiling(policy, 25) == Duration::seconds(3600));
    CHECK(queuectl::backoff_ceiling(policy, 64) == Duration::seconds(3600));
    CHECK(queuectl::backoff_ceiling(policy, 1000) == Duration::seconds(3600));
    CHECK(queuectl::backoff_ceiling(policy, INT_MAX) == Duration::seconds(3600));
  }
  SUBCASE("attempts 0 or below count as the first") {
    CHECK(queuectl::backoff_ceiling(policy, 0) == Duration::seconds(5));
    CHECK(queuectl::backoff_ceiling(policy, -7) == Duration::seconds(5));
  }
  SUBCASE("never decreases as attempts grow") {
    Duration last = queuectl::backoff_ceiling(policy, 0);
    for (int attempts = 1; attempts <= 100; ++attempts) {
      CAPTURE(attempts);
      Duration now = queuectl::backoff_ceiling(policy, attempts);
      CHECK_FALSE(now < last);
      CHECK_FALSE(policy.cap < now);
      last = now;
    }
  }
  SUBCASE("a custom policy") {
    BackoffPolicy p{Duration(std::chrono::milliseconds(250)), Duration::seconds(2)};
    CHECK(queuectl::backoff_ceiling(p, 1).ms() == 250);
    CHECK(queuectl::backoff_ceiling(p, 2).ms() == 500);
    CHECK(queuectl::backoff_ceiling(p, 4).ms() == 2000);
    CHECK(queuectl::backoff_ceiling(p, 5).ms() == 2000);
  }
  SUBCASE("a base above the cap is capped") {
    BackoffPolicy p{Duration::seconds(10), Duration::seconds(3)};
    CHECK(queuectl::backoff_ceiling(p, 1) == Duration::seconds(3));
  }
}

TEST_CASE("core::random_unit") {
  std::set<double> seen;
  for (int i = 0; i < 1000; ++i) {
    double r = queuectl::random_unit();
    REQUIRE(r >= 0.0);
    REQUIRE(r < 1.0);
    seen.insert(r);
  }
  CHECK(seen.size() > 990);
}

TEST_CASE("core::new_lock_token") {
  static const std::regex uuid_v4(
      "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  SUBCASE("UUID version 4 text") {
    for (int i = 0; i < 200; ++i) {
      std::string token = queuectl::new_lock_token();
      CAPTURE(token);
      CHECK(token.size() == 36);
      CHECK(std::regex_match(token, uuid_v4));
    }
  }
  SUBCASE("1000 tokens, all distinct") {
    std::set<std::string> tokens;
    for (int i = 0; i < 1000; ++i) tokens.insert(queuectl::new_lock_token());
    CHECK(tokens.size() == 1000);
  }
  SUBCASE("every random nibble varies") {
    // Catches a generator that fills only part of the 128 bits.
    std::string first = queuectl::new_lock_token();
    std::string differs(first.size(), ' ');
    for (int i = 0; i < 200; ++i) {
      std::string t = queuectl::new_lock_token();
      for (std::size_t k = 0; k < t.size(); ++k)
        if (t[k] != first[k]) differs[k] = 'x';
    }
    // Fixed: the dashes and the version nibble '4'; everything else must change.
    CHECK(differs == "xxxxxxxx xxxx  xxx xxxx xxxxxxxxxxxx");
  }
}
