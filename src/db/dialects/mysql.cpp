#include "db/dialect.hpp"
namespace queuectl {
std::unique_ptr<Dialect> make_mysql_dialect() { return make_sqlite_dialect(); }
}
