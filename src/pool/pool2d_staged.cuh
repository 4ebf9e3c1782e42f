// 2-D pooling through shared memory, for windows the separable and disjoint kernels are not
// compiled for (sizes, strides and dilation read at run time).
//
// One block pools a tile of output rows of one (n, c) plane. The input rows that tile needs are
// one contiguous range of the plane, staged into shared memory with 16-byte cp.async requests, so
// every input byte crosses DRAM once (halo rows are re-read from L2) and the window taps are read
// from shared memory. Planes whose rows are too wide to stage read the taps from global memory.
// Each thread computes one output at a time, so a warp writes 32 adjacent int64 positions.
#pragma once

#include "core/stage.cuh"
#include "pool/pool2d_kernel_common.cuh"

namespace solops::detail {

struct StagedTiling {
  int tile_rows, tiles_per_plane;
  int64_t tiles;
};

// Max of a window, visiting only real taps, in scan order.
template <bool kWithIndex, class T>
__device__ __forceinline__ void max_any_window(const T* band, int band_offset, const Pool2dArgs& a,
                                               int h0, int w0, T& best, int& best_offset) {
  float best_value = -INFINITY;
  best = from_float<T>(-INFINITY);
  best_offset = -1;
  for (int kh = 0; kh < a.kernel_h; ++kh) {
    const int ih = h0 + kh * a.dilation_h;
    if (static_cast<unsigned>(ih) >= static_cast<unsigned>(a.in_h)) continue;
    for (int kw = 0; kw < a.kernel_w; ++kw) {
      const int iw = w0 + kw * a.dilation_w;
      if (static_cast<unsigned>(iw) >= static_cast<unsigned>(a.in_w)) continue;
      const int offset = band_offset + ih * a.in_w + iw;
      const T v = band[offset];
      const float value = to_float(v);
      // The first real tap seeds the scan, so an all -inf window reports it.
      if ((kWithIndex && best_offset < 0) || replaces_best(value, best_value)) {
        best_value = value;
        best = v;
        best_offset = offset;
      }
    }
  }
}

template <class T>
__device__ __forceinline__ float sum_any_window(const T* band, int band_offset, const Pool2dArgs& a,
                                                int h0, int w0) {
  float sum = 0.f;
  for (int ih = max(h0, 0); ih < min(h0 + a.kernel_h, a.in_h); ++ih) {
    for (int iw = max(w0, 0); iw < min(w0 + a.kernel_w, a.in_w); ++iw) {
      sum += to_float(band[band_offset + ih * a.in_w + iw]);
    }
  }
  return sum;
}

template <class T, Reduction kReduction, bool kStaged>
__global__ void __launch_bounds__(kPool2dThreads)
    pool2d_staged_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                         const Pool2dArgs a, const StagedTiling tiling) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* const shared = reinterpret_cast<T*>(shared_bytes);
  const int64_t in_plane = int64_t{a.in_h} * a.in_w;
  const int64_t out_plane = int64_t{a.out_h} * a.out_w;
  // Threads form rows of up to kPool2dThreads output columns, so no output needs a division.
  const int lanes_per_row = min(a.out_w, kPool2dThreads);
  const int rows_per_pass = kPool2dThreads / lanes_per_row;
  const int lane_row = threadIdx.x / lanes_per_row;
  const int lane_col = threadIdx.x % lanes_per_row;
  for (int64_t tile = blockIdx.x; tile < tiling.tiles; tile += gridDim.x) {
    const int64_t plane = tile / tiling.tiles_per_plane;
    const int oh0 = static_cast<int>(tile % tiling.tiles_per_plane) * tiling.tile_rows;
    const int oh1 = min(oh0 + tiling.tile_rows, a.out_h);
    const T* band = x + plane * in_plane;
    int band_offset = 0;  // band[band_offset + h * in_w + w] is x[plane][h][w]
    if constexpr (kStaged) {
      const int ih0 = max(0, oh0 * a.stride_h - a.pad_h);
      const int ih1 = min(a.in_h, (oh1 - 1) * a.stride_h - a.pad_h + (a.kernel_h - 1) * a.dilation_h + 1);
      if (tile != blockIdx.x) __syncthreads();  // the previous tile's reads are done
      band_offset = stage_contiguous(band + ih0 * a.in_w, (ih1 - ih0) * a.in_w, shared) - ih0 * a.in_w;
      band = shared;
    }
    if (lane_row >= rows_per_pass) continue;
    const int64_t out_base = plane * out_plane;
    for (int ow = lane_col; ow < a.out_w; ow += lanes_per_row) {
      const int w0 = ow * a.stride_w - a.pad_w;
      for (int oh = oh0 + lane_row; oh < oh1; oh += rows_per_pass) {
        const int h0 = oh * a.stride_h - a.pad_h;
        const int64_t out = out_base + int64_t{oh} * a.out_w + ow;
        if constexpr (kReduction == Reduction::avg) {
          const float sum = sum_any_window(band, band_offset, a, h0, w0);
          y[out] = from_float<T>(window_average(sum, avg_divisor(a, h0, w0)));
        } else {
          T best;
          int best_offset;
          max_any_window<kReduction == Reduction::max_with_index>(band, band_offset, a, h0, w0, best, best_offset);
          y[out] = best;
          if constexpr (kReduction == Reduction::max_with_index) indices[out] = best_offset - band_offset;
        }
      }
    }
  }
}

}  // namespace solops::detail
