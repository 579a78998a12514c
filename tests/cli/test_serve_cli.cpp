// `queuectl serve` over HTTP, on the real binary: the JSON API answers what the commands
// print with -o json, writes need --allow-writes and the CSRF token, sign-in needs the
// --auth-file's users, and bad requests (too large, too many headers) are refused without
// harming the server. The page itself is tested in a browser (test_serve_browser_cli.cpp).
#include <doctest/doctest.h>

#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli/cli_helpers.hpp"
#include "cli/serve_helpers.hpp"

namespace queuectl::testing::cli {

namespace {

httplib::Headers csrf_headers(httplib::Client& http) {
  auto session = http.Get("/api/session");
  REQUIRE(session);
  REQUIRE(session->status == 200);
  return {{"X-CSRF-Token", parse(session->body).at("csrf_token").get<std::string>()}};
}

// A password no page or log has any reason to hold (the test servers' own is "queuectl",
// which every page says).
const std::string kSecret = "Zq7-serve-secret-4k";

// The fixture's database through an account of its own whose password is kSecret (servers
// only), dropped at the end: the URL a `serve` is started with must not leak it.
struct SecretAccount {
  Database& admin;
  std::string role = "qc_serve_" + std::to_string(getpid());
  explicit SecretAccount(Database& db) : admin(db) {
    if (is_postgresql()) {
      admin.session() << "DROP ROLE IF EXISTS " + role;
      admin.session() << "CREATE ROLE " + role + " LOGIN SUPERUSER PASSWORD '" + kSecret + "'";
    } else if (is_mysql()) {
      admin.session() << "DROP USER IF EXISTS " + account();
      admin.session() << "CREATE USER " + account() + " IDENTIFIED BY '" + kSecret + "'";
      admin.session() << "GRANT ALL PRIVILEGES ON *.* TO " + account();
    }
  }
  ~SecretAccount() {
    try {
      if (is_postgresql()) admin.session() << "DROP ROLE IF EXISTS " + role;
      if (is_mysql()) admin.session() << "DROP USER IF EXISTS " + account();
    } catch (...) {
    }
  }
  std::string account() const { return "'" + role + "'@'127.0.0.1'"; }
  std::string url_from(const std::string& url) const {
    if (is_sqlite()) return url;
    const std::size_t scheme = url.find("://"), at = url.find('@');
    REQUIRE(at != std::string::npos);
    return url.substr(0, scheme + 3) + role + ":" + kSecret + url.substr(at);
  }
};

// A JSON document without the fields that change between two reads a moment apart.
json without(json doc, const std::vector<std::string>& fields) {
  auto strip = [&](json& o) {
    for (const auto& f : fields) o.erase(f);
  };
  if (doc.is_array())
    for (json& item : doc) strip(item);
  else
    strip(doc);
  return doc;
}

std::string hash_of(const std::string& password) {
  RunResult r = run_process({QUEUECTL_BINARY, "serve", "--hash-password"}, password + "\n");
  REQUIRE_MESSAGE(r.exit_code == 0, dump(r));
  CHECK(r.out.rfind("$2b$12$", 0) == 0);
  CHECK(r.out.find(password) == std::string::npos);
  return r.out.substr(0, r.out.find('\n'));
}

// What the load test's clients ask, in turn: a count, a page of jobs, the page itself.
std::string i_path(long n) {
  static const char* const kPaths[] = {"/api/stats", "/api/jobs?queue=load_q", "/"};
  return kPaths[n % 3];
}

// A process's resident memory in kB (VmRSS), 0 when it cannot be read.
long rss_kb(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace

TEST_CASE("serve: the JSON API answers what the commands print with -o json") {
  FreshDatabase fixture;
  const std::string url = fixture.url();
  ok(url, {"enqueue", "api_q", R"({"n":1})", "--group-key", "g1"});
  ok(url, {"enqueue", "api_q", R"({"n":2})"});
  ok(url, {"enqueue", "api_other", "{}"});
  const json claimed = parse(ok(url, {"claim", "api_q", "-o", "json"}).out);
  const std::string id = std::to_string(claimed.at(0).at("id").get<long long>());
  ServeProcess serve(url);
  httplib::Client http(serve.url());
  auto same = [&](const std::string& path, const std::vector<std::string>& args,
                  const std::vector<std::string>& moving = {}) {
    auto res = http.Get(path);
    REQUIRE_MESSAGE(res, path);
    CHECK_MESSAGE(res->status == 200, path << ": " << res->body);
    CHECK(res->get_header_value("Content-Type") == "application/json");
    std::vector<std::string> cli = args;
    cli.insert(cli.begin(), {"-o", "json"});
    const json want = without(parse(ok(url, cli).out), moving);
    CHECK_MESSAGE(without(parse(res->body), moving) == want, path);
  };
  same("/api/stats", {"stats"}, {"oldest_ready_age_seconds"});
  same("/api/stats?queue=api_q", {"stats", "api_q"}, {"oldest_ready_age_seconds"});
  same("/api/jobs?queue=api_q", {"list", "api_q"});
  same("/api/jobs?status=processing", {"list", "--status", "processing"});
  same("/api/jobs/" + id, {"show", id});
  same("/api/leases", {"leases"}, {"seconds_left"});
  same("/api/groups?queue=api_q", {"groups", "api_q"}, {"age_seconds"});
  same("/api/schedules", {"cron", "list"});
  // A page that is full says where the next starts.
  auto page = http.Get("/api/jobs?queue=api_q&limit=1");
  REQUIRE(page);
  CHECK(page->get_header_value("X-Queuectl-Next") == id);
  // Errors: the command's own line, with the status its exit code maps to.
  auto missing = http.Get("/api/jobs/999999");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK(parse(missing->body).at("error").get<std::string>().find("999999") != std::string::npos);
  auto bad = http.Get("/api/jobs?status=sleeping");
  REQUIRE(bad);
  CHECK(bad->status == 400);
  auto unknown = http.Get("/api/jobs?colour=red");
  REQUIRE(unknown);
  CHECK(unknown->status == 400);
  CHECK(http.Get("/api/nothing")->status == 404);
  CHECK(http.Post("/api/stats", "{}", "application/json")->status == 405);
  CHECK(serve.stop() == 0);
}

TEST_CASE("serve: writes need --allow-writes, the CSRF token and a JSON body") {
  FreshDatabase fixture;
  const std::string url = fixture.url();
  ok(url, {"enqueue", "w_q", "{}", "--max-attempts", "1"});
  const json job = parse(ok(url, {"claim", "w_q", "-o", "json"}).out).at(0);
  const std::string id = std::to_string(job.at("id").get<long long>());
  ok(url, {"fail", id, "--token", job.at("lock_token").get<std::string>(), "--error", "x"});
  const std::string body = "{\"ids\": [" + id + "]}";
  SUBCASE("without --allow-writes every write is 403 and nothing changes") {
    ServeProcess serve(url);
    httplib::Client http(serve.url());
    const std::string before = db_fingerprint(fixture);
    for (const char* route : {"/api/retry", "/api/cancel", "/api/pause", "/api/purge"}) {
      auto res = http.Post(route, csrf_headers(http), body, "application/json");
      REQUIRE(res);
      CHECK_MESSAGE(res->status == 403, std::string(route));
    }
    CHECK(db_fingerprint(fixture) == before);
    CHECK(parse(http.Get("/api/session")->body).at("writes") == false);
  }
  SUBCASE("with --allow-writes: refused without the token, done with it, and logged") {
    ServeProcess serve(url, {"--allow-writes"});
    httplib::Client http(serve.url());
    const std::string before = db_fingerprint(fixture);
    auto no_token = http.Post("/api/retry", body, "application/json");
    REQUIRE(no_token);
    CHECK(no_token->status == 403);
    auto wrong = http.Post("/api/retry", {{"X-CSRF-Token", "0123"}}, body, "application/json");
    CHECK(wrong->status == 403);
    httplib::Headers h = csrf_headers(http);
    CHECK(http.Post("/api/retry", h, body, "text/plain")->status == 415);
    httplib::Headers other_site = h;
    other_site.emplace("Origin", "http://evil.example");
    CHECK(http.Post("/api/retry", other_site, body, "application/json")->status == 403);
    CHECK(db_fingerprint(fixture) == before);
    CHECK(serve.log().find("retry") == std::string::npos);
    auto done = http.Post("/api/retry", h, body, "application/json");
    REQUIRE(done);
    CHECK_MESSAGE(done->status == 200, done->body);
    CHECK(parse(done->body).at("retried") == 1);
    CHECK(parse(ok(url, {"show", id, "-o", "json"}).out).at("status") == "ready");
    CHECK(serve.log().find("queuectl serve: - 127.0.0.1: retry -- " + id + " -> exit 0") !=
          std::string::npos);
    // The command's refusals come back as the CLI says them: a ready job is not retried.
    auto again = http.Post("/api/retry", h, body, "application/json");
    CHECK(again->status == 409);
    CHECK(parse(again->body).at("error").get<std::string>().find("not retried") !=
          std::string::npos);
    auto pause = http.Post("/api/pause", h, R"({"queue": "w_q"})", "application/json");
    CHECK(pause->status == 200);
    CHECK(parse(ok(url, {"stats", "w_q", "-o", "json"}).out).at(0).at("paused") == true);
  }
}

TEST_CASE("serve: without sign-in, only a loopback Host is served (DNS rebinding)") {
  FreshDatabase fixture;
  ServeProcess serve(fixture.url());
  httplib::Client http(serve.url());
  const std::string port = std::to_string(serve.port());
  for (const std::string& host :
       std::vector<std::string>{"127.0.0.1.attacker.example:" + port, "attacker.example",
                                "127.example:" + port, "a://127.0.0.1"}) {
    auto res = http.Get("/api/session", {{"Host", host}});
    REQUIRE(res);
    CHECK_MESSAGE(res->status == 403, host);
  }
  for (const std::string& host :
       std::vector<std::string>{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port}) {
    auto res = http.Get("/api/session", {{"Host", host}});
    REQUIRE(res);
    CHECK_MESSAGE(res->status == 200, host);
  }
  // HEAD answers as GET without a body; OPTIONS (a browser's preflight) is not allowed.
  auto head = http.Head("/api/stats");
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->body.empty());
  auto options = http.Options("/api/retry");
  REQUIRE(options);
  CHECK(options->status == 405);
  CHECK(serve.stop() == 0);
}

TEST_CASE("serve: SIGTERM as it starts still ends it, with exit 0") {
  FreshDatabase fixture;
  TempDir dir;
  for (int delay_ms : {0, 5, 30}) {
    const int pid =
        spawn_process({QUEUECTL_BINARY, "--db", fixture.url(), "serve", "--listen", "127.0.0.1:0"},
                      dir.path() + "/serve.log");
    // From when it is queuectl: a signal before the exec would reach a copy of this test.
    const std::string exe = std::filesystem::canonical(QUEUECTL_BINARY).string();
    REQUIRE(wait_until([&] {
      std::error_code ec;
      return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec) == exe;
    }));
    sleep_ms(delay_ms);
    kill(pid, SIGTERM);
    int code = -1;
    const bool ended = wait_until([&] { return try_wait(pid, code); }, 20000);
    if (!ended) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    CHECK_MESSAGE(ended, "SIGTERM " << delay_ms << " ms after the start did not end it");
    // 0 once its handler is in place; 143 when the signal came before (the default action).
    CHECK_MESSAGE((code == 0 || code == 128 + SIGTERM), "exit " << code);
  }
}

// httplib's default socket options included SO_REUSEPORT: a second serve on a port in use
// bound too, said it was listening, and the kernel shared the connections between the two.
TEST_CASE("serve: a second serve on a port in use is refused, and the first serves on") {
  FreshDatabase fixture;
  ServeProcess first(fixture.url());
  TempDir dir;
  const std::string log = dir.path() + "/second.log";
  const int pid = spawn_process({QUEUECTL_BINARY, "--db", fixture.url(), "serve", "--listen",
                                 "127.0.0.1:" + std::to_string(first.port()), "--allow-writes"},
                                log);
  int code = -1;
  const bool ended = wait_until([&] { return try_wait(pid, code); }, 20000);
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  REQUIRE_MESSAGE(ended, "the second serve is still running; its log:\n" << read_text(log));
  CHECK(code == 1);
  const std::string text = read_text(log);
  CHECK(contains(text, "cannot listen on 127.0.0.1:" + std::to_string(first.port())));
  CHECK(contains(text, "pick another with --listen"));
  CHECK_FALSE(contains(text, "listening on"));
  CHECK(first.stop() == 0);
}

TEST_CASE("serve: listening anywhere but loopback needs --auth-file") {
  FreshDatabase fixture;
  check_usage_error(queuectl(fixture.url(), {"serve", "--listen", "0.0.0.0:0"}), "--auth-file");
  check_usage_error(queuectl(fixture.url(), {"serve", "--listen", "8080"}), "--listen");
  check_usage_error(queuectl(fixture.url(), {"serve", "--tls-cert", "c.pem"}), "--tls-key");
  check_usage_error(queuectl(fixture.url(), {"serve", "--read-only", "--allow-writes"}),
                    "--read-only");
  check_usage_error(queuectl(fixture.url(), {"serve", "--refresh", "10ms"}), "--refresh");
  TempDir dir;
  const std::string clear = dir.path() + "/users";
  std::ofstream(clear) << "alice:hunter2\n";
  RunResult r = queuectl(fixture.url(), {"serve", "--auth-file", clear});
  check_usage_error(r, "line 1");
  CHECK(r.err.find("hunter2") == std::string::npos);
  check_usage_error(run_process({QUEUECTL_BINARY, "serve", "--hash-password"}, ""), "password");
}

TEST_CASE("serve: --auth-file users and bearer tokens; no response shows the URL's password") {
  FreshDatabase fixture;
  TempDir dir;
  const std::string users = dir.path() + "/users";
  std::ofstream(users) << "# on call\nalice:" << hash_of("correct horse")
                       << "\ntoken:" << hash_of("s3cret-token") << "\n";
  // Any address, now that there is sign-in: 0.0.0.0 reaches loopback too.
  SecretAccount secret(fixture.db());
  // PgBouncer knows only its own users: past it, to the same server's database.
  ServeProcess serve(secret.url_from(through_pooler() ? direct_url() : fixture.url()),
                     {"--listen", "0.0.0.0:0", "--auth-file", users, "-v"});
  httplib::Client http("http://127.0.0.1:" + std::to_string(serve.port()));
  auto anonymous = http.Get("/api/stats");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  CHECK(anonymous->get_header_value("WWW-Authenticate").rfind("Basic", 0) == 0);
  CHECK(http.Get("/")->status == 401);
  http.set_basic_auth("alice", "wrong");
  CHECK(http.Get("/api/stats")->status == 401);
  http.set_basic_auth("bob", "correct horse");
  CHECK(http.Get("/api/stats")->status == 401);
  http.set_basic_auth("alice", "correct horse");
  CHECK(http.Get("/api/stats")->status == 200);
  CHECK(http.Get("/")->status == 200);
  CHECK(parse(http.Get("/api/session")->body).at("user") == "alice");
  httplib::Client bearer("http://127.0.0.1:" + std::to_string(serve.port()));
  bearer.set_bearer_token_auth("s3cret-token");
  CHECK(bearer.Get("/api/stats")->status == 200);
  bearer.set_bearer_token_auth("guess");
  CHECK(bearer.Get("/api/stats")->status == 401);
  // The database URL's password is in no answer, error or log line.
  for (const char* path :
       {"/", "/app.js", "/api/session", "/api/stats", "/api/top", "/api/jobs", "/api/leases",
        "/api/schedules", "/api/jobs/1", "/api/jobs?status=bad", "/api/nothing"}) {
    auto res = http.Get(path);
    REQUIRE(res);
    CHECK_MESSAGE(res->body.find(kSecret) == std::string::npos, std::string(path));
  }
  CHECK(serve.stop() == 0);
  CHECK(serve.log().find("wrong credentials") != std::string::npos);
  CHECK(serve.log().find(kSecret) == std::string::npos);
  CHECK(serve.log().find("correct horse") == std::string::npos);
}

TEST_CASE("serve: a 10 MB body or 10,000 header lines are refused, and it serves on") {
  FreshDatabase fixture;
  ServeProcess serve(fixture.url(), {"--allow-writes"});
  httplib::Client http(serve.url());
  auto big =
      http.Post("/api/retry", csrf_headers(http), std::string(10 << 20, 'x'), "application/json");
  // Refused with 413, or the connection closed while the body was still coming.
  CHECK((!big || big->status == 413));
  httplib::Headers many;
  for (int i = 0; i < 10000; ++i) many.emplace("X-Filler-" + std::to_string(i), "y");
  auto headers = http.Get("/api/stats", many);
  CHECK((!headers || headers->status == 431));
  auto after = httplib::Client(serve.url()).Get("/api/stats");
  REQUIRE(after);
  CHECK(after->status == 200);
  CHECK(serve.stop() == 0);
}

TEST_CASE("serve: a client that trickles its request is cut off after --request-timeout") {
  FreshDatabase fixture;
  ServeProcess serve(fixture.url(), {"--threads", "2", "--request-timeout", "2s"});
  // More trickling clients than threads, each sending a byte every 300 ms: never silent long
  // enough for the per-read timeout (5 s), so only the whole-request deadline ends them.
  constexpr int kClients = 3;
  std::atomic<bool> stop{false};
  std::atomic<int> cut_off{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&] {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(static_cast<std::uint16_t>(serve.port()));
      inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        close(fd);
        return;
      }
      const std::string start = "GET /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
      send(fd, start.data(), start.size(), MSG_NOSIGNAL);
      // Up to 25 s of trickle: far past the deadline, and past the probe's own timeout.
      for (int tick = 0; tick < 80 && !stop; ++tick) {
        char byte = 0;
        const ssize_t got = recv(fd, &byte, 1, MSG_DONTWAIT);
        if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
            send(fd, "a", 1, MSG_NOSIGNAL) < 0) {
          ++cut_off;  // the server closed it
          break;
        }
        sleep_ms(300);
      }
      close(fd);
    });
  // The tricklers hold both threads, and one more waits its turn. The probe comes 1.5 s in:
  // a connection's deadline counts from its accept, its wait for a thread included, so a
  // probe sent at once would have to be answered within about half a second of the
  // tricklers' cut-off (the watcher looks every 500 ms), and on a loaded CI machine once
  // was not.
  sleep_ms(1500);
  httplib::Client probe(serve.url());
  probe.set_read_timeout(15, 0);
  auto res = probe.Get("/api/session");
  // Each trickler is cut off in the end (every 300 ms a check; 25 s at most each).
  CHECK(wait_until([&] { return cut_off.load() == kClients; }, 30000));
  stop = true;
  for (auto& t : clients) t.join();
  REQUIRE_MESSAGE(res, "no answer while the tricklers held the threads\n" << serve.log());
  CHECK(res->status == 200);
  CHECK(cut_off == kClients);
  CHECK(serve.stop() == 0);
}

TEST_CASE("serve: HTTPS with --tls-cert and --tls-key") {
  FreshDatabase fixture;
  TempDir dir;
  const std::string cert = dir.path() + "/cert.pem", key = dir.path() + "/key.pem";
  RunResult made =
      run_process({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                   "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"});
  REQUIRE_MESSAGE(made.exit_code == 0, dump(made));
  ServeProcess serve(fixture.url(), {"--tls-cert", cert, "--tls-key", key});
  CHECK(serve.url().rfind("https://", 0) == 0);
  httplib::SSLClient https("127.0.0.1", serve.port());
  https.enable_server_certificate_verification(false);
  auto res = https.Get("/api/session");
  REQUIRE(res);
  CHECK(res->status == 200);
  // Plain HTTP to the HTTPS port gets no answer.
  CHECK_FALSE(
      httplib::Client("http://127.0.0.1:" + std::to_string(serve.port())).Get("/api/session"));
  CHECK(serve.stop() == 0);
}

TEST_CASE("slow: serve load: 200 clients for 30 s leave it answering, in bounded memory" *
          doctest::skip(!is_postgresql())) {
  FreshDatabase fixture;
  for (int i = 0; i < 20; ++i) ok(fixture.url(), {"enqueue", "load_q", "{}"});
  ServeProcess serve(fixture.url());
  std::atomic<bool> stop{false};
  std::atomic<long> answered{0}, failed{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 200; ++i)
    clients.emplace_back([&] {
      httplib::Client http(serve.url());
      http.set_read_timeout(20, 0);
      while (!stop) {
        auto res = http.Get(i_path(answered.load()));
        (res && res->status == 200 ? answered : failed)++;
      }
    });
  long peak_kb = 0;
  int probes_ok = 0;
  for (int second = 0; second < 30; ++second) {
    sleep_ms(1000);
    peak_kb = std::max(peak_kb, rss_kb(serve.pid()));
    if (second % 5 == 4) {
      httplib::Client probe(serve.url());
      probe.set_read_timeout(20, 0);
      auto res = probe.Get("/api/session");
      if (res && res->status == 200) ++probes_ok;
    }
  }
  stop = true;
  for (auto& t : clients) t.join();
  INFO("answered " << answered.load() << ", failed " << failed.load() << ", peak RSS " << peak_kb
                   << " kB");
  CHECK(probes_ok == 6);
  CHECK(answered > 1000);
  CHECK(peak_kb < 256 * 1024);
  auto after = httplib::Client(serve.url()).Get("/api/stats");
  REQUIRE(after);
  CHECK(after->status == 200);
  CHECK(serve.stop() == 0);
}

}  // namespace queuectl::testing::cli
