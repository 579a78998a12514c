// A cell of a dynamically typed SOCI row as text ("NULL" for NULL), for tests that read
// what EXPLAIN says on every backend.
#pragma once

#include <soci/soci.h>

#include "db/row_reader.hpp"

#include <string>

namespace queuectl::testing {

inline std::string cell_text(const soci::row& r, std::size_t i) {
  if (r.get_indicator(i) == soci::i_null) return "NULL";
  switch (r.get_properties(i).get_data_type()) {
    case soci::dt_string:
      return r.get<std::string>(i);
    case soci::dt_integer:
      return std::to_string(r.get<int>(i));
    case soci::dt_long_long:
      return std::to_string(r.get<long long>(i));
    case soci::dt_unsigned_long_long:
      return std::to_string(r.get<unsigned long long>(i));
    case soci::dt_double:
      return std::to_string(r.get<double>(i));
    default:
      return "?";
  }
}

// Calls `each(row)` for every row `sql` returns. The statement is prepared unnamed: through
// PgBouncer in transaction mode a statement prepared by name (SOCI's st_N) may be left on a
// pooled server session, where another client's st_N then fails with "already exists".
template <typename Each>
void for_each_row(soci::session& session, const std::string& sql, Each each) {
  soci::row r;
  soci::statement st(session);
  st.exchange(soci::into(r));
  prepare_once(st, sql);
  for (bool got = st.execute(true); got; got = st.fetch()) each(static_cast<const soci::row&>(r));
}

}  // namespace queuectl::testing
