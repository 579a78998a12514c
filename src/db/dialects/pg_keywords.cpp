// The connection keywords this libpq knows, from libpq itself (PQconndefaults), so that a
// URL parameter the library accepts is never refused by a list of ours that fell behind.
#include <libpq-fe.h>

#include "core/db_url.hpp"
#include "db/driver.hpp"

namespace queuectl {

std::set<std::string> libpq_keywords() {
  std::set<std::string> out;
  const PostgresqlDriver& pq = postgresql_driver();
  PQconninfoOption* options = pq.conndefaults();
  if (!options) return out;  // out of memory: the caller then refuses every parameter
  for (PQconninfoOption* o = options; o->keyword; ++o) out.insert(o->keyword);
  pq.conninfo_free(options);
  return out;
}

}  // namespace queuectl
