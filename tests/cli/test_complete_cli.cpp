// queuectl __complete, which feeds the shell completions (issue 14, point 22): which queue
// names it offers, and that it never keeps a shell waiting on an unreachable server.
#include <chrono>
#include <thread>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

std::string complete(const std::string& url, const std::string& what) {
  RunResult r = queuectl(url, {"__complete", what});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  return r.out;
}

// A loopback TCP port that accepts connections (the kernel completes the handshake into
// the backlog) but never says a word: a server that hangs, or a firewall's black hole.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(fd_, 16) == 0);
    REQUIRE(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() { close(fd_); }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Runs __complete queues against `url`: exit 0, nothing printed, in well under the 10 s a
// connection attempt may otherwise take (the bound is 1.5 s; 5 s leaves room for a slow CI).
void completes_quickly_with_nothing(const std::string& url) {
  CAPTURE(url);
  const auto start = std::chrono::steady_clock::now();
  RunResult r = run_process({QUEUECTL_BINARY, "--db", url, "__complete", "queues"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(r.out.empty());
  CHECK(r.err.empty());
  CHECK(seconds < 5.0);
}

}  // namespace

TEST_CASE("cli: __complete queues offers queues with jobs or settings that are not the default") {
  FreshDatabase fixture;
  const std::string url = fixture.url();
  enqueue(url, "emails");
  enqueue(url, "reports");
  // A typo paused and resumed again leaves a settings row at the defaults: not offered.
  ok(url, {"-q", "pause", "emials"});
  ok(url, {"-q", "resume", "emials"});
  // Strict mode turned on and off again: the same.
  ok(url, {"-q", "queue", "relaxed", "--strict-groups", "on"});
  ok(url, {"-q", "queue", "relaxed", "--strict-groups", "off"});
  // Queues without jobs but with a setting that matters are offered.
  ok(url, {"-q", "pause", "upcoming"});
  ok(url, {"-q", "queue", "ordered", "--strict-groups", "on"});
  ok(url, {"-q", "pause", "reports"});

  CHECK(complete(url, "queues") == "emails\nordered\nreports\nupcoming\n");
  // resume offers the paused queues, pause the others.
  CHECK(complete(url, "paused-queues") == "reports\nupcoming\n");
  CHECK(complete(url, "unpaused-queues") == "emails\nordered\n");

  ok(url, {"-q", "resume", "upcoming"});
  CHECK(complete(url, "queues") == "emails\nordered\nreports\n");
  CHECK(complete(url, "paused-queues") == "reports\n");
}

TEST_CASE("cli: __complete takes only the words the completions use") {
  FreshDatabase fixture;
  check_usage_error(queuectl(fixture.url(), {"__complete", "queue"}), "WHAT");
  CHECK(complete(fixture.url(), "statuses") ==
        "ready\nwaiting\nprocessing\ndone\nfailed\ncanceled\n");
}

TEST_CASE("cli: __complete on an SQLite file that does not exist creates nothing" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  CHECK(complete("sqlite://" + dir.path() + "/typo.db", "queues").empty());
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/typo.db"));
}

// Independent of the backend under test: the URLs point at no real server.
TEST_CASE("cli: __complete against an unreachable server returns at once with nothing") {
  SUBCASE("nothing listening on the port") {
    completes_quickly_with_nothing("postgresql://app@127.0.0.1:" + std::to_string(closed_port()) +
                                   "/jobs");
  }
  SUBCASE("a PostgreSQL URL on a port that accepts and never answers") {
    SilentListener silent;
    completes_quickly_with_nothing("postgresql://app@127.0.0.1:" + std::to_string(silent.port()) +
                                   "/jobs?connect_timeout=60");
  }
  SUBCASE("a MySQL URL on a port that accepts and never answers") {
    SilentListener silent;
    completes_quickly_with_nothing("mysql://app@127.0.0.1:" + std::to_string(silent.port()) +
                                   "/jobs");
  }
}

}  // namespace queuectl::testing::cli
