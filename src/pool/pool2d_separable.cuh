// 2-D max and average pooling for windows fixed at compile time (dilation 1), straight from
// global memory.
//
// A thread computes kRows × kCols outputs of one plane: kCols adjacent outputs of kRows adjacent
// output rows. For every input row those outputs read it loads one span of columns (16-byte loads
// where rows are 16-byte aligned), reduces each output's taps of that row once, and then combines
// the row results down the window. Input rows shared by vertically adjacent outputs are loaded
// and reduced once, each input element is loaded by one thread (halo columns aside: re-read
// through L1, or shuffled from the neighbouring lanes), and all loads of a thread are issued before
// it waits for any of them.
//
// Taps outside the input (padding, or a ceil-mode overhang) read the nearest real tap of the same
// window instead. The max is unchanged by such a duplicate, and the duplicates of the first real
// row or column come just before their originals in scan order, those of the last just after, so
// ties (first wins) and NaNs (last wins) still report the same position. The average masks the
// duplicates out instead. This keeps the tap loops free of branches.
#pragma once

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/evict_last.cuh"
#include "core/integer.hpp"
#include "pool/pool2d_kernel_common.cuh"

namespace solops::detail {

// The compile-time window (kernel KH × KW, stride SH × SW, column padding PW) and the tile of
// outputs one thread computes for it (kOutputRows rows, row loads of kChunkVectors vectors of
// kVectorBytes).
template <class T, int KH, int KW, int SH, int SW, int PW, int kOutputRows, int kVectorBytes = 16,
          int kChunkVectors = 1>
struct SeparableWindow {
  static_assert(kVectorBytes == 16 || kVectorBytes == 8 || kVectorBytes == 4);
  using Vector = std::conditional_t<kVectorBytes == 16, uint4, std::conditional_t<kVectorBytes == 8, uint2, unsigned>>;
  static constexpr int kVector = kVectorBytes / sizeof(T);  // elements of one vector load
  // Input columns a thread owns in a row: whole vector loads that end on an output boundary.
  static constexpr int kChunk = std::lcm(kVector, SW) * kChunkVectors;
  static constexpr int kCols = kChunk / SW;
  static constexpr int kRows = kOutputRows;
  static constexpr int kInputRows = (kRows - 1) * SH + KH;
  // A row span is the chunk with PW columns before it and the columns the last window reads past it.
  static constexpr int kSpan = PW + kChunk + std::max(0, KW - SW - PW);
  // Alignment of one output row of a tile, for the whole-tile stores.
  static constexpr size_t kValuesAlignment = std::min<size_t>(16, kCols * sizeof(T));
  static constexpr size_t kIndicesAlignment = std::min<size_t>(16, kCols * sizeof(int64_t));
  static constexpr int kernel_h = KH, kernel_w = KW, stride_h = SH, stride_w = SW, pad_w = PW;
  // Left padding columns of a span are only ever those of the first chunk of a row.
  static_assert(PW <= kChunk);
};

struct SeparableTiling {
  FastDivisor tiles_per_plane, col_tiles;  // thread tiles in a plane, and across an output row
  int tiles;                               // planes of this launch * tiles per plane
};

// Where a thread's row span sits among the lanes of its warp: whether the lanes on either side
// hold the chunks next to its own in the same input row, so that halo columns can be shuffled
// from them instead of loaded.
struct LaneNeighbours {
  bool left, right;
};

// The span of one input row a thread reads: columns c0 - PW onwards, each column outside the
// row replaced by the nearest real one. Loading and reading are separate steps so that a thread
// issues the loads of all its rows before it waits for any of them.
//
// kAligned: the row starts aligned to the vector and in_w is a multiple of the chunk, so the chunk
// is either wholly inside the row (vector loads) or wholly past its end (then every chunk column is
// the last real column); the halo columns are loaded one by one, or with kShuffleHalo taken from
// the neighbouring lanes' chunks where they hold them. Otherwise every column is a separate load.
template <class Window, bool kAligned, class T, bool kShuffleHalo = false>
struct RowSpan {
  static constexpr int kLoads = Window::kChunk / Window::kVector;
  static constexpr int kSpan = Window::kSpan, kChunk = Window::kChunk, kPad = Window::pad_w;

  using Vector = typename Window::Vector;

  // Issues the loads: kAligned, the chunk's vector loads and the halo loads the neighbouring lanes
  // cannot supply; otherwise one load per column. Loaded as torch.compile's kernels load theirs
  // (core/evict_last.cuh), which beat __ldg on the 2-D rows; the 3-D positions rows that share
  // this span lost a little, taken with the 2-D gain (docs/perf/pool.md).
  __device__ __forceinline__ void load(const T* __restrict__ row, int c0, int in_w, const int (&column)[kSpan],
                                       uint64_t policy, LaneNeighbours lanes = {}) {
    if constexpr (kAligned) {
      chunk_inside = c0 < in_w;
      const auto* vectors = reinterpret_cast<const Vector*>(row + (chunk_inside ? c0 : in_w - kChunk));
#pragma unroll
      for (int v = 0; v < kLoads; ++v) chunk[v] = load_evict_last(vectors + v, policy);
    }
#pragma unroll
    for (int i = 0; i < kSpan; ++i) {
      if (kAligned && in_chunk(i)) continue;
      const bool shuffled = kAligned && kShuffleHalo && (i < kPad ? lanes.left || c0 == 0 : lanes.right);
      if (!shuffled) halo[i] = load_evict_last(row + column[i], policy);
    }
  }

  // The span's values, each column outside the row replaced by the nearest real one. With
  // kShuffleHalo every lane of the warp must call it together.
  __device__ __forceinline__ void read(T (&value)[kSpan], int c0, LaneNeighbours lanes = {}) const {
    if constexpr (kAligned) {
#pragma unroll
      for (int i = 0; i < kSpan; ++i) value[i] = in_chunk(i) ? chunk_value(i - kPad) : halo[i];
      if constexpr (kShuffleHalo) {
#pragma unroll
        for (int i = 0; i < kSpan; ++i) {
          if (i < kPad) {
            // Column c0 - kPad + i: the left lane's chunk element kChunk - kPad + i, or (first chunk
            // of the row) the padding, which reads column 0.
            const T from_left = __shfl_up_sync(~0u, chunk_value(kChunk - kPad + i), 1);
            value[i] = c0 == 0 ? chunk_value(0) : lanes.left ? from_left : value[i];
          } else if (!in_chunk(i)) {
            const T from_right = __shfl_down_sync(~0u, chunk_value(i - kPad - kChunk), 1);
            value[i] = lanes.right ? from_right : value[i];
          }
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < kSpan; ++i) value[i] = halo[i];
    }
  }

 private:
  Vector chunk[kAligned ? kLoads : 1];
  T halo[kSpan];  // indexed by span column: kAligned, the halo columns; otherwise every column
  bool chunk_inside;

  __host__ __device__ static constexpr bool in_chunk(int i) { return i >= kPad && i < kPad + kChunk; }

  // Chunk element e, or the row's last column where the chunk lies past the row's end.
  __device__ __forceinline__ T chunk_value(int e) const {
    // Both indices are compile-time once the callers' loops unroll: no local-memory indexing.
    return chunk_inside ? chunk_element(e) : chunk_element(kChunk - 1);
  }
  __device__ __forceinline__ T chunk_element(int e) const {
    T elements[Window::kVector];
    std::memcpy(elements, &chunk[e / Window::kVector], sizeof(Vector));
    return elements[e % Window::kVector];
  }
};

// The columns of the row span of the tile whose first output column is ow0, clamped into the
// input, and (where `real` is given) which of them are real.
template <class Window>
__device__ __forceinline__ void span_columns(int ow0, int in_w, int (&column)[Window::kSpan], bool* real) {
#pragma unroll
  for (int i = 0; i < Window::kSpan; ++i) {
    const int c = ow0 * Window::stride_w - Window::pad_w + i;
    if (real) real[i] = static_cast<unsigned>(c) < static_cast<unsigned>(in_w);
    column[i] = min(max(c, 0), in_w - 1);
  }
}

// Each output's taps of one input row, reduced across the row: the sum of the real taps for the
// average, else the max (and its column, for positions). The 3-D kernel reduces its rows the same way.
template <Reduction kReduction, class Window, class T, class RowValue>
__device__ __forceinline__ void reduce_across_row(const T (&span)[Window::kSpan],
                                                  const int (&column)[Window::kSpan],
                                                  const bool (&real_column)[Window::kSpan],
                                                  RowValue (&value)[Window::kCols],
                                                  int (&best_column)[Window::kCols]) {
  constexpr int KW = Window::kernel_w, SW = Window::stride_w;
#pragma unroll
  for (int j = 0; j < Window::kCols; ++j) {
    const int first = j * SW;
    if constexpr (kReduction == Reduction::avg) {
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < KW; ++k) {
        // Converted before the choice: a conversion under a condition becomes a branch (it is
        // inline assembly), and branches let the compiler sink loads past other rows' work.
        const float value = to_float(span[first + k]);
        sum += real_column[first + k] ? value : 0.f;
      }
      value[j] = sum;
    } else if constexpr (kReduction == Reduction::max_with_index) {
      T best = span[first];
      int best_at = column[first];
#pragma unroll
      for (int k = 1; k < KW; ++k) {
        if (replaces_best(to_float(span[first + k]), to_float(best))) {
          best = span[first + k];
          best_at = column[first + k];
        }
      }
      value[j] = best;
      best_column[j] = best_at;
    } else {
      T best = span[first];
#pragma unroll
      for (int k = 1; k < KW; ++k) best = max_propagating_nan(best, span[first + k]);
      value[j] = best;
    }
  }
}

// The max of output row o, column j, from its window's row results (reduce_across_row) in scan
// order, and with positions its flat position in the plane: combining each row's first maximum (or
// last NaN) in row order gives the window's.
template <Reduction kReduction, int KH, int SH, class T, int kInputRows, int kCols>
__device__ __forceinline__ void max_down_window(const T (&row_value)[kInputRows][kCols],
                                                const int (&row_column)[kInputRows][kCols],
                                                const int (&input_row)[kInputRows], int in_w, int o, int j,
                                                T& out, int64_t& out_index) {
  T best = row_value[o * SH][j];
  if constexpr (kReduction == Reduction::max_with_index) {
    int best_index = input_row[o * SH] * in_w + row_column[o * SH][j];
#pragma unroll
    for (int kh = 1; kh < KH; ++kh) {
      const int r = o * SH + kh;
      if (replaces_best(to_float(row_value[r][j]), to_float(best))) {
        best = row_value[r][j];
        best_index = input_row[r] * in_w + row_column[r][j];
      }
    }
    out_index = best_index;
  } else {
#pragma unroll
    for (int kh = 1; kh < KH; ++kh) best = max_propagating_nan(best, row_value[o * SH + kh][j]);
  }
  out = best;
}

// Stores the kCols outputs (and positions) of one output row that start at column ow0, at
// first_out. whole_tile: out_w is a multiple of kCols and the outputs are aligned to their tile,
// so the tile is one store; otherwise each output inside the row is stored on its own.
template <class Window, bool kWithIndex, class T>
__device__ __forceinline__ void store_tile_row(T* __restrict__ y, int64_t* __restrict__ indices,
                                               int64_t first_out, int ow0, int out_w, bool whole_tile,
                                               const T (&out)[Window::kCols],
                                               const int64_t (&out_index)[Window::kCols]) {
  constexpr int kCols = Window::kCols;
  if (whole_tile) {
    struct alignas(Window::kValuesAlignment) Values { T v[kCols]; };
    Values values;
#pragma unroll
    for (int j = 0; j < kCols; ++j) values.v[j] = out[j];
    *reinterpret_cast<Values*>(y + first_out) = values;
    if constexpr (kWithIndex) {
      struct alignas(Window::kIndicesAlignment) Indices { int64_t v[kCols]; };
      Indices tile_indices;
#pragma unroll
      for (int j = 0; j < kCols; ++j) tile_indices.v[j] = out_index[j];
      *reinterpret_cast<Indices*>(indices + first_out) = tile_indices;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      if (ow0 + j < out_w) {
        y[first_out + j] = out[j];
        if constexpr (kWithIndex) indices[first_out + j] = out_index[j];
      }
    }
  }
}

template <class T, Reduction kReduction, class Window, bool kAligned, bool kShuffleHalo>
struct SeparableTile {
  static constexpr int KH = Window::kernel_h, KW = Window::kernel_w, SH = Window::stride_h,
                       SW = Window::stride_w, PW = Window::pad_w;
  static constexpr int kRows = Window::kRows, kCols = Window::kCols, kSpan = Window::kSpan;
  static constexpr int kInputRows = Window::kInputRows;
  static constexpr bool kAvg = kReduction == Reduction::avg;
  static constexpr bool kWithIndex = kReduction == Reduction::max_with_index;

  int plane, oh0, ow0;
  LaneNeighbours lanes;
  int input_row[kInputRows];  // clamped into the input
  bool real_row[kInputRows];
  RowSpan<Window, kAligned, T, kShuffleHalo> spans[kInputRows];

  // Issues the loads of tile `index`; nothing waits for them until reduce_and_store. Tiles run
  // across output rows first, so the lanes beside a thread hold the chunks beside its own.
  __device__ __forceinline__ void load(const T* __restrict__ x, const Pool2dArgs& a,
                                       const SeparableTiling& tiling, int index) {
    plane = tiling.tiles_per_plane.divide(index);
    const int in_plane_tile = index - plane * tiling.tiles_per_plane.divisor();
    const int row_tile = tiling.col_tiles.divide(in_plane_tile);
    const int col_tile = in_plane_tile - row_tile * tiling.col_tiles.divisor();
    oh0 = row_tile * kRows;
    ow0 = col_tile * kCols;
    const int lane = threadIdx.x % 32;
    lanes = {lane > 0 && col_tile > 0,
             lane < 31 && col_tile + 1 < tiling.col_tiles.divisor() && index + 1 < tiling.tiles};
    int column[kSpan];
    columns(a, column, nullptr);
    const int64_t in_plane = int64_t{a.in_h} * a.in_w;
    const T* const plane_x = x + plane * in_plane;
    const int ih0 = oh0 * SH - a.pad_h;
    // One policy for every load of the tile, not one a load: fewer instructions.
    const uint64_t policy = read_once_policy(kReduction == Reduction::max && a.evict_first);
#pragma unroll
    for (int r = 0; r < kInputRows; ++r) {
      real_row[r] = static_cast<unsigned>(ih0 + r) < static_cast<unsigned>(a.in_h);
      input_row[r] = min(max(ih0 + r, 0), a.in_h - 1);
      spans[r].load(plane_x + input_row[r] * a.in_w, ow0 * SW, a.in_w, column, policy, lanes);
    }
  }

  __device__ __forceinline__ void reduce_and_store(T* __restrict__ y, int64_t* __restrict__ indices,
                                                   const Pool2dArgs& a, bool store) const {
    int column[kSpan];
    bool real_column[kSpan];
    columns(a, column, real_column);

    RowValue row_value[kInputRows][kCols];
    [[maybe_unused]] int row_column[kInputRows][kCols];  // with positions: each row's best column
#pragma unroll
    for (int r = 0; r < kInputRows; ++r) {
      T span[kSpan];
      spans[r].read(span, ow0 * SW, lanes);
      reduce_across_row<kReduction, Window>(span, column, real_column, row_value[r], row_column[r]);
    }
    if (!store) return;

    // Combine the row results down each window, in scan order.
    [[maybe_unused]] int column_taps[kCols];  // the avg divisor's factor of each output column
    if constexpr (kAvg) {
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        column_taps[j] = avg_window_taps((ow0 + j) * SW - PW, KW, a.in_w, PW, a.count_include_pad);
      }
    }
    const int64_t out_plane = int64_t{a.out_h} * a.out_w;
#pragma unroll
    for (int o = 0; o < kRows; ++o) {
      const int oh = oh0 + o;
      if (oh >= a.out_h) break;
      [[maybe_unused]] const int row_taps =
          kAvg ? avg_window_taps(oh * SH - a.pad_h, KH, a.in_h, a.pad_h, a.count_include_pad) : 0;
      T out[kCols];
      [[maybe_unused]] int64_t out_index[kCols];
#pragma unroll
      for (int j = 0; j < kCols; ++j) {
        if constexpr (kAvg) {
          float sum = 0.f;
#pragma unroll
          for (int kh = 0; kh < KH; ++kh) sum += real_row[o * SH + kh] ? row_value[o * SH + kh][j] : 0.f;
          const int divisor = a.divisor_override != 0 ? a.divisor_override : row_taps * column_taps[j];
          out[j] = from_float<T>(window_average(sum, divisor));
        } else {
          max_down_window<kReduction, KH, SH>(row_value, row_column, input_row, a.in_w, o, j, out[j], out_index[j]);
        }
      }
      store_tile_row<Window, kWithIndex>(y, indices, int64_t{plane} * out_plane + int64_t{oh} * a.out_w + ow0, ow0,
                                         a.out_w, kAligned, out, out_index);
    }
  }

 private:
  // Sums over real taps for the average, else the max (with its column).
  using RowValue = std::conditional_t<kAvg, float, T>;

  __device__ __forceinline__ void columns(const Pool2dArgs& a, int (&column)[kSpan], bool* real) const {
    span_columns<Window>(ow0, a.in_w, column, real);
  }
};

// Lanes past the last tile of a partly used warp redo the last tile without storing it, so that
// every lane takes part in the halo shuffles.
template <class T, Reduction kReduction, class Window, bool kAligned, bool kShuffleHalo>
__global__ void __launch_bounds__(kPool2dThreads)
    pool2d_separable_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                            const Pool2dArgs a, const SeparableTiling tiling) {
  const int index = blockIdx.x * kPool2dThreads + threadIdx.x;
  if (index - static_cast<int>(threadIdx.x % 32) >= tiling.tiles) return;
  SeparableTile<T, kReduction, Window, kAligned, kShuffleHalo> tile;
  tile.load(x, a, tiling, min(index, tiling.tiles - 1));
  tile.reduce_and_store(y, indices, a, index < tiling.tiles);
}

}  // namespace solops::detail
