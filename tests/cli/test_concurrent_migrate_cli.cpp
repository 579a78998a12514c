// Two deploys, or a cron and an operator, may run `queuectl migrate` at the same moment.
// Every run must succeed, and each migration must be applied once.
#include <doctest/doctest.h>

#include "cli/cli_helpers.hpp"
#include "db/migrations.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: four migrate runs at once all succeed and apply each migration once") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  const std::vector<Migration> embedded = migrations_for(backend_under_test());
  TempDir logs;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    drop_schema(fixture);
    std::vector<int> pids;
    for (int i = 0; i < 4; ++i)
      pids.push_back(spawn_process({QUEUECTL_BINARY, "--db", url, "migrate"},
                                   logs.path() + "/migrate" + std::to_string(i) + ".log"));
    for (std::size_t i = 0; i < pids.size(); ++i) {
      const int code = wait_process(pids[i]);
      std::ifstream in(logs.path() + "/migrate" + std::to_string(i) + ".log");
      std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CHECK_MESSAGE(code == 0, "run " << i << " exited " << code << ": " << log);
    }
    CHECK_EQ(scalar(fixture.db(), "SELECT COUNT(*) FROM queuectl_schema_migrations"),
             static_cast<long long>(embedded.size()));
    json status = ok_json(url, {"migrate", "--status"});
    for (const json& m : status) CHECK_MESSAGE(m["applied"] == true, m.dump());
  }
}

// SQLite: two runs on one file that does not exist yet, as two deploys of a new host do.
// Both open the new file and switch it to WAL, which needs the file to itself; SQLite
// answers that BUSY at once, without its busy handler (24 of 80 rounds failed so).
TEST_CASE("cli: two migrate runs on a new SQLite file all succeed, 50 rounds") {
  if (!is_sqlite()) return;
  TempDir dir;
  const std::size_t versions = migrations_for(Backend::sqlite).size();
  for (int round = 0; round < 50; ++round) {
    CAPTURE(round);
    const std::string file = dir.path() + "/new" + std::to_string(round) + ".db";
    const std::string url = "sqlite://" + file;
    std::vector<int> pids;
    for (int i = 0; i < 2; ++i)
      pids.push_back(spawn_process({QUEUECTL_BINARY, "--db", url, "migrate", "-q"},
                                   dir.path() + "/migrate" + std::to_string(i) + ".log"));
    for (std::size_t i = 0; i < pids.size(); ++i) {
      const int code = wait_process(pids[i]);
      std::ifstream in(dir.path() + "/migrate" + std::to_string(i) + ".log");
      std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      REQUIRE_MESSAGE(code == 0, "run " << i << " exited " << code << ": " << log);
    }
    json status = ok_json(url, {"migrate", "--status"});
    CHECK_EQ(status.size(), versions);
    for (const json& m : status) CHECK_MESSAGE(m["applied"] == true, m.dump());
  }
}

}  // namespace queuectl::testing::cli
