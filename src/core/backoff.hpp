// Retry delays: min(cap, base * 2^(attempts-1)) with jitter, and the random tokens
// issued at every claim.
#pragma once

#include <cstdint>
#include <string>

#include "core/duration.hpp"

namespace queuectl {

struct BackoffPolicy {
  Duration base = Duration::seconds(5);
  Duration cap = Duration::seconds(3600);
};

// The longest delay before attempt `attempts + 1`: min(cap, base * 2^(attempts-1)). The
// dialects compute the same in SQL (fail_retry, reap_mark), times a jitter factor in
// [1/2, 1], from the database clock; this is the reference their tests check them against.
Duration backoff_ceiling(const BackoffPolicy& policy, int attempts);
// A uniformly random fraction in [0, 1) from a per-thread generator.
double random_unit();
// 32 random bits from std::random_device (its default source, the CPU's or the kernel's,
// never a seeded generator), for what must not be guessed: lock tokens, trace ids. One device
// per thread, made once: making one took 11-14 us on the test machine, four draws about 1.
std::uint32_t unguessable_u32();
// A fresh random 128-bit token as UUID version 4 text.
std::string new_lock_token();

}  // namespace queuectl
