// What the benchmarks share for setting up a database: the safety check's database name,
// a fresh migrated schema, a quick empty, fresh statistics, and a wall-clock helper.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "core/db_url.hpp"
#include "db/database.hpp"
#include "db/migrations.hpp"

namespace queuectl::bench {

using Clock = std::chrono::steady_clock;

// The name the safety check looks at: the database, or the SQLite file's name.
inline std::string database_name(const DbUrl& url) {
  if (url.backend == Backend::sqlite) return std::filesystem::path(url.database).filename();
  return url.database;
}

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Drops queuectl's tables and migrates from scratch.
inline void drop_and_migrate(Database& db) {
  for (const char* table :
       {"job_queue", "queuectl_queues", "queuectl_locks", "queuectl_schedules",
        "queuectl_schedule_fires", "queuectl_rate_keys", "queuectl_job_deps", "queuectl_job_waits",
        "queuectl_batches", "queuectl_batch_jobs", "queuectl_schema_migrations"}) {
    db.session() << std::string("DROP TABLE IF EXISTS ") + table;
  }
  Migrator(db).apply();
}

// Empties job_queue quickly (TRUNCATE where there is one; SQLite's unqualified DELETE
// is its truncate optimization).
inline void empty_queue(Database& db) {
  if (db.url().backend == Backend::sqlite)
    db.session() << "DELETE FROM job_queue";
  else
    db.session() << "TRUNCATE TABLE job_queue";
}

inline void analyze(Database& db) {
  switch (db.url().backend) {
    case Backend::postgresql:
      // VACUUM as well, so that the visibility map lets counts use index-only scans, as
      // autovacuum would soon after a bulk load. (Not allowed in a transaction: SOCI's
      // session autocommits outside one.)
      db.session() << "VACUUM ANALYZE job_queue";
      break;
    case Backend::mysql: {
      // ANALYZE TABLE returns a result set; read it so the connection stays in sync.
      std::string t, op, type, text;
      soci::statement st = (db.session().prepare << "ANALYZE TABLE job_queue", soci::into(t),
                            soci::into(op), soci::into(type), soci::into(text));
      for (bool got = st.execute(true); got; got = st.fetch()) {
      }
      break;
    }
    case Backend::sqlite:
      db.session() << "ANALYZE";
      break;
  }
}

// MariaDB's SEQUENCE engine (seq_1_to_N tables), the fastest row generator there.
inline bool mariadb_has_sequence(Database& db) {
  try {
    long long n = 0;
    db.session() << "SELECT COUNT(*) FROM seq_1_to_3", soci::into(n);
    return n == 3;
  } catch (const soci::soci_error&) {
    return false;
  }
}

}  // namespace queuectl::bench
