// The SQLite driver (queuectl-sqlite.so): SOCI's SQLite backend and libsqlite3.
#include <soci/sqlite3/soci-sqlite3.h>

#include "db/driver.hpp"

namespace {

int result_code(const soci::soci_error& e) {
  auto* err = dynamic_cast<const soci::sqlite3_soci_error*>(&e);
  return err ? err->result() : -1;
}

const queuectl::SqliteDriver kDriver = {&soci::sqlite3, result_code,
                                        sqlite_api::sqlite3_busy_timeout};

}  // namespace

extern "C" const queuectl::SqliteDriver* queuectl_sqlite_driver() {
  return &kDriver;
}
