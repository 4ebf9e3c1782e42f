// Averages of small calls (1-D and 3-D; the launchers in pool1d.cu and pool3d.cu say which): one
// thread computes kCols adjacent outputs of one output row straight from global memory, with as
// little work as possible before its loads leave and after they arrive. On such calls a launch,
// one DRAM round trip and the work around it take much of the time; torch.compile's pointwise
// kernels (index math by constants, every tap a masked load issued up front) set the bar. Per
// thread:
// - the output row from the thread index by multiply-high divisions (FastDivisor): one for 1-D,
//   three for 3-D (row, depth slice, plane);
// - the window's input rows as 32-bit offsets into the plane, so that each load's address is one
//   wide multiply-add from the plane's pointer;
// - per row, one vector of the kChunk columns the tile starts on plus the W-padding halo columns
//   loaded one by one (they share sectors with the neighbouring lanes' vectors), all issued
//   before any is used (keep_loads_above);
// - the sums, and one multiply by the reciprocal divisor that every window shares; only calls
//   whose windows have different divisors (count_include_pad=False with padding, or ceil-mode
//   windows past the padded end) count each window's taps.
//
// kEdges: some windows reach outside the input (padding, ceil mode). Taps outside then read the
// nearest real row or column, and are masked out of the sums; without edges there are no clamps
// and no masks. Rows are whole chunks that start aligned to the vector (the launchers check), so
// a chunk lies wholly inside its row or wholly past its end.
#pragma once

#include <string_view>

#include "core/device.hpp"
#include "core/evict_last.cuh"
#include "pool/pool3d_separable.cuh"
#include "pool/pool_geometry.hpp"

namespace solops::detail {

constexpr int kSmallAvgThreads = 128;

// One call's geometry. A 1-D call is one input row per plane (in_d = in_h = 1, no D or H window).
struct SmallAvgArgs {
  int in_d, in_h, in_w;
  int in_volume;  // in_d * in_h * in_w
  int pad_d, pad_h;
  int out_w;
  FastDivisor col_tiles;  // thread tiles across an output row
  FastDivisor out_h;      // 3-D: output rows of a depth slice
  FastDivisor out_d;      // 3-D: output depths of a plane
  int tiles;              // thread tiles of this launch
  bool whole_tiles;       // out_w is a multiple of kCols and the outputs are aligned to their tiles
  bool count_include_pad;
  bool counted;  // windows differ in divisor: each counts its taps (spec §4.1)
  float scale;   // otherwise 1 / the divisor every window shares (divisor_override, or the window size)
};

// 1 / a window's taps (a positive count): the hardware reciprocal, as window_average divides,
// without the guard for divisors too small to be counts.
__device__ __forceinline__ float taps_reciprocal(int taps) {
  float reciprocal;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(reciprocal) : "f"(static_cast<float>(taps)));
  return reciprocal;
}

// kPlanar: the call is 3-D (output rows of depth slices of planes); otherwise each output row is a
// plane's only row.
template <class T, class Window, bool kPlanar, bool kEdges>
class SmallAvgTile {
  static constexpr int KD = Window::kernel_d, KH = Window::kernel_h, KW = Window::kernel_w, SD = Window::stride_d,
                       SH = Window::stride_h, SW = Window::stride_w, PW = Window::pad_w;
  static constexpr int kRows = KD * KH, kCols = Window::kCols, kChunk = Window::kChunk, kSpan = Window::kSpan,
                       kVector = Window::kVector, kLoads = kChunk / kVector;
  using Vector = typename Window::Vector;

  __host__ __device__ static constexpr bool in_chunk(int i) { return i >= PW && i < PW + kChunk; }

 public:
  __device__ __forceinline__ SmallAvgTile(const T* __restrict__ x, const SmallAvgArgs& a, int index) {
    line_ = a.col_tiles.divide(index);
    ow0_ = (index - line_ * a.col_tiles.divisor()) * kCols;
    if constexpr (kPlanar) {
      const int depth_line = a.out_h.divide(line_);
      const int oh = line_ - depth_line * a.out_h.divisor();
      const int plane = a.out_d.divide(depth_line);
      const int od = depth_line - plane * a.out_d.divisor();
      plane_x_ = x + int64_t{plane} * a.in_volume;
      d0_ = od * SD - a.pad_d;
      h0_ = oh * SH - a.pad_h;
    } else {
      plane_x_ = x + int64_t{line_} * a.in_w;
    }
    // An opaque copy of the plane's pointer: otherwise the compiler folds the plane's offset into
    // each load's 64-bit index (four instructions a load); from the pointer a load's address is
    // one wide multiply-add of its 32-bit offset.
    asm("mov.b64 %0, %0;" : "+l"(plane_x_));
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) {
#pragma unroll
      for (int kh = 0; kh < KH; ++kh) {
        int d = d0_ + kd, h = h0_ + kh;
        if constexpr (kPlanar && kEdges) {
          real_row_[kd * KH + kh] = static_cast<unsigned>(d) < static_cast<unsigned>(a.in_d) &&
                                    static_cast<unsigned>(h) < static_cast<unsigned>(a.in_h);
          d = min(max(d, 0), a.in_d - 1);
          h = min(max(h, 0), a.in_h - 1);
        }
        row_at_[kd * KH + kh] = (d * a.in_h + h) * a.in_w;
      }
    }
  }

  // Issues every load of the tile.
  __device__ __forceinline__ void load(const SmallAvgArgs& a) {
    const int c0 = ow0_ * SW;  // the chunk's first column
    // A chunk past the row's end (ceil mode) reads the row's last chunk, masked out.
    const int chunk_column = kEdges ? min(c0, a.in_w - kChunk) : c0;
    int column[kSpan];
#pragma unroll
    for (int i = 0; i < kSpan; ++i) column[i] = min(max(c0 - PW + i, 0), a.in_w - 1);
    // Every load as torch.compile's kernels issue theirs (core/evict_last.cuh): on these calls of a
    // few DRAM round trips, far faster than the read-only path (__ldg, or evict-first chunks) on the
    // f32 rows, though no two taps of a video window share a sector (not L1 reuse).
    const uint64_t policy = evict_last_policy();
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const auto* vectors = reinterpret_cast<const Vector*>(plane_x_ + (row_at_[r] + chunk_column));
#pragma unroll
      for (int v = 0; v < kLoads; ++v) chunk_[r][v] = load_evict_last(vectors + v, policy);
#pragma unroll
      for (int i = 0; i < kSpan; ++i) {
        if (!in_chunk(i)) halo_[r][i] = load_evict_last(plane_x_ + (row_at_[r] + column[i]), policy);
      }
    }
    keep_loads_above(a.in_w <= 0);
  }

  // Sums each output's real taps, divides and stores.
  __device__ __forceinline__ void reduce_and_store(T* __restrict__ y, const SmallAvgArgs& a) const {
    const int c0 = ow0_ * SW;
    // The chunk lies wholly inside the row or wholly past its end: one test for its columns.
    [[maybe_unused]] const bool chunk_inside = c0 < a.in_w;
    [[maybe_unused]] bool real_column[kSpan];
    if constexpr (kEdges) {
#pragma unroll
      for (int i = 0; i < kSpan; ++i) {
        real_column[i] =
            in_chunk(i) ? chunk_inside : static_cast<unsigned>(c0 - PW + i) < static_cast<unsigned>(a.in_w);
      }
    }
    // The divisors first: they need no loaded data, so they are worked out while the loads are in
    // flight.
    float scale[kCols];
#pragma unroll
    for (int j = 0; j < kCols; ++j) scale[j] = a.scale;
    if constexpr (kEdges) {
      if (a.counted) {
        const int depth_and_row_taps = kPlanar ? avg_window_taps(d0_, KD, a.in_d, a.pad_d, a.count_include_pad) *
                                                     avg_window_taps(h0_, KH, a.in_h, a.pad_h, a.count_include_pad)
                                               : 1;
#pragma unroll
        for (int j = 0; j < kCols; ++j) {
          scale[j] = taps_reciprocal(depth_and_row_taps *
                                     avg_window_taps(c0 + j * SW - PW, KW, a.in_w, PW, a.count_include_pad));
        }
      }
    }
    // Sums start from their first term, not from 0.f: adding 0.f is not an identity the compiler
    // may drop (-0.f + 0.f is +0.f), one add a term.
    float sum[kCols];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      T span[kSpan];
#pragma unroll
      for (int i = 0; i < kSpan; ++i) span[i] = in_chunk(i) ? chunk_element(r, i - PW) : halo_[r][i];
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        float row_sum;
#pragma unroll
        for (int k = 0; k < KW; ++k) {
          // Converted before the choice: a conversion under a condition becomes a branch.
          float value = to_float(span[j * SW + k]);
          if constexpr (kEdges) value = real_column[j * SW + k] ? value : 0.f;
          row_sum = k == 0 ? value : row_sum + value;
        }
        if constexpr (kPlanar && kEdges) row_sum = real_row_[r] ? row_sum : 0.f;
        sum[j] = r == 0 ? row_sum : sum[j] + row_sum;
      }
    }
    T out[kCols];
#pragma unroll
    for (int j = 0; j < kCols; ++j) out[j] = from_float<T>(sum[j] * scale[j]);
    [[maybe_unused]] const int64_t no_indices[kCols] = {};
    store_tile_row<Window, false>(y, nullptr, int64_t{line_} * a.out_w + ow0_, ow0_, a.out_w,
                                  kCols == 1 || a.whole_tiles, out, no_indices);
  }

 private:
  const T* plane_x_;
  int line_, ow0_;
  int d0_ = 0, h0_ = 0;  // the window's first depth and row (3-D)
  int row_at_[kRows];    // each window row's offset in the plane, clamped into it
  bool real_row_[kRows];
  Vector chunk_[kRows][kLoads];
  T halo_[kRows][kSpan];  // indexed by span column; only the columns outside the chunk are loaded

  __device__ __forceinline__ T chunk_element(int r, int e) const {
    T elements[kVector];
    std::memcpy(elements, &chunk_[r][e / kVector], sizeof(Vector));
    return elements[e % kVector];
  }
};

template <class T, class Window, bool kPlanar, bool kEdges>
__global__ void __launch_bounds__(kSmallAvgThreads)
    small_avg_pool_kernel(const T* __restrict__ x, T* __restrict__ y, const SmallAvgArgs a) {
  const int index = blockIdx.x * kSmallAvgThreads + threadIdx.x;
  if (index >= a.tiles) return;
  SmallAvgTile<T, Window, kPlanar, kEdges> tile(x, a, index);
  tile.load(a);
  tile.reduce_and_store(y, a);
}

// Whether some window of the call (dilation 1) reaches outside the input: padding, or a ceil-mode
// window past the input's end.
inline bool has_edges(const PoolGeometry& g) {
  const auto past_end = [](int in, int out, int kernel, int stride) { return int64_t{out - 1} * stride + kernel > in; };
  return g.pad_d != 0 || g.pad_h != 0 || g.pad_w != 0 || past_end(g.in_d, g.out_d, g.kernel_d, g.stride_d) ||
         past_end(g.in_h, g.out_h, g.kernel_h, g.stride_h) || past_end(g.in_w, g.out_w, g.kernel_w, g.stride_w);
}

// Whether the call's windows differ in divisor, and the reciprocal of the one they share if not
// (spec §4.1): with count_include_pad a window's divisor is its taps within the padded extent, which
// only a ceil-mode window past that extent has fewer of; without, its real taps.
inline void set_small_avg_divisor(const PoolGeometry& g, SmallAvgArgs& a) {
  const auto past_padded_end = [](int in, int out, int kernel, int stride, int pad) {
    return int64_t{out - 1} * stride - pad + kernel > int64_t{in} + pad;
  };
  const bool ceil_overhang = past_padded_end(g.in_d, g.out_d, g.kernel_d, g.stride_d, g.pad_d) ||
                             past_padded_end(g.in_h, g.out_h, g.kernel_h, g.stride_h, g.pad_h) ||
                             past_padded_end(g.in_w, g.out_w, g.kernel_w, g.stride_w, g.pad_w);
  a.count_include_pad = g.count_include_pad;
  a.counted = g.divisor_override == 0 && (g.count_include_pad ? ceil_overhang : has_edges(g));
  const int divisor = g.divisor_override != 0 ? g.divisor_override : g.kernel_d * g.kernel_h * g.kernel_w;
  a.scale = 1.f / static_cast<float>(divisor);
}

// Runs the call (its window is Window's, x is aligned to the vector and in_w a multiple of the
// chunk: the caller checks) with small_avg_pool_kernel.
template <class T, class Window, bool kPlanar, bool kEdges>
void launch_small_avg(std::string_view op, const PoolGeometry& g, const T* x, T* y, cudaStream_t stream) {
  SmallAvgArgs a{};
  a.in_d = g.in_d;
  a.in_h = g.in_h;
  a.in_w = g.in_w;
  a.in_volume = g.in_d * g.in_h * g.in_w;
  a.pad_d = g.pad_d;
  a.pad_h = g.pad_h;
  a.out_w = g.out_w;
  const int64_t col_tiles = ceil_div(g.out_w, Window::kCols);
  a.col_tiles = FastDivisor(static_cast<int>(col_tiles));
  a.out_h = FastDivisor(g.out_h);
  a.out_d = FastDivisor(g.out_d);
  a.whole_tiles = g.out_w % Window::kCols == 0 && aligned_to(y, Window::kValuesAlignment);
  set_small_avg_divisor(g, a);
  const int64_t in_volume = int64_t{g.in_d} * g.in_h * g.in_w, out_volume = int64_t{g.out_d} * g.out_h * g.out_w;
  const int64_t tiles_per_plane = int64_t{g.out_d} * g.out_h * col_tiles;
  for_each_plane_group(g.planes, tiles_per_plane, kSmallAvgThreads, [&](int64_t first, int tiles, unsigned blocks) {
    a.tiles = tiles;
    small_avg_pool_kernel<T, Window, kPlanar, kEdges>
        <<<blocks, kSmallAvgThreads, 0, stream>>>(x + first * in_volume, y + first * out_volume, a);
    check_launch(op);
  });
}

}  // namespace solops::detail
