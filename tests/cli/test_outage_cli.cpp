// A database outage in the worker's log: one line when it starts, one when the database
// answers again, and the jobs' own lines in between tell what happened to each (PostgreSQL:
// the outage is made by refusing the worker's role new logins and ending its sessions).
// Before, every retry wrote its own line (one every second or two, with the driver's text).
#include <doctest/doctest.h>

#include <unistd.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

TEST_CASE("cli: outage: work tells a lost database once, and once when it is back" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  Database& admin = fixture.db();
  const std::string role = "qc_outage_" + std::to_string(getpid());
  admin.session() << "DROP ROLE IF EXISTS " + role;
  admin.session() << "CREATE ROLE " + role + " LOGIN SUPERUSER PASSWORD 'outage-pw'";
  struct DropRole {
    Database& db;
    std::string role;
    ~DropRole() {
      try {
        db.session() << "ALTER ROLE " + role + " NOLOGIN";
        db.session() << "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" +
                            role + "'";
        db.session() << "DROP ROLE IF EXISTS " + role;
      } catch (...) {
      }
    }
  } drop{admin, role};
  // The fixture's URL with the outage role's name and password.
  const std::string scheme = "postgresql://";
  const std::size_t at = url.find('@');
  REQUIRE(at != std::string::npos);
  const std::string worker_url = scheme + role + ":outage-pw" + url.substr(at);

  TempDir dir;
  Cleanup cleanup;
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  const int pid = cleanup.child(spawn_queuectl_split(
      worker_url, {"work", "q", "--poll-interval", "200ms", "--", "true"}, out, err));
  const std::int64_t first = id_of(enqueue(url, "q"));
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, first) == "done"; }, 20000),
                  "the first job was not done");

  admin.session() << "ALTER ROLE " + role + " NOLOGIN";
  admin.session() << "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '" +
                         role + "'";
  sleep_ms(3000);  // about fifteen claims fail meanwhile
  admin.session() << "ALTER ROLE " + role + " LOGIN";
  const std::int64_t second = id_of(enqueue(url, "q"));
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, second) == "done"; }, 20000),
                  "the job enqueued after the outage was not done");
  kill(pid, SIGTERM);
  REQUIRE(wait_until([&] { return process_gone(pid); }, 20000));

  const std::string log = read_text(err);
  INFO(log);
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (std::size_t p = log.find(needle); p != std::string::npos; p = log.find(needle, p + 1)) ++n;
    return n;
  };
  CHECK(count("database trouble: ") == 1);
  CHECK(count("; retrying with backoff, at least every 200ms") == 1);
  CHECK(count("database answers again after ") == 1);
  CHECK(count("database still in trouble") == 0);  // reminders come a minute apart
  CHECK(log.find("outage-pw") == std::string::npos);
  CHECK(count("heartbeat: ") <= 1);
  CHECK(count("cannot listen for new jobs") <= 1);
}

}  // namespace queuectl::testing::cli
