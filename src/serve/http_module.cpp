#include "serve/http_module.hpp"

#include <strings.h>

namespace queuectl {

std::string HttpRequest::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (strcasecmp(k.c_str(), name.c_str()) == 0) return v;
  return "";
}

}  // namespace queuectl
