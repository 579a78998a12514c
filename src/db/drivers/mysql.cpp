// The MariaDB/MySQL driver (queuectl-mysql.so): SOCI's MySQL backend and the client library.
#include <soci/mysql/soci-mysql.h>

#include "db/driver.hpp"

namespace {

const soci::mysql_soci_error* as_error(const soci::soci_error& e) {
  return dynamic_cast<const soci::mysql_soci_error*>(&e);
}

const queuectl::MysqlDriver kDriver = {&soci::mysql, as_error, mysql_get_server_info,
                                       mysql_get_socket};

}  // namespace

extern "C" const queuectl::MysqlDriver* queuectl_mysql_driver() {
  return &kDriver;
}
