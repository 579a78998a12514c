// Finds and loads each backend's driver module (see driver.hpp).
#include <dlfcn.h>

#include <filesystem>
#include <utility>

#include "core/db_url.hpp"
#include "core/errors.hpp"
#include "db/driver.hpp"

// Defined when the drivers are linked in (tests, benchmarks); null in the queuectl binary,
// which loads them from their modules instead.
extern "C" {
const queuectl::PostgresqlDriver* queuectl_postgresql_driver() __attribute__((weak));
const queuectl::MysqlDriver* queuectl_mysql_driver() __attribute__((weak));
const queuectl::SqliteDriver* queuectl_sqlite_driver() __attribute__((weak));
}

#ifndef QUEUECTL_DRIVER_DIR
#define QUEUECTL_DRIVER_DIR "../lib/queuectl"
#endif

namespace queuectl {
namespace {

namespace fs = std::filesystem;

// Where the modules may be, first to last: beside the installed binary
// (PREFIX/bin/../lib/queuectl, from the install's layout) and in the build tree (drivers/
// beside the binary).
std::vector<fs::path> driver_dirs() {
  std::error_code ec;
  const fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path bin = exe.parent_path();
  return {(bin / QUEUECTL_DRIVER_DIR).lexically_normal(), bin / "drivers"};
}

}  // namespace

const void* load_driver(const std::string& name, const char* entry, const std::string& title) {
  const std::string file = "queuectl-" + name + ".so";
  std::string looked;
  for (const fs::path& dir : driver_dirs()) {
    const fs::path path = dir / file;
    looked += (looked.empty() ? "" : ", ") + dir.string();
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) {
      const char* why = dlerror();
      throw Error("cannot load the " + title + " driver " + path.string() + ": " +
                  driver_load_failure(why ? why : "unknown reason"));
    }
    auto* get = reinterpret_cast<const void* (*)()>(dlsym(module, entry));
    if (!get)
      throw Error("cannot load the " + title + " driver " + path.string() + ": it has no " + entry +
                  " (a module from another queuectl version? reinstall queuectl)");
    return get();
  }
  throw Error("cannot load the " + title + " driver: no " + file + " in " +
              (looked.empty() ? std::string("the binary's folder") : looked) +
              " (reinstall queuectl with its drivers)");
}

std::string driver_load_failure(const std::string& loader_message) {
  // Each shared library a driver needs, and the Debian package that ships it.
  static const std::pair<const char*, const char*> kPackages[] = {
      {"libsoci_postgresql.so.4.0", "libsoci-postgresql4.0"},
      {"libsoci_mysql.so.4.0", "libsoci-mysql4.0"},
      {"libsoci_sqlite3.so.4.0", "libsoci-sqlite3-4.0"},
      {"libsoci_core.so.4.0", "libsoci-core4.0"},
      {"libpq.so.5", "libpq5"},
      {"libmariadb.so.3", "libmariadb3"},
      {"libsqlite3.so.0", "libsqlite3-0"},
  };
  // glibc: "LIB: cannot open shared object file: No such file or directory".
  const auto colon = loader_message.find(": cannot open shared object file");
  if (colon == std::string::npos) return loader_message;
  const std::string lib = loader_message.substr(0, colon);
  for (const auto& [name, package] : kPackages)
    if (lib == name) return lib + " is missing: install the Debian package " + package;
  return lib + " is missing: install the package that ships it";
}

const PostgresqlDriver& postgresql_driver() {
  static const PostgresqlDriver* driver =
      queuectl_postgresql_driver ? queuectl_postgresql_driver()
                                 : static_cast<const PostgresqlDriver*>(load_driver(
                                       "postgresql", "queuectl_postgresql_driver", "PostgreSQL"));
  return *driver;
}

const MysqlDriver& mysql_driver() {
  static const MysqlDriver* driver = queuectl_mysql_driver
                                         ? queuectl_mysql_driver()
                                         : static_cast<const MysqlDriver*>(load_driver(
                                               "mysql", "queuectl_mysql_driver", "MariaDB/MySQL"));
  return *driver;
}

const SqliteDriver& sqlite_driver() {
  static const SqliteDriver* driver = queuectl_sqlite_driver
                                          ? queuectl_sqlite_driver()
                                          : static_cast<const SqliteDriver*>(load_driver(
                                                "sqlite", "queuectl_sqlite_driver", "SQLite"));
  return *driver;
}

const soci::backend_factory& backend_factory(Backend backend) {
  switch (backend) {
    case Backend::postgresql:
      return *postgresql_driver().factory;
    case Backend::mysql:
      return *mysql_driver().factory;
    case Backend::sqlite:
      break;
  }
  return *sqlite_driver().factory;
}

}  // namespace queuectl
