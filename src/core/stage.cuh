// Block-cooperative copy of a contiguous global range into shared memory.
#pragma once

#include <cstdint>

namespace solops::detail {

// The most a block may stage: the default dynamic shared-memory limit, so that no launch needs an
// attribute call and every launch stays capture-safe.
constexpr int64_t kMaxStagedBytes = 48 * 1024;

// Bytes of shared memory stage_contiguous needs for `count` elements.
template <class T>
constexpr int64_t staged_bytes(int64_t count) {
  return count * static_cast<int64_t>(sizeof(T)) + 16;
}

// Copies src[0, count) into shared memory with cp.async, 16 bytes per request. shared[j] holds
// src[j - head]: the offset keeps 16-byte aligned global addresses on 16-byte aligned shared
// addresses, which cp.async needs, whatever the alignment of src. Returns head. All threads of
// the block must call it; it returns after a barrier, with the data visible to the whole block.
template <class T>
__device__ int stage_contiguous(const T* __restrict__ src, int count, T* __restrict__ shared) {
  constexpr int kVector = 16 / sizeof(T);
  const int head = static_cast<int>(reinterpret_cast<uintptr_t>(src) % 16 / sizeof(T));
  const int first_aligned = min(count, head ? kVector - head : 0);
  const int vectors = (count - first_aligned) / kVector;
  const int tail = first_aligned + vectors * kVector;
  for (int v = threadIdx.x; v < vectors; v += blockDim.x) {
    const int i = first_aligned + v * kVector;
    const auto shared_address = static_cast<uint32_t>(__cvta_generic_to_shared(shared + head + i));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address), "l"(src + i));
  }
  for (int i = threadIdx.x; i < first_aligned; i += blockDim.x) shared[head + i] = src[i];
  for (int i = tail + threadIdx.x; i < count; i += blockDim.x) shared[head + i] = src[i];
  asm volatile("cp.async.wait_all;\n" ::);
  __syncthreads();
  return head;
}

}  // namespace solops::detail
