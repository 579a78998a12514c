// Which database engines and versions queuectl runs on: decided from what the server says
// about itself at connect time, before any statement of a command runs.
#pragma once

#include <string>

namespace queuectl {

// The reason queuectl refuses a MySQL-protocol server, from its version string (as the
// handshake reports it, e.g. "10.11.6-MariaDB-0+deb12u1", "8.0.36", "8.0.11-TiDB-v7.5.0");
// empty when it runs on it. Refused: TiDB (its pessimistic locks and SKIP LOCKED are not
// InnoDB's), MariaDB before 10.6 (no SKIP LOCKED) and MySQL before 8.0.1 (no SKIP LOCKED).
std::string mysql_engine_refusal(const std::string& version);

// The same for a PostgreSQL-protocol server: its server_version_num (PQserverVersion) and
// whether it says it is CockroachDB (a crdb_version parameter). Refused: CockroachDB (no
// advisory locks, SERIALIZABLE only) and PostgreSQL before 12.
std::string postgresql_engine_refusal(int server_version, bool cockroach);

}  // namespace queuectl
