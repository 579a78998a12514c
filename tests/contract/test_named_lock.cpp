// Named locks (`queuectl lock`, the reaper's lock): one holder at a time, given back on
// release, and the kind each backend uses. Run twice on the servers: with their session
// locks, and with QUEUECTL_NAMED_LOCKS=row forcing the lock rows Galera needs
// (ctest contract_*_lock_rows).
#include "contract/contract_helpers.hpp"
#include "db/named_lock.hpp"

namespace queuectl::testing::contract {

TEST_CASE(
    "named lock: the kind is lock rows on SQLite, when forced and behind ?pooling=transaction, "
    "session locks else") {
  FreshDatabase fx;
  CHECK(fx.db().named_lock_kind() ==
        (uses_lock_rows() ? NamedLockKind::row : NamedLockKind::session));
}

TEST_CASE("named lock: one holder at a time; free again once released") {
  FreshDatabase fx;
  Database other(fx.db().url());
  {
    auto held = NamedLock::acquire(fx.db(), "nightly", Duration());
    REQUIRE(held);
    CHECK(held->held());
    CHECK(held->name() == "nightly");
    // Busy for another connection, even after a short wait; another name is free.
    CHECK_FALSE(NamedLock::acquire(other, "nightly", Duration(std::chrono::milliseconds(200))));
    auto unrelated = NamedLock::acquire(other, "weekly", Duration());
    CHECK(unrelated);
  }
  // Released by the destructors: the other connection takes it now.
  auto later = NamedLock::acquire(other, "nightly", Duration());
  CHECK(later);
}

TEST_CASE("named lock: a waiter gets the lock once its holder lets go") {
  FreshDatabase fx;
  Database other(fx.db().url());
  auto first = NamedLock::acquire(fx.db(), "turns", Duration());
  REQUIRE(first);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    first.reset();
  });
  auto second = NamedLock::acquire(other, "turns", Duration::seconds(10));
  release.join();
  CHECK(second);
}

TEST_CASE("named lock: the shown key is the name wherever the lock is a row" *
          doctest::skip(!uses_lock_rows())) {
  FreshDatabase fx;
  CHECK(NamedLock::shown_key(fx.db(), "nightly-report") == "nightly-report");
}

}  // namespace queuectl::testing::contract
