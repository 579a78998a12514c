#include "core/job_fields.hpp"

namespace queuectl {

std::vector<std::string> job_field_names() {
  std::vector<std::string> names;
  names.reserve(kJobFields.size());
  for (const JobField& f : kJobFields) names.emplace_back(f.name);
  return names;
}

}  // namespace queuectl
