// Launchers of the 2-D pooling kernels (pool2d_disjoint.cuh, pool2d_separable.cuh,
// pool2d_row_segments.cuh, pool2d_staged.cuh) and the choice between them.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/device.hpp"
#include "core/integer.hpp"
#include "pool/pool_launch.hpp"
#include "pool/pool2d_disjoint.cuh"
#include "pool/pool2d_row_segments.cuh"
#include "pool/pool2d_separable.cuh"
#include "pool/pool2d_staged.cuh"

namespace solops::detail {
namespace {

// ~16 KB of staged input per block lets 8 blocks of 256 threads share an SM's shared memory,
// enough bytes in flight to cover DRAM latency.
constexpr int64_t kBandBytesTarget = 16 * 1024;
// Small problems are split into more tiles so that every SM gets several blocks.
constexpr int kMinBlocksPerSm = 4;
// Bytes of each input row a thread of the disjoint kernel loads: 8 for max with positions on half
// types (two outputs a thread), 16 otherwise. The 8-byte grid has twice the waves of the 16-byte
// one: the half types' positions rows gain from that, the values and f32 rows lose; 32 bytes lose
// on every row.
template <class T, Reduction kReduction>
constexpr int kDisjointLoadBytes = kReduction == Reduction::max_with_index && sizeof(T) == 2 ? 8 : 16;
// Outputs per block when taps are read from global memory.
constexpr int kUnstagedOutputsPerBlock = kPool2dThreads * 4;

Pool2dArgs kernel_args(const PoolGeometry& g, bool evict_first) {
  return {g.in_h,       g.in_w,       g.out_h,    g.out_w,    g.kernel_h,          g.kernel_w,
          g.stride_h,   g.stride_w,   g.pad_h,    g.pad_w,    g.dilation_h,        g.dilation_w,
          g.count_include_pad, evict_first, g.divisor_override};
}

// Vector row loads need aligned rows and whole chunks; whole-tile stores need out_w to be a
// multiple of the tile width and aligned outputs.
template <class Window>
bool whole_vector_tiles(const PoolGeometry& g, const TensorRef& x, const TensorRef& y, const int64_t* indices) {
  return aligned_to(x.data, 16) && g.in_w % Window::kChunk == 0 && g.out_w % Window::kCols == 0 &&
         aligned_to(y.data, Window::kValuesAlignment) &&
         (indices == nullptr || aligned_to(indices, Window::kIndicesAlignment));
}

// Launches `kernel`, an instance of pool2d_separable_kernel for Window, over the planes.
template <class T, Reduction kReduction, class Window, class Kernel>
void launch_separable_kernel(std::string_view op, Kernel kernel, const PoolGeometry& g, const TensorRef& x,
                             const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  const auto* x_data = static_cast<const T*>(x.data);
  auto* y_data = static_cast<T*>(y.data);
  const int64_t row_tiles = ceil_div(g.out_h, Window::kRows), col_tiles = ceil_div(g.out_w, Window::kCols);
  const int64_t tiles_per_plane = row_tiles * col_tiles;
  SeparableTiling tiling{FastDivisor(static_cast<int>(tiles_per_plane)), FastDivisor(static_cast<int>(col_tiles)), 0};
  const int64_t in_plane = int64_t{g.in_h} * g.in_w, out_plane = int64_t{g.out_h} * g.out_w;
  const bool evict_first = input_evict_first<T, kReduction>(g, x);
  for_each_plane_group(g.planes, tiles_per_plane, kPool2dThreads, [&](int64_t first, int tiles, unsigned blocks) {
    tiling.tiles = tiles;
    int64_t* launch_indices = indices ? indices + first * out_plane : nullptr;
    kernel<<<blocks, kPool2dThreads, 0, stream>>>(x_data + first * in_plane, y_data + first * out_plane,
                                                  launch_indices, kernel_args(g, evict_first), tiling);
    check_launch(op);
  });
}

// The max reaches here only over whole vector tiles (launch_separable); the average also over
// other rows, which its kernel reads one column at a time.
template <class T, Reduction kReduction, class Window, bool kShuffleHalo>
void launch_separable_tiles(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                            const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  if constexpr (kReduction == Reduction::avg) {
    const auto kernel = whole_vector_tiles<Window>(g, x, y, indices)
                            ? pool2d_separable_kernel<T, kReduction, Window, true, false>
                            : pool2d_separable_kernel<T, kReduction, Window, false, false>;
    launch_separable_kernel<T, kReduction, Window>(op, kernel, g, x, y, indices, stream);
  } else {
    const auto kernel = pool2d_separable_kernel<T, kReduction, Window, true, kShuffleHalo>;
    launch_separable_kernel<T, kReduction, Window>(op, kernel, g, x, y, indices, stream);
  }
}

// Two output rows per thread share the input rows between them; one row per thread makes twice
// the threads. Grids of fewer than two full waves run one row per thread: there, the latency of
// each thread's chain of work, not bandwidth, sets the time. One-tap-high windows share no rows,
// so they always run one row per thread.
template <class T, Reduction kReduction, int KH, int KW, int SH, int SW, int PW, int kChunkVectors, bool kShuffleHalo>
void launch_separable_rows(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                           const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  if constexpr (KH > 1) {
    using TwoRows = SeparableWindow<T, KH, KW, SH, SW, PW, 2, 16, kChunkVectors>;
    const int64_t two_row_threads = g.planes * ceil_div(g.out_h, 2) * ceil_div(g.out_w, TwoRows::kCols);
    if (two_row_threads >= 2 * int64_t{kThreadsPerSm} * multiprocessor_count(x.device)) {
      return launch_separable_tiles<T, kReduction, TwoRows, kShuffleHalo>(op, g, x, y, indices, stream);
    }
  }
  using OneRow = SeparableWindow<T, KH, KW, SH, SW, PW, 1, 16, kChunkVectors>;
  launch_separable_tiles<T, kReduction, OneRow, kShuffleHalo>(op, g, x, y, indices, stream);
}

// Max over rows that are not whole 16-byte vectors, in row segments: pool2d_row_segments_kernel.
template <class T, Reduction kReduction, int KH, int KW, int SH, int SW, int PW>
void launch_row_segments(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                         int64_t* indices, cudaStream_t stream) {
  const auto* x_data = static_cast<const T*>(x.data);
  auto* y_data = static_cast<T*>(y.data);
  const int64_t segments_per_row = ceil_div(g.out_w, kSegmentOutputs);
  const int64_t segments_per_plane = ceil_div(g.out_h, kSegmentRows) * segments_per_row;
  RowSegmentTiling tiling{FastDivisor(static_cast<int>(segments_per_plane)),
                          FastDivisor(static_cast<int>(segments_per_row)), 0};
  const int64_t in_plane = int64_t{g.in_h} * g.in_w, out_plane = int64_t{g.out_h} * g.out_w;
  constexpr bool kMax = kReduction == Reduction::max;
  const auto kernel = input_evict_first<T, kReduction>(g, x)
                          ? pool2d_row_segments_kernel<T, kReduction, KH, KW, SH, SW, PW, kMax>
                          : pool2d_row_segments_kernel<T, kReduction, KH, KW, SH, SW, PW, false>;
  for_each_plane_group(g.planes, segments_per_plane, kSegmentsPerBlock, [&](int64_t first, int segments,
                                                                           unsigned blocks) {
    tiling.segments = segments;
    int64_t* launch_indices = indices ? indices + first * out_plane : nullptr;
    kernel<<<blocks, kPool2dThreads, 0, stream>>>(x_data + first * in_plane, y_data + first * out_plane,
                                                  launch_indices, kernel_args(g, false), tiling);
    check_launch(op);
  });
}

// The max runs row segments over rows that are not whole 16-byte vectors (alexnet-ceil's rows of
// 55): their coalesced loads beat the separable kernel's one load a column. Over whole vectors, on
// half types it reads two vectors' worth of a row per thread where the tiles allow, with the halo
// columns shuffled from the neighbouring lanes (more bytes a load instruction, fewer halo loads),
// and with positions one output row a thread of 16-byte vectors (faster than two rows of 8-byte
// vectors; two rows of 16-byte vectors take ~95 registers and their speed moved from build to
// build). The average reads one vector a thread, one column at a time where rows are not whole
// vectors.
template <class T, Reduction kReduction, int KH, int KW, int SH, int SW, int PW>
void launch_separable(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                      const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  if constexpr (kReduction == Reduction::avg) {
    launch_separable_rows<T, kReduction, KH, KW, SH, SW, PW, 1, false>(op, g, x, y, indices, stream);
  } else {
    using OneVector = SeparableWindow<T, KH, KW, SH, SW, PW, 1>;
    if (!whole_vector_tiles<OneVector>(g, x, y, indices)) {
      launch_row_segments<T, kReduction, KH, KW, SH, SW, PW>(op, g, x, y, indices, stream);
    } else if constexpr (kReduction == Reduction::max_with_index && sizeof(T) == 2) {
      const auto kernel = pool2d_separable_kernel<T, kReduction, OneVector, true, false>;
      launch_separable_kernel<T, kReduction, OneVector>(op, kernel, g, x, y, indices, stream);
    } else if constexpr (kReduction == Reduction::max && sizeof(T) == 2) {
      using TwoVectors = SeparableWindow<T, KH, KW, SH, SW, PW, 1, 16, 2>;
      if (whole_vector_tiles<TwoVectors>(g, x, y, indices)) {
        launch_separable_rows<T, kReduction, KH, KW, SH, SW, PW, 2, true>(op, g, x, y, indices, stream);
      } else {
        launch_separable_rows<T, kReduction, KH, KW, SH, SW, PW, 1, false>(op, g, x, y, indices, stream);
      }
    } else {
      launch_separable_rows<T, kReduction, KH, KW, SH, SW, PW, 1, false>(op, g, x, y, indices, stream);
    }
  }
}

// Any window, read at run time.
template <class T, Reduction kReduction>
void launch_staged(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                   const TensorRef& y, int64_t* indices, cudaStream_t stream) {
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
  tile_rows =
      std::clamp<int64_t>((g.out_h + tiles_wanted - 1) / tiles_wanted, 1, std::min<int64_t>(tile_rows, g.out_h));
  StagedTiling tiling{static_cast<int>(tile_rows), static_cast<int>((g.out_h + tile_rows - 1) / tile_rows), 0};
  tiling.tiles = g.planes * tiling.tiles_per_plane;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiling.tiles, INT_MAX));
  const auto* x_data = static_cast<const T*>(x.data);
  auto* y_data = static_cast<T*>(y.data);
  if (staged) {
    const auto shared = static_cast<size_t>(staged_bytes<T>(band_rows(tile_rows) * g.in_w));
    pool2d_staged_kernel<T, kReduction, true>
        <<<grid, kPool2dThreads, shared, stream>>>(x_data, y_data, indices, kernel_args(g, false), tiling);
  } else {
    // Rows too wide to stage: the taps are read from global memory, with the run-time loops.
    pool2d_staged_kernel<T, kReduction, false>
        <<<grid, kPool2dThreads, 0, stream>>>(x_data, y_data, indices, kernel_args(g, false), tiling);
  }
  check_launch(op);
}

// Max over KH x KW windows that tile the plane (kernel = stride, no padding, dilation 1, every window
// whole), where each thread's kLoadBytes of a row start on a kLoadBytes boundary and its outputs
// fill whole vectors: pool2d_disjoint_kernel. Returns false, launching nothing, where that does not hold.
template <class T, Reduction kReduction, int KH, int KW, int kLoadBytes>
bool launch_disjoint(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                     int64_t* indices, cudaStream_t stream) {
  constexpr int kOutputs = kDisjointOutputs<T, KW, kLoadBytes>;
  const bool tiles_plane = g.kernel_h == KH && g.kernel_w == KW && g.stride_h == KH && g.stride_w == KW &&
                           g.pad_h == 0 && g.pad_w == 0 && g.dilation_h == 1 && g.dilation_w == 1 &&
                           int64_t{g.out_h} * KH <= g.in_h && int64_t{g.out_w} * KW <= g.in_w;
  const bool vectors = g.in_w % (kOutputs * KW) == 0 && g.out_w % kOutputs == 0 && aligned_to(x.data, kLoadBytes) &&
                       aligned_to(y.data, kOutputs * sizeof(T)) &&
                       (indices == nullptr || aligned_to(indices, 16));
  if (!tiles_plane || !vectors) return false;
  const auto* x_data = static_cast<const T*>(x.data);
  auto* y_data = static_cast<T*>(y.data);
  const int64_t in_plane = int64_t{g.in_h} * g.in_w, out_plane = int64_t{g.out_h} * g.out_w;
  const int row_tiles = g.out_w / kOutputs;
  DisjointTiling tiling{FastDivisor(g.out_h), FastDivisor(row_tiles), 0};
  for_each_plane_group(g.planes, int64_t{g.out_h} * row_tiles, kPool2dThreads, [&](int64_t first, int tiles,
                                                                                    unsigned blocks) {
    tiling.tiles = tiles;
    pool2d_disjoint_kernel<T, kReduction, KH, KW, kLoadBytes><<<blocks, kPool2dThreads, 0, stream>>>(
        x_data + first * in_plane, y_data + first * out_plane, indices ? indices + first * out_plane : nullptr,
        kernel_args(g, false), tiling);
    check_launch(op);
  });
  return true;
}

// Max over 2x2 windows that tile the plane runs the disjoint kernel where it applies
// (launch_disjoint). The windows of the catalogue (kernel, stride, column padding; dilation 1) run
// the separable kernel; any other window runs the staged kernel's run-time loops.
template <Reduction kReduction>
void launch_pool2d(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                   const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  dispatch_float(x.dtype, [&]<class T>() {
    if constexpr (kReduction != Reduction::avg) {
      if (launch_disjoint<T, kReduction, 2, 2, kDisjointLoadBytes<T, kReduction>>(op, g, x, y, indices, stream)) return;
    }
    const auto window_is = [&](int kh, int kw, int sh, int sw, int pw) {
      return g.kernel_h == kh && g.kernel_w == kw && g.stride_h == sh && g.stride_w == sw &&
             g.pad_w == pw && g.dilation_h == 1 && g.dilation_w == 1;
    };
    if constexpr (kReduction == Reduction::avg) {
      if (window_is(3, 3, 2, 2, 1)) return launch_separable<T, kReduction, 3, 3, 2, 2, 1>(op, g, x, y, indices, stream);
      if (window_is(5, 5, 2, 2, 2)) return launch_separable<T, kReduction, 5, 5, 2, 2, 2>(op, g, x, y, indices, stream);
      if (window_is(3, 5, 2, 2, 2)) return launch_separable<T, kReduction, 3, 5, 2, 2, 2>(op, g, x, y, indices, stream);
    } else {
      if (window_is(3, 3, 2, 2, 1)) return launch_separable<T, kReduction, 3, 3, 2, 2, 1>(op, g, x, y, indices, stream);
      if (window_is(3, 3, 2, 2, 0)) return launch_separable<T, kReduction, 3, 3, 2, 2, 0>(op, g, x, y, indices, stream);
      if (window_is(2, 2, 2, 2, 0)) return launch_separable<T, kReduction, 2, 2, 2, 2, 0>(op, g, x, y, indices, stream);
    }
    launch_staged<T, kReduction>(op, g, x, y, indices, stream);
  });
}

}  // namespace

void launch_max_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, const TensorRef* indices, cudaStream_t stream) {
  if (indices) {
    launch_pool2d<Reduction::max_with_index>(op, g, x, y, static_cast<int64_t*>(indices->data), stream);
  } else {
    launch_pool2d<Reduction::max>(op, g, x, y, nullptr, stream);
  }
}

void launch_avg_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, cudaStream_t stream) {
  launch_pool2d<Reduction::avg>(op, g, x, y, nullptr, stream);
}

}  // namespace solops::detail
