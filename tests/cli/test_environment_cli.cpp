// The binary's surroundings: help text, an unmigrated database, passwords that come from
// the environment or a file instead of the URL, servers that cannot be reached, and URL
// parameters queuectl does not know.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

// The URL with its password removed, and the password ("" when it had none).
std::pair<std::string, std::string> split_password(const std::string& url) {
  auto scheme_end = url.find("://");
  REQUIRE(scheme_end != std::string::npos);
  auto at = url.find('@', scheme_end);
  auto slash = url.find('/', scheme_end + 3);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return {url, ""};
  auto colon = url.find(':', scheme_end + 3);
  if (colon == std::string::npos || colon > at) return {url, ""};
  return {url.substr(0, colon) + url.substr(at), url.substr(colon + 1, at - colon - 1)};
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// One command as the top-level help lists it.
struct HelpEntry {
  std::string group;
  std::string name;
  std::string purpose;
};

// The commands of `queuectl --help`, by group ("Name:" headers, "  cmd   purpose" lines,
// a blank line ends a group); `groups` gets the command groups in order. The option list
// and the notes after the groups are not commands.
std::vector<HelpEntry> parse_top_help(const std::string& text, std::vector<std::string>& groups) {
  static const std::regex header(R"(^([A-Z][A-Za-z ]*):\s*$)");
  static const std::regex command(R"(^  ([a-z][a-z0-9-]*)\s{2,}(\S.*)$)");
  std::vector<HelpEntry> out;
  std::string group;
  for (const std::string& line : split_lines(text)) {
    std::smatch m;
    if (line.empty()) {
      group.clear();
    } else if (std::regex_match(line, m, header)) {
      group = m[1];
      if (group != "Options" && group != "Positionals") groups.push_back(group);
    } else if (!group.empty() && group != "Options" && group != "Positionals" &&
               std::regex_match(line, m, command)) {
      out.push_back({group, m[1], m[2]});
    }
  }
  return out;
}

// Whether `table` exists in the database the connection is on.
bool has_table(Database& db, const std::string& table) {
  std::string sql;
  switch (backend_under_test()) {
    case Backend::postgresql:
      sql =
          "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = "
          "current_schema() AND table_name = '" +
          table + "'";
      break;
    case Backend::mysql:
      sql =
          "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() "
          "AND table_name = '" +
          table + "'";
      break;
    case Backend::sqlite:
      sql = "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '" + table + "'";
      break;
  }
  return scalar(db, sql) > 0;
}

}  // namespace

// Every command `queuectl --help` lists sits under its group, and its own --help gives a
// one-line purpose and an example that runs it.
TEST_CASE("cli: --help lists each command under its group, each with a purpose and an example") {
  RunResult top = run_process({QUEUECTL_BINARY, "--help"});
  INFO(dump(top));
  REQUIRE(top.exit_code == 0);
  CHECK(top.err.empty());
  std::vector<std::string> groups;
  const std::vector<HelpEntry> commands = parse_top_help(top.out, groups);

  const std::vector<std::string> kGroups = {"Schema", "Producing", "Consuming", "Inspecting",
                                            "Operating"};
  CHECK_MESSAGE(groups == kGroups, "command groups shown, in order: " << join(groups));
  const std::map<std::string, std::string> kGroupOf = {
      {"migrate", "Schema"},    {"enqueue", "Producing"}, {"claim", "Consuming"},
      {"ack", "Consuming"},     {"fail", "Consuming"},    {"extend", "Consuming"},
      {"release", "Consuming"}, {"work", "Consuming"},    {"show", "Inspecting"},
      {"list", "Inspecting"},   {"stats", "Inspecting"},  {"leases", "Inspecting"},
      {"retry", "Operating"},   {"cancel", "Operating"},  {"purge", "Operating"},
      {"pause", "Operating"},   {"resume", "Operating"},  {"reap", "Operating"},
      {"lock", "Operating"}};
  std::set<std::string> listed;
  for (const HelpEntry& c : commands) {
    CAPTURE(c.name);
    listed.insert(c.name);
    CHECK_MESSAGE(std::find(kGroups.begin(), kGroups.end(), c.group) != kGroups.end(),
                  "listed under '" << c.group << "'");
    auto known = kGroupOf.find(c.name);
    if (known != kGroupOf.end()) CHECK(c.group == known->second);
    CHECK_FALSE(c.purpose.empty());
  }
  for (const auto& [name, group] : kGroupOf)
    CHECK_MESSAGE(listed.count(name) == 1, name << " is not listed exactly once under a group");
  CHECK_MESSAGE(listed.size() == commands.size(), "a command is listed twice");

  for (const HelpEntry& c : commands) {
    CAPTURE(c.name);
    RunResult r = run_process({QUEUECTL_BINARY, c.name, "--help"});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    std::vector<std::string> lines = split_lines(r.out);
    REQUIRE(lines.size() >= 2);
    // The first line is the purpose, one line, then the usage.
    CHECK_FALSE(lines[0].empty());
    CHECK(lines[0].rfind("Usage", 0) != 0);
    CHECK(lines[1].rfind("Usage:", 0) == 0);
    // An "Example" line, and from there on a line that runs the command.
    auto header = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
      return l.find("Example") != std::string::npos;
    });
    REQUIRE_MESSAGE(header != lines.end(), "no Example line");
    const std::regex runs("(^|\\s|`)queuectl " + c.name + "(\\s|`|$)");
    CHECK_MESSAGE(std::any_of(header, lines.end(),
                              [&](const std::string& l) { return std::regex_search(l, runs); }),
                  "no example runs `queuectl " << c.name << "`");
  }

  RunResult claim = run_process({QUEUECTL_BINARY, "claim", "--help"});
  CHECK(claim.out.find("--lease") != std::string::npos);
  CHECK(claim.out.find("--limit") != std::string::npos);
}

TEST_CASE("cli: --version prints the version on stdout and exits 0") {
  RunResult r = run_process({QUEUECTL_BINARY, "--version"});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  static const std::regex pattern(R"(^queuectl \d+\.\d+\.\d+\n$)");
  CHECK(std::regex_match(r.out, pattern));
}

TEST_CASE("cli: commands before migrate say to run queuectl migrate") {
  FreshDatabase fixture;
  std::string url = fixture.url();
  TempDir dir;
  if (is_sqlite())
    url = "sqlite://" + dir.path() + "/never-migrated.db";
  else
    drop_schema(fixture);

  for (std::vector<std::string> args : {std::vector<std::string>{"enqueue", "q", "{}"},
                                        {"claim", "q"},
                                        {"list"},
                                        {"show", "1"},
                                        {"stats"},
                                        {"ack", "1", "--token", "t"}}) {
    CAPTURE(args[0]);
    RunResult r = queuectl(url, args);
    check_error(r, 1, "run `queuectl migrate`");
    if (!is_sqlite()) {
      // The URL is shown redacted.
      auto [bare, password] = split_password(url);
      if (!password.empty()) CHECK(r.err.find(":" + password + "@") == std::string::npos);
    }
  }
  ok(url, {"migrate"});
  enqueue(url, "q");
}

TEST_CASE("cli: the password may come from QUEUECTL_DB_PASSWORD or --db-password-file" *
          doctest::skip(is_sqlite())) {  // SQLite has no passwords
  FreshDatabase fixture;
  auto [bare, password] = split_password(fixture.url());
  REQUIRE_MESSAGE(!password.empty(), "the test URL should carry a password: " << fixture.url());
  TempDir dir;

  SUBCASE("from the environment") {
    RunResult r = queuectl(bare, {"-o", "json", "enqueue", "q", "{}"}, "",
                           {{"QUEUECTL_DB_PASSWORD", password}});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(job_rows(fixture) == 1);
  }

  SUBCASE("from a file, which wins over the environment") {
    std::string file = dir.write("pw", password + "\n");
    RunResult r = queuectl(bare, {"--db-password-file", file, "enqueue", "q", "{}"}, "",
                           {{"QUEUECTL_DB_PASSWORD", "wrong-password"}});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
    CHECK(job_rows(fixture) == 1);
  }

  SUBCASE("through QUEUECTL_DB as well") {
    RunResult r = run_process({QUEUECTL_BINARY, "-o", "json", "stats"}, "",
                              {{"QUEUECTL_DB", bare}, {"QUEUECTL_DB_PASSWORD", password}});
    INFO(dump(r));
    CHECK(r.exit_code == 0);
  }

  SUBCASE("a wrong password fails and is never printed") {
    RunResult r =
        queuectl(bare, {"enqueue", "q", "{}"}, "", {{"QUEUECTL_DB_PASSWORD", "hunter2-wrong"}});
    INFO(dump(r));
    CHECK(r.exit_code != 0);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("queuectl: error:", 0) == 0);
    CHECK(r.err.find("hunter2-wrong") == std::string::npos);
    CHECK(job_rows(fixture) == 0);
  }

  SUBCASE("a missing password file is bad usage") {
    RunResult r =
        queuectl(bare, {"--db-password-file", dir.path() + "/nope", "enqueue", "q", "{}"});
    check_usage_error(r, "--db-password-file");
    CHECK(job_rows(fixture) == 0);
  }
}

// Runs on every backend: the servers named here do not exist.
TEST_CASE("cli: an unreachable server is exit 75 naming the redacted URL, never the password") {
  const std::string port = std::to_string(closed_port());
  for (const std::string scheme : {"postgresql", "mysql"}) {
    CAPTURE(scheme);
    const std::string url = scheme + "://u:secret@127.0.0.1:" + port + "/db";
    const std::string redacted = scheme + "://u:***@127.0.0.1:" + port + "/db";
    for (std::vector<std::string> args :
         {std::vector<std::string>{"stats"}, {"enqueue", "q", "{}"}, {"migrate"}}) {
      CAPTURE(args[0]);
      RunResult r = queuectl(url, args);
      check_error(r, 75, redacted);
      CHECK(r.err.find("secret") == std::string::npos);
    }
    // A password from the environment is not printed either.
    RunResult r = queuectl(scheme + "://u@127.0.0.1:" + port + "/db", {"stats"}, "",
                           {{"QUEUECTL_DB_PASSWORD", "secret"}});
    check_error(r, 75, "127.0.0.1:" + port);
    CHECK(r.err.find("secret") == std::string::npos);
  }
}

TEST_CASE("cli: an unknown URL query parameter is bad usage naming it, before connecting") {
  // The port is closed: a URL that got as far as connecting would be exit 75.
  const std::string port = std::to_string(closed_port());
  for (const std::string url :
       {"postgresql://u:secret@127.0.0.1:" + port + "/db?bogus=1",
        "mysql://u:secret@127.0.0.1:" + port + "/db?bogus=1",
        "postgresql://u:secret@127.0.0.1:" + port + "/db?connect_timeout=5&bogus=1"}) {
    CAPTURE(url);
    RunResult r = queuectl(url, {"stats"});
    check_usage_error(r, "bogus");
    CHECK(r.err.find("secret") == std::string::npos);
  }
}

TEST_CASE(
    "cli: an unknown URL query parameter on the server under test writes nothing; a known "
    "one works" *
    doctest::skip(is_sqlite())) {  // a sqlite: URL is a path; it has no parameters
  FreshDatabase fixture;
  const char sep = fixture.url().find('?') == std::string::npos ? '?' : '&';
  RunResult bad = queuectl(fixture.url() + sep + "bogus=1", {"enqueue", "q", "{}"});
  check_usage_error(bad, "bogus");
  CHECK(job_rows(fixture) == 0);
  ok(fixture.url() + sep + "connect_timeout=5", {"enqueue", "q", "{}"});
  CHECK(job_rows(fixture) == 1);
}

// SQLite: a fresh empty file; servers: the test database with the schema dropped.
TEST_CASE("cli: read-only commands on an unmigrated database create no table") {
  FreshDatabase fixture;
  TempDir dir;
  std::string url = fixture.url();
  if (is_sqlite())
    url = "sqlite://" + dir.write("empty.db", "");
  else
    drop_schema(fixture);

  RunResult status = queuectl(url, {"migrate", "--status"});
  INFO(dump(status));
  CHECK(status.exit_code == 0);
  CHECK(status.out.find("pending") != std::string::npos);
  for (std::vector<std::string> args : {std::vector<std::string>{"stats"},
                                        {"list"},
                                        {"show", "1"},
                                        {"leases"},
                                        {"-o", "json", "stats"}}) {
    CAPTURE(args.front());
    check_error(queuectl(url, args), 1, "queuectl migrate");
  }

  Database db(DbUrl::parse(url));
  for (const char* table :
       {"job_queue", "queuectl_schema_migrations", "queuectl_queues", "queuectl_locks"})
    CHECK_MESSAGE(!has_table(db, table), table << " was created by a read-only command");
}

}  // namespace queuectl::testing::cli
