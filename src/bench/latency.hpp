// Claim latencies, summarized.
#pragma once

#include <vector>

namespace queuectl::bench {

// The nearest-rank percentile `p` (0 < p <= 100) of `values`; 0 when there are none.
// Sorts `values`.
double percentile(std::vector<double>& values, double p);

}  // namespace queuectl::bench
