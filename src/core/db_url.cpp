#include "core/db_url.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <vector>

#include "core/db_url_params.hpp"
#include "core/errors.hpp"

namespace queuectl {
namespace {

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
          !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
        throw bad_url("bad percent-escape");
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// Quotes a value for a libpq or SOCI key=value connection string.
std::string quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

// One host[:port] or [v6]:port of the host part.
void parse_host_port(std::string_view hostport, std::string& host, int& port) {
  if (!hostport.empty() && hostport.front() == '[') {  // [::1]:5432
    auto close = hostport.find(']');
    if (close == std::string_view::npos) throw bad_url("unclosed '[' in host");
    host = std::string(hostport.substr(1, close - 1));
    hostport = hostport.substr(close + 1);
    if (!hostport.empty() && hostport.front() != ':') throw bad_url("junk after host");
  } else {
    auto colon = hostport.find(':');
    host = std::string(hostport.substr(0, colon));
    hostport = colon == std::string_view::npos ? std::string_view() : hostport.substr(colon);
  }
  if (!hostport.empty()) {
    std::string_view digits = hostport.substr(1);
    if (digits.empty() || digits.size() > 5) throw bad_url("bad port");
    for (char c : digits)
      if (!std::isdigit(static_cast<unsigned char>(c))) throw bad_url("port is not a number");
    port = std::stoi(std::string(digits));
    if (port < 1 || port > 65535) throw bad_url("port out of range");
  }
}

void parse_server_url(std::string_view rest, DbUrl& url) {
  // rest: [user[:pass]@]host[:port][/db][?k=v&k=v]. The userinfo ends at the last '@', so
  // that a password with an unescaped '/' or '?' is never mistaken for a path or query.
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    std::string_view userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
      url.user = percent_decode(userinfo.substr(0, colon));
      url.password = percent_decode(userinfo.substr(colon + 1));
    } else {
      url.user = percent_decode(userinfo);
    }
  }
  std::string_view query;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  std::string_view path;
  if (auto slash = rest.find('/'); slash != std::string_view::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  // Several hosts, comma-separated, each with its own port or none (PostgreSQL: libpq tries
  // them in turn, as target_session_attrs asks).
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(rest.find(',', start), rest.size());
    std::string host;
    int port = 0;
    parse_host_port(rest.substr(start, comma - start), host, port);
    url.hosts.emplace_back(host, port);
    if (comma == rest.size()) break;
    start = comma + 1;
  }
  if (url.hosts.size() > 1) {
    if (url.backend != Backend::postgresql)
      throw bad_url("several hosts are for postgresql:// URLs (libpq) only");
    for (const auto& [host, port] : url.hosts) {
      (void)port;
      if (host.empty()) throw bad_url("empty host in the host list");
    }
  }
  url.host = url.hosts.front().first;
  url.port = url.hosts.front().second;
  if (url.hosts.size() == 1) url.hosts.clear();
  url.database = percent_decode(path);
  if (url.database.find('/') != std::string::npos) throw bad_url("database name contains '/'");
  while (!query.empty()) {
    auto amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.empty()) continue;
    auto eq = kv.find('=');
    if (eq == 0) throw bad_url("a query parameter has no name before its '='");
    if (eq == std::string_view::npos)
      throw bad_url("query parameter '" + std::string(kv) + "' needs a value");
    // The last of two would win unseen (sslmode=require&sslmode=disable): refused, the value
    // never shown (it may be a password).
    const std::string key = percent_decode(kv.substr(0, eq));
    if (url.params.count(key))
      throw bad_url("query parameter '" + key + "' is given twice: give it once");
    url.params[key] = percent_decode(kv.substr(eq + 1));
  }
}

// sqlite:PATH, sqlite:///ABSOLUTE, sqlite::memory:, each with an optional ?mode=ro|rw.
// `rest` is what follows "sqlite:".
void parse_sqlite_url(std::string_view rest, DbUrl& url) {
  url.backend = Backend::sqlite;
  std::string_view query;
  bool has_query = false;
  if (auto q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    has_query = true;
  }
  if (rest.substr(0, 2) == "//") {  // sqlite:///abs -> /abs: the host part must be empty
    rest = rest.substr(2);
    if (!rest.empty() && rest.front() != '/') {
      const std::string path(rest);
      const std::string host = path.substr(0, path.find('/'));
      // `sqlite://user:password@host/...` is a server URL with the wrong scheme: name it
      // without the password (everything before the @ is left out).
      if (const std::size_t at = host.rfind('@'); at != std::string::npos)
        throw bad_url("sqlite://***@" + path.substr(at + 1) +
                      " names a user and a host, but SQLite opens a file: write "
                      "sqlite:///ABSOLUTE/PATH.db or sqlite:RELATIVE/PATH.db, or a server's "
                      "postgresql:// or mysql:// URL");
      throw bad_url("sqlite://" + path + " names a host ('" + host +
                    "'); for a file write sqlite:///" + path + " (the absolute path /" + path +
                    ") or sqlite:" + path + " (relative to the current folder)");
    }
  }
  if (rest.empty()) throw bad_url("sqlite: needs a file path or :memory:");
  url.database = std::string(rest);
  if (has_query && query.empty()) throw bad_url("'?' after the SQLite path without a parameter");
  while (has_query && !query.empty()) {
    auto amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (kv.empty()) continue;
    auto eq = kv.find('=');
    const std::string key(kv.substr(0, eq));
    if (key != "mode")
      throw bad_url("unknown query parameter '" + key +
                    "' for an SQLite file (known: mode=ro or mode=rw; a path cannot contain '?')");
    if (eq == std::string_view::npos) throw bad_url("query parameter 'mode' needs a value");
    const std::string value(kv.substr(eq + 1));
    if (value != "ro" && value != "rw")
      throw bad_url(
          "query parameter 'mode' must be ro (read-only) or rw (read-write, never "
          "create the file), not '" +
          value + "'");
    if (url.params.count(key)) throw bad_url("query parameter 'mode' is given twice: give it once");
    url.params[key] = value;
  }
}

}  // namespace

std::string_view backend_name(Backend b) {
  switch (b) {
    case Backend::sqlite:
      return "sqlite";
    case Backend::postgresql:
      return "postgresql";
    case Backend::mysql:
      return "mysql";
  }
  return "?";
}

DbUrl DbUrl::parse(std::string_view text) {
  DbUrl url;
  url.original = std::string(text);
  auto starts = [&](std::string_view p) { return text.substr(0, p.size()) == p; };
  if (starts("sqlite:")) {
    parse_sqlite_url(text.substr(7), url);
    return url;
  }
  std::string_view rest;
  if (starts("postgresql://") || starts("postgres://")) {
    url.backend = Backend::postgresql;
    rest = text.substr(text.find("://") + 3);
  } else if (starts("mysql://") || starts("mariadb://")) {
    url.backend = Backend::mysql;
    rest = text.substr(text.find("://") + 3);
  } else {
    throw bad_url(
        "unknown scheme: expected postgresql://, postgres://, mysql://, mariadb:// or sqlite:");
  }
  parse_server_url(rest, url);
  // Only parameters the driver understands: a typo must not reach it as a connection
  // error that looks temporary.
  // PostgreSQL: every keyword libpq knows, except those the URL itself carries (user, port
  // and dbname: two places for one setting, and which one wins is libpq's accident) and
  // replication (queuectl is not a replication client).
  // (Asked of libpq on a PostgreSQL URL only: it loads the PostgreSQL driver.)
  auto postgres_params = []() -> const std::set<std::string>& {
    static const std::set<std::string> keys = [] {
      std::set<std::string> all = libpq_keywords();
      for (const char* own : {"user", "port", "dbname", "replication"}) all.erase(own);
      all.insert("pooling");  // queuectl's own (see Pooling), never given to libpq
      return all;
    }();
    return keys;
  };
  // MySQL: SOCI's MySQL backend's own options (socket is its unix_socket).
  static const std::set<std::string> kMysqlParams = {
      "socket",       "password",  "sslca",        "sslcert",       "sslkey",         "charset",
      "local_infile", "reconnect", "read_timeout", "write_timeout", "connect_timeout"};
  const auto& known = url.backend == Backend::postgresql ? postgres_params() : kMysqlParams;
  for (const auto& [key, value] : url.params) {
    (void)value;
    if (!known.count(key)) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      throw bad_url("unknown query parameter '" + key + "' (known: " + list + ")");
    }
  }
  for (const auto& [key, value] : url.params) check_param_value(url.backend, key, value);
  // Which one would win is the driver's accident (libpq takes the last; SOCI's MySQL backend
  // refuses the connection string as malformed).
  if (url.password && url.params.count("password"))
    throw bad_url("the password is given twice, after the user name and as ?password=");
  if (url.password || url.params.count("password")) url.password_origin = "the URL";
  bool socket = url.params.count(url.backend == Backend::postgresql ? "host" : "socket") > 0;
  if (url.host.empty() && !socket) throw bad_url("missing host");
  if (url.database.empty()) throw bad_url("missing database name");
  return url;
}

std::string DbUrl::redacted() const {
  if (backend == Backend::sqlite) return original;
  auto scheme_end = original.find("://");
  std::string scheme = original.substr(0, scheme_end);
  std::string out = scheme + "://";
  if (!user.empty()) out += user + (password ? ":***" : "") + "@";
  auto add_host = [&](const std::string& h, int p) {
    out += h.find(':') != std::string::npos ? "[" + h + "]" : h;
    if (p) out += ":" + std::to_string(p);
  };
  if (hosts.empty()) add_host(host, port);
  for (std::size_t i = 0; i < hosts.size(); ++i) {
    if (i) out += ",";
    add_host(hosts[i].first, hosts[i].second);
  }
  out += "/" + database;
  char sep = '?';
  for (const auto& [k, v] : params) {
    bool secret = k == "password" || k == "sslpassword";
    out += sep + k + "=" + (secret ? "***" : v);
    sep = '&';
  }
  return out;
}

bool DbUrl::sqlite_read_only() const {
  auto mode = params.find("mode");
  return backend == Backend::sqlite && mode != params.end() && mode->second == "ro";
}

bool DbUrl::sqlite_no_create() const {
  auto mode = params.find("mode");
  return backend == Backend::sqlite && mode != params.end();  // ro or rw
}

Pooling DbUrl::pooling() const {
  auto p = params.find("pooling");
  if (backend != Backend::postgresql || p == params.end()) return Pooling::automatic;
  if (p->second == "transaction") return Pooling::transaction;
  if (p->second == "session") return Pooling::session;
  return Pooling::automatic;
}

DbUrl DbUrl::with_connect_timeout(int seconds) const {
  DbUrl url = *this;
  switch (backend) {
    case Backend::postgresql:
      url.params["connect_timeout"] = std::to_string(std::max(seconds, 2));
      break;
    case Backend::mysql:
      url.params["connect_timeout"] = std::to_string(seconds);
      url.params["read_timeout"] = std::to_string(seconds);
      break;
    case Backend::sqlite:  // no connecting; Database sets the busy timeout
      break;
  }
  return url;
}

std::string DbUrl::soci_connect_string() const {
  std::string s;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!s.empty()) s += ' ';
    s += k + "=" + quoted(v);
  };
  switch (backend) {
    case Backend::sqlite:
      // SOCI's sqlite3 backend splits at spaces unless the value is double-quoted.
      // (SOCI takes any value of readonly as "open with SQLITE_OPEN_READONLY".)
      return "db=\"" + database + "\" timeout=10" +
             (sqlite_read_only() ? std::string(" readonly=1") : std::string());
    case Backend::postgresql:
      if (!hosts.empty()) {
        // libpq's lists: a port per host, empty for the default one.
        std::string host_list, port_list;
        for (std::size_t i = 0; i < hosts.size(); ++i) {
          host_list += (i ? "," : "") + hosts[i].first;
          port_list += (i ? "," : "") + (hosts[i].second ? std::to_string(hosts[i].second) : "");
        }
        add("host", host_list);
        add("port", port_list);
      } else {
        if (!host.empty()) add("host", host);
        if (port) add("port", std::to_string(port));
      }
      add("dbname", database);
      if (!user.empty()) add("user", user);
      if (password) add("password", *password);
      for (const auto& [k, v] : params)
        if (k != "pooling") add(k, v);
      if (!params.count("connect_timeout")) add("connect_timeout", "10");
      if (!params.count("application_name")) add("application_name", "queuectl");
      return s;
    case Backend::mysql:
      if (!host.empty()) add("host", host);
      if (port) add("port", std::to_string(port));
      add("db", database);
      if (!user.empty()) add("user", user);
      if (password) add("password", *password);
      for (const auto& [k, v] : params) add(k == "socket" ? "unix_socket" : k, v);
      if (!params.count("connect_timeout")) add("connect_timeout", "10");
      return s;
  }
  return s;
}

std::string default_sqlite_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  std::string base;
  if (xdg && *xdg) {
    base = xdg;
  } else {
    const char* home = std::getenv("HOME");
    if (!home || !*home) throw Error("neither XDG_DATA_HOME nor HOME is set: pass --db URL");
    base = std::string(home) + "/.local/share";
  }
  return base + "/queuectl/queue.db";
}

namespace {

// The first line of a password file. Anything that would leave the password silently
// empty (a folder, which opens like an empty file; an empty file; an empty first line) is
// refused, so that it never replaces a password given another way.
std::string read_password_file(const std::string& file) {
  const std::string named = "--db-password-file '" + file + "'";
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec))
    throw UsageError(named + " is a folder, not a file holding the password");
  errno = 0;
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw UsageError("cannot read " + named + (err ? std::string(": ") + std::strerror(err) : ""));
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw UsageError("cannot read " + named);
  // One trailing newline (LF or CRLF) is how editors and `echo` end a file.
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (text.empty()) throw UsageError("password file '" + file + "' (--db-password-file) is empty");
  std::string line = text.substr(0, text.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty())
    throw UsageError(named + ": the password must be on the first line, which is empty");
  return line;
}

}  // namespace

DbUrl resolve_db_url(const UrlSources& sources) {
  DbUrl url;
  if (!sources.flag.empty()) {
    url = DbUrl::parse(sources.flag);
  } else if (const char* env = std::getenv("QUEUECTL_DB"); env && *env) {
    url = DbUrl::parse(env);
  } else {
    const std::string path = default_sqlite_path();
    url = DbUrl::parse((path.rfind('/', 0) == 0 ? "sqlite://" : "sqlite:") + path);
    url.embedded_default = true;
  }
  // A password given apart from the URL replaces the URL's, wherever the URL put it (a
  // ?password= left in place would reach the driver as a second password).
  if (!sources.password_file.empty()) {
    url.password = read_password_file(sources.password_file);
    url.password_origin = "--db-password-file '" + sources.password_file + "'";
    url.params.erase("password");
  } else if (const char* pw = std::getenv("QUEUECTL_DB_PASSWORD"); pw && *pw) {
    url.password = std::string(pw);
    url.password_origin = "QUEUECTL_DB_PASSWORD";
    url.params.erase("password");
  }
  return url;
}

}  // namespace queuectl
