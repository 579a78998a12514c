#include "bench/strategy.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace queuectl::bench {

std::string_view strategy_name(Strategy s) {
  switch (s) {
    case Strategy::naive:
      return "naive";
    case Strategy::for_update:
      return "for-update";
    case Strategy::skip_locked:
      return "skip-locked";
    case Strategy::claim:
      break;
  }
  return "claim";
}

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> all = {Strategy::naive, Strategy::for_update,
                                            Strategy::skip_locked, Strategy::claim};
  return all;
}

std::vector<Strategy> parse_strategies(std::string_view text) {
  std::vector<Strategy> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view name = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    auto known = std::find_if(all_strategies().begin(), all_strategies().end(),
                              [&](Strategy s) { return strategy_name(s) == name; });
    if (known == all_strategies().end())
      throw UsageError("invalid --strategy " +
                       (name.empty() ? std::string("(an empty name)")
                                     : "'" + std::string(name.substr(0, 64)) + "'") +
                       ": expected a comma list of naive, for-update, skip-locked, claim");
    if (std::find(out.begin(), out.end(), *known) == out.end()) out.push_back(*known);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

bool needs_row_locks(Strategy s) {
  return s == Strategy::for_update || s == Strategy::skip_locked;
}

}  // namespace queuectl::bench
