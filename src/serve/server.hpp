// `queuectl serve`: the web view's server. Requests become queuectl commands (serve/api)
// run in process on a connection of the thread's own, so the page and the JSON API answer
// exactly what the command line prints.
#pragma once

#include <string>

#include "cli/context.hpp"
#include "serve/auth.hpp"
#include "serve/http_module.hpp"

namespace queuectl {

struct ServeOptions {
  HttpServerConfig http;
  bool allow_writes = false;
  bool read_only = false;
  std::string auth_file;
  int refresh_ms = 2000;
};

// Splits "HOST:PORT" ("[::1]:8080" for IPv6); throws UsageError.
void parse_listen(const std::string& text, HttpServerConfig& config);
// Whether `host` is a loopback address (127.0.0.0/8, ::1), parsed as an address (not
// "127.0.0.1.example.com"); with `names`, the name localhost too.
bool is_loopback(const std::string& host, bool names = false);

// Serves until SIGINT or SIGTERM; returns normally then. Throws UsageError for options
// that cannot work together, Error when the server cannot start.
void run_serve(Context& ctx, const ServeOptions& options);

}  // namespace queuectl
