// The kernel's order-preserving key of a score (spec §5.1, §6.13): unsigned integers that order as the
// spec orders scores, so that a selection compares integers and its radix passes read their bits.
#pragma once

#include <cstdint>

#include "core/integer.hpp"

namespace solops::detail {

// The key of an f32 score given as its bits (f16 and bf16 widen to f32 exactly first): key(a) > key(b)
// exactly where the spec ranks a above b, and key(a) == key(b) exactly where they tie.
// - Every NaN, whatever its sign and payload, is the largest key: above +inf, NaNs tied.
// - -0 is +0, so that the two tie as equal floats do.
// - Otherwise the IEEE bits made unsigned-monotone: a positive score gains the sign bit, a negative
//   one has every bit flipped.
// A key is never 0 (-inf, the lowest score, is 0x007FFFFF), which leaves 0 below every score.
SOLOPS_HOST_DEVICE constexpr uint32_t score_key(uint32_t bits) {
  constexpr uint32_t kSign = 0x80000000u, kInfinity = 0x7F800000u;
  if ((bits & ~kSign) > kInfinity) return 0xFFFFFFFFu;
  if (bits == kSign) bits = 0;
  return bits & kSign ? ~bits : bits | kSign;
}

}  // namespace solops::detail
