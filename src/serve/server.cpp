#include "serve/server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/app.hpp"
#include "core/display_text.hpp"
#include "core/errors.hpp"
#include "core/signal_scope.hpp"
#include "db/driver.hpp"
#include "db/migrations.hpp"
#include "serve/api.hpp"
#include "serve/web_assets.hpp"

namespace queuectl {
namespace {

using json = nlohmann::json;

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0) throw Error("cannot read random bytes for the CSRF token");
    got += static_cast<std::size_t>(n);
  }
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool same_text(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string error_body(const std::string& message) {
  return json{{"error", message}}.dump(2) + "\n";
}

// The host part of a Host header's value ("[::1]:8080" -> "::1", "localhost:80" ->
// "localhost").
std::string host_of(const std::string& value) {
  if (!value.empty() && value.front() == '[') return value.substr(1, value.find(']') - 1);
  return value.substr(0, value.find(':'));
}

// A command's error line (the last "queuectl: error: " line), without those words.
std::string error_line(const std::string& err) {
  const std::string prefix = "queuectl: error: ";
  std::string line;
  std::istringstream lines(err);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind(prefix, 0) == 0) line = l.substr(prefix.size());
  return line.empty() ? "the command failed" : line;
}

class Server {
 public:
  Server(Context& ctx, const ServeOptions& options, DbUrl url, std::optional<AuthFile> auth,
         bool writes, std::string read_only_reason)
      : ctx_(ctx),
        options_(options),
        url_(std::move(url)),
        auth_(std::move(auth)),
        writes_(writes),
        read_only_reason_(std::move(read_only_reason)),
        csrf_(random_hex(32)),
        module_(http_module()) {}

  void handle(const HttpRequest& req, HttpResponse& res) {
    res.headers = {{"Cache-Control", "no-store"},
                   {"X-Content-Type-Options", "nosniff"},
                   {"X-Frame-Options", "DENY"},
                   {"Referrer-Policy", "no-referrer"},
                   {"Content-Security-Policy",
                    "default-src 'self'; frame-ancestors 'none'; form-action 'none'"}};
    try {
      route(req, res);
    } catch (const UsageError& e) {
      reply_error(res, 400, e.what());
    } catch (const TemporaryError& e) {
      reply_error(res, 503, e.what());
    } catch (const std::exception& e) {
      reply_error(res, 500, e.what());
    }
  }

 private:
  static void reply_error(HttpResponse& res, int status, const std::string& message) {
    res.status = status;
    res.content_type = "application/json";
    res.body = error_body(visible_text(message));
  }

  void route(const HttpRequest& req, HttpResponse& res) {
    // Without --auth-file the server is on loopback only; a page on another site must not
    // reach it through a name that resolves to 127.0.0.1 (DNS rebinding).
    if (!auth_ && !is_loopback(host_of(req.header("Host")), true))
      return reply_error(res, 403, "the Host header must name this machine's loopback address");
    std::string user = "-";
    if (auth_ && !authorized(req, res, user)) return;
    if (req.path.rfind("/api/", 0) != 0) return serve_asset(req, res);
    if (req.path == "/api/session") return session(req, res, user);
    if (req.method == "POST" && is_write_route(req.path) && !write_allowed(req, res)) return;
    std::optional<ApiCall> call;
    try {
      call = api_call(req);
    } catch (const MethodNotAllowed& e) {
      res.headers.emplace_back("Allow", e.allowed);
      return reply_error(res, 405, req.method + " " + req.path + ": use " + e.allowed);
    }
    if (!call) return reply_error(res, 404, "no such route: " + req.path);
    run(*call, req, res, user);
  }

  bool authorized(const HttpRequest& req, HttpResponse& res, std::string& user) {
    const std::string header = req.header("Authorization");
    std::optional<std::string> who = header.empty() ? std::nullopt : cache_.find(header);
    if (!who && !header.empty()) {
      who = auth_->check(header, module_.verify_password);
      if (who) cache_.remember(header, *who);
    }
    if (who) {
      user = *who;
      return true;
    }
    if (!header.empty())
      ctx_.say("queuectl serve: " + visible_text(req.remote_addr) + ": wrong credentials");
    res.headers.emplace_back("WWW-Authenticate", "Basic realm=\"queuectl\", charset=\"UTF-8\"");
    reply_error(res, 401, "sign in: this server needs a user from its --auth-file");
    return false;
  }

  bool write_allowed(const HttpRequest& req, HttpResponse& res) {
    if (!writes_) {
      reply_error(res, 403, "writes are off: " + read_only_reason_);
      return false;
    }
    if (!same_text(req.header("X-CSRF-Token"), csrf_)) {
      reply_error(res, 403, "missing or wrong X-CSRF-Token: read it from /api/session");
      return false;
    }
    // The page's origin is this server's: its scheme, and the host and port the browser
    // asked for (Host, or X-Forwarded-Host from a reverse proxy in front).
    const std::string origin = req.header("Origin");
    std::string asked = req.header("X-Forwarded-Host");
    if (asked.empty()) asked = req.header("Host");
    const std::string scheme = req.header("X-Forwarded-Proto").empty()
                                   ? (options_.http.tls_cert.empty() ? "http" : "https")
                                   : req.header("X-Forwarded-Proto");
    if (!origin.empty() && origin != scheme + "://" + asked) {
      reply_error(res, 403, "a write from another origin (" + origin + ") is refused");
      return false;
    }
    if (req.header("Content-Type").rfind("application/json", 0) != 0) {
      reply_error(res, 415, "a write's body must be JSON (Content-Type: application/json)");
      return false;
    }
    return true;
  }

  void serve_asset(const HttpRequest& req, HttpResponse& res) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.headers.emplace_back("Allow", "GET");
      return reply_error(res, 405, "the page is read with GET");
    }
    if (req.path == "/favicon.ico") {  // asked by every browser; the page has none
      res.status = 204;
      return;
    }
    const WebAsset* asset = web_asset(req.path);
    if (!asset) return reply_error(res, 404, "no such page: " + req.path);
    res.content_type = asset->content_type;
    res.body = std::string(asset->body);
  }

  void session(const HttpRequest& req, HttpResponse& res, const std::string& user) {
    if (req.method != "GET" && req.method != "HEAD") {
      res.headers.emplace_back("Allow", "GET");
      return reply_error(res, 405, "/api/session is read with GET");
    }
    json doc{{"version", QUEUECTL_VERSION},
             {"writes", writes_},
             {"read_only_reason", writes_ ? json(nullptr) : json(read_only_reason_)},
             {"user", user == "-" ? json(nullptr) : json(user)},
             {"csrf_token", csrf_},
             {"refresh_ms", options_.refresh_ms},
             {"backend", backend_name(url_.backend)}};
    res.body = doc.dump(2) + "\n";
  }

  void run(const ApiCall& call, const HttpRequest& req, HttpResponse& res,
           const std::string& user) {
    std::ostringstream out, err;
    int code = 0;
    thread_local std::unique_ptr<Database> db;  // this thread's connection, kept
    // A read whose connection was lost (a server restart, an idle timeout) is tried once
    // more on a new one; a write is not, since it may have committed.
    for (int attempt = 0; attempt < (call.writes ? 1 : 2); ++attempt) {
      out.str("");
      err.str("");
      try {
        // Read access: a write on a standby (after a failover) fails at its statement,
        // while the reads go on.
        if (!db) db = std::make_unique<Database>(url_, CreateFile::no, Access::read);
      } catch (const Error& e) {
        code = static_cast<int>(ExitCode::temporary);
        err << "queuectl: error: " << e.what() << "\n";
        continue;
      }
      code = run_cli_on(*db, call.args, out, err);
      if (code != static_cast<int>(ExitCode::temporary)) break;
      db.reset();  // may be broken: the next request (or attempt) opens a fresh one
    }
    if (call.writes) {
      std::string line;
      for (std::size_t i = 2; i < call.args.size(); ++i)  // without -o json
        line += " " + visible_text(call.args[i]);
      ctx_.say("queuectl serve: " + visible_text(user) + " " + visible_text(req.remote_addr) + ":" +
               line + " -> exit " + std::to_string(code));
    }
    res.status = status_for_exit(code);
    std::string body = std::move(out).str();
    if (code == 0) {
      if (call.page_limit > 0) {
        const json page = json::parse(body, nullptr, false);
        if (page.is_array() && static_cast<int>(page.size()) == call.page_limit && !page.empty())
          res.headers.emplace_back("X-Queuectl-Next", page.back().at("id").dump());
      }
      res.body = body.empty() ? "{}\n" : std::move(body);
      return;
    }
    json doc = json::parse(body, nullptr, false);
    // A report on stdout with exit 1 (`retry` of a job that is not failed): the request
    // was understood and the jobs were not in a state for it, as with 409's lease lost.
    if (code == 1 && doc.is_object()) res.status = 409;
    if (!doc.is_object()) doc = json::object();
    doc["error"] = visible_text(error_line(err.str()));
    res.body = doc.dump(2) + "\n";
  }

  Context& ctx_;
  const ServeOptions& options_;
  DbUrl url_;
  std::optional<AuthFile> auth_;
  bool writes_;
  std::string read_only_reason_;
  std::string csrf_;
  const HttpModule& module_;
  AuthCache cache_;
};

}  // namespace

void parse_listen(const std::string& text, HttpServerConfig& config) {
  std::string host, port;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find("]:");
    if (close == std::string::npos) throw UsageError("--listen '" + text + "': not [HOST]:PORT");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon)
      throw UsageError("--listen '" + text + "': not HOST:PORT (e.g. 127.0.0.1:8080)");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) throw UsageError("--listen '" + text + "': no host (e.g. 127.0.0.1:8080)");
  int value = -1;
  if (!port.empty() && port.size() <= 5 &&
      port.find_first_not_of("0123456789") == std::string::npos)
    value = std::stoi(port);
  if (value < 0 || value > 65535)
    throw UsageError("--listen '" + text + "': the port must be 0 to 65535");
  config.host = host;
  config.port = value;
}

bool is_loopback(const std::string& host, bool names) {
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1)
    return (ntohl(v4.s_addr) >> 24) == 127;  // 127.0.0.0/8
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  // A name: only localhost, which resolvers keep on loopback (RFC 6761), where the caller
  // takes names (a Host header, --listen localhost:8080).
  return names && host == "localhost";
}

const HttpModule& http_module() {
  static const HttpModule* module =
      static_cast<const HttpModule*>(load_driver("http", "queuectl_http_module", "HTTP server"));
  return *module;
}

void run_serve(Context& ctx, const ServeOptions& options) {
  const HttpServerConfig& http = options.http;
  if (!is_loopback(http.host, true) && options.auth_file.empty())
    throw UsageError("--listen " + http.host +
                     " is not a loopback address: anyone who reaches it could read the jobs; "
                     "give --auth-file (and TLS with --tls-cert/--tls-key, or a reverse proxy)");
  if (http.tls_cert.empty() != http.tls_key.empty())
    throw UsageError("--tls-cert and --tls-key go together: give both");
  // A file that cannot be opened is bad input, said before anything starts (whether it holds
  // a certificate is for the TLS library to say).
  for (const auto& [option, path] :
       {std::pair<const char*, const std::string&>{"--tls-cert", http.tls_cert},
        {"--tls-key", http.tls_key}})
    if (!path.empty() && !std::ifstream(path))
      throw UsageError(std::string("cannot read ") + option + " " + path + ": " +
                       std::strerror(errno));
  if (options.read_only && options.allow_writes)
    throw UsageError("--read-only and --allow-writes exclude each other: give one");
  std::optional<AuthFile> auth;
  if (!options.auth_file.empty()) auth = AuthFile::load(options.auth_file);
  const DbUrl url = ctx.url();
  // The module first: a missing library is said before the database is touched.
  const HttpModule& module = http_module();
  std::string reason =
      options.read_only ? "started with --read-only" : "started without --allow-writes";
  bool writes = false;
  {
    Database probe(url, CreateFile::no, Access::read);
    Migrator(probe).require_current();
    if (options.allow_writes) {
      try {
        probe.dialect().check_engine(probe.session(), true);
        writes = true;
      } catch (const UsageError&) {
        reason = "the database is a standby (read-only)";
        ctx.note("queuectl serve: the database is a standby: writes are off");
      }
    }
  }
  Server server(ctx, options, url, std::move(auth), writes, reason);
  SignalScope signals({SIGINT, SIGTERM, SIGHUP}, {SIGPIPE});
  std::atomic<bool> served{false};
  // Waits for a stop signal, then asks the server to stop until it has: a signal that
  // comes while it starts to listen would otherwise be lost.
  std::thread watcher([&signals, &module, &served] {
    pollfd p{signals.fd(), POLLIN, 0};
    while (!served && poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    while (!served) {
      module.stop();
      poll(&p, 1, 100);
      signals.take();
    }
  });
  const std::string scheme = http.tls_cert.empty() ? "http" : "https";
  const std::string host =
      http.host.find(':') == std::string::npos ? http.host : "[" + http.host + "]";
  std::string failure;
  try {
    failure = module.serve(
        http, [&server](const HttpRequest& req, HttpResponse& res) { server.handle(req, res); },
        [&](int port) {
          ctx.say("queuectl serve: listening on " + scheme + "://" + host + ":" +
                  std::to_string(port) + "/ (" +
                  (writes ? std::string("writes allowed") : "read-only: " + reason) + ")");
        });
  } catch (...) {
    served = true;
    signals.wake();
    watcher.join();
    throw;
  }
  served = true;
  signals.wake();
  watcher.join();
  if (!failure.empty()) throw Error(failure);
}

}  // namespace queuectl
