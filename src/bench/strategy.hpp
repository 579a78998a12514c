// The ways `bench` takes jobs from one table with several clients: the three of seed 001
// (no lock, FOR UPDATE, FOR UPDATE SKIP LOCKED) and queuectl's own claim and ack.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace queuectl::bench {

enum class Strategy { naive, for_update, skip_locked, claim };

// The name the command line and the output use: naive, for-update, skip-locked, claim.
std::string_view strategy_name(Strategy s);
// Every strategy, in the order the results show them.
const std::vector<Strategy>& all_strategies();
// A comma list of names, in the order given, each once. Throws UsageError naming
// --strategy and the name it does not know.
std::vector<Strategy> parse_strategies(std::string_view text);
// Whether the strategy holds row locks across the work (FOR UPDATE, with or without SKIP
// LOCKED): a backend without row locks cannot run it.
bool needs_row_locks(Strategy s);

}  // namespace queuectl::bench
