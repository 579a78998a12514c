#include "core/db_url_params.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <set>
#include <vector>

namespace queuectl {

UsageError bad_url(const std::string& why) {
  return UsageError("invalid database URL: " + why);
}

namespace {

// A whole number written the way libpq reads one: an optional minus sign and digits,
// within an int.
bool is_libpq_int(const std::string& v) {
  const std::size_t digits = v.size() - (v.rfind('-', 0) == 0 ? 1 : 0);
  if (digits == 0 || digits > 10) return false;
  for (std::size_t i = v.size() - digits; i < v.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(v[i]))) return false;
  const long long n = std::stoll(v);
  return n >= INT_MIN && n <= INT_MAX;
}

// A whole number the way SOCI's MySQL backend reads a timeout: digits, 1 to UINT_MAX.
bool is_soci_uint(const std::string& v) {
  if (v.empty() || v.size() > 10) return false;
  for (char c : v)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  const unsigned long long n = std::stoull(v);
  return n >= 1 && n <= UINT_MAX;
}

// Every address of a (comma-separated) list is numeric, IPv4 or IPv6; libpq allows an
// empty entry, meaning the default.
bool is_ip_list(const std::string& v) {
  std::size_t start = 0;
  while (start <= v.size()) {
    const std::size_t comma = std::min(v.find(',', start), v.size());
    const std::string one = v.substr(start, comma - start);
    unsigned char buf[sizeof(in6_addr)];
    if (!one.empty() && inet_pton(AF_INET, one.c_str(), buf) != 1 &&
        inet_pton(AF_INET6, one.c_str(), buf) != 1)
      return false;
    start = comma + 1;
  }
  return true;
}

}  // namespace

void check_param_value(Backend backend, const std::string& key, const std::string& value) {
  const bool secret = key == "password" || key == "sslpassword";
  const std::string shown = secret ? std::string() : ", not '" + value + "'";
  // An empty value is a mistake, not "use the default".
  if (value.empty()) throw bad_url("query parameter '" + key + "' is empty");
  if (backend == Backend::mysql) {
    if ((key == "connect_timeout" || key == "read_timeout" || key == "write_timeout") &&
        !is_soci_uint(value))
      throw bad_url("query parameter '" + key +
                    "' must be a whole number of seconds from 1 to 4294967295" + shown);
    // SOCI reads these two as 1 (on) or 0 (off) and refuses anything else as malformed.
    if ((key == "local_infile" || key == "reconnect") && value != "0" && value != "1")
      throw bad_url("query parameter '" + key + "' must be 0 or 1" + shown);
    return;
  }
  static const std::set<std::string> kIntegers = {"connect_timeout",  "keepalives",
                                                  "keepalives_idle",  "keepalives_interval",
                                                  "keepalives_count", "tcp_user_timeout"};
  // libpq's choices (target_session_attrs: libpq 14 and later).
  static const std::map<std::string, std::vector<std::string>> kChoices = {
      {"sslmode", {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}},
      {"gssencmode", {"disable", "prefer", "require"}},
      {"channel_binding", {"disable", "prefer", "require"}},
      {"target_session_attrs",
       {"any", "read-write", "read-only", "primary", "standby", "prefer-standby"}}};
  if (kIntegers.count(key) && !is_libpq_int(value))
    throw bad_url("query parameter '" + key + "' must be a whole number" + shown);
  if (auto choices = kChoices.find(key);
      choices != kChoices.end() &&
      std::find(choices->second.begin(), choices->second.end(), value) == choices->second.end()) {
    std::string list;
    for (const auto& c : choices->second) list += (list.empty() ? "" : ", ") + c;
    throw bad_url("query parameter '" + key + "' must be one of " + list + shown);
  }
  if (key == "pooling" && value != "transaction" && value != "session" && value != "auto")
    throw bad_url(
        "query parameter 'pooling' must be transaction (a pooler such as PgBouncer in "
        "transaction mode), session (session state is safe) or auto" +
        shown);
  if (key == "hostaddr" && !is_ip_list(value))
    throw bad_url(
        "query parameter 'hostaddr' takes numeric IP addresses (a name goes in the "
        "host part)" +
        shown);
}

}  // namespace queuectl
