// `queuectl serve`: the routes of its JSON API as command lines, the listen address, and
// the auth file. The server itself is tested on the real binary (tests/cli/test_serve_*).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "serve/api.hpp"
#include "serve/auth.hpp"
#include "serve/server.hpp"
#include "unit_helpers.hpp"

using queuectl::api_call;
using queuectl::AuthFile;
using queuectl::HttpRequest;
using queuectl::test::usage_error_of;

namespace {

HttpRequest get(const std::string& path,
                std::vector<std::pair<std::string, std::string>> query = {}) {
  HttpRequest r;
  r.method = "GET";
  r.path = path;
  r.query = std::move(query);
  return r;
}

HttpRequest post(const std::string& path, const std::string& body) {
  HttpRequest r;
  r.method = "POST";
  r.path = path;
  r.body = body;
  return r;
}

using Words = std::vector<std::string>;

}  // namespace

TEST_CASE("serve: each read route is the command with -o json") {
  CHECK(api_call(get("/api/stats"))->args == Words{"-o", "json", "stats"});
  CHECK(api_call(get("/api/stats", {{"queue", "a"}, {"queue", "-b"}}))->args ==
        Words{"-o", "json", "stats", "--", "a", "-b"});
  CHECK(api_call(get("/api/top"))->args == Words{"-o", "json", "top", "--once"});
  CHECK(api_call(get("/api/top", {{"failures", "500"}}))->args ==
        Words{"-o", "json", "top", "--once", "--failures=500"});
  auto list = api_call(get("/api/jobs", {{"queue", "q"}, {"status", "failed"}, {"limit", "5"}}));
  CHECK(list->args == Words{"-o", "json", "list", "--status=failed", "--limit=5", "--", "q"});
  CHECK(list->page_limit == 5);
  CHECK_FALSE(list->writes);
  CHECK(api_call(get("/api/jobs", {{"group_key", "acct 1"}, {"error", "timed out"}}))->args ==
        Words{"-o", "json", "list", "--group-key=acct 1", "--error=timed out"});
  CHECK(api_call(get("/api/jobs/42"))->args == Words{"-o", "json", "show", "--", "42"});
  CHECK(api_call(get("/api/groups", {{"queue", "q"}, {"blocked", "1"}}))->args ==
        Words{"-o", "json", "groups", "--blocked", "--", "q"});
  CHECK(api_call(get("/api/schedules"))->args == Words{"-o", "json", "cron", "list"});
  CHECK_FALSE(api_call(get("/api/nothing")).has_value());
}

TEST_CASE("serve: a value never becomes an option of its own") {
  // A status of "--force" is one word, --status=--force, which `list` then refuses.
  auto call = api_call(get("/api/jobs", {{"status", "--force"}, {"queue", "--all"}}));
  CHECK(call->args == Words{"-o", "json", "list", "--status=--force", "--", "--all"});
  auto pause = api_call(post("/api/pause", R"({"queue": "--all"})"));
  CHECK(pause->args == Words{"-o", "json", "pause", "--", "--all"});
}

TEST_CASE("serve: empty values, control characters and odd numbers are refused") {
  // CLI11 would take the word after an empty --to= as its value: a dry run becoming real.
  CHECK(usage_error_of([] {
          api_call(post("/api/move", R"({"all": true, "to": "", "dry_run": true})"));
        }).find("is empty") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(get("/api/jobs", {{"before", ""}, {"queue", "q"}}));
        }).find("is empty") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(post("/api/pause", "{\"queue\": \"a\\u0000b\"}"));
        }).find("control character") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(get("/api/jobs", {{"queue", std::string("a\nb")}}));
        }).find("control character") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(get("/api/jobs", {{"limit", "0x186A0"}}));
        }).find("not a whole number") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(get("/api/leases", {{"limit", "5000"}}));
        }).find("over 1000") != std::string::npos);
  CHECK(api_call(get("/api/jobs", {{"limit", "007"}}))->args ==
        Words{"-o", "json", "list", "--limit=7"});
}

TEST_CASE("serve: bad parameters and bodies are refused before any command runs") {
  CHECK(usage_error_of([] {
          api_call(get("/api/jobs", {{"colour", "red"}}));
        }).find("unknown parameter 'colour'") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(get("/api/jobs", {{"limit", "1"}, {"limit", "2"}}));
        }).find("given twice") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(get("/api/jobs", {{"limit", "1001"}}));
        }).find("over 1000") != std::string::npos);
  CHECK(usage_error_of([] { api_call(get("/api/groups")); }).find("?queue=") != std::string::npos);
  CHECK(usage_error_of([] { api_call(post("/api/retry", "not json")); }).find("not JSON") !=
        std::string::npos);
  CHECK(usage_error_of([] { api_call(post("/api/retry", "[1]")); }).find("not an object") !=
        std::string::npos);
  CHECK(usage_error_of([] {
          api_call(post("/api/retry", R"({"ids": [1], "x": 1})"));
        }).find("unknown key 'x'") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(post("/api/cancel", R"({"ids": [1], "force": "yes"})"));
        }).find("true or false") != std::string::npos);
  CHECK(usage_error_of([] {
          api_call(post("/api/retry", R"({"ids": [{"a": 1}]})"));
        }).find("job ids") != std::string::npos);
}

TEST_CASE("serve: writes are POSTs with JSON bodies") {
  auto retry = api_call(post("/api/retry", R"({"ids": [3, "4"]})"));
  CHECK(retry->writes);
  CHECK(retry->args == Words{"-o", "json", "retry", "--", "3", "4"});
  CHECK(api_call(post("/api/retry", R"({"queue": "q", "older_than": "1h"})"))->args ==
        Words{"-o", "json", "retry", "--queue=q", "--older-than=1h"});
  CHECK(api_call(post("/api/retry", R"({"queue": "q", "error": "SMTP 421", "group_key": "g"})"))
            ->args ==
        Words{"-o", "json", "retry", "--queue=q", "--group-key=g", "--error=SMTP 421"});
  CHECK(api_call(post("/api/cancel", R"({"ids": [7], "force": true})"))->args ==
        Words{"-o", "json", "cancel", "--force", "--", "7"});
  CHECK(
      api_call(post("/api/cancel",
                    R"({"queue": "q", "status": "failed", "group_key": "k", "error": "--force"})"))
          ->args == Words{"-o", "json", "cancel", "--queue=q", "--status=failed", "--group-key=k",
                          "--error=--force"});
  CHECK(api_call(post("/api/move", R"({"from": "q.dead", "dry_run": true})"))->args ==
        Words{"-o", "json", "move", "--from=q.dead", "--dry-run"});
  CHECK(api_call(post("/api/purge", R"({"older_than": "7d", "status": "done"})"))->args ==
        Words{"-o", "json", "purge", "--older-than=7d", "--status=done"});
  // The wrong method for a known route is 405, not 404.
  CHECK_THROWS_AS(api_call(post("/api/stats", "{}")), queuectl::MethodNotAllowed);
  CHECK_THROWS_AS(api_call(get("/api/retry")), queuectl::MethodNotAllowed);
  CHECK_THROWS_AS(api_call(post("/api/jobs/7", "{}")), queuectl::MethodNotAllowed);
  CHECK_FALSE(api_call(post("/api/jobs/7/retry", "{}")).has_value());  // no such route: 404
}

TEST_CASE("serve: exit codes become HTTP statuses") {
  CHECK(queuectl::status_for_exit(0) == 200);
  CHECK(queuectl::status_for_exit(2) == 400);
  CHECK(queuectl::status_for_exit(4) == 404);
  CHECK(queuectl::status_for_exit(3) == 409);
  CHECK(queuectl::status_for_exit(5) == 409);
  CHECK(queuectl::status_for_exit(75) == 503);
  CHECK(queuectl::status_for_exit(1) == 500);
}

TEST_CASE("serve: --listen") {
  queuectl::HttpServerConfig c;
  queuectl::parse_listen("0.0.0.0:9000", c);
  CHECK(c.host == "0.0.0.0");
  CHECK(c.port == 9000);
  queuectl::parse_listen("[::1]:0", c);
  CHECK(c.host == "::1");
  CHECK(c.port == 0);
  for (const char* bad : {"8080", ":8080", "host:", "host:99999", "host:8o", "[::1]8080"})
    CHECK_MESSAGE(!usage_error_of([&] { queuectl::parse_listen(bad, c); }).empty(), bad);
  CHECK(queuectl::is_loopback("127.0.0.1"));
  CHECK(queuectl::is_loopback("127.3.4.5"));
  CHECK(queuectl::is_loopback("::1"));
  CHECK(queuectl::is_loopback("localhost", true));
  CHECK_FALSE(queuectl::is_loopback("localhost"));
  CHECK_FALSE(queuectl::is_loopback("0.0.0.0"));
  CHECK_FALSE(queuectl::is_loopback("10.0.0.1"));
  // A name that only starts like a loopback address (DNS rebinding) is not one.
  CHECK_FALSE(queuectl::is_loopback("127.0.0.1.attacker.example", true));
  CHECK_FALSE(queuectl::is_loopback("127.example", true));
  CHECK_FALSE(queuectl::is_loopback("::ffff:10.0.0.1", true));
}

TEST_CASE("serve: the auth file holds hashes, never passwords") {
  const std::string hash = "$2b$12$abcdefghijklmnopqrstuv0123456789ABCDEFGHIJKLMNOPQRSTU";
  AuthFile f = AuthFile::parse("# on call\nalice:" + hash + "\r\n\ntoken:" + hash + "\n", "f");
  REQUIRE(f.entries().size() == 2);
  CHECK(f.entries()[0].user == "alice");
  CHECK(f.entries()[1].user == "token");
  const std::string clear = usage_error_of([] { AuthFile::parse("bob:hunter2\n", "f"); });
  CHECK(clear.find("line 1") != std::string::npos);
  CHECK(clear.find("hunter2") == std::string::npos);
  CHECK(usage_error_of([] { AuthFile::parse("# nobody\n", "f"); }).find("no USER:HASH") !=
        std::string::npos);
  // check(): basic auth names a user and proves the password; a bearer token a token line.
  auto verify = [](const std::string& password, const std::string&) { return password == "pw"; };
  CHECK(f.check("Basic " + std::string("YWxpY2U6cHc="), verify) ==
        std::optional<std::string>("alice"));
  CHECK_FALSE(f.check("Basic YWxpY2U6bm8=", verify).has_value());  // alice:no
  CHECK_FALSE(f.check("Basic Ym9iOnB3", verify).has_value());      // bob:pw, no such user
  CHECK_FALSE(f.check("Basic dG9rZW46cHc=", verify).has_value());  // token:pw as a user
  CHECK(f.check("Bearer pw", verify) == std::optional<std::string>("token"));
  CHECK_FALSE(f.check("Bearer no", verify).has_value());
  CHECK_FALSE(f.check("Digest x", verify).has_value());
  CHECK(queuectl::base64_decode("YWxpY2U6cHc=") == std::optional<std::string>("alice:pw"));
  CHECK_FALSE(queuectl::base64_decode("a*b").has_value());
}
