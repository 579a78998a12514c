// Who may use `queuectl serve`: the --auth-file's users (basic auth) and bearer tokens,
// each a crypt(3) hash, never a password in the clear. Checking a bcrypt hash takes tens
// of milliseconds on purpose, so a header that passed is remembered (in memory only) and
// the page's polling costs nothing after the first request.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace queuectl {

struct AuthEntry {
  std::string user;  // "token" for a bearer token line
  std::string hash;
};

class AuthFile {
 public:
  // Reads `path`: `user:HASH` lines (HASH from `queuectl serve --hash-password` or
  // `htpasswd -B`), `token:HASH` for a bearer token, `#` comments. Throws UsageError
  // naming the line that is wrong (a hash that is not bcrypt, yescrypt or sha-crypt; a
  // password in the clear) or a file with no entry.
  static AuthFile load(const std::string& path);
  static AuthFile parse(const std::string& text, const std::string& path);

  // The user an Authorization header names and proves, or nullopt. `verify` checks a
  // password against a hash (the HTTP module's crypt).
  template <class Verify>
  std::optional<std::string> check(const std::string& header, Verify&& verify) const;

  const std::vector<AuthEntry>& entries() const { return entries_; }

 private:
  std::vector<AuthEntry> entries_;
};

// Decodes standard base64 (RFC 4648, padding optional); nullopt for anything else.
std::optional<std::string> base64_decode(const std::string& text);

// Remembers Authorization headers that passed, so a bcrypt check runs once per client.
// Bounded: when full it forgets them all.
class AuthCache {
 public:
  std::optional<std::string> find(const std::string& header);
  void remember(const std::string& header, const std::string& user);

 private:
  std::mutex mutex_;
  std::map<std::string, std::string> passed_;
};

template <class Verify>
std::optional<std::string> AuthFile::check(const std::string& header, Verify&& verify) const {
  if (header.rfind("Bearer ", 0) == 0) {
    const std::string token = header.substr(7);
    for (const AuthEntry& e : entries_)
      if (e.user == "token" && verify(token, e.hash)) return std::string("token");
    return std::nullopt;
  }
  if (header.rfind("Basic ", 0) != 0) return std::nullopt;
  const auto decoded = base64_decode(header.substr(6));
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string user = decoded->substr(0, colon);
  const std::string password = decoded->substr(colon + 1);
  if (user != "token")
    for (const AuthEntry& e : entries_)
      if (e.user == user) return verify(password, e.hash) ? std::optional(user) : std::nullopt;
  // An unknown user costs a check all the same, so that the time of the answer does not
  // tell which users exist.
  verify(password, entries_.front().hash);
  return std::nullopt;
}

}  // namespace queuectl
