#include "core/backoff.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>

namespace queuectl {
namespace {

std::mt19937_64& generator() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  return gen;
}

}  // namespace

Duration backoff_ceiling(const BackoffPolicy& policy, int attempts) {
  int exponent = std::clamp(attempts - 1, 0, 40);
  double ms = static_cast<double>(policy.base.ms()) * static_cast<double>(1ULL << exponent);
  double capped = std::min(ms, static_cast<double>(policy.cap.ms()));
  return Duration(std::chrono::milliseconds(static_cast<std::int64_t>(capped)));
}

double random_unit() {
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator());
}

std::uint32_t unguessable_u32() {
  thread_local std::random_device device;
  return device();
}

std::string new_lock_token() {
  std::uint32_t w[4] = {unguessable_u32(), unguessable_u32(), unguessable_u32(), unguessable_u32()};
  w[1] = (w[1] & 0xffff0fffu) | 0x00004000u;  // version 4
  w[2] = (w[2] & 0x3fffffffu) | 0x80000000u;  // variant 10
  char buf[37];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%04x%08x", w[0], w[1] >> 16, w[1] & 0xffffu,
                w[2] >> 16, w[2] & 0xffffu, w[3]);
  return buf;
}

}  // namespace queuectl
