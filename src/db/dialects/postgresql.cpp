#include "db/dialect.hpp"
namespace queuectl {
std::unique_ptr<Dialect> make_postgresql_dialect() { return make_sqlite_dialect(); }
}
