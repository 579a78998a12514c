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

}  // namespace queuectl::testing::cli
