// Hopper's bulk asynchronous copy (the TMA's one-dimensional form) from global into shared memory,
// completing on a shared-memory mbarrier: one thread issues a whole contiguous range, and the
// bytes arrive without occupying registers or threads.
#pragma once

#include <cstdint>

namespace solops::detail {

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Before use, by one thread; the barrier completes a phase when `arrivals` threads have arrived
// and every byte they announced has landed. A __syncthreads() must follow before others wait on it.
__device__ __forceinline__ void barrier_init(uint64_t* barrier, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(barrier)), "r"(arrivals));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `source` to shared
// `target`; the calling thread arrives on `barrier`, announcing the bytes the phase waits for.
// Generic-proxy accesses of `target` before this call must be ordered by a barrier first.
__device__ __forceinline__ void bulk_copy(void* target, const void* source, uint32_t bytes, uint64_t* barrier) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(barrier)), "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   shared_address(target)),
               "l"(source), "r"(bytes), "r"(shared_address(barrier))
               : "memory");
}

// Waits until `barrier` has completed the phase of parity `phase` (0, 1, 0, ... for its uses).
__device__ __forceinline__ void barrier_wait(uint64_t* barrier, uint32_t phase) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(shared_address(barrier)), "r"(phase)
        : "memory");
  }
}

}  // namespace solops::detail
