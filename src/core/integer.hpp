// Integer helpers shared by the shape rules and the launchers.
#pragma once

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define SOLOPS_HOST_DEVICE __host__ __device__
#else
#define SOLOPS_HOST_DEVICE
#endif

namespace solops::detail {

// a / b rounded up, for a >= 0 and b > 0 (without a + b - 1, which overflows for a near INT64_MAX).
SOLOPS_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// Whether `pointer` is a multiple of `bytes` (a vector width, for a vector load or copy).
SOLOPS_HOST_DEVICE inline bool aligned_to(const void* pointer, size_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

// A launch's grid of `blocks` blocks, at least one and at most INT_MAX (grid-stride kernels walk
// whatever lies beyond).
constexpr unsigned grid_for(int64_t blocks) { return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, INT_MAX)); }

// Division of values in [0, 2^31) by a divisor fixed at launch, as a multiply-high, an add and a
// shift (Granlund and Montgomery, "Division by invariant integers using multiplication", 1994):
// a kernel that splits each thread's flat index divides before its first load, and a run-time
// integer division is about twenty instructions.
class FastDivisor {
 public:
  FastDivisor() = default;
  // divisor in [1, 2^31).
  explicit FastDivisor(int divisor) : divisor_(divisor) {
    while ((int64_t{1} << shift_) < divisor) ++shift_;  // ceil(log2(divisor))
    multiplier_ = static_cast<uint32_t>((uint64_t{1} << 32) * ((uint64_t{1} << shift_) - divisor) / divisor + 1);
  }

  SOLOPS_HOST_DEVICE int divisor() const { return divisor_; }

  // n / divisor for n in [0, 2^31).
  SOLOPS_HOST_DEVICE int divide(int n) const {
    const auto value = static_cast<uint32_t>(n);
#if defined(__CUDA_ARCH__)
    const uint32_t high = __umulhi(value, multiplier_);
#else
    const auto high = static_cast<uint32_t>(uint64_t{value} * multiplier_ >> 32);
#endif
    return static_cast<int>((high + value) >> shift_);  // high <= value < 2^31: no overflow
  }

 private:
  int divisor_ = 1;
  uint32_t multiplier_ = 1;
  int shift_ = 0;
};

}  // namespace solops::detail
