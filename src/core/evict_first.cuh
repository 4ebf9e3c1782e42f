// Loads of data read once, marked first to leave L2 (an evict_first cache policy, as
// torch.compile's reductions load x). Such lines make room for each other instead of evicting
// other data's lines, which after the benchmark's L2 flush are dirty and would be written back to
// DRAM while the reads wait. Where it pays is measured per kernel (docs/perf/).
#pragma once

#include <cstdint>
#include <cstring>

namespace solops::detail {

__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// The 16-byte vector at `address` where `valid` (zeros elsewhere, no load issued: a predicated load,
// not a branch between a thread's loads), not kept in L1.
__device__ __forceinline__ uint4 load_evict_first(const uint4* address, bool valid, uint64_t policy) {
  uint4 bits{0, 0, 0, 0};
  asm("{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %5, 0;\n"
      "  @p ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %6;\n"
      "}"
      : "+r"(bits.x), "+r"(bits.y), "+r"(bits.z), "+r"(bits.w)
      : "l"(address), "r"(static_cast<int>(valid)), "l"(policy));
  return bits;
}

// The same for an 8-byte vector.
__device__ __forceinline__ uint2 load_evict_first(const uint2* address, bool valid, uint64_t policy) {
  uint2 bits{0, 0};
  asm("{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %3, 0;\n"
      "  @p ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0, %1}, [%2], %4;\n"
      "}"
      : "+r"(bits.x), "+r"(bits.y)
      : "l"(address), "r"(static_cast<int>(valid)), "l"(policy));
  return bits;
}

// A 4-byte element, kept in L1 (where neighbouring threads' overlapping reads find it).
template <class T>
__device__ __forceinline__ T load_evict_first(const T* address, uint64_t policy) {
  static_assert(sizeof(T) == 4);
  uint32_t bits;
  asm("ld.global.nc.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(bits) : "l"(address), "l"(policy));
  T value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace solops::detail
