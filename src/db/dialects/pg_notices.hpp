// Messages a PostgreSQL server sends outside any query (a WARNING, or the FATAL it sends
// when it terminates the connection during a restart or a pg_terminate_backend) go
// through queuectl's log as one line, instead of libpq printing them raw on stderr.
#pragma once

#include <functional>
#include <string>

#include <libpq-fe.h>

namespace queuectl {

// Sends the server's notices on `conn` to the notice log, one line each:
// "PostgreSQL server: FATAL: terminating connection due to administrator command".
void route_server_notices(PGconn* conn);

// Where those lines go. The default writes "queuectl: LINE" to stderr, queuectl's log
// format; the CLI may point it at its own log (so that -q silences it too). Set it before
// any connection is opened: connections deliver notices on their own threads.
void set_server_notice_log(std::function<void(const std::string&)> log);

}  // namespace queuectl
