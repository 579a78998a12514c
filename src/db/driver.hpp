// What each backend needs from its own client library: SOCI's backend factory and the few
// client calls SOCI does not wrap. Each backend's driver is a module of its own
// (src/db/drivers/<backend>.cpp, built as queuectl-<backend>.so) that the binary loads when
// a command first uses that backend, so that a command maps only its own database's client
// libraries (and `--version` none of them). The test and bench binaries link all three
// drivers in instead (the queuectl_drivers_linked target); then nothing is loaded.
#pragma once

#include <string>

#include <libpq-fe.h>
#include <mysql.h>
#include <soci/soci-backend.h>
#include <soci/sqlite3/soci-sqlite3.h>  // sqlite3.h, in namespace sqlite_api

namespace soci {
class mysql_soci_error;
}

namespace queuectl {

enum class Backend;

struct PostgresqlDriver {
  const soci::backend_factory* factory;
  // The SQLSTATE of an error from SOCI's PostgreSQL backend; empty for any other error.
  std::string (*sqlstate)(const soci::soci_error&);
  decltype(&PQserverVersion) server_version;
  decltype(&PQparameterStatus) parameter_status;
  decltype(&PQsocket) socket;
  decltype(&PQconsumeInput) consume_input;
  decltype(&PQstatus) status;
  decltype(&PQerrorMessage) error_message;
  decltype(&PQnotifies) notifies;
  decltype(&PQfreemem) freemem;
  decltype(&PQsetNoticeReceiver) set_notice_receiver;
  decltype(&PQresultErrorField) result_error_field;
  decltype(&PQresultErrorMessage) result_error_message;
  decltype(&PQconndefaults) conndefaults;
  decltype(&PQconninfoFree) conninfo_free;
  decltype(&PQbackendPID) backend_pid;
};

struct MysqlDriver {
  const soci::backend_factory* factory;
  // The error as SOCI's MySQL backend threw it (its err_num_), or null for any other error.
  const soci::mysql_soci_error* (*as_error)(const soci::soci_error&);
  decltype(&mysql_get_server_info) get_server_info;
  decltype(&mysql_get_socket) get_socket;
};

struct SqliteDriver {
  const soci::backend_factory* factory;
  // SQLite's (extended) result code of an error from SOCI's SQLite backend, or -1 for any
  // other error.
  int (*result_code)(const soci::soci_error&);
  decltype(&sqlite_api::sqlite3_busy_timeout) busy_timeout;
};

// Each backend's driver, loaded on first use (thread-safe). A driver that cannot be loaded
// throws Error (exit 1) naming what is missing: the module, or the shared library it needs
// and the Debian package that ships it.
const PostgresqlDriver& postgresql_driver();
const MysqlDriver& mysql_driver();
const SqliteDriver& sqlite_driver();
const soci::backend_factory& backend_factory(Backend backend);

// Loads the module queuectl-NAME.so from beside the binary (or LIBDIR/queuectl) and returns
// what its entry point `entry` returns; throws Error naming what is missing, the module
// called `title` (the HTTP server of `serve` is loaded so too).
const void* load_driver(const std::string& name, const char* entry, const std::string& title);

// Why a driver module did not load, from the dynamic loader's message: for a shared library
// queuectl knows, "LIB is missing: install the Debian package PKG"; otherwise the message.
std::string driver_load_failure(const std::string& loader_message);

}  // namespace queuectl
