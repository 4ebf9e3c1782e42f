// Many rows staged ahead in shared memory: a block walks rows blockIdx.x, + gridDim.x, ... of row
// tensors whose rows are exactly its threads' vectors (kVecs 16-byte vectors a thread); each thread
// copies its own vectors of each tensor's next kStages - 1 rows into shared memory with cp.async
// while it works on this one, and reads back only what it copied, so the stages need no barrier:
// the block keeps kStages - 1 rows of loads in flight through its reductions and stores, with no
// registers held for them. Column vectors the rows share (weight, bias) wait there too, copied
// once. The row norms' forward and backward over many rows (row_norm.cuh, row_norm_backward.cuh)
// are kernels of this pattern; rows held in registers had no loads in flight through their
// reductions (the backward's held-row kernel stayed far below the copy rate: docs/perf/norm.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/device.hpp"
#include "core/evict_first.cuh"
#include "core/evict_last.cuh"
#include "norm/held_row.cuh"

namespace solops::detail::row_norm {

constexpr int kMaxStagedThreads = 512;
constexpr int kMinStagedThreads = 128;

// kTensors row tensors and kColumns column vectors, kVecs vectors of each a thread; kEvictFirst: the
// rows' copies marked evict-first in L2 (core/evict_first.cuh), not evict_last.
template <int kVecs, int kTensors, int kColumns, bool kEvictFirst = false>
class StagedRows {
 public:
  // Rows staged: three rows ahead at two vectors a thread, two at four (the shared memory of a
  // 16384-wide half-type row).
  static constexpr int kStages = kVecs == 2 ? 4 : 3;

  // Shared memory of a block for rows of `vectors` vectors.
  static constexpr size_t bytes(int vectors) {
    return size_t{kStages * kTensors + kColumns} * static_cast<size_t>(vectors) * kVectorBytes;
  }

  __device__ StagedRows(uint4* shared, int64_t rows) : shared_(shared), rows_(rows) {}

  // This thread's vector i of tensor t in stage `stage`, and of column vector c.
  __device__ uint4 row_vector(int stage, int t, int i) const { return *slot((stage * kTensors + t) * kVecs + i); }
  __device__ uint4 column_vector(int c, int i) const { return *slot((kStages * kTensors + c) * kVecs + i); }
  __device__ void set_column_vector(int c, int i, uint4 value) { *slot((kStages * kTensors + c) * kVecs + i) = value; }

  // body(row, stage) for each row of this block, the row's vectors staged in `stage`. Every thread
  // of the block takes part; rows are whole blocks' vectors, so the walk is the same for each.
  template <class Body>
  __device__ void for_each_row(const uint4* const (&tensors)[kTensors], Body body) {
    const int64_t stride = gridDim.x;
    int64_t row = blockIdx.x;
#pragma unroll
    for (int k = 0; k < kStages - 1; ++k) copy(tensors, row + k * stride, k);
    for (int stage = 0; row < rows_; row += stride, stage = stage == kStages - 1 ? 0 : stage + 1) {
      copy(tensors, row + (kStages - 1) * stride, stage == 0 ? kStages - 1 : stage - 1);
      asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 1) : "memory");
      body(row, stage);
    }
  }

 private:
  __device__ uint4* slot(int j) const { return shared_ + j * blockDim.x + threadIdx.x; }

  // Copies this thread's vectors of row `row` of each tensor into `stage` and commits them as a
  // group, empty past the last row, so that waiting for all but the newest kStages - 1 groups
  // always finds the row in hand. The copies carry an L2 evict_last policy, as torch.compile's loads
  // do (core/evict_last.cuh), which measured faster than none on the forward's and the backward's
  // staged rows. Or evict-first, where the caller measured that to pay.
  __device__ void copy(const uint4* const (&tensors)[kTensors], int64_t row, int stage) {
    if (row < rows_) {
      const int64_t first = row * kVecs * blockDim.x + threadIdx.x;
#pragma unroll
      for (int t = 0; t < kTensors; ++t) {
#pragma unroll
        for (int i = 0; i < kVecs; ++i) {
          const auto to = static_cast<unsigned>(__cvta_generic_to_shared(slot((stage * kTensors + t) * kVecs + i)));
          asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(to),
                       "l"(tensors[t] + first + i * blockDim.x),
                       "l"(kEvictFirst ? evict_first_policy() : evict_last_policy())
                       : "memory");
        }
      }
    }
    asm volatile("cp.async.commit_group;" ::: "memory");
  }

  uint4* shared_;
  int64_t rows_;
};

// The vectors a thread of a staged kernel holds for rows of `vectors` vectors: two, four from 1024
// (8192 half-type elements), if the rows fill blocks of kMinStagedThreads to kMaxStagedThreads
// threads; 0 otherwise.
inline int staged_vecs(int vectors) {
  const int vecs = vectors >= 2 * kMaxStagedThreads ? 4 : 2;
  const int threads = vectors / vecs;
  const bool fills = vectors % (vecs * kWarp) == 0 && threads >= kMinStagedThreads && threads <= kMaxStagedThreads;
  return fills ? vecs : 0;
}

// Launches kernel<<<blocks, threads, shared_bytes>>>(args...) over `rows` rows with as many blocks as
// are resident (at most most_blocks), and returns the blocks; 0, launching nothing, where the
// block's shared memory exceeds what the device allows.
template <class... Params, class... Args>
int64_t launch_staged(std::string_view op, void (*kernel)(Params...), int threads, size_t shared_bytes, int64_t rows,
                      int64_t most_blocks, int multiprocessors, cudaStream_t stream, const Args&... args) {
  const auto* function = reinterpret_cast<const void*>(kernel);
  int device = 0;
  check_cuda(cudaGetDevice(&device), op, "cudaGetDevice");
  if (shared_bytes + static_shared_bytes(op, function) > static_cast<size_t>(max_shared_bytes_optin(device))) {
    return 0;
  }
  set_dynamic_shared_bytes(op, function, shared_bytes);
  const int resident = resident_blocks(op, function, threads, shared_bytes);
  const int64_t blocks = std::min({rows, int64_t{std::max(resident, 1)} * multiprocessors, most_blocks});
  kernel<<<static_cast<unsigned>(blocks), threads, shared_bytes, stream>>>(args...);
  return blocks;
}

}  // namespace solops::detail::row_norm
