// 2-D max and max with positions over rows that are not whole 16-byte vectors (widths that are not
// a multiple of the vector, planes that do not start on a vector boundary), for windows fixed at
// compile time whose width is at most twice their stride (dilation 1).
//
// A warp computes a row segment: kSegmentOutputs adjacent outputs of kSegmentRows adjacent output
// rows of one plane. Lane l loads the SW columns its window starts with in each input row the
// segment reads, so that one load instruction of the warp covers 32 * SW consecutive columns
// (coalesced, where the separable kernel's threads each load their own span column by column), and
// takes the window's other KW - SW columns from lane l + 1, one shuffle a row; lane 31 only supplies
// them. Each input row is loaded once per segment, all loads before the first shuffle.
//
// Taps outside the input read the nearest real tap, as in pool2d_separable.cuh: the max and the
// reported position are unchanged by such a duplicate.
#pragma once

#include <type_traits>

#include "core/evict_last.cuh"
#include "core/integer.hpp"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool2d_separable.cuh"

namespace solops::detail {

constexpr int kSegmentOutputs = 31;
// Output rows a segment: fewer re-read each segment's halo rows for fewer outputs, more cost
// registers; 2, 3, 7 and 9 rows measured slower or level.
constexpr int kSegmentRows = 4;
constexpr int kSegmentsPerBlock = kPool2dThreads / 32;

struct RowSegmentTiling {
  FastDivisor segments_per_plane, segments_per_row;
  int segments;  // planes of this launch * segments per plane
};

// One output's taps of a row, in the shape span_columns and reduce_across_row take.
template <int KW, int SW, int PW>
struct OneWindowOfARow {
  static constexpr int kSpan = KW, kCols = 1, kernel_w = KW, stride_w = SW, pad_w = PW;
};

template <class T>
using PackedPair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

// Max with positions on half types where the warp's rows hold no NaN: the scan rule (spec §4.2-4.3)
// then reports the first tap in scan order that equals the window's max, so each row's max is taken
// with packed max instructions, two input rows a pair, and its first column from packed equality
// masks: 6 instructions a pair of 3-tap rows where the tap-by-tap scan (replaces_best in f32) takes
// 5 a tap. These rows are bound by instructions; the packed path costs 6 more registers than the
// scan alone (docs/perf/pool.md). Returns false, storing nothing, where any of
// the warp's rows holds a NaN, whose window reports its last NaN: the caller then runs the scan tap
// by tap. A duplicated tap outside the input (span_columns' clamp) never comes first among equal
// taps on the right, and on the left it stands for column 0, so the first equal tap's column is its
// start column clamped at 0.
template <int KH, int KW, int SH, int SW, int PW, class T, int kInputRows>
__device__ __forceinline__ bool first_maxima_in_row_pairs(const T (&own)[kInputRows][SW],
                                                          const int (&input_row)[kInputRows], int lane, int ow,
                                                          int plane, int oh0, const Pool2dArgs& a,
                                                          T* __restrict__ y, int64_t* __restrict__ indices) {
  using Pair = PackedPair<T>;
  constexpr int kPairs = (kInputRows + 1) / 2;
  Pair pair_max[kPairs];
  unsigned pair_tap[kPairs];  // in each 16-bit half, the row's first tap equal to its max
  Pair any_nan;
#pragma unroll
  for (int p = 0; p < kPairs; ++p) {
    const int r0 = 2 * p, r1 = min(2 * p + 1, kInputRows - 1);
    Pair taps[KW];
#pragma unroll
    for (int k = 0; k < SW; ++k) taps[k] = Pair(own[r0][k], own[r1][k]);
#pragma unroll
    for (int k = SW; k < KW; ++k) taps[k] = __shfl_down_sync(~0u, taps[k - SW], 1);
    Pair best = taps[0];
#pragma unroll
    for (int k = 1; k < KW; ++k) best = __hmax2_nan(best, taps[k]);
    unsigned tap = (KW - 1) * 0x10001u;
#pragma unroll
    for (int k = KW - 2; k >= 0; --k) {
      const unsigned equal = __heq2_mask(taps[k], best);
      tap = (equal & (k * 0x10001u)) | (~equal & tap);
    }
    pair_max[p] = best;
    pair_tap[p] = tap;
    any_nan = p == 0 ? best : __hmax2_nan(any_nan, best);
  }
  if (__any_sync(~0u, __hneu2_mask(any_nan, any_nan) != 0)) return false;
  if (lane >= kSegmentOutputs || ow >= a.out_w) return true;

  T row_max[kInputRows];
  int row_index[kInputRows];  // flat position of the row's first max in the plane
#pragma unroll
  for (int r = 0; r < kInputRows; ++r) {
    const Pair pair = pair_max[r / 2];
    row_max[r] = r % 2 == 0 ? pair.x : pair.y;
    const int tap = static_cast<int>(r % 2 == 0 ? pair_tap[r / 2] & 0xffffu : pair_tap[r / 2] >> 16);
    const int column = PW > 0 ? max(ow * SW - PW + tap, 0) : ow * SW + tap;
    row_index[r] = input_row[r] * a.in_w + column;
  }
  const int64_t out_plane = int64_t{a.out_h} * a.out_w;
#pragma unroll
  for (int o = 0; o < kSegmentRows; ++o) {
    const int oh = oh0 + o;
    if (oh >= a.out_h) break;
    T best = row_max[o * SH];
#pragma unroll
    for (int kh = 1; kh < KH; ++kh) best = __hmax_nan(best, row_max[o * SH + kh]);
    int index = row_index[o * SH + KH - 1];
#pragma unroll
    for (int kh = KH - 2; kh >= 0; --kh) {
      if (__heq(row_max[o * SH + kh], best)) index = row_index[o * SH + kh];
    }
    const int64_t at = int64_t{plane} * out_plane + int64_t{oh} * a.out_w + ow;
    y[at] = best;
    indices[at] = index;
  }
  return true;
}

// kEvictFirst: the input loaded evict-first (input_evict_first), compiled in rather than read from
// the arguments: these rows are bound by instructions, and a run-time choice (a branch, or the
// fractional policy's eight instructions) measured slower on them.
template <class T, Reduction kReduction, int KH, int KW, int SH, int SW, int PW, bool kEvictFirst>
__global__ void __launch_bounds__(kPool2dThreads)
    pool2d_row_segments_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                               const Pool2dArgs a, const RowSegmentTiling tiling) {
  static_assert(KW >= SW && KW <= 2 * SW, "a window's taps are its lane's columns and the next lane's");
  static_assert(kReduction != Reduction::avg);
  using Taps = OneWindowOfARow<KW, SW, PW>;
  constexpr int kInputRows = (kSegmentRows - 1) * SH + KH;
  const int segment = static_cast<int>(blockIdx.x) * kSegmentsPerBlock + static_cast<int>(threadIdx.x) / 32;
  if (segment >= tiling.segments) return;  // whole warps: every lane of a segment takes part in its shuffles
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int plane = tiling.segments_per_plane.divide(segment);
  const int in_plane = segment - plane * tiling.segments_per_plane.divisor();
  const int row_group = tiling.segments_per_row.divide(in_plane);
  const int oh0 = row_group * kSegmentRows;
  const int ow = (in_plane - row_group * tiling.segments_per_row.divisor()) * kSegmentOutputs + lane;

  int column[KW];
  bool real_column[KW];  // reduce_across_row's mask, which only the average reads
  span_columns<Taps>(ow, a.in_w, column, real_column);
  // Opaque to ptxas, so that each load's address is one wide multiply-add of its 32-bit offset in
  // the plane: ptxas otherwise folds the plane's 64-bit offset into every address (f32 values, 3x3
  // window: 34-40 registers and 304 instructions where this takes 32 and 224).
  const T* plane_x = x + int64_t{plane} * a.in_h * a.in_w;
  asm("mov.b64 %0, %0;" : "+l"(plane_x));
  const int ih0 = oh0 * SH - a.pad_h;
  const uint64_t policy = kEvictFirst ? evict_first_policy() : evict_last_policy();
  int input_row[kInputRows];
  T own[kInputRows][SW];
#pragma unroll
  for (int r = 0; r < kInputRows; ++r) {
    input_row[r] = min(max(ih0 + r, 0), a.in_h - 1);
#pragma unroll
    for (int s = 0; s < SW; ++s) own[r][s] = load_evict_last(plane_x + (input_row[r] * a.in_w + column[s]), policy);
  }
  keep_loads_above(a.in_w <= 0);
  if constexpr (kReduction == Reduction::max_with_index && sizeof(T) == 2) {
    if (first_maxima_in_row_pairs<KH, KW, SH, SW, PW>(own, input_row, lane, ow, plane, oh0, a, y, indices)) return;
  }

  T row_value[kInputRows][1];
  int row_column[kInputRows][1];
#pragma unroll
  for (int r = 0; r < kInputRows; ++r) {
    T taps[KW];
#pragma unroll
    for (int k = 0; k < SW; ++k) taps[k] = own[r][k];
#pragma unroll
    for (int k = SW; k < KW; ++k) taps[k] = __shfl_down_sync(~0u, own[r][k - SW], 1);
    reduce_across_row<kReduction, Taps>(taps, column, real_column, row_value[r], row_column[r]);
  }
  if (lane >= kSegmentOutputs || ow >= a.out_w) return;
  const int64_t out_plane = int64_t{a.out_h} * a.out_w;
#pragma unroll
  for (int o = 0; o < kSegmentRows; ++o) {
    const int oh = oh0 + o;
    if (oh >= a.out_h) break;
    T out;
    int64_t out_index;
    max_down_window<kReduction, KH, SH>(row_value, row_column, input_row, a.in_w, o, 0, out, out_index);
    const int64_t at = int64_t{plane} * out_plane + int64_t{oh} * a.out_w + ow;
    y[at] = out;
    if constexpr (kReduction == Reduction::max_with_index) indices[at] = out_index;
  }
}

}  // namespace solops::detail
