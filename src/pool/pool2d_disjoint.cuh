// 2-D max pooling, with or without positions, over windows that tile the plane: kernel = stride,
// no padding, dilation 1, no partial window (VGG's 2x2 stride 2). No input element belongs to two
// windows, so a thread needs neither halo columns nor a staged band: it takes kOutputs adjacent
// outputs of one output row, loads the kLoadBytes (8 or 16) of each of its KH input rows that their
// windows cover, scans each window in PyTorch's order, and writes its values as one vector and its
// positions as 16-byte stores.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/evict_last.cuh"
#include "core/integer.hpp"
#include "pool/pool2d_kernel_common.cuh"

namespace solops::detail {

// Outputs a thread computes: the windows kLoadBytes of an input row cover.
template <class T, int KW, int kLoadBytes>
constexpr int kDisjointOutputs = kLoadBytes / static_cast<int>(sizeof(T)) / KW;

// The unsigned type of kBytes (4, 8 or 16) bytes, for loads and stores of that width.
template <int kBytes>
using Bits = std::conditional_t<kBytes == 4, unsigned, std::conditional_t<kBytes == 8, uint2, uint4>>;

// The launch's output rows (planes * out_h, at most INT_MAX threads' worth: for_each_plane_group)
// and the thread tiles of one output row.
struct DisjointTiling {
  FastDivisor out_h;      // output rows of a plane
  FastDivisor row_tiles;  // out_w / kDisjointOutputs
  int tiles;              // output rows of the launch * row_tiles
};

template <class T, Reduction kReduction, int KH, int KW, int kLoadBytes>
__global__ void __launch_bounds__(kPool2dThreads)
    pool2d_disjoint_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                           const Pool2dArgs a, const DisjointTiling tiling) {
  constexpr int kOutputs = kDisjointOutputs<T, KW, kLoadBytes>;
  constexpr int kVec = kLoadBytes / static_cast<int>(sizeof(T));
  static_assert((kLoadBytes == 8 || kLoadBytes == 16) && kOutputs % 2 == 0 && kOutputs * KW == kVec);
  const int tile = static_cast<int>(blockIdx.x) * kPool2dThreads + static_cast<int>(threadIdx.x);
  if (tile >= tiling.tiles) return;
  const int row = tiling.row_tiles.divide(tile);  // the output row among the launch's planes
  const int ow0 = (tile - row * tiling.row_tiles.divisor()) * kOutputs;
  const int plane = tiling.out_h.divide(row);
  const int oh = row - plane * tiling.out_h.divisor();
  const int h0 = oh * KH, w0 = ow0 * KW;
  const T* const top = x + (int64_t{plane} * a.in_h + h0) * a.in_w + w0;
  // Loaded as torch.compile's kernels load theirs (core/evict_last.cuh): faster than evict-first
  // loads or __ldg on the half types' rows and the positions rows, level on the f32 values. Its
  // large inputs (MaxPool3d c3d-pool1 runs it on depth slices) lost with evict-first too.
  const uint64_t policy = evict_last_policy();
  Bits<kLoadBytes> bits[KH];
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
    bits[kh] = load_evict_last(reinterpret_cast<const Bits<kLoadBytes>*>(top + int64_t{kh} * a.in_w), policy);
  }
  T taps[KH][kVec];
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) memcpy(taps[kh], &bits[kh], sizeof bits[kh]);

  T best[kOutputs];
  [[maybe_unused]] int64_t at[kOutputs];
#pragma unroll
  for (int o = 0; o < kOutputs; ++o) {
    Accumulator<kReduction> acc;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) acc.add(to_float(taps[kh][o * KW + kw]), kh * KW + kw);
    }
    if constexpr (kReduction == Reduction::max) {
      best[o] = from_float<T>(acc.best);
    } else {
      best[o] = from_float<T>(acc.best.value);
      at[o] = int64_t{h0 + acc.best.at / KW} * a.in_w + w0 + o * KW + acc.best.at % KW;
    }
  }
  const int64_t out = int64_t{row} * a.out_w + ow0;
  Bits<sizeof best> packed;
  memcpy(&packed, best, sizeof packed);
  *reinterpret_cast<Bits<sizeof best>*>(y + out) = packed;
  if constexpr (kReduction == Reduction::max_with_index) {
#pragma unroll
    for (int o = 0; o < kOutputs; o += 2) {
      *reinterpret_cast<longlong2*>(indices + out + o) = make_longlong2(at[o], at[o + 1]);
    }
  }
}

}  // namespace solops::detail
