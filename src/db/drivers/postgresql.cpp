// The PostgreSQL driver (queuectl-postgresql.so): SOCI's PostgreSQL backend and libpq.
#include <soci/postgresql/soci-postgresql.h>

#include "db/driver.hpp"

namespace {

std::string sqlstate(const soci::soci_error& e) {
  auto* err = dynamic_cast<const soci::postgresql_soci_error*>(&e);
  return err ? err->sqlstate() : std::string();
}

const queuectl::PostgresqlDriver kDriver = {
    &soci::postgresql,
    sqlstate,
    PQserverVersion,
    PQparameterStatus,
    PQsocket,
    PQconsumeInput,
    PQstatus,
    PQerrorMessage,
    PQnotifies,
    PQfreemem,
    PQsetNoticeReceiver,
    PQresultErrorField,
    PQresultErrorMessage,
    PQconndefaults,
    PQconninfoFree,
    PQbackendPID,
};

}  // namespace

extern "C" const queuectl::PostgresqlDriver* queuectl_postgresql_driver() {
  return &kDriver;
}
