// 3-D max and average pooling for windows fixed at compile time (dilation 1), straight from
// global memory: the rows of the 2-D separable kernel (pool2d_separable.cuh) with a depth axis.
//
// A thread computes kCols adjacent outputs of one output row (od, oh) of one plane, for a run of
// consecutive output depths. For each output depth it loads the span of columns of every input
// row (d, h) the window reads (vector loads where rows are aligned), reduces each row
// across the window's columns, combines the rows of each depth tap in h order and then the depth
// taps in d order: the (d, h, w) scan order, so each row's first maximum (or last NaN) combined in
// that order is the window's. All loads of one output depth are issued before any is waited for.
// Tiles are 16 bytes of input columns per row (4 f16 or 2 f32 outputs of stride 2); the average's
// small grids take one output a thread instead (pool3d.cu), so each thread's chain is short.
//
// Where windows overlap along depth (kernel_d > stride_d), the depth taps an output depth shares
// with the next are reduced once and carried to it, so a run of R output depths loads
// kernel_d + (R - 1) * stride_d depth taps instead of R * kernel_d. Rows shared by the windows of
// neighbouring output rows are loaded by neighbouring threads of one block, through L1.
//
// Taps outside the input read the nearest real tap of the same window (rows and depth taps the
// nearest real row or depth slice), as in the 2-D kernel: the max and its position are unchanged by
// such a duplicate, and the average masks the duplicates out.
#pragma once

#include "pool/pool2d_separable.cuh"

namespace solops::detail {

constexpr int kPool3dThreads = 128;

// The geometry of one 3-D call, (D, H, W) per axis: every in-plane size fits in int32.
struct Pool3dArgs {
  int in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
  bool count_include_pad;
  bool evict_first;      // read_once_policy's choice for the input (input_evict_first)
  int divisor_override;  // 0 = none
  int64_t outputs;
};

// A compile-time 3-D window: the 2-D window's rows and columns (kCols outputs of one output row a
// thread, row loads of kChunkVectors vectors of kVectorBytes) with a kernel and stride along depth.
// Depth and row padding are read at run time; column padding is part of the window.
template <class T, int KD, int KH, int KW, int SD, int SH, int SW, int PW, int kVectorBytes, int kChunkVectors = 1>
struct Pool3dWindow : SeparableWindow<T, KH, KW, SH, SW, PW, 1, kVectorBytes, kChunkVectors> {
  static constexpr int kernel_d = KD, stride_d = SD;
  // Depth taps of an output depth that the next output depth shares.
  static constexpr int kCarried = KD > SD ? KD - SD : 0;
};

struct Pool3dTiling {
  FastDivisor col_tiles;        // thread tiles across an output row
  FastDivisor out_h;            // output rows of a depth
  int depth_run;                // output depths one thread computes
  FastDivisor tiles_per_plane;  // runs * out_h * col_tiles
  int tiles;                    // planes of this launch * tiles_per_plane
  bool whole_tiles;             // out_w is a multiple of kCols and the outputs are aligned to their tiles
};

template <class T, Reduction kReduction, class Window, bool kAligned>
class Pool3dTile {
  static constexpr int KD = Window::kernel_d, KH = Window::kernel_h, KW = Window::kernel_w,
                       SD = Window::stride_d, SH = Window::stride_h, SW = Window::stride_w,
                       PW = Window::pad_w;
  static constexpr int kCols = Window::kCols, kSpan = Window::kSpan, kCarried = Window::kCarried;
  static constexpr bool kAvg = kReduction == Reduction::avg;
  static constexpr bool kWithIndex = kReduction == Reduction::max_with_index;
  using Span = RowSpan<Window, kAligned, T>;
  // Per output: the sum of the real taps for the average, else the max.
  using Value = std::conditional_t<kAvg, float, T>;

  // One output's taps of one depth slice (or of its whole window), reduced.
  struct Partial {
    Value value[kCols];
    int at[kCols];  // with positions: the in-plane position of the value
  };

 public:
  __device__ __forceinline__ Pool3dTile(const Pool3dArgs& a, const Pool3dTiling& tiling, int index) {
    plane_ = tiling.tiles_per_plane.divide(index);
    const int tile = index - plane_ * tiling.tiles_per_plane.divisor();
    const int row = tiling.col_tiles.divide(tile);  // run * out_h + oh
    ow0_ = (tile - row * tiling.col_tiles.divisor()) * kCols;
    const int run = tiling.out_h.divide(row);
    oh_ = row - run * a.out[1];
    od_begin_ = run * tiling.depth_run;
    od_end_ = min(od_begin_ + tiling.depth_run, a.out[0]);
    span_columns<Window>(ow0_, a.in[2], column_, real_column_);
    const int ih0 = oh_ * SH - a.pad[1];
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      real_row_[kh] = static_cast<unsigned>(ih0 + kh) < static_cast<unsigned>(a.in[1]);
      input_row_[kh] = min(max(ih0 + kh, 0), a.in[1] - 1);
    }
  }

  __device__ __forceinline__ void run(const T* __restrict__ x, T* __restrict__ y,
                                      int64_t* __restrict__ indices, const Pool3dArgs& a,
                                      bool whole_tiles) const {
    const int in_volume = a.in[0] * a.in[1] * a.in[2], out_volume = a.out[0] * a.out[1] * a.out[2];
    const T* const plane_x = x + int64_t{plane_} * in_volume;
    const int64_t plane_out = int64_t{plane_} * out_volume;
    Partial carried[kCarried > 0 ? kCarried : 1];
    if constexpr (kCarried == 0) {
      output_depth(od_begin_, carried, plane_x, y, indices, plane_out, a, whole_tiles);
    } else {
      // The shared taps of the run's first output depth, loaded on their own so that no output
      // depth holds more than kernel_d - kCarried depth taps of rows in registers.
      Span rows[kCarried][KH];
      const int d0 = od_begin_ * SD - a.pad[0];
#pragma unroll
      for (int k = 0; k < kCarried; ++k) load_depth(rows[k], plane_x, d0 + k, a);
      keep_loads_above(a.in[0] <= 0);
#pragma unroll
      for (int k = 0; k < kCarried; ++k) carried[k] = reduce_depth(rows[k], d0 + k, a);
#pragma unroll 1
      for (int od = od_begin_; od < od_end_; ++od) {
        output_depth(od, carried, plane_x, y, indices, plane_out, a, whole_tiles);
      }
    }
  }

 private:
  int plane_, oh_, ow0_, od_begin_, od_end_;
  int column_[kSpan];  // the row span's columns, clamped into the input
  bool real_column_[kSpan];
  int input_row_[KH];  // the window's rows, clamped into the input
  bool real_row_[KH];

  // The outputs of output depth od: loads the depth taps not carried, reduces them, combines
  // them with the carried ones, stores, and carries the taps the next output depth shares.
  __device__ __forceinline__ void output_depth(int od, Partial (&carried)[kCarried > 0 ? kCarried : 1],
                                               const T* __restrict__ plane_x, T* __restrict__ y,
                                               int64_t* __restrict__ indices, int64_t plane_out,
                                               const Pool3dArgs& a, bool whole_tiles) const {
    const int d0 = od * SD - a.pad[0];
    Span rows[KD - kCarried][KH];
#pragma unroll
    for (int k = kCarried; k < KD; ++k) load_depth(rows[k - kCarried], plane_x, d0 + k, a);
    keep_loads_above(a.in[0] <= 0);
    Partial tap[KD];
#pragma unroll
    for (int k = 0; k < KD; ++k) tap[k] = k < kCarried ? carried[k] : reduce_depth(rows[k - kCarried], d0 + k, a);
#pragma unroll
    for (int k = 0; k < kCarried; ++k) carried[k] = tap[SD + k];
    combine_and_store(tap, od, a, y, indices, plane_out + (od * a.out[1] + oh_) * a.out[2] + ow0_, whole_tiles);
  }

  // Issues the loads of the window's rows in depth slice d (clamped into the input).
  __device__ __forceinline__ void load_depth(Span (&rows)[KH], const T* __restrict__ plane_x, int d,
                                             const Pool3dArgs& a) const {
    const int depth = min(max(d, 0), a.in[0] - 1);
    // One policy for the slice's loads, as the 2-D tile makes one (the 3-D rows measured level).
    const uint64_t policy = read_once_policy(kReduction == Reduction::max && a.evict_first);
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      rows[kh].load(plane_x + (depth * a.in[1] + input_row_[kh]) * a.in[2], ow0_ * SW, a.in[2], column_, policy);
    }
  }

  // Each output's taps in depth slice d: every row reduced across the window, the rows combined
  // in h order.
  __device__ __forceinline__ Partial reduce_depth(const Span (&rows)[KH], int d, const Pool3dArgs& a) const {
    const int depth = min(max(d, 0), a.in[0] - 1);
    [[maybe_unused]] const bool real_depth = depth == d;
    Partial p;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      Value row_value[kCols];
      [[maybe_unused]] int row_column[kCols];
      T span[kSpan];
      rows[kh].read(span, ow0_ * SW);
      reduce_across_row<kReduction, Window>(span, column_, real_column_, row_value, row_column);
      [[maybe_unused]] const int row_at = (depth * a.in[1] + input_row_[kh]) * a.in[2];
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        if constexpr (kAvg) {
          p.value[j] = (kh == 0 ? 0.f : p.value[j]) + (real_row_[kh] && real_depth ? row_value[j] : 0.f);
        } else if constexpr (kWithIndex) {
          if (kh == 0 || replaces_best(to_float(row_value[j]), to_float(p.value[j]))) {
            p.value[j] = row_value[j];
            p.at[j] = row_at + row_column[j];
          }
        } else {
          p.value[j] = kh == 0 ? row_value[j] : max_propagating_nan(p.value[j], row_value[j]);
        }
      }
    }
    return p;
  }

  // Combines the depth taps of output depth od in d order and stores the tile at first_out.
  __device__ __forceinline__ void combine_and_store(const Partial (&tap)[KD], int od, const Pool3dArgs& a,
                                                    T* __restrict__ y, int64_t* __restrict__ indices,
                                                    int64_t first_out, bool whole_tiles) const {
    T out[kCols];
    [[maybe_unused]] int64_t out_index[kCols];
    [[maybe_unused]] int depth_and_row_taps = 0;  // the avg divisor's factor of this output row
    if constexpr (kAvg) {
      depth_and_row_taps = avg_window_taps(od * SD - a.pad[0], KD, a.in[0], a.pad[0], a.count_include_pad) *
                           avg_window_taps(oh_ * SH - a.pad[1], KH, a.in[1], a.pad[1], a.count_include_pad);
    }
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      if constexpr (kAvg) {
        float sum = 0.f;
#pragma unroll
        for (int k = 0; k < KD; ++k) sum += tap[k].value[j];
        const int divisor = a.divisor_override != 0
                                ? a.divisor_override
                                : depth_and_row_taps * avg_window_taps((ow0_ + j) * SW - PW, KW, a.in[2], PW,
                                                                       a.count_include_pad);
        out[j] = from_float<T>(window_average(sum, divisor));
      } else if constexpr (kWithIndex) {
        T best = tap[0].value[j];
        int best_at = tap[0].at[j];
#pragma unroll
        for (int k = 1; k < KD; ++k) {
          if (replaces_best(to_float(tap[k].value[j]), to_float(best))) {
            best = tap[k].value[j];
            best_at = tap[k].at[j];
          }
        }
        out[j] = best;
        out_index[j] = best_at;
      } else {
        T best = tap[0].value[j];
#pragma unroll
        for (int k = 1; k < KD; ++k) best = max_propagating_nan(best, tap[k].value[j]);
        out[j] = best;
      }
    }
    store_tile_row<Window, kWithIndex>(y, indices, first_out, ow0_, a.out[2], whole_tiles, out, out_index);
  }
};

template <class T, Reduction kReduction, class Window, bool kAligned>
__global__ void __launch_bounds__(kPool3dThreads)
    pool3d_separable_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                            const Pool3dArgs a, const Pool3dTiling tiling) {
  const int index = blockIdx.x * kPool3dThreads + threadIdx.x;
  if (index >= tiling.tiles) return;
  Pool3dTile<T, kReduction, Window, kAligned>(a, tiling, index).run(x, y, indices, a, tiling.whole_tiles);
}

}  // namespace solops::detail
