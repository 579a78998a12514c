#include "serve/api.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "core/errors.hpp"

namespace queuectl {
namespace {

using json = nlohmann::json;

constexpr int kMaxPage = 1000;

// A value as the command line gets it: never empty (CLI11 would take the next word as the
// value of `--name=`) and without control characters (a NUL would cut it short in argv).
const std::string& checked_value(const std::string& value, const std::string& what) {
  if (value.empty()) throw UsageError(what + " is empty");
  for (unsigned char c : value)
    if (c < 0x20 || c == 0x7f) throw UsageError(what + " holds a control character");
  return value;
}

// A page size: digits only (CLI11 would read 0x10 as 16), at most kMaxPage, so that an
// answer stays bounded.
int page_size(const std::string& value, const std::string& what) {
  if (value.empty() || value.size() > 7 ||
      value.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(what + " '" + value + "' is not a whole number");
  const int n = std::stoi(value);
  if (n > kMaxPage)
    throw UsageError(what + " " + value + " is over " + std::to_string(kMaxPage) +
                     ": page with after= (or before=)");
  return n;
}

// A GET's query parameters: each name allowed once, and only those the route takes.
class Query {
 public:
  Query(const HttpRequest& req, const std::string& route, std::vector<std::string> allowed,
        bool repeat_first = false) {
    for (const auto& [name, value] : req.query) {
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        throw UsageError("unknown parameter '" + name + "' for " + route +
                         (list.empty() ? " (it takes none)" : " (it takes " + list + ")"));
      }
      if (values_.count(name) && !(repeat_first && name == allowed.front()))
        throw UsageError("parameter '" + name + "' given twice for " + route);
      values_.emplace(name, checked_value(value, "parameter '" + name + "' of " + route));
    }
  }
  // --name=value for each given value of a valued parameter.
  void option(std::vector<std::string>& args, const std::string& name,
              const std::string& flag) const {
    auto [from, to] = values_.equal_range(name);
    for (auto it = from; it != to; ++it) args.push_back(flag + "=" + it->second);
  }
  // A yes/no parameter: 1/true/yes or 0/false/no.
  bool flag(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return false;
    const std::string& v = it->second;
    if (v == "1" || v == "true" || v == "yes" || v.empty()) return true;
    if (v == "0" || v == "false" || v == "no") return false;
    throw UsageError("parameter '" + name + "': '" + v + "' is not 1 or 0");
  }
  std::vector<std::string> all(const std::string& name) const {
    std::vector<std::string> out;
    auto [from, to] = values_.equal_range(name);
    for (auto it = from; it != to; ++it) out.push_back(it->second);
    return out;
  }
  const std::string* get(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }

 private:
  std::multimap<std::string, std::string> values_;
};

// A POST's JSON object body: only the keys the route takes, each of the right type.
class Body {
 public:
  Body(const HttpRequest& req, const std::string& route, std::vector<std::string> allowed)
      : route_(route) {
    try {
      doc_ = json::parse(req.body.empty() ? "{}" : req.body);
    } catch (const json::exception&) {
      throw UsageError("the body of POST " + route + " is not JSON");
    }
    if (!doc_.is_object()) throw UsageError("the body of POST " + route + " is not an object");
    for (const auto& item : doc_.items())
      if (std::find(allowed.begin(), allowed.end(), item.key()) == allowed.end()) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        throw UsageError("unknown key '" + item.key() + "' for POST " + route + " (it takes " +
                         list + ")");
      }
  }
  bool has(const std::string& key) const { return doc_.contains(key); }
  // A text or a whole number, as text.
  std::string text(const std::string& key) const {
    const json& v = doc_.at(key);
    if (v.is_string())
      return checked_value(v.get<std::string>(), "'" + key + "' for POST " + route_);
    if (v.is_number_integer()) return v.dump();
    throw UsageError("'" + key + "' for POST " + route_ + " must be a string or a number");
  }
  void option(std::vector<std::string>& args, const std::string& key,
              const std::string& flag) const {
    if (has(key)) args.push_back(flag + "=" + text(key));
  }
  bool flag(const std::string& key) const {
    if (!has(key)) return false;
    const json& v = doc_.at(key);
    if (!v.is_boolean())
      throw UsageError("'" + key + "' for POST " + route_ + " must be true or false");
    return v.get<bool>();
  }
  std::vector<std::string> ids() const {
    std::vector<std::string> out;
    if (!has("ids")) return out;
    const json& v = doc_.at("ids");
    if (!v.is_array()) throw UsageError("'ids' for POST " + route_ + " must be a list of job ids");
    for (const json& id : v) {
      if (id.is_number_unsigned())
        out.push_back(id.dump());
      else if (id.is_string())
        out.push_back(checked_value(id.get<std::string>(), "a job id for POST " + route_));
      else
        throw UsageError("'ids' for POST " + route_ + " must hold job ids (" + id.dump() + ")");
    }
    if (out.empty()) throw UsageError("'ids' for POST " + route_ + " is empty");
    return out;
  }

 private:
  std::string route_;
  json doc_;
};

std::vector<std::string> command(std::initializer_list<std::string> words) {
  std::vector<std::string> args{"-o", "json"};
  args.insert(args.end(), words);
  return args;
}

void positional(std::vector<std::string>& args, const std::vector<std::string>& values) {
  if (values.empty()) return;
  args.push_back("--");
  args.insert(args.end(), values.begin(), values.end());
}

std::optional<ApiCall> get_call(const HttpRequest& req) {
  const std::string& path = req.path;
  ApiCall call;
  if (path == "/api/stats") {
    Query q(req, path, {"queue", "exact"}, true);
    call.args = command({"stats"});
    if (q.flag("exact")) call.args.push_back("--exact");
    positional(call.args, q.all("queue"));
  } else if (path == "/api/top") {
    Query q(req, path, {"failures"});
    call.args = command({"top", "--once"});
    q.option(call.args, "failures", "--failures");
  } else if (path == "/api/jobs") {
    Query q(req, path,
            {"queue", "status", "limit", "after", "before", "newest_first", "group_key", "error"});
    call.args = command({"list"});
    q.option(call.args, "status", "--status");
    q.option(call.args, "group_key", "--group-key");
    q.option(call.args, "error", "--error");
    if (const std::string* limit = q.get("limit"))
      call.args.push_back("--limit=" + std::to_string(page_size(*limit, "limit for /api/jobs")));
    q.option(call.args, "after", "--after");
    q.option(call.args, "before", "--before");
    if (q.flag("newest_first")) call.args.push_back("--newest-first");
    call.page_limit = 100;  // list's default
    if (const std::string* limit = q.get("limit"))
      call.page_limit = page_size(*limit, "limit for /api/jobs");
    positional(call.args, q.all("queue"));
  } else if (path.rfind("/api/jobs/", 0) == 0 && path.find('/', 10) == std::string::npos) {
    Query q(req, "/api/jobs/ID", {});
    call.args = command({"show"});
    // Checked as a query value is: a decoded NUL would end the id early in argv.
    positional(call.args, {checked_value(path.substr(10), "the job id of /api/jobs/ID")});
  } else if (path == "/api/leases") {
    Query q(req, path, {"expired", "unleased", "expiring_within", "older_than", "worker", "limit"});
    call.args = command({"leases"});
    if (q.flag("expired")) call.args.push_back("--expired");
    if (q.flag("unleased")) call.args.push_back("--unleased");
    q.option(call.args, "expiring_within", "--expiring-within");
    q.option(call.args, "older_than", "--older-than");
    q.option(call.args, "worker", "--worker");
    if (const std::string* limit = q.get("limit"))
      call.args.push_back("--limit=" + std::to_string(page_size(*limit, "limit for /api/leases")));
  } else if (path == "/api/groups") {
    Query q(req, path, {"queue", "blocked", "limit"});
    const std::string* queue = q.get("queue");
    if (!queue) throw UsageError("/api/groups needs ?queue=QUEUE");
    call.args = command({"groups"});
    if (q.flag("blocked")) call.args.push_back("--blocked");
    if (const std::string* limit = q.get("limit"))
      call.args.push_back("--limit=" + std::to_string(page_size(*limit, "limit for /api/groups")));
    positional(call.args, {*queue});
  } else if (path == "/api/schedules") {
    Query q(req, path, {});
    call.args = command({"cron", "list"});
  } else {
    return std::nullopt;
  }
  return call;
}

std::optional<ApiCall> post_call(const HttpRequest& req) {
  const std::string& path = req.path;
  ApiCall call;
  call.writes = true;
  if (path == "/api/retry") {
    Body b(req, path, {"ids", "queue", "status", "older_than", "group_key", "error"});
    call.args = command({"retry"});
    b.option(call.args, "queue", "--queue");
    b.option(call.args, "status", "--status");
    b.option(call.args, "older_than", "--older-than");
    b.option(call.args, "group_key", "--group-key");
    b.option(call.args, "error", "--error");
    positional(call.args, b.ids());
  } else if (path == "/api/cancel") {
    Body b(req, path, {"ids", "force", "queue", "status", "group_key", "error", "batch"});
    call.args = command({"cancel"});
    if (b.flag("force")) call.args.push_back("--force");
    b.option(call.args, "queue", "--queue");
    b.option(call.args, "status", "--status");
    b.option(call.args, "group_key", "--group-key");
    b.option(call.args, "error", "--error");
    b.option(call.args, "batch", "--batch");
    positional(call.args, b.ids());
  } else if (path == "/api/move") {
    Body b(req, path, {"from", "all", "to", "dry_run", "batch"});
    call.args = command({"move"});
    b.option(call.args, "from", "--from");
    if (b.flag("all")) call.args.push_back("--all");
    b.option(call.args, "to", "--to");
    if (b.flag("dry_run")) call.args.push_back("--dry-run");
    b.option(call.args, "batch", "--batch");
  } else if (path == "/api/pause" || path == "/api/resume") {
    Body b(req, path, {"queue"});
    if (!b.has("queue")) throw UsageError("POST " + path + " needs {\"queue\": QUEUE}");
    call.args = command({path.substr(5)});
    positional(call.args, {b.text("queue")});
  } else if (path == "/api/purge") {
    Body b(req, path, {"older_than", "status", "dry_run", "batch"});
    call.args = command({"purge"});
    b.option(call.args, "older_than", "--older-than");
    b.option(call.args, "status", "--status");
    if (b.flag("dry_run")) call.args.push_back("--dry-run");
    b.option(call.args, "batch", "--batch");
  } else {
    return std::nullopt;
  }
  return call;
}

bool is_get_route(const std::string& path) {
  static const char* const kRoutes[] = {"/api/stats",  "/api/top",    "/api/jobs",
                                        "/api/leases", "/api/groups", "/api/schedules"};
  for (const char* r : kRoutes)
    if (path == r) return true;
  // /api/jobs/ID: one more segment, as get_call takes it.
  return path.rfind("/api/jobs/", 0) == 0 && path.find('/', 10) == std::string::npos;
}

}  // namespace

std::optional<ApiCall> api_call(const HttpRequest& req) {
  const bool read = req.method == "GET" || req.method == "HEAD";
  if (read && !is_write_route(req.path)) return get_call(req);
  if (req.method == "POST" && !is_get_route(req.path)) return post_call(req);
  // A known route asked with the wrong method: 405, naming the right one.
  if (is_write_route(req.path)) throw MethodNotAllowed{"POST"};
  if (is_get_route(req.path)) throw MethodNotAllowed{"GET"};
  return std::nullopt;
}

bool is_write_route(const std::string& path) {
  static const char* const kRoutes[] = {"/api/retry", "/api/cancel", "/api/move",
                                        "/api/pause", "/api/resume", "/api/purge"};
  for (const char* r : kRoutes)
    if (path == r) return true;
  return false;
}

int status_for_exit(int code) {
  switch (code) {
    case 0:
      return 200;
    case 2:
      return 400;
    case 4:
      return 404;
    case 3:
    case 5:
      return 409;
    case 75:
      return 503;
    default:
      return 500;
  }
}

}  // namespace queuectl
