// 2-D max/avg pooling kernels over contiguous NCHW planes.
//
// One block pools a tile of output rows of one (n, c) plane. The input rows that tile needs are
// one contiguous range of the plane, staged into shared memory with 16-byte cp.async requests, so
// every input byte crosses DRAM once (halo rows are re-read from L2) and the window taps are read
// from shared memory. Planes whose rows are too wide to stage read the taps from global memory.
// Catalogue kernel sizes (without dilation) are compile-time, so their tap loops unroll into
// branch-free code; other windows loop at run time.
#include <algorithm>
#include <climits>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/stage.cuh"
#include "pool/pool2d_launch.hpp"

namespace solops::detail {
namespace {

constexpr int kThreads = 256;
// ~16 KB of staged input per block lets 8 blocks of 256 threads share an SM's shared memory,
// enough bytes in flight to cover DRAM latency.
constexpr int64_t kBandBytesTarget = 16 * 1024;
// The default dynamic shared-memory limit: no attribute call, so launches stay capture-safe.
constexpr int64_t kMaxStagedBytes = 48 * 1024;
// Small problems are split into more tiles so that every SM gets several blocks.
constexpr int kMinBlocksPerSm = 4;
// Outputs per block when taps are read from global memory.
constexpr int kUnstagedOutputsPerBlock = kThreads * 4;

enum class Reduction { max, max_with_index, avg };

struct Pool2dArgs {
  int in_h, in_w, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  bool count_include_pad;
  int divisor_override;
  int tile_rows, tiles_per_plane;
  int64_t tiles;
};

// Window taps of one output, as offsets into the band (band[row + col] is the tap's value).
//
// Static windows (dilation 1) clamp every tap to the input: a tap in the padding, or past the
// input in ceil mode, reads the nearest real tap of the same window instead. The max is unchanged
// by such a duplicate, and the duplicates of the first real row or column come just before their
// originals in scan order, those of the last just after, so ties (first wins) and NaNs (last wins)
// still report the same position. The average masks the duplicates out instead. This keeps the
// tap loops free of branches and of per-tap index arithmetic.
template <int K>
struct ClampedTaps {
  int offset[K];
  bool real[K];
  __device__ __forceinline__ ClampedTaps(int start, int extent, int scale, int base) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int i = start + k;
      real[k] = static_cast<unsigned>(i) < static_cast<unsigned>(extent);
      offset[k] = base + min(max(i, 0), extent - 1) * scale;
    }
  }
};

template <class T>
__device__ __forceinline__ T max_propagating_nan(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    float result;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
  } else {
    return __hmax_nan(a, b);
  }
}

// Max of a static window; the first tap seeds the scan, so an all -inf window reports its first
// real tap. With an index: replace on a strictly greater value or a NaN (spec §4.2–4.3).
template <int KH, int KW, bool kWithIndex, class T>
__device__ __forceinline__ void max_static_window(const T* band, const ClampedTaps<KH>& rows,
                                                  const ClampedTaps<KW>& cols, T& best, int& best_offset) {
  best_offset = rows.offset[0] + cols.offset[0];
  best = band[best_offset];
  [[maybe_unused]] float best_value = to_float(best);
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
    for (int kw = (kh == 0 ? 1 : 0); kw < KW; ++kw) {
      const int offset = rows.offset[kh] + cols.offset[kw];
      const T v = band[offset];
      if constexpr (kWithIndex) {
        const float value = to_float(v);
        if (value > best_value || isnan(value)) {
          best_value = value;
          best = v;
          best_offset = offset;
        }
      } else {
        best = max_propagating_nan(best, v);
      }
    }
  }
}

template <int KH, int KW, class T>
__device__ __forceinline__ float sum_static_window(const T* band, const ClampedTaps<KH>& rows,
                                                   const ClampedTaps<KW>& cols) {
  float sum = 0.f;
#pragma unroll
  for (int kh = 0; kh < KH; ++kh) {
#pragma unroll
    for (int kw = 0; kw < KW; ++kw) {
      const float v = to_float(band[rows.offset[kh] + cols.offset[kw]]);
      sum += rows.real[kh] && cols.real[kw] ? v : 0.f;
    }
  }
  return sum;
}

// Max of a window of any size and dilation, visiting only real taps, in scan order.
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
      if ((kWithIndex && best_offset < 0) || value > best_value || isnan(value)) {
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

// PyTorch's avg-pool divisor (spec §4.1): the window end is clipped to the padded extent, so a
// ceil-mode overhang never counts.
__device__ __forceinline__ int avg_divisor(const Pool2dArgs& a, int h0, int w0) {
  if (a.divisor_override != 0) return a.divisor_override;
  const int h1 = min(h0 + a.kernel_h, a.in_h + a.pad_h);
  const int w1 = min(w0 + a.kernel_w, a.in_w + a.pad_w);
  return a.count_include_pad ? (h1 - h0) * (w1 - w0)
                             : (min(h1, a.in_h) - max(h0, 0)) * (min(w1, a.in_w) - max(w0, 0));
}

// KH = KW = 0: sizes and dilation from args. Otherwise a static window with dilation 1.
template <class T, Reduction kReduction, int KH, int KW, bool kStaged>
__global__ void __launch_bounds__(kThreads)
    pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                  const Pool2dArgs a) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* const shared = reinterpret_cast<T*>(shared_bytes);
  constexpr bool kStatic = KH > 0;
  const int64_t in_plane = int64_t{a.in_h} * a.in_w;
  const int64_t out_plane = int64_t{a.out_h} * a.out_w;
  // Threads form rows of up to kThreads output columns, so no output needs a division.
  const int lanes_per_row = min(a.out_w, kThreads);
  const int rows_per_pass = kThreads / lanes_per_row;
  const int lane_row = threadIdx.x / lanes_per_row;
  const int lane_col = threadIdx.x % lanes_per_row;
  for (int64_t tile = blockIdx.x; tile < a.tiles; tile += gridDim.x) {
    const int64_t plane = tile / a.tiles_per_plane;
    const int oh0 = static_cast<int>(tile % a.tiles_per_plane) * a.tile_rows;
    const int oh1 = min(oh0 + a.tile_rows, a.out_h);
    const T* band = x + plane * in_plane;
    int band_offset = 0;  // band[band_offset + h * in_w + w] is x[plane][h][w]
    if constexpr (kStaged) {
      const int kernel_h = kStatic ? KH : a.kernel_h;
      const int ih0 = max(0, oh0 * a.stride_h - a.pad_h);
      const int ih1 = min(a.in_h, (oh1 - 1) * a.stride_h - a.pad_h + (kernel_h - 1) * a.dilation_h + 1);
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
          float sum;
          if constexpr (kStatic) {
            sum = sum_static_window<KH, KW>(band, ClampedTaps<KH>(h0, a.in_h, a.in_w, band_offset),
                                            ClampedTaps<KW>(w0, a.in_w, 1, 0));
          } else {
            sum = sum_any_window(band, band_offset, a, h0, w0);
          }
          y[out] = from_float<T>(sum / static_cast<float>(avg_divisor(a, h0, w0)));
        } else {
          constexpr bool kWithIndex = kReduction == Reduction::max_with_index;
          T best;
          int best_offset;
          if constexpr (kStatic) {
            max_static_window<KH, KW, kWithIndex>(band, ClampedTaps<KH>(h0, a.in_h, a.in_w, band_offset),
                                                  ClampedTaps<KW>(w0, a.in_w, 1, 0), best, best_offset);
          } else {
            max_any_window<kWithIndex>(band, band_offset, a, h0, w0, best, best_offset);
          }
          y[out] = best;
          if constexpr (kWithIndex) indices[out] = best_offset - band_offset;
        }
      }
    }
  }
}

template <class T, Reduction kReduction, int KH, int KW>
void launch(std::string_view op, const Pool2dGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  Pool2dArgs a{g.in_h,       g.in_w,      g.out_h,      g.out_w,        g.kernel_h,
               g.kernel_w,   g.stride_h,  g.stride_w,   g.pad_h,        g.pad_w,
               g.dilation_h, g.dilation_w, g.count_include_pad, g.divisor_override, 0, 0, 0};
  const int64_t row_bytes = int64_t{g.in_w} * sizeof(T);
  const auto band_rows = [&](int64_t tile_rows) {  // input rows a tile of output rows reads
    return std::min<int64_t>(g.in_h, (tile_rows - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1);
  };
  const bool staged = staged_bytes<T>(band_rows(1) * g.in_w) <= kMaxStagedBytes;
  int64_t tile_rows = 1;
  if (staged) {
    while (tile_rows < g.out_h && band_rows(tile_rows + 1) * row_bytes <= kBandBytesTarget) ++tile_rows;
  } else {
    tile_rows = std::max<int64_t>(1, kUnstagedOutputsPerBlock / g.out_w);
  }
  const int64_t min_blocks = int64_t{kMinBlocksPerSm} * multiprocessor_count(x.device);
  const int64_t tiles_wanted = (min_blocks + g.planes - 1) / g.planes;
  tile_rows = std::clamp<int64_t>((g.out_h + tiles_wanted - 1) / tiles_wanted, 1, std::min<int64_t>(tile_rows, g.out_h));
  a.tile_rows = static_cast<int>(tile_rows);
  a.tiles_per_plane = static_cast<int>((g.out_h + tile_rows - 1) / tile_rows);
  a.tiles = g.planes * a.tiles_per_plane;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(a.tiles, INT_MAX));
  const auto* x_data = static_cast<const T*>(x.data);
  auto* y_data = static_cast<T*>(y.data);
  if (staged) {
    const auto shared = static_cast<size_t>(staged_bytes<T>(band_rows(tile_rows) * g.in_w));
    pool2d_kernel<T, kReduction, KH, KW, true><<<grid, kThreads, shared, stream>>>(x_data, y_data, indices, a);
  } else {
    pool2d_kernel<T, kReduction, 0, 0, false><<<grid, kThreads, 0, stream>>>(x_data, y_data, indices, a);
  }
  check_launch(op);
}

// Kernel sizes of the catalogue get unrolled tap loops; any other size runs the generic loop.
template <Reduction kReduction>
void launch_pool2d(std::string_view op, const Pool2dGeometry& g, const TensorRef& x,
                   const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  dispatch_float(x.dtype, [&]<class T>() {
    const auto size_is = [&](int kh, int kw) {
      return g.kernel_h == kh && g.kernel_w == kw && g.dilation_h == 1 && g.dilation_w == 1;
    };
    if constexpr (kReduction == Reduction::avg) {
      if (size_is(3, 3)) return launch<T, kReduction, 3, 3>(op, g, x, y, indices, stream);
      if (size_is(5, 5)) return launch<T, kReduction, 5, 5>(op, g, x, y, indices, stream);
      if (size_is(3, 5)) return launch<T, kReduction, 3, 5>(op, g, x, y, indices, stream);
    } else {
      if (size_is(2, 2)) return launch<T, kReduction, 2, 2>(op, g, x, y, indices, stream);
      if (size_is(3, 3)) return launch<T, kReduction, 3, 3>(op, g, x, y, indices, stream);
    }
    launch<T, kReduction, 0, 0>(op, g, x, y, indices, stream);
  });
}

}  // namespace

void launch_max_pool2d(const Pool2dGeometry& g, const TensorRef& x, const TensorRef& y,
                       const TensorRef* indices, cudaStream_t stream) {
  if (indices) {
    launch_pool2d<Reduction::max_with_index>("max_pool2d", g, x, y,
                                             static_cast<int64_t*>(indices->data), stream);
  } else {
    launch_pool2d<Reduction::max>("max_pool2d", g, x, y, nullptr, stream);
  }
}

void launch_avg_pool2d(const Pool2dGeometry& g, const TensorRef& x, const TensorRef& y,
                       cudaStream_t stream) {
  launch_pool2d<Reduction::avg>("avg_pool2d", g, x, y, nullptr, stream);
}

}  // namespace solops::detail
