// What the binary says when a backend's driver module cannot be loaded (db/driver.hpp).
#include <doctest/doctest.h>

#include <string>

#include "db/driver.hpp"

using queuectl::driver_load_failure;

TEST_CASE("db::driver_load_failure names the Debian package of a missing library") {
  auto missing = [](const std::string& lib) {
    return driver_load_failure(lib + ": cannot open shared object file: No such file or directory");
  };
  CHECK(missing("libsoci_postgresql.so.4.0") ==
        "libsoci_postgresql.so.4.0 is missing: install the Debian package libsoci-postgresql4.0");
  CHECK(missing("libsoci_mysql.so.4.0") ==
        "libsoci_mysql.so.4.0 is missing: install the Debian package libsoci-mysql4.0");
  CHECK(missing("libsoci_sqlite3.so.4.0") ==
        "libsoci_sqlite3.so.4.0 is missing: install the Debian package libsoci-sqlite3-4.0");
  CHECK(missing("libpq.so.5") == "libpq.so.5 is missing: install the Debian package libpq5");
  CHECK(missing("libmariadb.so.3") ==
        "libmariadb.so.3 is missing: install the Debian package libmariadb3");
  CHECK(missing("libsqlite3.so.0") ==
        "libsqlite3.so.0 is missing: install the Debian package libsqlite3-0");
  CHECK(missing("libother.so.1") == "libother.so.1 is missing: install the package that ships it");
  // Anything else the loader says is passed on as it is.
  CHECK(driver_load_failure("/x/queuectl-mysql.so: undefined symbol: mysql_get_socket") ==
        "/x/queuectl-mysql.so: undefined symbol: mysql_get_socket");
}
