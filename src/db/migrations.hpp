// Schema migrations: plain files in sql/<backend>/NNN_name.sql, embedded in the binary
// at build time and recorded in queuectl_schema_migrations.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "db/database.hpp"

namespace queuectl {

struct Migration {
  int version = 0;
  std::string name;
  std::string sql;
};

struct MigrationState {
  int version = 0;
  std::string name;
  bool applied = false;
  std::string applied_at;  // RFC 3339, when applied
};

// The embedded migrations of a backend, in version order.
std::vector<Migration> migrations_for(Backend backend);
// Splits a migration file into statements at semicolons that end a line, except inside
// a $$-quoted function body.
std::vector<std::string> split_statements(const std::string& sql);

class Migrator {
 public:
  explicit Migrator(Database& db, std::chrono::milliseconds lock_wait = kMigrationLockWait)
      : db_(db), lock_wait_(lock_wait) {}
  // Every embedded migration and whether it is applied.
  std::vector<MigrationState> status();
  // Applies the pending migrations in order; returns those it applied. Idempotent. Its lock
  // waits, in all, end within the lock wait it was given: then a TemporaryError names the
  // migration that waited and how to wait longer, and that migration is not applied.
  std::vector<MigrationState> apply();
  // Throws an Error telling the user to run `queuectl migrate` when the schema is missing
  // or older than this binary.
  void require_current();

 private:
  bool apply_one(const Migration& m, const std::function<std::chrono::milliseconds()>& left);

  Database& db_;
  std::chrono::milliseconds lock_wait_;
};

}  // namespace queuectl
