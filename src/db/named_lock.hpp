// Database named locks that keep cron runs from overlapping: pg_try_advisory_lock on
// PostgreSQL, GET_LOCK on MySQL/MariaDB (both held by the session, so they come free when
// the connection dies), and a lock row that expires unless a heartbeat keeps it on SQLite,
// on MariaDB Galera (where GET_LOCK holds on one node only) and wherever
// QUEUECTL_NAMED_LOCKS=row asks for it (Database::named_lock_kind).
// Each is the lock an application's own SQL takes for the same name:
// pg_try_advisory_lock(hashtextextended(name, 0)), GET_LOCK(name, timeout), the row
// queuectl_locks.name = name (see Dialect::lock_key).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/duration.hpp"
#include "db/database.hpp"

namespace queuectl {

class NamedLock {
 public:
  // Tries to take `name` on `db`, which should be a connection of its own, retrying until
  // `wait` has passed. Returns nullptr when someone else still holds it.
  static std::unique_ptr<NamedLock> acquire(Database& db, const std::string& name, Duration wait);
  // What the database locks for `name`, as text, without taking it: the bigint key on
  // PostgreSQL; the name on MySQL/MariaDB (the stand-in key when the server refuses the
  // name); the name on SQLite.
  static std::string shown_key(Database& db, const std::string& name);

  // Releases the lock (and stops the heartbeat).
  ~NamedLock();
  NamedLock(const NamedLock&) = delete;
  NamedLock& operator=(const NamedLock&) = delete;

  const std::string& name() const { return name_; }
  // The key bound to the lock statements (the name, or the stand-in for a refused one).
  const std::string& key() const { return key_; }
  // False once the heartbeat found the lock gone: a lock row expired or was taken (or
  // could not be refreshed for so long that it may expire before the next beat); a session
  // lock's session was lost.
  bool held() const { return held_; }

  // How long a lock row lives without a heartbeat; it is refreshed every third.
  static constexpr Duration kRowTtl = Duration::seconds(30);
  // How often a server lock checks that its session still holds it.
  static constexpr Duration kServerCheck = Duration::seconds(5);

 private:
  NamedLock(Database& db, std::string name, std::string key, std::string token);
  enum class Try { taken, busy, refused };
  static Try try_once(Database& db, const std::string& key, const std::string& token);

  void heartbeat_loop();

  Database& db_;
  std::string name_, key_, token_;
  std::atomic<bool> held_{true};
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread heartbeat_;
};

}  // namespace queuectl
