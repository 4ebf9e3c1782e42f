// The kernel's order-preserving key of a score (spec §5.1, §6.13): unsigned integers that order as the
// spec orders scores, so that a selection compares integers and its radix passes read their bits.
#pragma once

#include <cstdint>

#include "core/integer.hpp"

namespace solops::detail {

// The IEEE bits made unsigned-monotone: a positive score gains the sign bit, a negative one has every
// bit flipped (a shift and one three-input logic op). The key of every score but NaN and -0.
SOLOPS_HOST_DEVICE constexpr uint32_t flipped_key(uint32_t bits) {
  return bits ^ (static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u);
}

// The key from the flipped bits: every NaN (flipped above +inf's key, or below -inf's where the sign
// is set) the largest key, NaNs tied; -0 (flipped just under +0's key, where no other score lands)
// +0's key, so that the two tie. Idempotent: a key is its own fixed key.
SOLOPS_HOST_DEVICE constexpr uint32_t fixed_key(uint32_t flipped) {
  constexpr uint32_t kMinusInfinity = 0x007FFFFFu, kPlusInfinity = 0xFF800000u, kZero = 0x80000000u;
  if (flipped - kMinusInfinity > kPlusInfinity - kMinusInfinity) return 0xFFFFFFFFu;
  return flipped == kZero - 1 ? kZero : flipped;
}

// The key of an f32 score given as its bits (f16 and bf16 widen to f32 exactly first): key(a) > key(b)
// exactly where the spec ranks a above b, and key(a) == key(b) exactly where they tie.
// A key is never 0 (-inf, the lowest score, is 0x007FFFFF), which leaves 0 below every score.
SOLOPS_HOST_DEVICE constexpr uint32_t score_key(uint32_t bits) { return fixed_key(flipped_key(bits)); }

// The stream's key of a score (stream_key, from its bits and whether it is NaN) is its key but for -0,
// which flips one under its key: fixed where the buffer is read (fixed_key), and told apart from the
// others by one floor only, which the test moves one down. One compare a score.
SOLOPS_HOST_DEVICE constexpr uint32_t stream_key(uint32_t bits, bool nan) {
  return nan ? 0xFFFFFFFFu : flipped_key(bits);
}

struct FloorTest {
  uint32_t below;

  SOLOPS_HOST_DEVICE constexpr explicit FloorTest(uint32_t floor) : below(floor == 0x7FFFFFFFu ? floor - 1 : floor) {}

  // Whether the key of the score whose stream key is k is above the floor.
  SOLOPS_HOST_DEVICE constexpr bool passes(uint32_t k) const { return k > below; }
};

}  // namespace solops::detail
