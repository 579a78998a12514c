#include "support/fixture.hpp"

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
  return url;
}

namespace {

void drop_schema(Database& db) {
  for (const char* table :
       {"job_queue", "queuectl_queues", "queuectl_locks", "queuectl_schedules",
        "queuectl_schedule_fires", "queuectl_rate_keys", "queuectl_job_deps", "queuectl_job_waits",
        "queuectl_batches", "queuectl_batch_jobs", "queuectl_schema_migrations"})
    db.session() << (std::string("DROP TABLE IF EXISTS ") + table);
}

}  // namespace

FreshDatabase::FreshDatabase() {
  if (backend_under_test() == Backend::sqlite) {
    char tmpl[] = "/tmp/queuectl-test-XXXXXX";
    temp_dir_ = mkdtemp(tmpl);
    url_ = "sqlite://" + temp_dir_ + "/queue.db";
  } else {
    url_ = base_url();
  }
  db_ = connect();
  if (backend_under_test() != Backend::sqlite) drop_schema(*db_);
  Migrator(*db_).apply();
}

FreshDatabase::~FreshDatabase() {
  try {
    if (backend_under_test() != Backend::sqlite) drop_schema(*db_);
  } catch (...) {
  }
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
