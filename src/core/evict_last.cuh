// Loads as torch.compile's Triton kernels issue them under eviction_policy="evict_last": through L1
// (ld.global, not the read-only ld.global.nc path) with an L1 evict_last hint, and marked last to
// leave L2 by an evict_last cache policy (or by the one read_once_policy picks). They made most of
// our kernels faster, also kernels whose threads share no sector (so not through L1 reuse). The L2
// policy is the part that pays: the same loads on the read-only path, or without the L1 hint,
// measured the same. Where it pays is measured per kernel (docs/perf/).
#pragma once

#include <cstdint>
#include <cstring>

#include "core/evict_first.cuh"

namespace solops::detail {

__device__ __forceinline__ uint64_t evict_last_policy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// The policy of a kernel's loads of an input it reads once: evict_last, or evict-first where its
// launcher measured that to pay on large inputs. Evict-first lines make room for each other, so
// the kernel leaves the L2's other lines in place; after the benchmark's flush those are dirty,
// and each one a normal or evict_last line replaces is written back to DRAM while the kernel reads.
// One instruction, no branch: the fraction of lines marked evict_last is 1 or 0, the rest evict-first.
__device__ __forceinline__ uint64_t read_once_policy(bool evict_first) {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_last.L2::evict_first.b64 %0, %1;"
      : "=l"(policy)
      : "f"(evict_first ? 0.0f : 1.0f));
  return policy;
}

// The V (2, 4, 8 or 16 bytes) at `address`.
template <class V>
__device__ __forceinline__ V load_evict_last(const V* address, uint64_t policy) {
  static_assert(sizeof(V) == 2 || sizeof(V) == 4 || sizeof(V) == 8 || sizeof(V) == 16);
  V value;
  if constexpr (sizeof(V) == 16) {
    uint4 bits;
    asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w)
        : "l"(address), "l"(policy));
    memcpy(&value, &bits, sizeof value);
  } else if constexpr (sizeof(V) == 8) {
    uint2 bits;
    asm("ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
        : "=r"(bits.x), "=r"(bits.y)
        : "l"(address), "l"(policy));
    memcpy(&value, &bits, sizeof value);
  } else if constexpr (sizeof(V) == 4) {
    unsigned bits;
    asm("ld.global.L1::evict_last.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(bits) : "l"(address), "l"(policy));
    memcpy(&value, &bits, sizeof value);
  } else {
    unsigned short bits;
    asm("ld.global.L1::evict_last.L2::cache_hint.b16 %0, [%1], %2;" : "=h"(bits) : "l"(address), "l"(policy));
    memcpy(&value, &bits, sizeof value);
  }
  return value;
}

// The 16-byte vector at `address` where `valid` (zeros elsewhere, no load issued).
__device__ __forceinline__ uint4 load_evict_last(const uint4* address, bool valid, uint64_t policy) {
  uint4 bits{0, 0, 0, 0};
  asm("{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %5, 0;\n"
      "  @p ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %6;\n"
      "}"
      : "+r"(bits.x), "+r"(bits.y), "+r"(bits.z), "+r"(bits.w)
      : "l"(address), "r"(static_cast<int>(valid)), "l"(policy));
  return bits;
}

}  // namespace solops::detail
