#include "core/engine.hpp"

#include <cstdio>
#include <tuple>

namespace queuectl {
namespace {

struct Version {
  int major = 0, minor = 0, patch = 0;
  bool operator<(const Version& o) const {
    return std::tie(major, minor, patch) < std::tie(o.major, o.minor, o.patch);
  }
};

Version leading_version(const std::string& text) {
  Version v;
  std::sscanf(text.c_str(), "%d.%d.%d", &v.major, &v.minor, &v.patch);
  return v;
}

}  // namespace

std::string mysql_engine_refusal(const std::string& version) {
  if (version.find("TiDB") != std::string::npos)
    return "TiDB (" + version +
           ") is not supported: its locking reads and SKIP LOCKED do not give the row locks "
           "queuectl's claims rely on";
  std::string text = version;
  // Old MariaDB servers announce themselves as "5.5.5-10.x..." to MySQL clients.
  if (text.rfind("5.5.5-", 0) == 0) text = text.substr(6);
  const Version v = leading_version(text);
  if (text.find("MariaDB") != std::string::npos) {
    if (v < Version{10, 6, 0})
      return "MariaDB " + text + " is too old: queuectl needs 10.6 or later (SKIP LOCKED)";
    return {};
  }
  if (v < Version{8, 0, 1})
    return "MySQL " + text + " is too old: queuectl needs 8.0.1 or later (SKIP LOCKED)";
  return {};
}

std::string postgresql_engine_refusal(int server_version, bool cockroach) {
  if (cockroach)
    return "CockroachDB is not supported: it has no session advisory locks and runs every "
           "transaction SERIALIZABLE";
  if (server_version > 0 && server_version < 120000)
    return "PostgreSQL " + std::to_string(server_version / 10000) +
           " is too old: queuectl needs 12 or later";
  return {};
}

}  // namespace queuectl
