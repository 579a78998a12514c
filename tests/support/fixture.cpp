#include "support/fixture.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "db/migrations.hpp"

namespace queuectl::testing {

Backend backend_under_test() {
  const char* b = std::getenv("QUEUECTL_TEST_BACKEND");
  const std::string name = b && *b ? b : "sqlite";
  if (name == "postgresql") return Backend::postgresql;
  if (name == "mysql") return Backend::mysql;
  if (name == "sqlite") return Backend::sqlite;
  // A typo ("postgres") must not run the whole suite on SQLite and pass. Asked while the
  // test cases are registered (their skip conditions), before any runs: exit at once.
  std::fprintf(stderr,
               "QUEUECTL_TEST_BACKEND=%s is not a backend: use sqlite, postgresql or mysql\n",
               name.c_str());
  std::exit(2);
}

bool through_pooler() {
  static const bool via = [] {
    const char* v = std::getenv("QUEUECTL_TEST_VIA");
    const std::string name = v ? v : "";
    if (name.empty()) return false;
    if (name == "pgbouncer" && backend_under_test() == Backend::postgresql) return true;
    std::fprintf(stderr,
                 "QUEUECTL_TEST_VIA=%s: only pgbouncer, with QUEUECTL_TEST_BACKEND=postgresql\n",
                 name.c_str());
    std::exit(2);
  }();
  return via;
}

std::string base_url() {
  if (through_pooler()) {
    const char* url = std::getenv("QUEUECTL_TEST_PGBOUNCER_URL");
    if (!url || !*url)
      throw std::runtime_error(
          "QUEUECTL_TEST_PGBOUNCER_URL is not set: run the tests through scripts/test.sh, "
          "which starts PgBouncer");
    // The pool of its own (queuectl_suite), whose server sessions no test in auto or
    // session mode has set anything on.
    std::string u = url;
    u = u.substr(0, u.rfind('/') + 1) + "queuectl_suite";
    return u + "?pooling=transaction";
  }
  return direct_url();
}

std::string direct_url() {
  Backend b = backend_under_test();
  if (b == Backend::sqlite) return "";
  const char* var = b == Backend::postgresql ? "QUEUECTL_TEST_PG_URL" : "QUEUECTL_TEST_MYSQL_URL";
  const char* url = std::getenv(var);
  if (!url || !*url)
    throw std::runtime_error(std::string(var) +
                             " is not set: run the tests through scripts/test.sh, which starts "
                             "the servers");
  std::string u = url;
  if (b != Backend::postgresql) return u;
  // Another database of the same server (scripts/test-servers.sh makes them), so that
  // suites run side by side without emptying each other's tables: the one behind the
  // pooler's queuectl_suite pool for the suites through it, or the one named.
  const std::size_t slash = u.rfind('/');
  const char* database = std::getenv("QUEUECTL_TEST_PG_DATABASE");
  if (through_pooler())
    u += "_pooled";
  else if (database && *database)
    u = u.substr(0, slash + 1) + database;
  return u;
}

namespace {

// The tables a migration makes, the schema version's last. Resetting truncates all but the
// last; a migration that adds a table must add it here (FreshDatabase checks, see below).
constexpr const char* kQueueTables[] = {
    "job_queue",           "queuectl_queues",           "queuectl_locks",
    "queuectl_schedules",  "queuectl_schedule_fires",   "queuectl_rate_keys",
    "queuectl_job_deps",   "queuectl_job_waits",        "queuectl_batches",
    "queuectl_batch_jobs", "queuectl_schema_migrations"};

void drop_schema(Database& db) {
  for (const char* table : kQueueTables)
    db.session() << (std::string("DROP TABLE IF EXISTS ") + table);
}

// Everything a test could change about the schema, as one hash: tables, columns and their
// defaults, constraints, indexes, triggers, functions, the applied versions, and (PostgreSQL)
// whether the planner has statistics from an ANALYZE. No colons: SOCI would read them as
// placeholders. Throws when the tables are missing.
const char* const kPgFingerprint = R"(
WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
SELECT md5(string_agg(item, E'\n' ORDER BY item)) FROM (
  SELECT concat_ws(' ', 'rel', c.relname, c.relkind, c.reloptions) AS item
    FROM pg_class c WHERE c.relnamespace = (SELECT oid FROM ns)
  UNION ALL
  SELECT concat_ws(' ', 'col', c.relname, a.attnum, a.attname,
                   format_type(a.atttypid, a.atttypmod), a.attnotnull,
                   pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
   WHERE c.relnamespace = (SELECT oid FROM ns) AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT concat_ws(' ', 'con', c.relname, k.conname, pg_get_constraintdef(k.oid))
    FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
   WHERE k.connamespace = (SELECT oid FROM ns)
  UNION ALL
  SELECT concat_ws(' ', 'idx', pg_get_indexdef(i.indexrelid))
    FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
   WHERE c.relnamespace = (SELECT oid FROM ns)
  UNION ALL
  SELECT concat_ws(' ', 'trg', pg_get_triggerdef(t.oid), t.tgenabled)
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE c.relnamespace = (SELECT oid FROM ns) AND NOT t.tgisinternal
  UNION ALL
  SELECT concat_ws(' ', 'fn', p.proname, pg_get_function_identity_arguments(p.oid),
                   md5(p.prosrc), p.proconfig)
    FROM pg_proc p WHERE p.pronamespace = (SELECT oid FROM ns)
  UNION ALL
  SELECT concat_ws(' ', 'stats', count(*)) FROM pg_stats WHERE schemaname = current_schema()
  UNION ALL
  SELECT concat_ws(' ', 'versions', string_agg(CAST(version AS text), ',' ORDER BY version))
    FROM queuectl_schema_migrations
) items)";

const char* const kMysqlFingerprint = R"(
SELECT MD5(GROUP_CONCAT(item ORDER BY item SEPARATOR '\n')) FROM (
  SELECT CONCAT_WS(' ', 'tbl', TABLE_NAME, TABLE_TYPE, ENGINE, CREATE_OPTIONS) AS item
    FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()
  UNION ALL
  SELECT CONCAT_WS(' ', 'col', TABLE_NAME, ORDINAL_POSITION, COLUMN_NAME, COLUMN_TYPE,
                   IS_NULLABLE, COALESCE(COLUMN_DEFAULT, '-'), EXTRA)
    FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE()
  UNION ALL
  SELECT CONCAT_WS(' ', 'idx', TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE,
                   COALESCE(SUB_PART, '-'))
    FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE()
  UNION ALL
  SELECT CONCAT_WS(' ', 'chk', TABLE_NAME, CONSTRAINT_NAME, CHECK_CLAUSE)
    FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE()
  UNION ALL
  SELECT CONCAT_WS(' ', 'trg', TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_TIMING,
                   EVENT_MANIPULATION, MD5(ACTION_STATEMENT))
    FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()
  UNION ALL
  SELECT CONCAT_WS(' ', 'fn', ROUTINE_NAME, MD5(ROUTINE_DEFINITION))
    FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()
  UNION ALL
  SELECT CONCAT('versions ', GROUP_CONCAT(version ORDER BY version))
    FROM queuectl_schema_migrations
) items)";

std::string schema_fingerprint(Database& db) {
  std::string hash;
  soci::indicator ind = soci::i_ok;
  db.session() << (backend_under_test() == Backend::postgresql ? kPgFingerprint
                                                               : kMysqlFingerprint),
      soci::into(hash, ind);
  return ind == soci::i_null ? std::string() : hash;
}

// Empties the queue tables and restarts their ids at 1, leaving the schema as it is.
void truncate_tables(Database& db) {
  if (backend_under_test() == Backend::postgresql) {
    std::string list;
    for (const char* table : kQueueTables)
      if (std::string(table) != "queuectl_schema_migrations")
        list += (list.empty() ? "" : ", ") + std::string(table);
    db.session() << ("TRUNCATE " + list + " RESTART IDENTITY");
    return;
  }
  for (const char* table : kQueueTables)
    if (std::string(table) != "queuectl_schema_migrations")
      db.session() << (std::string("TRUNCATE TABLE ") + table);
}

// The hash of the schema as this process last migrated it: a schema with the same hash
// only needs its rows removed. Empty until the first migration (each suite's first case
// always drops and migrates, so a schema left by an earlier run is never trusted).
std::string& migrated_fingerprint() {
  static std::string hash;
  return hash;
}

// A migration's table that kQueueTables lacks would keep its rows from case to case.
void check_table_list(Database& db) {
  const char* sql = backend_under_test() == Backend::postgresql
                        ? "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = "
                          "current_schema() AND (tablename = 'job_queue' OR tablename LIKE "
                          "'queuectl\\_%')"
                        : "SELECT GROUP_CONCAT(TABLE_NAME) FROM information_schema.TABLES WHERE "
                          "TABLE_SCHEMA = DATABASE() AND (TABLE_NAME = 'job_queue' OR "
                          "TABLE_NAME LIKE 'queuectl\\_%')";
  std::string list;
  db.session() << sql, soci::into(list);
  std::size_t start = 0;
  while (start < list.size()) {
    std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string table = list.substr(start, comma - start);
    start = comma + 1;
    if (std::find(std::begin(kQueueTables), std::end(kQueueTables), table) ==
        std::end(kQueueTables))
      throw std::runtime_error("the migrations made table " + table +
                               ", which tests/support/fixture.cpp's kQueueTables does not "
                               "list: add it, or its rows pass from one test case to the next");
  }
}

}  // namespace

FreshDatabase::FreshDatabase() {
  if (backend_under_test() == Backend::sqlite) {
    char tmpl[] = "/tmp/queuectl-test-XXXXXX";
    temp_dir_ = mkdtemp(tmpl);
    url_ = "sqlite://" + temp_dir_ + "/queue.db";
    db_ = connect();
    Migrator(*db_).apply();
    return;
  }
  url_ = base_url();
  db_ = connect();
  // Dropping and migrating costs a server 0.3-0.5 s a case under load; when the schema is
  // exactly as this process last migrated it, emptying its tables gives the same start.
  std::string& migrated = migrated_fingerprint();
  if (!migrated.empty()) {
    std::string now;
    try {
      now = schema_fingerprint(*db_);
    } catch (const std::exception&) {
      // A table is missing (a test dropped it): migrate again below.
    }
    if (now == migrated) {
      truncate_tables(*db_);
      return;
    }
  }
  drop_schema(*db_);
  Migrator(*db_).apply();
  check_table_list(*db_);
  migrated = schema_fingerprint(*db_);
}

FreshDatabase::~FreshDatabase() {
  // The tables stay for the next case to empty (servers); SQLite's file goes.
  db_.reset();
  if (!temp_dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir_, ec);
  }
}

std::unique_ptr<Database> FreshDatabase::connect() const {
  return std::make_unique<Database>(DbUrl::parse(url_), CreateFile::yes);
}

long long scalar(Database& db, const std::string& sql) {
  long long v = 0;
  soci::indicator ind = soci::i_ok;
  db.session() << sql, soci::into(v, ind);
  return ind == soci::i_null ? 0 : v;
}

}  // namespace queuectl::testing
