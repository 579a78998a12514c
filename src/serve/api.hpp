// The JSON API of `queuectl serve` as command lines: each route is a queuectl command with
// -o json, so that /api/stats answers what `queuectl stats -o json` prints and a retry
// from the page goes through the same code, checks and report as `queuectl retry`.
// Pure: no database, no sockets (tests/unit/test_serve_api.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "serve/http_module.hpp"

namespace queuectl {

struct ApiCall {
  std::vector<std::string> args;  // the command line after `queuectl`, -o json first
  bool writes = false;            // a POST that changes jobs or queues
  // `list`: the page size asked for, so that a full page can say where the next starts.
  int page_limit = 0;
};

// The command for `req`, or nullopt when no route has its path (404). A known path with
// the wrong method throws MethodNotAllowed; an unknown parameter, a body that is not a
// JSON object or a value of the wrong type throws UsageError (400). Values go into the
// command line as separate words, `--name=value` or after `--`, so none is read as an
// option; the command then checks them as it checks a shell's.
std::optional<ApiCall> api_call(const HttpRequest& req);

// Whether `path` is a route that writes (POST /api/retry, ...): a server without writes
// refuses it (403) before reading its body.
bool is_write_route(const std::string& path);

struct MethodNotAllowed {
  std::string allowed;  // "GET" or "POST"
};

// The HTTP status for a command's exit code (2 -> 400, 4 -> 404, 3 and 5 -> 409,
// 75 -> 503, any other failure -> 500).
int status_for_exit(int code);

}  // namespace queuectl
