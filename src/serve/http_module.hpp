// The HTTP server of `queuectl serve`, behind a small interface of our own. Its code
// (src/serve/module/http.cpp) is a module, queuectl-http.so, loaded by `serve` alone, like
// the database drivers: Debian's cpp-httplib brings OpenSSL, zlib and brotli with it, and
// mapping those at every start would cost each short command about 2 ms for a server it
// never runs. The module also holds the crypt(3) calls of the password checks (libcrypt).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace queuectl {

struct HttpRequest {
  std::string method;
  std::string path;
  // Query parameters in the order given, each decoded; a name may repeat.
  std::vector<std::pair<std::string, std::string>> query;
  // Header names as sent (compare without case: header()).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string remote_addr;

  // The first value of header `name` (any case), or "" when absent.
  std::string header(const std::string& name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 8;                   // requests served at once; the rest wait their turn
  std::size_t max_body = 64 * 1024;  // a larger request body: 413
  std::size_t max_headers = 100;     // more header lines: 431
  int timeout_seconds = 5;           // a client silent this long while sending or reading: closed
  // A connection that takes longer than this to send a request, or to read an answer and
  // send the next, is closed however steadily it trickles (time spent in the handler is
  // not counted).
  int request_timeout_ms = 30000;
  std::string tls_cert, tls_key;  // both set: HTTPS
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

struct HttpModule {
  // Binds, calls `listening` with the port bound (the one chosen when config.port is 0), then
  // serves until stop(); returns "" after a stop, else why it could not start.
  std::string (*serve)(const HttpServerConfig& config, const HttpHandler& handler,
                       const std::function<void(int port)>& listening);
  // Ends serve() from any thread (a signal watcher): in-flight requests finish first.
  void (*stop)();
  // Whether `password` matches a crypt(3) `hash` (bcrypt $2b$/$2y$, yescrypt $y$,
  // sha512-crypt $6$); false for a hash libcrypt cannot read.
  bool (*verify_password)(const std::string& password, const std::string& hash);
  // A new bcrypt hash of `password` ($2b$, cost 12), or "" when libcrypt fails.
  std::string (*hash_password)(const std::string& password);
};

// Loads queuectl-http.so (once; thread-safe). Throws Error naming what is missing.
const HttpModule& http_module();

}  // namespace queuectl
