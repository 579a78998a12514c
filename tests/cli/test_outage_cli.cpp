// A database outage seen by a worker and by `top`. The worker's log has one line when it
// starts and one when the database answers again, and the jobs' own lines in between tell
// what happened to each; `top` stays up and carries on. The outage is made by refusing the
// process's own account new logins and ending its sessions (not on SQLite: a file does not
// go away). Before, every retry wrote its own line (one every second or two, with the
// driver's text), and top exited 75 at the first lost connection.
#include <doctest/doctest.h>

#include <unistd.h>

#include "cli/fault_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// An account of its own for the process under test, so that an outage can be made for it
// alone: its logins refused and its sessions ended, while the test's own connection goes
// on. PostgreSQL: a role made NOLOGIN; MariaDB: an account locked, its connections killed.
struct OutageRole {
  Database& admin;
  std::string role = "qc_outage_" + std::to_string(getpid());
  explicit OutageRole(Database& db) : admin(db) {
    if (is_postgresql()) {
      admin.session() << "DROP ROLE IF EXISTS " + role;
      admin.session() << "CREATE ROLE " + role + " LOGIN SUPERUSER PASSWORD 'outage-pw'";
    } else {
      admin.session() << "DROP USER IF EXISTS " + account();
      admin.session() << "CREATE USER " + account() + " IDENTIFIED BY 'outage-pw'";
      admin.session() << "GRANT ALL PRIVILEGES ON *.* TO " + account();
    }
  }
  ~OutageRole() {
    try {
      begin();
      admin.session() << (is_postgresql() ? "DROP ROLE IF EXISTS " + role
                                          : "DROP USER IF EXISTS " + account());
    } catch (...) {
    }
  }
  std::string account() const { return "'" + role + "'@'127.0.0.1'"; }
  // The fixture's URL with this account's name and password.
  std::string url_from(const std::string& url) const {
    const std::size_t scheme = url.find("://"), at = url.find('@');
    REQUIRE(at != std::string::npos);
    return url.substr(0, scheme + 3) + role + ":outage-pw" + url.substr(at);
  }
  void begin() {
    if (is_postgresql()) {
      admin.session() << "ALTER ROLE " + role + " NOLOGIN";
      admin.session() << "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE usename = '" +
                             role + "'";
      return;
    }
    admin.session() << "ALTER USER " + account() + " ACCOUNT LOCK";
    std::vector<long long> ids(100);
    admin.session()
        << "SELECT CAST(id AS SIGNED) FROM information_schema.processlist WHERE user = '" + role +
               "'",
        soci::into(ids);
    for (long long id : ids) {
      try {
        admin.session() << "KILL CONNECTION " + std::to_string(id);
      } catch (...) {  // gone meanwhile
      }
    }
  }
  void end() {
    admin.session() << (is_postgresql() ? "ALTER ROLE " + role + " LOGIN"
                                        : "ALTER USER " + account() + " ACCOUNT UNLOCK");
  }
};

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("cli: outage: work tells a lost database once, and once when it is back" *
          doctest::skip((!is_postgresql() && !is_mysql()) || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  OutageRole outage(fixture.db());
  const std::string worker_url = outage.url_from(url);

  TempDir dir;
  Cleanup cleanup;
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  const int pid = cleanup.child(spawn_queuectl_split(
      worker_url, {"work", "q", "--poll-interval", "200ms", "--", "true"}, out, err));
  const std::int64_t first = id_of(enqueue(url, "q"));
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, first) == "done"; }, 20000),
                  "the first job was not done");

  outage.begin();
  sleep_ms(3000);  // about fifteen claims fail meanwhile
  outage.end();
  const std::int64_t second = id_of(enqueue(url, "q"));
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, second) == "done"; }, 20000),
                  "the job enqueued after the outage was not done");
  kill(pid, SIGTERM);
  REQUIRE(wait_until([&] { return process_gone(pid); }, 20000));

  const std::string log = read_text(err);
  INFO(log);
  CHECK(count_of(log, "database trouble: ") == 1);
  CHECK(count_of(log, "; retrying with backoff, at least every 200ms") == 1);
  CHECK(count_of(log, "database answers again after ") == 1);
  CHECK(count_of(log, "database still in trouble") == 0);  // reminders come a minute apart
  CHECK(log.find("outage-pw") == std::string::npos);
  CHECK(count_of(log, "heartbeat: ") <= 1);
  CHECK(count_of(log, "cannot listen for new jobs") <= 1);
  // The driver's own words are not repeated: libpq's reason, without SOCI's sentences.
  CHECK(count_of(log, "Cannot execute query") == 0);
}

// Each job's lines tell what happened to it. A job whose command ended during the outage
// waits for its ack; its lease cannot be extended, so the worker says its outcome is
// written only if the lease is still its own when the database answers, and then that it
// is done (nobody took the job meanwhile). A job still running when its lease can no
// longer be confirmed is stopped before the lease ends, and says so, not "lease lost".
// Before, the heartbeat wrote "giving the job up" and then the same job was "done".
TEST_CASE("cli: outage: each job's lines are a true account of it" *
          doctest::skip((!is_postgresql() && !is_mysql()) || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  OutageRole outage(fixture.db());
  const std::string worker_url = outage.url_from(url);
  TempDir dir;
  Cleanup cleanup;
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  // Job "quick" ends once the file `go` exists (made when the outage has begun); job
  // "slow" runs on until it is stopped.
  const std::string go = dir.path() + "/go";
  const std::int64_t quick = id_of(enqueue(url, "q", R"("quick")"));
  const std::int64_t slow = id_of(enqueue(url, "q", R"("slow")"));
  const int pid = cleanup.child(
      spawn_queuectl_split(worker_url,
                           {"work", "q", "--concurrency", "2", "--lease", "3s", "--poll-interval",
                            "200ms", "--", "sh", "-c",
                            "read s; if [ \"$s\" = '\"quick\"' ]; then while [ ! -e " + go +
                                " ]; do sleep 0.05; done; else sleep 60; fi"},
                           out, err));
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, slow) == "processing"; }, 20000),
                  "the jobs were not claimed");
  REQUIRE(status_of(url, quick) == "processing");
  INFO("worker's log: " << read_text(err));
  outage.begin();
  dir.write("go", "");
  // The heartbeat gives a lease up at its second failed beat at the earliest (a second
  // after the outage began, with a 3 s lease), long after the quick job's command ended;
  // both leases have been given up before the outage ends.
  sleep_ms(4000);
  outage.end();
  REQUIRE_MESSAGE(wait_until([&] { return status_of(url, quick) == "done"; }, 20000),
                  "the quick job's ack was not written after the outage");
  kill(pid, SIGTERM);
  REQUIRE(wait_until([&] { return process_gone(pid); }, 20000));

  const std::string log = read_text(err);
  INFO(log);
  const std::string q = "job " + std::to_string(quick) + " attempt 1/25: ";
  const std::size_t pending = log.find(q +
                                       "its command has ended, but its lease could not be "
                                       "extended and may run out before its outcome is "
                                       "written");
  const std::size_t done = log.find(q + "done");
  CHECK(pending != std::string::npos);
  CHECK(done != std::string::npos);
  CHECK(pending < done);
  CHECK(log.find("job " + std::to_string(slow) +
                 " attempt 1/25: stopped before its lease could end unconfirmed, not acked") !=
        std::string::npos);
  CHECK(count_of(log, "giving the job up") == 0);
  CHECK(count_of(log, "lease lost") == 0);
  CHECK(count_of(log, "Cannot execute query") == 0);
  // The slow job was left to the reaper: still processing under the worker's last token.
  CHECK(status_of(url, slow) == "processing");
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// top keeps watching through an outage: the frames during it say that the database does
// not answer, and once it is back the frames carry on with fresh data (a queue that
// appeared meanwhile), with no trouble line. Before, top exited 75 at once.
TEST_CASE("cli: outage: top stays up, says the database does not answer, and carries on" *
          doctest::skip((!is_postgresql() && !is_mysql()) || through_pooler())) {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  OutageRole outage(fixture.db());
  enqueue(url, "before");
  TempDir dir;
  Cleanup cleanup;
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  const int pid = cleanup.child(
      spawn_queuectl_split(outage.url_from(url), {"top", "--interval", "200ms"}, out, err));
  REQUIRE_MESSAGE(wait_until([&] { return contains(read_text(out), "before"); }, 20000),
                  "top printed no frame");
  outage.begin();
  REQUIRE_MESSAGE(
      wait_until([&] { return contains(read_text(out), "! no answer from the database for"); },
                 20000),
      "top did not say that the database does not answer");
  int code = 0;
  CHECK_FALSE(try_wait(pid, code));  // still running
  outage.end();
  enqueue(url, "after");
  REQUIRE_MESSAGE(wait_until([&] { return contains(read_text(out), "after"); }, 20000),
                  "top did not carry on once the database was back");
  kill(pid, SIGTERM);
  CHECK(wait_child(cleanup, pid) == 0);
  const std::string text = read_text(out);
  INFO(text);
  // The last frame has fresh data and no trouble line.
  const std::string last = text.substr(text.rfind("queuectl top"));
  CHECK(contains(last, "after"));
  CHECK_FALSE(contains(last, "! no answer"));
  CHECK(read_text(err).find("outage-pw") == std::string::npos);
  CHECK(text.find("outage-pw") == std::string::npos);
}

}  // namespace queuectl::testing::cli
