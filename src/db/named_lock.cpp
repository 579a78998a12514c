#include "db/named_lock.hpp"

#include <chrono>

#include "core/backoff.hpp"
#include "core/errors.hpp"
#include "core/process.hpp"
#include "core/validate.hpp"
#include "db/row_reader.hpp"

namespace queuectl {
namespace {

// Binds only the names the dialect's statement uses (advisory locks need only :key).
void bind_present(soci::statement& st, const std::string& sql, const char* name,
                  std::string& value) {
  if (sql.find(std::string(":") + name) != std::string::npos) st.exchange(soci::use(value, name));
}
void bind_present(soci::statement& st, const std::string& sql, const char* name, long long& value) {
  if (sql.find(std::string(":") + name) != std::string::npos) st.exchange(soci::use(value, name));
}

// Runs a lock statement; returns its single integer result (Result::value), or the rows it
// changed (Result::affected).
enum class Result { value, affected };
long long run_lock_statement(Database& db, const std::string& sql, std::string key,
                             std::string token, Result result) {
  long long ttl_ms = NamedLock::kRowTtl.ms();
  long long value = 0;
  soci::indicator ind = soci::i_null;
  soci::statement st(db.session());
  if (result == Result::value) st.exchange(soci::into(value, ind));
  bind_present(st, sql, "key", key);
  bind_present(st, sql, "token", token);
  bind_present(st, sql, "ttl_ms", ttl_ms);
  prepare_once(st, sql);  // one round trip, and nothing left prepared on a pooled server
  st.execute(true);
  if (result == Result::value) return ind == soci::i_null ? 0 : value;
  return st.get_affected_rows();
}

// Ends the transaction a lock with NamedLockStatements::begin is held by (its release).
void end_transaction(Database& db) {
  try {
    db.session() << db.lock_sql().release;
  } catch (...) {
    // A lost connection has ended it.
  }
}

std::string refused_message(Database& db, const std::string& name) {
  return "the database at " + db.url().redacted() + " refuses the lock name '" +
         to_valid_utf8(name.substr(0, 40)) + (name.size() > 40 ? "...'" : "'");
}

}  // namespace

std::string NamedLock::shown_key(Database& db, const std::string& name) {
  const bool session = db.named_lock_kind() == NamedLockKind::session;
  for (const std::string& key :
       {db.dialect().lock_key(name), db.dialect().lock_key_for_refused(name)}) {
    std::string bound = key, text;
    soci::indicator ind = soci::i_null;
    bool refused = false;
    db.retrying([&] {
      try {
        db.session() << db.lock_sql().shown_key, soci::into(text, ind), soci::use(bound, "key");
      } catch (const soci::soci_error& e) {
        if (!db.dialect().refuses_lock_name(e)) throw;
        refused = true;
      }
    });
    if (!refused) return ind == soci::i_null ? key : text;
    if (!session) break;  // a lock row takes any name
  }
  throw Error(refused_message(db, name));
}

NamedLock::NamedLock(Database& db, std::string name, std::string key, std::string token)
    : db_(db), name_(std::move(name)), key_(std::move(key)), token_(std::move(token)) {
  heartbeat_ = start_helper_thread([this] { heartbeat_loop(); });
}

NamedLock::Try NamedLock::try_once(Database& db, const std::string& key, const std::string& token) {
  long long got = 0;
  bool refused = false;
  const NamedLockStatements& sql = db.lock_sql();
  db.retrying([&] {
    try {
      if (sql.begin) {
        // Held by this transaction while it stays open; not taken: ended at once.
        db.session() << *sql.begin;
        try {
          got = run_lock_statement(db, sql.acquire, key, token, Result::value);
        } catch (...) {
          end_transaction(db);
          throw;
        }
        if (got <= 0) end_transaction(db);
      } else if (db.named_lock_kind() == NamedLockKind::session) {
        got = run_lock_statement(db, sql.acquire, key, token, Result::value);
      } else {
        // Inserted, or taken over once expired; whose it is now, the check says. (On
        // Galera two nodes' upserts of one row cannot both commit: the loser's 1213 is
        // retried here and then finds the row taken.)
        run_lock_statement(db, sql.acquire, key, token, Result::affected);
        got = run_lock_statement(db, sql.check, key, token, Result::value);
      }
    } catch (const soci::soci_error& e) {
      if (!db.dialect().refuses_lock_name(e)) throw;
      refused = true;
    }
  });
  return refused ? Try::refused : got > 0 ? Try::taken : Try::busy;
}

std::unique_ptr<NamedLock> NamedLock::acquire(Database& db, const std::string& name,
                                              Duration wait) {
  std::string key = db.dialect().lock_key(name);
  const std::string token = new_lock_token();
  auto deadline = std::chrono::steady_clock::now() + wait.chrono();
  int attempt = 0;
  while (true) {
    const Try got = try_once(db, key, token);
    if (got == Try::taken) return std::unique_ptr<NamedLock>(new NamedLock(db, name, key, token));
    if (got == Try::refused) {
      // No application can hold a name the server refuses: its stand-in is ours alone.
      const std::string stand_in = db.dialect().lock_key_for_refused(name);
      if (stand_in == key) throw Error(refused_message(db, name));
      key = stand_in;
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return nullptr;
    // Poll with a growing, jittered pause: 50ms up to 1s.
    auto pause = std::chrono::milliseconds(static_cast<long>(
        std::min(1000.0, 50.0 * (1 << std::min(attempt++, 5))) * (0.5 + 0.5 * random_unit())));
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
  }
}

void NamedLock::heartbeat_loop() {
  const bool row_lock = db_.named_lock_kind() == NamedLockKind::row;
  const auto interval = row_lock ? kRowTtl.chrono() / 3 : kServerCheck.chrono();
  // When the last check or refresh that succeeded was sent: a lock row lasts kRowTtl from
  // then at least.
  auto last_ok = std::chrono::steady_clock::now();
  // A lock row outlives a few missed beats, but is given up while it is still ours: when
  // the next beat would come after it may have expired (a lost connection, a Galera node
  // gone), the command is stopped before anyone else can take the lock.
  const auto row_may_expire = [&] {
    return std::chrono::steady_clock::now() - last_ok + interval >= kRowTtl.chrono();
  };
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_ && held_) {
    stop_cv_.wait_for(lock, interval, [this] { return stop_; });
    if (stop_) break;
    try {
      long long still = 0;
      const std::string& sql = row_lock ? db_.lock_sql().refresh : db_.lock_sql().check;
      const auto sent = std::chrono::steady_clock::now();
      db_.retrying([&] {
        still =
            run_lock_statement(db_, sql, key_, token_, row_lock ? Result::affected : Result::value);
      });
      if (still == 0) held_ = false;
      last_ok = sent;
    } catch (const TemporaryError&) {
      // A server's session lock lives in its session: a lost connection has freed it.
      if (!row_lock || row_may_expire()) held_ = false;
    } catch (...) {
      if (row_may_expire()) held_ = false;
    }
  }
}

NamedLock::~NamedLock() {
  if (heartbeat_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    heartbeat_.join();
  }
  try {
    if (db_.lock_sql().begin)
      end_transaction(db_);
    else
      run_lock_statement(
          db_, db_.lock_sql().release, key_, token_,
          db_.named_lock_kind() == NamedLockKind::row ? Result::affected : Result::value);
  } catch (...) {
    // The session ending (servers) or the row expiring (SQLite) frees it anyway.
  }
}

}  // namespace queuectl
