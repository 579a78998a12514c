// Test fixtures: the backend under test (from QUEUECTL_TEST_BACKEND) and an RAII
// database that gives each test a fresh, migrated schema.
#pragma once

#include <memory>
#include <string>

#include "core/db_url.hpp"
#include "db/database.hpp"

namespace queuectl::testing {

// The backend this run tests: sqlite (default), postgresql or mysql.
Backend backend_under_test();
// The URL of the server backend under test, from QUEUECTL_TEST_PG_URL /
// QUEUECTL_TEST_MYSQL_URL; for SQLite a fresh file in a temporary folder.
// Fails the test (throws) when a server URL is missing.
std::string base_url();

// This run goes through PgBouncer in transaction mode (QUEUECTL_TEST_VIA=pgbouncer, with
// QUEUECTL_TEST_BACKEND=postgresql): base_url() is then PgBouncer's pool queuectl_suite
// (QUEUECTL_TEST_PGBOUNCER_URL's server, see scripts/test-servers.sh) with
// ?pooling=transaction. Test cases that cannot apply behind such a pooler (LISTEN/NOTIFY
// wake-ups, a server stopped or its sessions killed by pid, advisory locks shared with an
// application) skip on it.
bool through_pooler();
// The server's own URL (QUEUECTL_TEST_PG_URL / QUEUECTL_TEST_MYSQL_URL), past any pooler.
// On PostgreSQL, suites run side by side on databases of their own, which
// scripts/test-servers.sh makes: through the pooler, the database behind its queuectl_suite
// pool (queuectl_test_pooled); else the one QUEUECTL_TEST_PG_DATABASE names, if set
// (queuectl_test_side); else the URL's (queuectl_test, behind the pooler's other pools).
std::string direct_url();

// A fresh schema: empty queue tables, fully migrated, ids starting at 1. On a server, the
// first case of a process drops the tables and migrates; later cases only empty the tables
// (TRUNCATE) when the schema is exactly as that migration left it (a hash of its tables,
// columns, constraints, indexes, triggers, functions, versions and, on PostgreSQL, planner
// statistics), and drop and migrate again otherwise, e.g. after a case that altered the
// table or ran ANALYZE. For SQLite, a new database file each time.
class FreshDatabase {
 public:
  FreshDatabase();
  ~FreshDatabase();
  FreshDatabase(const FreshDatabase&) = delete;
  FreshDatabase& operator=(const FreshDatabase&) = delete;

  const std::string& url() const { return url_; }
  // A new connection to the same database.
  std::unique_ptr<Database> connect() const;
  // The fixture's own connection.
  Database& db() { return *db_; }

 private:
  std::string url_;
  std::string temp_dir_;
  std::unique_ptr<Database> db_;
};

// Runs one SQL statement that returns one integer (for assertions on table contents).
long long scalar(Database& db, const std::string& sql);

}  // namespace queuectl::testing
