// SQLite paths (issue 14, point 21): a command other than migrate never creates a file,
// migrate never creates folders (but the embedded default's), ?mode= is honoured and any
// other parameter refused, and sqlite://host/path is refused with the two right spellings.
#include <filesystem>

#include "cli/cli_helpers.hpp"

namespace queuectl::testing::cli {
namespace {

namespace fs = std::filesystem;

// Every entry under `dir`, recursively, as paths relative to it.
std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    out.push_back(fs::relative(e.path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

// Runs queuectl with `args` in the folder `cwd` (for relative paths).
RunResult queuectl_in(const std::string& cwd, const std::vector<std::string>& args,
                      const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {"sh", "-c", "cd \"$0\" && exec \"$@\"", cwd, QUEUECTL_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, "", env);
}

}  // namespace

TEST_CASE("cli: sqlite: a command other than migrate on a missing file creates nothing" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  const std::string path = dir.path() + "/typo.db";
  const std::string url = "sqlite://" + path;
  for (std::vector<std::string> args : {std::vector<std::string>{"stats"},
                                        {"list"},
                                        {"show", "1"},
                                        {"leases"},
                                        {"groups", "q"},
                                        {"queue", "q"},
                                        {"enqueue", "q", "{}"},
                                        {"claim", "q"},
                                        {"pause", "q"},
                                        {"reap"},
                                        {"purge", "--older-than", "1d"},
                                        {"migrate", "--status"}}) {
    CAPTURE(args.front());
    RunResult r = queuectl(url, args);
    // Exit 1 as for a database never migrated; the message names the path.
    check_error(r, 1, "no SQLite database at '" + path + "': run `queuectl migrate`");
    CHECK(entries(dir.path()).empty());
  }
  ok(url, {"migrate"});
  CHECK(entries(dir.path()) == std::vector<std::string>{"typo.db"});
}

TEST_CASE("cli: sqlite: migrate creates the file, never a missing folder" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  RunResult r = queuectl("sqlite://" + dir.path() + "/no/such/q.db", {"migrate"});
  check_usage_error(r, "the folder '" + dir.path() + "/no/such' of the SQLite database");
  CHECK(r.err.find("does not exist") != std::string::npos);
  CHECK(entries(dir.path()).empty());

  ok("sqlite://" + dir.path() + "/q.db", {"migrate"});
  CHECK(entries(dir.path()) == std::vector<std::string>{"q.db"});
}

TEST_CASE("cli: sqlite: migrate creates the embedded default's folder, other commands do not" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  const std::map<std::string, std::string> env = {{"XDG_DATA_HOME", dir.path() + "/xdg"},
                                                  {"QUEUECTL_DB", ""}};
  RunResult stats = run_process({QUEUECTL_BINARY, "stats"}, "", env);
  check_error(stats, 1, "run `queuectl migrate`");
  CHECK(entries(dir.path()).empty());

  RunResult migrate = run_process({QUEUECTL_BINARY, "-q", "migrate"}, "", env);
  INFO(dump(migrate));
  CHECK(migrate.exit_code == 0);
  CHECK(fs::is_regular_file(dir.path() + "/xdg/queuectl/queue.db"));
}

TEST_CASE("cli: sqlite: ?mode=ro opens read-only, ?mode=rw never creates" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  const std::string path = dir.path() + "/q.db";
  ok("sqlite://" + path, {"migrate"});
  enqueue("sqlite://" + path, "emails");

  SUBCASE("mode=ro: reads work, writes fail and change nothing") {
    const std::string ro = "sqlite://" + path + "?mode=ro";
    json stats = ok_json(ro, {"stats"});
    CHECK(stats.dump().find("emails") != std::string::npos);
    CHECK(ok_json(ro, {"list"}).size() == 1);
    RunResult write = queuectl(ro, {"enqueue", "emails", "{}"});
    check_error(write, 1, "readonly");
    // The driver's words say what; the line also says why and what to do.
    CHECK(
        contains(write.err,
                 "opens the file read-only with ?mode=ro, and this command writes: drop ?mode=ro"));
    std::ofstream(dir.path() + "/empty.db").flush();  // an empty file: a database of no tables
    check_error(queuectl("sqlite://" + dir.path() + "/empty.db?mode=ro", {"migrate"}), 1,
                "and this command writes: drop ?mode=ro");
    CHECK(ok_json("sqlite://" + path, {"list"}).size() == 1);
  }
  SUBCASE("mode=rw: an existing file works; a missing one is not created, even by migrate") {
    CHECK(ok_json("sqlite://" + path + "?mode=rw", {"list"}).size() == 1);
    RunResult r = queuectl("sqlite://" + dir.path() + "/new.db?mode=rw", {"migrate"});
    check_error(r, 1, "?mode=rw never creates it");
  }
  SUBCASE("mode=ro on a missing file") {
    RunResult r = queuectl("sqlite://" + dir.path() + "/new.db?mode=ro", {"stats"});
    check_error(r, 1, "no SQLite database at '" + dir.path() + "/new.db'");
  }
  // Never a file named after the whole URL tail.
  for (const auto& e : entries(dir.path())) CHECK(e.find('?') == std::string::npos);
  CHECK_FALSE(fs::exists(dir.path() + "/new.db"));
}

TEST_CASE("cli: sqlite: a query parameter other than mode is refused, naming it" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  const std::string base = "sqlite://" + dir.path() + "/q.db";
  check_usage_error(queuectl(base + "?cache=shared", {"migrate"}),
                    "unknown query parameter 'cache'");
  check_usage_error(queuectl(base + "?mode=memory", {"migrate"}),
                    "query parameter 'mode' must be ro");
  check_usage_error(queuectl(base + "?mode", {"migrate"}), "'mode' needs a value");
  check_usage_error(queuectl(base + "?", {"migrate"}), "'?' after the SQLite path");
  CHECK(entries(dir.path()).empty());
}

TEST_CASE("cli: sqlite: sqlite://dir/file (a host part) is refused with both right spellings" *
          doctest::skip(!is_sqlite())) {
  TempDir dir;
  RunResult r = queuectl_in(dir.path(), {"--db", "sqlite://tmp/x.db", "migrate"});
  check_usage_error(r, "sqlite://tmp/x.db names a host ('tmp')");
  CHECK(r.err.find("sqlite:///tmp/x.db") != std::string::npos);
  CHECK(r.err.find("sqlite:tmp/x.db") != std::string::npos);
  CHECK(entries(dir.path()).empty());
}

TEST_CASE("cli: sqlite: every documented URL form still works" * doctest::skip(!is_sqlite())) {
  TempDir dir;
  // sqlite:relative/path.db, from the current folder.
  fs::create_directory(dir.path() + "/data");
  RunResult rel = queuectl_in(dir.path(), {"-q", "--db", "sqlite:data/rel.db", "migrate"});
  INFO(dump(rel));
  CHECK(rel.exit_code == 0);
  CHECK(fs::is_regular_file(dir.path() + "/data/rel.db"));
  // sqlite:///absolute/path.db and sqlite:/absolute/path.db
  ok("sqlite://" + dir.path() + "/abs.db", {"migrate"});
  CHECK(fs::is_regular_file(dir.path() + "/abs.db"));
  ok("sqlite:" + dir.path() + "/one-slash.db", {"migrate"});
  CHECK(fs::is_regular_file(dir.path() + "/one-slash.db"));
  // sqlite::memory: (lives for one command)
  ok("sqlite::memory:", {"migrate"});
}

}  // namespace queuectl::testing::cli

namespace queuectl::testing::cli {

// `work`'s start line names the database: a lost QUEUECTL_DB that fell back to the default
// file shows at once. On the servers the URL is shown redacted, never with its password.
TEST_CASE("cli: work's start line names the database it works") {
  FreshDatabase fixture;
  const std::string& url = fixture.url();
  RunResult r = queuectl(url, {"work", "q", "--drain", "--", "true"});
  INFO(dump(r));
  CHECK(r.exit_code == 0);
  const std::string redacted = DbUrl::parse(url).redacted();
  CHECK(r.err.find(" on queue q of " + redacted + " (concurrency 1, lease 30s)\n") !=
        std::string::npos);
  if (!is_sqlite())
    CHECK(r.err.find(":queuectl@") == std::string::npos);  // the test servers' password

  if (!is_sqlite()) return;
  TempDir dir;
  const std::map<std::string, std::string> env = {{"XDG_DATA_HOME", dir.path() + "/xdg"},
                                                  {"QUEUECTL_DB", ""}};
  REQUIRE(run_process({QUEUECTL_BINARY, "-q", "migrate"}, "", env).exit_code == 0);
  RunResult d = run_process({QUEUECTL_BINARY, "work", "q", "--drain", "--", "true"}, "", env);
  INFO(dump(d));
  CHECK(d.exit_code == 0);
  CHECK(d.err.find(" on queue q of the default SQLite file at " + dir.path() +
                   "/xdg/queuectl/queue.db (concurrency 1") != std::string::npos);
}

}  // namespace queuectl::testing::cli
