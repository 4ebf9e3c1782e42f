// Mean pooling kernel: each thread averages one vector of a token row (16 bytes, or one element
// where rows or pointers are not 16-byte aligned) over the tokens of one output chunk, or over
// every groups-th of them.
//
// The op is memory-bound: every input element is read once, and a chunk's tokens are H * D
// contiguous elements each, so a warp reads 512 contiguous bytes per token. A block covers up to
// kThreads vectors of one output row; where a token row has fewer vectors than that, or the
// output rows' vectors are fewer than the GPU's threads, the block's threads split the chunk's
// tokens into groups (every groups-th token each) and combine their partial sums through shared
// memory, so short rows and few chunks still fill the GPU. Each thread issues kUnroll
// independent loads before adding them: with the catalogue's rows (H * D = 8192) that keeps
// 128 bytes per thread in flight, far above what hides DRAM latency at full bandwidth.
#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <type_traits>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/evict_last.cuh"
#include "pool/mean_pooling.hpp"

namespace solops::detail {
namespace {

constexpr int kThreads = 256;
// Token groups are added while the output rows' vectors times the groups stay within this many
// threads an SM, half of what an SM holds. What groups buy is a shorter chain of loads a thread,
// which the latency-bound rows of few chunks gain from; up to 2048 threads an SM gained nothing
// more and cost the 8k rows a little.
constexpr int kGroupedThreadsPerSm = 1024;
constexpr int kUnroll = 8;
constexpr int kVectorBytes = 16;

struct MeanPoolingArgs {
  int64_t seq_len, sequences, chunks;
  int chunk_size;
  int row_vectors;  // vectors per token row
  int64_t slices;   // blocks per output row
  int64_t blocks;
  bool evict_first;  // read_once_policy's choice for x: x larger than the L2
};

// kVec elements move as one 16-byte load or store; a single element as itself.
template <class T, int kVec>
using Bits = std::conditional_t<kVec == 1, T, uint4>;

template <class T, int kVec>
__device__ __forceinline__ void accumulate(float (&sum)[kVec], const Bits<T, kVec>& bits) {
  T lanes[kVec];
  memcpy(lanes, &bits, sizeof bits);
#pragma unroll
  for (int i = 0; i < kVec; ++i) sum[i] += to_float(lanes[i]);
}

template <class T, int kVec>
__global__ void __launch_bounds__(kThreads)
    mean_pooling_kernel(const T* __restrict__ x, T* __restrict__ y, const int32_t* __restrict__ offsets,
                        const int32_t* __restrict__ indices, const MeanPoolingArgs a) {
  using Vector = Bits<T, kVec>;
  __shared__ float partial[kVec * kThreads];
  const int row_threads = blockDim.x, groups = blockDim.y, group = threadIdx.y;
  // x loaded as torch.compile's kernels load theirs (core/evict_last.cuh), faster than __ldg; where
  // x is larger than the L2, evict-first: a chunk reads 64 times what it writes, and evict-first
  // loads leave the lines the benchmark's flush dirtied in the L2 instead of making DRAM write them
  // back during the kernel. An x that fits the L2 is faster kept.
  const uint64_t policy = read_once_policy(a.evict_first);
  // block is the same for every thread of a block, so the barriers below see whole blocks.
  for (int64_t block = blockIdx.x; block < a.blocks; block += gridDim.x) {
    const int64_t out_row = block / a.slices;  // batch * chunks + chunk
    const int vector = static_cast<int>(block - out_row * a.slices) * row_threads + threadIdx.x;
    const int64_t batch = out_row / a.chunks, chunk = out_row - batch * a.chunks;
    const TokenSpan span = offsets ? ragged_chunk(__ldg(indices + 2 * chunk), __ldg(indices + 2 * chunk + 1), offsets,
                                                  a.sequences, a.chunk_size, a.seq_len)
                                   : uniform_chunk(chunk, a.chunk_size, a.seq_len);
    const int count = static_cast<int>(span.end - span.begin);
    const bool active = vector < a.row_vectors;
    float sum[kVec] = {};
    if (active) {
      const int64_t token_stride = int64_t{groups} * a.row_vectors;
      const Vector* column = reinterpret_cast<const Vector*>(x) +
                             ((batch * a.seq_len + span.begin) + group) * a.row_vectors + vector;
      int t = group;
      // count - (kUnroll - 1) * groups cannot overflow where t + kUnroll * groups could.
      for (; t < count - (kUnroll - 1) * groups; t += kUnroll * groups, column += kUnroll * token_stride) {
        Vector loaded[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) loaded[u] = load_evict_last(column + u * token_stride, policy);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) accumulate<T, kVec>(sum, loaded[u]);
      }
      for (; t < count; t += groups, column += token_stride) {
        accumulate<T, kVec>(sum, load_evict_last(column, policy));
      }
    }
    if (groups > 1) {
      // Laid out [lane][group][thread], so that the threads of a warp store to consecutive banks.
#pragma unroll
      for (int i = 0; i < kVec; ++i) partial[(i * groups + group) * row_threads + threadIdx.x] = sum[i];
      __syncthreads();
      if (group == 0) {
#pragma unroll
        for (int i = 0; i < kVec; ++i) {
          for (int g = 1; g < groups; ++g) sum[i] += partial[(i * groups + g) * row_threads + threadIdx.x];
        }
      }
      __syncthreads();  // the next block's partial sums overwrite these
    }
    if (active && group == 0) {
      T lanes[kVec];
#pragma unroll
      for (int i = 0; i < kVec; ++i) lanes[i] = from_float<T>(count > 0 ? sum[i] / static_cast<float>(count) : NAN);
      Vector out;
      memcpy(&out, lanes, sizeof out);
      reinterpret_cast<Vector*>(y)[out_row * a.row_vectors + vector] = out;
    }
  }
}

template <class T, int kVec>
void launch(const MeanPoolingGeometry& g, const TensorRef& x, const TensorRef& y, const int32_t* offsets,
            const int32_t* indices, cudaStream_t stream) {
  const int row_vectors = g.row_len / kVec;
  // Token groups wanted: the output rows' vectors, a thread each, times the groups within
  // kGroupedThreadsPerSm threads an SM.
  const int64_t output_vectors = std::max<int64_t>(1, g.batch * g.chunks * row_vectors);
  const int64_t grouped_threads = int64_t{kGroupedThreadsPerSm} * multiprocessor_count(x.device);
  const unsigned groups_wanted =
      std::bit_floor(static_cast<unsigned>(std::clamp<int64_t>(grouped_threads / output_vectors, 1, kThreads / 32)));
  // A power of two from one warp to the whole block, so that kThreads splits into token groups.
  const int row_threads = static_cast<int>(std::clamp(std::bit_ceil(static_cast<unsigned>(row_vectors)), 32u,
                                                      static_cast<unsigned>(kThreads) / groups_wanted));
  const int64_t x_bytes = g.batch * g.seq_len * g.row_len * static_cast<int64_t>(sizeof(T));
  MeanPoolingArgs args{g.seq_len, g.sequences, g.chunks, g.chunk_size, row_vectors,
                       (row_vectors + row_threads - 1) / row_threads, 0, x_bytes > l2_cache_bytes(x.device)};
  args.blocks = g.batch * g.chunks * args.slices;
  const auto grid = static_cast<unsigned>(std::min<int64_t>(args.blocks, INT_MAX));
  const dim3 block(row_threads, kThreads / row_threads);
  mean_pooling_kernel<T, kVec><<<grid, block, 0, stream>>>(static_cast<const T*>(x.data), static_cast<T*>(y.data),
                                                           offsets, indices, args);
}

bool aligned_to_vector(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % kVectorBytes == 0; }

}  // namespace

void launch_mean_pooling(std::string_view op, const MeanPoolingGeometry& g, const TensorRef& x, const TensorRef& y,
                         const TensorRef* offsets, const TensorRef* indices, cudaStream_t stream) {
  if (g.batch == 0) return;
  const auto* offset_values = offsets ? static_cast<const int32_t*>(offsets->data) : nullptr;
  const auto* index_values = indices ? static_cast<const int32_t*>(indices->data) : nullptr;
  dispatch_float(x.dtype, [&]<class T>() {
    constexpr int kVec = kVectorBytes / sizeof(T);
    if (g.row_len % kVec == 0 && aligned_to_vector(x.data) && aligned_to_vector(y.data)) {
      launch<T, kVec>(g, x, y, offset_values, index_values, stream);
    } else {
      launch<T, 1>(g, x, y, offset_values, index_values, stream);
    }
  });
  check_launch(op);
}

}  // namespace solops::detail
