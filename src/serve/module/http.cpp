// queuectl-http.so: the HTTP server of `queuectl serve` (Debian's cpp-httplib) and the
// crypt(3) password checks (libcrypt), behind src/serve/http_module.hpp. Nothing here knows
// about jobs: requests go to the handler `serve` was given, answers come back as they are.
#include <crypt.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

#include <httplib.h>

#include "serve/http_module.hpp"

namespace queuectl {
namespace {

// The server serve() runs, for stop() from another thread; the mutex keeps stop() from
// reaching a server that serve() is destroying.
std::mutex g_mutex;
httplib::Server* g_server = nullptr;
bool g_stop_requested = false;

// Publishes `server` (nullptr: none); false when a stop came first.
bool publish(httplib::Server* server) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_server = server;
  return !g_stop_requested;
}

HttpRequest to_request(const httplib::Request& req) {
  HttpRequest out;
  out.method = req.method;
  out.path = req.path;
  for (const auto& [k, v] : req.params) out.query.emplace_back(k, v);
  for (const auto& [k, v] : req.headers) out.headers.emplace_back(k, v);
  out.body = req.body;
  out.remote_addr = req.remote_addr;
  return out;
}

void fill(httplib::Response& res, const HttpResponse& out) {
  res.status = out.status;
  for (const auto& [k, v] : out.headers) res.set_header(k, v);
  res.set_content(out.body, out.content_type.c_str());
}

std::string serve(const HttpServerConfig& config, const HttpHandler& handler,
                  const std::function<void(int port)>& listening) {
  std::unique_ptr<httplib::Server> server;
  if (!config.tls_cert.empty()) {
    auto tls =
        std::make_unique<httplib::SSLServer>(config.tls_cert.c_str(), config.tls_key.c_str());
    if (!tls->is_valid())
      return "cannot use --tls-cert " + config.tls_cert + " with --tls-key " + config.tls_key +
             ": not a readable PEM certificate and its private key";
    server = std::move(tls);
  } else {
    server = std::make_unique<httplib::Server>();
  }
  const int threads = config.threads;
  server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server->set_payload_max_length(config.max_body);
  server->set_read_timeout(config.timeout_seconds, 0);
  server->set_write_timeout(config.timeout_seconds, 0);
  // A kept-alive connection holds a thread while it idles: give it back soon.
  server->set_keep_alive_timeout(1);
  server->set_keep_alive_max_count(100);
  const std::size_t max_headers = config.max_headers;
  server->set_pre_routing_handler(
      [max_headers](const httplib::Request& req, httplib::Response& res) {
        if (req.headers.size() <= max_headers) return httplib::Server::HandlerResponse::Unhandled;
        res.status = 431;
        res.set_content(
            "{\"error\": \"too many header lines (at most " + std::to_string(max_headers) + ")\"}",
            "application/json");
        return httplib::Server::HandlerResponse::Handled;
      });
  auto route = [&handler](const httplib::Request& req, httplib::Response& res) {
    HttpResponse out;
    handler(to_request(req), out);
    fill(res, out);
  };
  server->Get(".*", route);
  server->Post(".*", route);
  server->Put(".*", route);
  server->Delete(".*", route);
  server->Patch(".*", route);
  server->Options(".*", route);
  // httplib's own answers (413, 400 for a malformed request) get a JSON body as well.
  server->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string reason = res.status == 413 ? "request body too large" : "bad request";
    res.set_content("{\"error\": \"" + reason + "\"}", "application/json");
  });
  if (!publish(server.get())) return "";
  struct Unpublish {
    ~Unpublish() { publish(nullptr); }
  } unpublish;
  int port = config.port;
  if (port == 0) {
    port = server->bind_to_any_port(config.host);
    if (port < 0) return "cannot listen on " + config.host + ": " + std::strerror(errno);
  } else if (!server->bind_to_port(config.host, port)) {
    return "cannot listen on " + config.host + ":" + std::to_string(port) + ": " +
           std::strerror(errno) + " (in use? pick another with --listen)";
  }
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_stop_requested) return "";
  }
  listening(port);
  const bool served = server->listen_after_bind();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!served && !g_stop_requested)
    return std::string("the server stopped accepting connections: ") + std::strerror(errno);
  return "";
}

// Asks serve() to end. A stop before the server listens is remembered (serve() returns at
// its next step), and one while it starts to listen may be missed by the library: the
// caller repeats it until serve() has returned.
void stop() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_stop_requested = true;
  if (g_server) g_server->stop();
}

bool verify_password(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* got = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!got || got[0] == '*' || std::strlen(got) != hash.size()) return false;
  // Compared in constant time: how far a guess matched must not show in the answer's time.
  unsigned char diff = 0;
  for (std::size_t i = 0; i < hash.size(); ++i)
    diff |= static_cast<unsigned char>(got[i] ^ hash[i]);
  return diff == 0;
}

std::string hash_password(const std::string& password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (!crypt_gensalt_rn("$2b$", 12, nullptr, 0, salt, sizeof salt)) return "";
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* got = crypt_r(password.c_str(), salt, data.get());
  if (!got || got[0] == '*') return "";
  return got;
}

const HttpModule kModule{serve, stop, verify_password, hash_password};

}  // namespace
}  // namespace queuectl

extern "C" const queuectl::HttpModule* queuectl_http_module() {
  return &queuectl::kModule;
}
