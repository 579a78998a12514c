// A cell of a dynamically typed SOCI row as text ("NULL" for NULL), for tests that read
// what EXPLAIN says on every backend.
#pragma once

#include <soci/soci.h>

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

}  // namespace queuectl::testing
