#include "db/migrations.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "core/errors.hpp"
#include "core/human_time.hpp"
#include "db/row_reader.hpp"

namespace queuectl {

// Generated at build time from sql/<backend>/*.sql.
std::vector<Migration> embedded_migrations(const std::string& backend);

std::vector<Migration> migrations_for(Backend backend) {
  auto list = embedded_migrations(std::string(backend_name(backend)));
  std::sort(list.begin(), list.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  return list;
}

namespace {

// "END;" alone or at the end of a line after a space: the end of a trigger body (an inner
// "END IF;" is not).
bool ends_block(const std::string& line) {
  const std::string tail = "END;";
  if (line.size() < tail.size() || line.compare(line.size() - tail.size(), tail.size(), tail) != 0)
    return false;
  return line.size() == tail.size() || line[line.size() - tail.size() - 1] == ' ';
}

}  // namespace

std::vector<std::string> split_statements(const std::string& sql) {
  std::vector<std::string> out;
  std::string current;
  // Inside a $$-quoted body (a PostgreSQL function), semicolons end its inner statements,
  // not the migration's: the split waits for the closing $$. Likewise a trigger body from
  // a line that is BEGIN alone to a line ending in END; (MySQL, SQLite).
  bool in_body = false;
  bool in_block = false;
  std::size_t start = 0;
  while (start < sql.size()) {
    std::size_t nl = sql.find('\n', start);
    std::string line = sql.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? sql.size() : nl + 1;
    std::string trimmed = line;
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\r'))
      trimmed.pop_back();
    // A comment line between statements is dropped, blank lines before it or not: SOCI's
    // MySQL backend cuts a statement without binds at its first colon, so a comment left
    // at the head of the next statement could cut that statement down to nothing.
    if (trimmed.rfind("--", 0) == 0 && current.find_first_not_of(" \t\n") == std::string::npos)
      continue;
    for (std::size_t at = trimmed.find("$$"); at != std::string::npos;
         at = trimmed.find("$$", at + 2))
      in_body = !in_body;
    if (!in_body && !in_block && trimmed.find_first_not_of(" \t") != std::string::npos &&
        trimmed.substr(trimmed.find_first_not_of(" \t")) == "BEGIN")
      in_block = true;
    else if (in_block && ends_block(trimmed))
      in_block = false;
    if (!in_body && !in_block && !trimmed.empty() && trimmed.back() == ';') {
      trimmed.pop_back();
      current += trimmed;
      if (current.find_first_not_of(" \t\n") != std::string::npos) out.push_back(current);
      current.clear();
    } else {
      current += line + "\n";
    }
  }
  if (current.find_first_not_of(" \t\n") != std::string::npos) out.push_back(current);
  return out;
}

namespace {

// Reading queuectl_schema_migrations failed for a reason other than a missing table (the
// only one that means "nothing applied yet"), a lost connection or contention (those the
// caller rethrows to Database::retrying: retried, or exit 75). No privilege on the table,
// a statement_timeout, ... are reported with the database's own reason, exit 1, instead of
// being mistaken for an unmigrated schema.
[[noreturn]] void schema_unreadable(Database& db, const soci::soci_error& e) {
  throw Error("cannot read the schema version (table queuectl_schema_migrations) in " +
              db.url().redacted() + ": " + db.error_text(e));
}

bool is_temporary(Database& db, const soci::soci_error& e) {
  return db.dialect().is_connection_failure(e) || db.dialect().is_contention(e);
}

}  // namespace

std::vector<MigrationState> Migrator::status() {
  std::map<int, MigrationState> applied;
  // Read-only: a database without the migrations table has nothing applied (and keeps
  // no new table: `migrate --status` must work for a read-only account).
  db_.retrying([&] {
    applied.clear();
    int version = 0;
    std::string name, at;
    try {
      soci::statement st = statement_once(db_.session(), db_.sql().migrations.applied,
                                          soci::into(version), soci::into(name), soci::into(at));
      for (bool got = st.execute(true); got; got = st.fetch())
        applied[version] = {version, name, true, at};
    } catch (const soci::soci_error& e) {
      if (is_temporary(db_, e)) throw;  // the same error, for retrying() to classify
      if (!db_.dialect().is_missing_table(e)) schema_unreadable(db_, e);
      applied.clear();  // no migrations table yet
    }
  });
  std::vector<MigrationState> out;
  for (const Migration& m : migrations_for(db_.url().backend)) {
    auto it = applied.find(m.version);
    out.push_back(it != applied.end() ? it->second : MigrationState{m.version, m.name, false, ""});
  }
  return out;
}

namespace {

// "15s", "2m 30s": a lock wait as the user would write it again.
std::string wait_text(std::chrono::milliseconds wait) {
  return human_duration(static_cast<double>(wait.count()) / 1000.0);
}

// The named lock two `migrate` runs take turns under, where the dialect has one (servers
// only: see MigrateLock).
class MigrationLock {
 public:
  MigrationLock(Database& db, std::chrono::milliseconds wait)
      : db_(db), key_(db.dialect().lock_key(kName)) {
    const std::optional<MigrateLock>& lock = db_.sql().migrations.lock;
    if (!lock) return;
    long long got = 0;
    long long wait_s = std::max<long long>(1, (wait.count() + 999) / 1000);
    if (lock->in_transaction) {
      got = take_in_transaction(*lock, wait, wait_s);
    } else {
      try {
        db_.session() << lock->acquire, soci::into(got), soci::use(key_, "key"),
            soci::use(wait_s, "wait_s");
      } catch (const soci::soci_error& e) {
        // A wait that ran out (MySQL's GET_LOCK timeout is a 0, not an error; a lock wait
        // that ran out is contention) is not retried: it was a long one.
        if (!db_.dialect().is_contention(e)) db_.translate_error(e);
      }
    }
    if (got != 1)
      throw TemporaryError("another `queuectl migrate` held the migration lock on " +
                           db_.url().redacted() + " for the " + wait_text(wait) +
                           " this run would wait: try again once it ends, or wait longer "
                           "with `queuectl migrate --lock-wait 5m`");
    held_ = true;
  }
  ~MigrationLock() {
    if (!held_) return;
    if (own_) {
      try {
        own_->session().rollback();
      } catch (...) {
        // The connection closes just after: the lock goes with it.
      }
      return;
    }
    try {
      long long released = 0;
      db_.session() << db_.sql().migrations.lock->release, soci::into(released),
          soci::use(key_, "key");
    } catch (...) {
      // The lock goes with the session, which ends when queuectl does.
    }
  }
  MigrationLock(const MigrationLock&) = delete;
  MigrationLock& operator=(const MigrationLock&) = delete;

  // Before each migration: a lock held by a transaction on a connection of its own ends
  // with that connection (a server's idle_in_transaction_session_timeout, a pooler's
  // idle_transaction_timeout, the network), and then another run could start migrating
  // beside this one. So this run stops instead, with what it applied so far recorded.
  void check_held(const Migration& next) {
    if (!own_) return;
    long long held = 0;
    try {
      own_->session() << db_.sql().locks.session->check, soci::into(held);
    } catch (const soci::soci_error&) {
      held = 0;
    }
    if (held == 0)
      throw TemporaryError("lost the migration lock on " + db_.url().redacted() +
                           " (its connection ended) before migration " +
                           std::to_string(next.version) + " (" + next.name +
                           "), which was not applied; the ones before it are: run `queuectl "
                           "migrate` again");
  }

 private:
  // A transaction's lock (MigrateLock::in_transaction), taken on a connection of its own
  // and kept by leaving its transaction open until the run ends. Tried, not waited for:
  // between tries the transaction ends, so that runs waiting behind a pooler's few server
  // connections do not hold them. Returns 1 when taken.
  long long take_in_transaction(const MigrateLock& lock, std::chrono::milliseconds wait,
                                long long wait_s) {
    own_ = std::make_unique<Database>(db_.url());
    Database& on = *own_;
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (int attempt = 0;; ++attempt) {
      long long got = 0;
      try {
        on.dialect().begin(on.session());
        on.session() << lock.acquire, soci::into(got), soci::use(key_, "key"),
            soci::use(wait_s, "wait_s");
      } catch (const soci::soci_error& e) {
        try {
          on.session().rollback();
        } catch (...) {
        }
        on.translate_error(e);
      }
      if (got == 1) return got;
      on.session().rollback();
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return 0;
      // 50 ms, doubling up to 1 s.
      const auto pause = std::chrono::milliseconds(50 << std::min(attempt, 4));
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
    }
  }

  static constexpr const char* kName = "queuectl:migrate";
  Database& db_;
  std::unique_ptr<Database> own_;  // the lock's connection (MigrateLock::in_transaction)
  std::string key_;
  bool held_ = false;
};

// Before migration 1: a job_queue that `migrate` has no record of creating (made from the
// articles' DDL, by an application, by hand) is refused, naming how it differs, instead of
// recording migration 1 over a table that is not the one it creates. Such a table once
// passed on MySQL (CREATE TABLE IF NOT EXISTS) and every command then failed on a missing
// column. The one exception: on MySQL, the exact table a failed run of migration 1 left.
// It runs inside migration 1's transaction, after the re-check of what is applied: on
// SQLite a run that created the table meanwhile is seen there as applied, not as foreign.
void refuse_foreign_table(Database& db) {
  std::vector<std::pair<std::string, std::string>> found;
  std::string table = "job_queue", name, type;
  soci::statement st = statement_once(db.session(), db.sql().migrations.table_columns,
                                      soci::into(name), soci::into(type), soci::use(table, "name"));
  for (bool got = st.execute(true); got; got = st.fetch()) found.emplace_back(name, type);
  if (found.empty()) return;
  const auto expected = db.dialect().first_migration_columns();
  auto named = [](const auto& list, const std::string& column) {
    return std::find_if(list.begin(), list.end(), [&](const auto& c) { return c.first == column; });
  };
  std::string missing, foreign;
  std::vector<std::string> diffs;
  for (const auto& [column, kind] : expected) {
    auto it = named(found, column);
    if (it == found.end())
      missing += (missing.empty() ? "" : ", ") + column;
    else if (it->second != kind)
      diffs.push_back(column + " is " + it->second + ", not " + kind);
  }
  for (const auto& column : found)
    if (named(expected, column.first) == expected.end())
      foreign += (foreign.empty() ? "" : ", ") + column.first;
  if (!foreign.empty()) diffs.insert(diffs.begin(), "columns not queuectl's: " + foreign);
  if (!missing.empty()) diffs.insert(diffs.begin(), "no column " + missing);
  if (diffs.empty() && db.dialect().resumes_first_migration()) return;
  std::string what;
  const std::size_t shown = std::min<std::size_t>(diffs.size(), 4);
  for (std::size_t i = 0; i < shown; ++i) what += (i ? "; " : "") + diffs[i];
  if (diffs.size() > shown) what += "; and " + std::to_string(diffs.size() - shown) + " more";
  if (diffs.empty()) what = "its columns are queuectl's, but migrate has no record of it";
  throw Error(
      "table job_queue already exists in " + db.url().redacted() +
      " and was not created by `queuectl migrate` (" + what +
      "); nothing was changed: see \"Adopting an existing job_queue\" in docs/shared-table.md");
}

}  // namespace

std::vector<MigrationState> Migrator::apply() {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  std::vector<int> done_versions;
  // DDL may have to wait for the transactions running on the tables it changes (an
  // application's transaction that inserted an outbox row and was left open holds a lock
  // that CREATE INDEX and ALTER TABLE wait for). All the run's lock waits together end
  // at one deadline, lock_wait_ from now: each statement waits at most what is left, and
  // no retry starts after it. Back to the usual lock wait and retries at the end.
  const Clock::time_point deadline = Clock::now() + lock_wait_;
  auto left = [&] {
    auto ms = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    return std::max(ms, milliseconds(1));
  };
  db_.set_lock_wait(lock_wait_);
  struct Restore {
    Database& db;
    std::function<bool()> give_up;
    ~Restore() {
      db.give_up = give_up;
      try {
        db.set_lock_wait(kLockWait);
      } catch (...) {
      }
    }
  } restore{db_, db_.give_up};
  db_.give_up = [deadline, outer = db_.give_up] {
    return Clock::now() >= deadline || (outer && outer());
  };
  // Another `migrate` may run at the same moment (two deploys, a cron and an operator):
  // they take turns under the database's named lock, and the second finds the work done.
  MigrationLock lock(db_, lock_wait_);
  db_.retrying([&] { db_.session() << db_.sql().migrations.create_table; });
  auto states = status();
  for (const Migration& m : migrations_for(db_.url().backend)) {
    bool already = std::any_of(states.begin(), states.end(), [&](const MigrationState& s) {
      return s.version == m.version && s.applied;
    });
    if (already) continue;
    bool applied_meanwhile = false;
    try {
      lock.check_held(m);
      applied_meanwhile = apply_one(m, left);
    } catch (const ConnectionLost&) {
      throw;
    } catch (const TemporaryError& e) {
      // Contention that outlasted the deadline: a lock this migration's DDL waited for.
      throw TemporaryError("migration " + std::to_string(m.version) + " (" + m.name + ") waited " +
                           wait_text(lock_wait_) + " in all for a lock on " + db_.url().redacted() +
                           " that another transaction holds (an open transaction that wrote "
                           "to job_queue, or a long query on it): " +
                           (db_.url().backend == Backend::mysql
                                ? std::string("it is not recorded as applied (MySQL commits each "
                                              "DDL statement, so the ones before the wait "
                                              "stay; migrate takes it up again)")
                                : std::string("nothing of it was applied")) +
                           "; end that transaction, or wait longer with "
                           "`queuectl migrate --lock-wait 5m`");
    }
    if (!applied_meanwhile) done_versions.push_back(m.version);
  }
  // Read back, so that the caller sees when each was applied.
  std::vector<MigrationState> done;
  for (const MigrationState& st : status())
    if (std::find(done_versions.begin(), done_versions.end(), st.version) != done_versions.end())
      done.push_back(st);
  return done;
}

// One migration in a transaction of its own; true when another run had applied it already.
// Each try first sets the lock wait to what is left of the run's (a setting made inside a
// transaction that rolls back is undone on PostgreSQL, so it is made again on every try).
bool Migrator::apply_one(const Migration& m,
                         const std::function<std::chrono::milliseconds()>& left) {
  bool applied_meanwhile = false;
  db_.transaction([&] {
    db_.set_lock_wait(left());
    {
      // Read again inside the transaction (on SQLite, the write lock BEGIN IMMEDIATE took
      // is what keeps two runs apart).
      int version = m.version, found = 0;
      soci::statement check = statement_once(db_.session(), db_.sql().migrations.is_applied,
                                             soci::into(found), soci::use(version, "version"));
      applied_meanwhile = check.execute(true);
      if (applied_meanwhile) return;
      if (m.version == 1) refuse_foreign_table(db_);
      for (const std::string& stmt : split_statements(m.sql)) db_.session() << stmt;
      std::string name = m.name;
      db_.session() << db_.sql().migrations.record, soci::use(version, "version"),
          soci::use(name, "name");
    }
  });
  return applied_meanwhile;
}

void Migrator::require_current() {
  const auto embedded = migrations_for(db_.url().backend);
  // Every embedded version, not only the latest: a schema migrated by a build that had a
  // later migration but not an earlier one (versions land out of order on branches) is
  // not current.
  int latest = embedded.empty() ? 0 : embedded.back().version;
  const int wanted = static_cast<int>(embedded.size());
  int applied = 0;
  soci::indicator ind = soci::i_null;
  db_.retrying([&] {
    ind = soci::i_null;
    try {
      db_.session() << "SELECT COUNT(*) FROM queuectl_schema_migrations WHERE version <= :latest",
          soci::into(applied, ind), soci::use(latest, "latest");
    } catch (const soci::soci_error& e) {
      if (is_temporary(db_, e)) throw;
      if (!db_.dialect().is_missing_table(e)) schema_unreadable(db_, e);
      ind = soci::i_null;  // no migrations table: never migrated
    }
  });
  if (ind == soci::i_null || applied < wanted)
    throw Error("the queue schema in " + db_.url().redacted() +
                " is missing or out of date: run `queuectl migrate` first");
}

}  // namespace queuectl
