// Each backend's SOCI backend and client library live in a driver module that the binary
// loads when a command first uses that backend (db/driver.hpp): the binary links none of
// them, `--version` loads none, a command maps only its own database's client, and a module
// or library that is missing is one clear line, exit 1.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

namespace fs = std::filesystem;

struct DriverInfo {
  std::string name;                    // queuectl-NAME.so
  std::string title;                   // as error messages name the backend
  std::string soci_lib;                // the SOCI backend the module needs
  std::vector<std::string> libraries;  // what a command on this backend maps
};

DriverInfo driver_info(Backend b) {
  switch (b) {
    case Backend::postgresql:
      return {"postgresql",
              "PostgreSQL",
              "libsoci_postgresql.so.4.0",
              {"libsoci_postgresql.so", "libpq.so"}};
    case Backend::mysql:
      return {
          "mysql", "MariaDB/MySQL", "libsoci_mysql.so.4.0", {"libsoci_mysql.so", "libmariadb.so"}};
    case Backend::sqlite:
      break;
  }
  return {"sqlite", "SQLite", "libsoci_sqlite3.so.4.0", {"libsoci_sqlite3.so", "libsqlite3.so"}};
}

// Every database client library of every backend.
std::vector<std::string> all_clients() {
  std::vector<std::string> out;
  for (Backend b : {Backend::sqlite, Backend::postgresql, Backend::mysql})
    for (const std::string& lib : driver_info(b).libraries) out.push_back(lib);
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A copy of the binary alone in `dir` (no drivers/ beside it).
std::string copy_binary(const TempDir& dir) {
  const std::string copy = dir.path() + "/queuectl";
  fs::copy_file(QUEUECTL_BINARY, copy);
  return copy;
}

}  // namespace

TEST_CASE("cli: the binary links no database client, and --version loads none" *
          doctest::skip(!fs::exists("/usr/bin/readelf"))) {
  RunResult elf = run_process({"readelf", "-d", QUEUECTL_BINARY});
  REQUIRE(elf.exit_code == 0);
  std::string needed;
  std::istringstream lines(elf.out);
  for (std::string line; std::getline(lines, line);)
    if (line.find("(NEEDED)") != std::string::npos) needed += line + "\n";
  INFO("NEEDED:\n" << needed);
  CHECK(needed.find("libsoci_core.so") != std::string::npos);  // the entries were read
  for (const std::string& lib : all_clients()) CHECK(needed.find(lib) == std::string::npos);
  // --version opens no database: with no driver beside it, the binary still answers.
  TempDir dir;
  RunResult v = run_process({copy_binary(dir), "--version"});
  INFO(dump(v));
  CHECK(v.exit_code == 0);
  CHECK(v.out.rfind("queuectl ", 0) == 0);
}

TEST_CASE("cli: a command maps its own backend's client library and no other") {
  FreshDatabase fixture;
  TempDir dir;
  const int pid =
      spawn_process({QUEUECTL_BINARY, "--db", fixture.url(), "claim", "maps", "--wait", "30s"},
                    dir.path() + "/claim.log");
  const DriverInfo own = driver_info(backend_under_test());
  const std::string maps_path = "/proc/" + std::to_string(pid) + "/maps";
  std::string maps;
  // Until the claim has loaded its driver (10 s at most), then a little longer: it is waiting
  // on an empty queue by then, connected.
  for (int i = 0; i < 200 && maps.find(own.libraries.back()) == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    maps = read_file(maps_path);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  maps = read_file(maps_path);
  kill(pid, SIGKILL);
  wait_process(pid);
  INFO("log: " << read_file(dir.path() + "/claim.log"));
  for (const std::string& lib : all_clients()) {
    const bool is_own =
        std::find(own.libraries.begin(), own.libraries.end(), lib) != own.libraries.end();
    INFO(lib);
    CHECK((maps.find(lib) != std::string::npos) == is_own);
  }
}

TEST_CASE("cli: a driver module that is not installed is one line naming it, exit 1") {
  FreshDatabase fixture;
  TempDir dir;
  const DriverInfo own = driver_info(backend_under_test());
  RunResult r = run_process({copy_binary(dir), "--db", fixture.url(), "stats"});
  check_error(r, 1, "cannot load the " + own.title + " driver: no queuectl-" + own.name + ".so in");
  CHECK(r.err.find("reinstall queuectl") != std::string::npos);
}

TEST_CASE("cli: a driver whose library is missing names the library, exit 1") {
  FreshDatabase fixture;
  TempDir dir;
  const DriverInfo own = driver_info(backend_under_test());
  const std::string binary = copy_binary(dir);
  fs::create_directory(dir.path() + "/drivers");
  // The module as built, with the SOCI backend it needs renamed (same length) to one that no
  // system has, as if its package were not installed.
  std::string module = read_file(fs::path(QUEUECTL_BINARY).parent_path().string() +
                                 "/drivers/queuectl-" + own.name + ".so");
  std::string absent = own.soci_lib;
  absent.replace(0, 8, "libnone_");
  std::size_t renamed = 0;
  for (auto at = module.find(own.soci_lib); at != std::string::npos;
       at = module.find(own.soci_lib, at + 1), ++renamed)
    module.replace(at, absent.size(), absent);
  REQUIRE(renamed > 0);
  dir.write("drivers/queuectl-" + own.name + ".so", module);
  RunResult r = run_process({binary, "--db", fixture.url(), "stats"});
  check_error(r, 1, "cannot load the " + own.title + " driver");
  CHECK(r.err.find(absent + " is missing: install the package that ships it") != std::string::npos);
}

}  // namespace queuectl::testing::cli
