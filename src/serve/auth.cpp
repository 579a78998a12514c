#include "serve/auth.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"

namespace queuectl {

AuthFile AuthFile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError("cannot read --auth-file " + path + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

AuthFile AuthFile::parse(const std::string& text, const std::string& path) {
  AuthFile file;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = "--auth-file " + path + " line " + std::to_string(number);
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon == 0) throw UsageError(where + ": not USER:HASH");
    AuthEntry e{line.substr(0, colon), line.substr(colon + 1)};
    // Only hashes libcrypt checks slowly: bcrypt, yescrypt, scrypt, sha-crypt. Anything
    // else (a password in the clear, Apache's MD5) is refused, and never echoed.
    static const char* const kPrefixes[] = {"$2b$", "$2y$", "$2a$", "$y$",
                                            "$gy$", "$7$",  "$6$",  "$5$"};
    bool known = false;
    for (const char* p : kPrefixes) known = known || e.hash.rfind(p, 0) == 0;
    if (!known)
      throw UsageError(where + " (user '" + e.user +
                       "'): not a bcrypt, yescrypt or sha-crypt hash; make one with "
                       "`queuectl serve --hash-password`");
    file.entries_.push_back(std::move(e));
  }
  if (file.entries_.empty())
    throw UsageError("--auth-file " + path + " has no USER:HASH line: nobody could sign in");
  return file;
}

std::optional<std::string> base64_decode(const std::string& text) {
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == '=') --end;
  if (text.size() - end > 2) return std::nullopt;
  for (std::size_t i = 0; i < end; ++i) {
    const char c = text[i];
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else
      return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

std::optional<std::string> AuthCache::find(const std::string& header) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = passed_.find(header);
  if (it == passed_.end()) return std::nullopt;
  return it->second;
}

void AuthCache::remember(const std::string& header, const std::string& user) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (passed_.size() >= 1024) passed_.clear();
  passed_[header] = user;
}

}  // namespace queuectl
