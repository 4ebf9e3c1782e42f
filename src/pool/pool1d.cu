// 1-D pooling ([N, C, L] rows). Four kernels, each reading each input byte from DRAM once:
// - Small averages of the catalogue's windows (k3/k4, stride 2, padding 1): a lean pointwise
//   kernel, several outputs a thread from registers (launch_small_avg_rows).
// - Max windows that tile the row (kernel == stride, no padding or dilation), with positions or in
//   f32: one output a thread, its taps read straight from global memory
//   (pool1d_tiling_windows_kernel).
// - Rows of whole 16-byte vectors that start 16-byte aligned (every catalogue row): a warp pools a
//   tile of consecutive outputs of one row from its own slice of shared memory, with no block
//   barrier (pool1d_warp_tile_kernel).
// - Other rows: a block stages its tile's input span with cp.async, whatever its alignment, and
//   pools it after a block barrier (pool1d_kernel); calls of at most one wave of outputs read their
//   taps straight from global memory.
// Windows so long that not even a warp's outputs fit in shared memory (hundreds of elements) read
// global memory too. The catalogue's kernel sizes are compile-time constants (the tap loops
// unroll); others are read at run time.
#include <algorithm>

#include "core/device.hpp"
#include "core/evict_first.cuh"
#include "core/evict_last.cuh"
#include "core/integer.hpp"
#include "core/stage.cuh"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"
#include "pool/pool_small_avg.cuh"

namespace solops::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
constexpr int kBlocksPerSm = kThreadsPerSm / kThreads;
// Outputs of a tile at most: its span (2048 * stride elements) keeps tens of KB of loads in flight
// per SM with the SM's 8 blocks.
constexpr int kMaxTileOutputs = 2048;
constexpr int kMaxGridY = 65535;

struct Pool1dArgs {
  int in_w, out_w, kernel, stride, pad, dilation;
  bool count_include_pad;
  int divisor_override;  // 0 = none
  // 1 / the divisor of a window whose taps are all real: a multiply instead of a division per
  // output (within the spec's tolerance: 1e-5 on f32, PyTorch divides).
  float interior_scale;
  int tile_outputs;  // outputs of one block's tile
  int64_t rows;
};

// Pools the window starting at `start`; tap(w) reads input element w of the row. kChecked: some
// taps may lie outside the row (padding, a ceil-mode overhang) and are skipped; otherwise every
// tap is real and the checks are left out.
template <Reduction kReduction, int K, bool kChecked, class T, class Tap>
__device__ __forceinline__ void pool_window(const Pool1dArgs& a, int start, Tap tap, T& out, int64_t& out_at) {
  const int kernel = K > 0 ? K : a.kernel;
  Accumulator<kReduction> acc;
  int first = 0;
  if constexpr (!kChecked && kReduction == Reduction::max_with_index) {
    acc.best = {to_float(tap(start)), start};  // the first tap opens the scan: no test for "no tap yet"
    first = 1;
  }
#pragma unroll
  for (int k = first; k < kernel; ++k) {
    const int w = start + k * a.dilation;
    if (!kChecked || static_cast<unsigned>(w) < static_cast<unsigned>(a.in_w)) acc.add(to_float(tap(w)), w);
  }
  if constexpr (kReduction == Reduction::avg) {
    if constexpr (kChecked) {
      const int taps = avg_window_taps(start, kernel, a.in_w, a.pad, a.count_include_pad);
      out = from_float<T>(acc.sum / static_cast<float>(a.divisor_override != 0 ? a.divisor_override : taps));
    } else {
      out = from_float<T>(acc.sum * a.interior_scale);
    }
  } else if constexpr (kReduction == Reduction::max) {
    out = from_float<T>(acc.best);
  } else {
    out = from_float<T>(acc.best.value);
    out_at = acc.best.at;
  }
}

// K > 0: the kernel size at compile time; K = 0: read from args.
template <class T, Reduction kReduction, int K, bool kStaged>
__global__ void __launch_bounds__(kThreads)
    pool1d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices, const Pool1dArgs a) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* const shared = reinterpret_cast<T*>(shared_bytes);
  const int o0 = blockIdx.x * a.tile_outputs;
  if (o0 >= a.out_w) return;  // equal tiles can leave the last block of a row none
  const int o1 = min(o0 + a.tile_outputs, a.out_w);
  const int kernel = K > 0 ? K : a.kernel;
  for (int64_t row = blockIdx.y; row < a.rows; row += gridDim.y) {
    const T* band = x + row * a.in_w;
    int band_offset = 0;  // band[band_offset + w] is input element w of the row
    if constexpr (kStaged) {
      const int w0 = max(0, o0 * a.stride - a.pad);
      const int w1 = min(a.in_w, (o1 - 1) * a.stride - a.pad + (kernel - 1) * a.dilation + 1);
      if (row != blockIdx.y) __syncthreads();  // the previous row's reads are done
      band_offset = stage_contiguous(band + w0, w1 - w0, shared) - w0;
      band = shared;
    }
    T* const y_row = y + row * a.out_w;
    [[maybe_unused]] int64_t* const indices_row =
        kReduction == Reduction::max_with_index ? indices + row * a.out_w : nullptr;
    const auto pool_tile = [&]<bool kChecked>() {
      for (int o = o0 + threadIdx.x; o < o1; o += kThreads) {
        const int start = o * a.stride - a.pad;
        T out;
        int64_t out_at = -1;
        pool_window<kReduction, K, kChecked>(a, start, [&](int w) { return band[band_offset + w]; }, out, out_at);
        y_row[o] = out;
        if constexpr (kReduction == Reduction::max_with_index) indices_row[o] = out_at;
      }
    };
    // Most tiles' windows lie wholly inside the row: they skip the per-tap checks, a large share
    // of a small window's instructions.
    if (o0 * a.stride - a.pad >= 0 && (o1 - 1) * a.stride - a.pad + (kernel - 1) * a.dilation < a.in_w) {
      pool_tile.template operator()<false>();
    } else {
      pool_tile.template operator()<true>();
    }
  }
}

// Warp tiles: the lanes load the tile's input span as 16-byte vectors into the warp's slice of shared
// memory and compute consecutive outputs from there. A warp computes as soon as its own span has
// arrived, while the SM's other warps keep their loads in flight, where pool1d_kernel's blocks wait
// at a barrier for each staged tile (docs/perf/pool.md). Loading through registers measured faster
// than cp.async into the slice.
constexpr int kChunksPerLane = 4;
constexpr int kWarpsPerBlock = kThreads / kWarp;
// 40 registers a thread; the warp slices take 16 KB a block, 96 KB an SM.
constexpr int kWarpTileBlocksPerSm = 6;

struct WarpTiling {
  FastDivisor tiles_per_row;
  int tiles;         // of this launch
  int tile_outputs;  // a multiple of 32
};

template <class T, Reduction kReduction, int K>
__global__ void __launch_bounds__(kThreads, kWarpTileBlocksPerSm)
    pool1d_warp_tile_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                            const Pool1dArgs a, const WarpTiling tiling) {
  constexpr int kVector = 16 / sizeof(T);
  __shared__ uint4 slices[kWarpsPerBlock][kChunksPerLane * kWarp];
  const int tile = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;
  if (tile >= tiling.tiles) return;
  const int lane = threadIdx.x % kWarp;
  uint4* const slice = slices[threadIdx.x / kWarp];
  const int row = tiling.tiles_per_row.divide(tile);
  const int o0 = (tile - row * tiling.tiles_per_row.divisor()) * tiling.tile_outputs;
  const int o1 = min(o0 + tiling.tile_outputs, a.out_w);
  const int kernel = K > 0 ? K : a.kernel;
  // The input range the tile's windows cover (padding included), and the 16-byte chunks it reads.
  const int w0 = o0 * a.stride - a.pad;
  const int w1 = (o1 - 1) * a.stride - a.pad + (kernel - 1) * a.dilation + 1;
  const int c0 = max(w0, 0) / kVector;
  const int c1 = min(a.in_w, w1 + kVector - 1) / kVector;
  const uint4* const x_row = reinterpret_cast<const uint4*>(x + int64_t{row} * a.in_w);
  // Loaded as torch.compile's kernels load theirs (core/evict_last.cuh): faster than __ldg on every
  // row of this kernel.
  uint4 chunks[kChunksPerLane];
#pragma unroll
  for (int i = 0; i < kChunksPerLane; ++i) {
    if (c0 + lane + i * kWarp < c1) chunks[i] = load_evict_last(x_row + c0 + lane + i * kWarp, evict_last_policy());
  }
#pragma unroll
  for (int i = 0; i < kChunksPerLane; ++i) {
    if (c0 + lane + i * kWarp < c1) slice[lane + i * kWarp] = chunks[i];
  }
  __syncwarp();
  const T* const span = reinterpret_cast<const T*>(slice) - c0 * kVector;  // span[w]: element w of the row
  T* const y_row = y + int64_t{row} * a.out_w;
  [[maybe_unused]] int64_t* const indices_row =
      kReduction == Reduction::max_with_index ? indices + int64_t{row} * a.out_w : nullptr;
  const auto pool_tile = [&]<bool kChecked>() {
    // Two outputs an iteration measured faster for the averages (fewer instructions an output on
    // these instruction-heavy rows) and slower for the max.
#pragma unroll(kReduction == Reduction::avg ? 2 : 1)
    for (int o = o0 + lane; o < o1; o += kWarp) {
      T out;
      int64_t out_at = -1;
      pool_window<kReduction, K, kChecked>(a, o * a.stride - a.pad, [&](int w) { return span[w]; }, out, out_at);
      y_row[o] = out;
      if constexpr (kReduction == Reduction::max_with_index) indices_row[o] = out_at;
    }
  };
  if (w0 >= 0 && w1 <= a.in_w) {
    pool_tile.template operator()<false>();
  } else {
    pool_tile.template operator()<true>();
  }
}

// Windows that tile the row (kernel == stride, no padding or dilation, every window inside the
// row: sincnet's k3 s3) as torch.compile's pointwise kernel reads them: one output a thread, the
// thread's kTilingOutputs outputs a block apart, all their taps loaded before any is pooled. A
// warp's first tap loads cover its 32 windows' span and L1 serves the others; its stores are
// consecutive. (One vector of outputs a thread, from the K 16-byte vectors of their taps, loaded
// less but stored each output 16 bytes from its neighbour's, several times slower.) Two outputs a
// thread measured fastest of 1, 2, 4 and 8.
constexpr int kTilingOutputs = 2;

template <class T, Reduction kReduction, int K>
__global__ void __launch_bounds__(kThreads)
    pool1d_tiling_windows_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                                 const Pool1dArgs a, const FastDivisor out_w, const int outputs) {
  const int first = static_cast<int>(blockIdx.x) * kThreads * kTilingOutputs + static_cast<int>(threadIdx.x);
  T taps[kTilingOutputs][K];
  int column[kTilingOutputs];
#pragma unroll
  for (int j = 0; j < kTilingOutputs; ++j) {
    const int o = first + j * kThreads;
    const int row = out_w.divide(o);
    column[j] = o - row * a.out_w;
    if (o < outputs) {
      const T* const window = x + int64_t{row} * a.in_w + column[j] * K;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        // Values evict-first, positions evict_last: each measured the faster for its rows (a values
        // row writes a third of the bytes it reads, a positions row as many or more).
        if constexpr (kReduction == Reduction::max) taps[j][k] = load_evict_first(window + k, evict_first_policy());
        else taps[j][k] = load_evict_last(window + k, evict_last_policy());
      }
    }
  }
#pragma unroll
  for (int j = 0; j < kTilingOutputs; ++j) {
    const int o = first + j * kThreads;
    if (o >= outputs) break;
    Accumulator<kReduction> acc;
#pragma unroll
    for (int k = 0; k < K; ++k) acc.add(to_float(taps[j][k]), column[j] * K + k);
    if constexpr (kReduction == Reduction::max_with_index) {
      y[o] = from_float<T>(acc.best.value);
      indices[o] = acc.best.at;
    } else {
      y[o] = from_float<T>(acc.best);
    }
  }
}

template <class T, Reduction kReduction, int K>
void launch_tiling_windows(const Pool1dArgs& args, const T* x, T* y, int64_t* indices, cudaStream_t stream) {
  for_each_plane_group(args.rows, args.out_w, kThreads * kTilingOutputs, [&](int64_t first_row, int outputs,
                                                                            unsigned blocks) {
    pool1d_tiling_windows_kernel<T, kReduction, K><<<blocks, kThreads, 0, stream>>>(
        x + first_row * args.in_w, y + first_row * args.out_w, indices ? indices + first_row * args.out_w : nullptr,
        args, FastDivisor(args.out_w), outputs);
  });
}

// Outputs of a warp tile, in whole warps; 0 where not even one warp's outputs fit. Rows split into
// equal tiles: at least as many as the warp's slice needs (it holds the span of up to `fitting`
// outputs, one chunk spare for a span that starts inside a chunk), and then as many as fill the
// waves of resident warps that those take: a last wave of a few blocks costs a whole DRAM round
// trip, and a call smaller than one wave leaves SMs idle.
template <class T>
int warp_tile_outputs(const Pool1dArgs& a, int device) {
  constexpr int kVector = 16 / static_cast<int>(sizeof(T));
  const int64_t capacity = int64_t{kChunksPerLane * kWarp - 1} * kVector;
  const int64_t window = int64_t{a.kernel - 1} * a.dilation + 1;
  if (window > capacity) return 0;
  const int64_t fitting = ((capacity - window) / a.stride + 1) / kWarp * kWarp;
  if (fitting == 0) return 0;
  const int64_t resident_warps = int64_t{kWarpTileBlocksPerSm} * kWarpsPerBlock * multiprocessor_count(device);
  const int64_t least_tiles = ceil_div(a.out_w, fitting);
  const int64_t waves = ceil_div(a.rows * least_tiles, resident_warps);
  const int64_t tiles_per_row = std::max(least_tiles, waves * resident_warps / a.rows);
  return static_cast<int>(ceil_div(ceil_div(a.out_w, tiles_per_row), kWarp) * kWarp);
}

template <class T, Reduction kReduction, int K>
void launch_warp_tiles(Pool1dArgs args, int tile_outputs, const T* x, T* y, int64_t* indices,
                       cudaStream_t stream) {
  const auto tiles_per_row = static_cast<int>(ceil_div(args.out_w, tile_outputs));
  for_each_plane_group(args.rows, tiles_per_row, kWarpsPerBlock, [&](int64_t first_row, int tiles, unsigned blocks) {
    const WarpTiling tiling{FastDivisor(tiles_per_row), tiles, tile_outputs};
    pool1d_warp_tile_kernel<T, kReduction, K><<<blocks, kThreads, 0, stream>>>(
        x + first_row * args.in_w, y + first_row * args.out_w,
        indices ? indices + first_row * args.out_w : nullptr, args, tiling);
  });
}

// Calls of at most one wave of threads' outputs read their taps straight from global memory, one
// output per thread: staging would add a barrier and a shared-memory pass to the one DRAM round
// trip that sets their time (measured on the ceil row). Larger calls split rows into tiles of at
// most kMaxTileOutputs outputs (fewer where their span would not fit in shared memory), and into
// more, equal tiles while the grid is under one wave of blocks, so that every SM holds blocks.
template <class T, Reduction kReduction, int K>
void launch_rows(Pool1dArgs args, int device, const T* x, T* y, int64_t* indices, cudaStream_t stream) {
  const int64_t window = int64_t{args.kernel - 1} * args.dilation + 1;
  const int64_t staged_elements = (kMaxStagedBytes - staged_bytes<T>(0)) / static_cast<int64_t>(sizeof(T));
  const int64_t fitting_outputs = staged_elements < window ? 0 : (staged_elements - window) / args.stride + 1;
  const int64_t wave = int64_t{kBlocksPerSm} * multiprocessor_count(device);
  const bool staged = fitting_outputs >= kWarp && args.rows * args.out_w > wave * kThreads;
  const int64_t max_tile = !staged ? kThreads : std::min<int64_t>(kMaxTileOutputs, fitting_outputs);
  const int64_t rows = std::min<int64_t>(args.rows, kMaxGridY);
  int64_t tiles_per_row = (args.out_w + max_tile - 1) / max_tile;
  if (staged && rows * tiles_per_row < wave) {
    tiles_per_row = std::clamp<int64_t>(wave / rows, tiles_per_row, (args.out_w + kWarp - 1) / kWarp);
  }
  args.tile_outputs = static_cast<int>((args.out_w + tiles_per_row - 1) / tiles_per_row);
  const dim3 grid(static_cast<unsigned>(tiles_per_row), static_cast<unsigned>(rows));
  if (staged) {
    const auto shared = static_cast<size_t>(staged_bytes<T>(int64_t{args.tile_outputs - 1} * args.stride + window));
    pool1d_kernel<T, kReduction, K, true><<<grid, kThreads, shared, stream>>>(x, y, indices, args);
  } else {
    pool1d_kernel<T, kReduction, K, false><<<grid, kThreads, 0, stream>>>(x, y, indices, args);
  }
}

// Averages of the catalogue's small windows (k3 s2 p1: audio-downsample; k4 s2 p1: ceil) on
// aligned rows whose threads fit one wave run small_avg_pool_kernel (pool_small_avg.cuh): a thread
// pools the 4 outputs of 8 input elements (one 16-byte vector of f16 / bf16, two of f32) and the
// halo columns around them straight from global memory, with no shared-memory pass, every load
// issued at its start. A second wave would wait a DRAM round trip for the first; larger calls keep
// the warp tiles. Returns whether it ran the call.
template <class T>
bool launch_small_avg_rows(std::string_view op, const PoolGeometry& g, const T* x, T* y, int device,
                           cudaStream_t stream) {
  const auto run = [&]<int K>() {
    using Window = Pool3dWindow<T, 1, 1, K, 1, 1, 2, 1, 16, 8 * sizeof(T) / 16>;
    if (!aligned_to(x, 16) || g.in_w % Window::kChunk != 0) return false;
    const int64_t threads = g.planes * ceil_div(g.out_w, Window::kCols);
    if (threads > int64_t{kThreadsPerSm} * multiprocessor_count(device)) return false;
    launch_small_avg<T, Window, false, true>(op, g, x, y, stream);
    return true;
  };
  if (g.stride_w != 2 || g.pad_w != 1) return false;
  if (g.kernel_w == 3) return run.template operator()<3>();
  if (g.kernel_w == 4) return run.template operator()<4>();
  return false;
}

template <Reduction kReduction>
void launch(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  const float interior_scale = 1.f / static_cast<float>(g.divisor_override != 0 ? g.divisor_override : g.kernel_w);
  const Pool1dArgs args{g.in_w,       g.out_w,           g.kernel_w,         g.stride_w,     g.pad_w, g.dilation_w,
                        g.count_include_pad, g.divisor_override, interior_scale, 0,       g.planes};
  dispatch_float(x.dtype, [&]<class T>() {
    const auto* x_data = static_cast<const T*>(x.data);
    auto* y_data = static_cast<T*>(y.data);
    if constexpr (kReduction == Reduction::avg) {
      if (launch_small_avg_rows<T>(op, g, x_data, y_data, x.device, stream)) return;
    }
    const auto run = [&]<int K>() {
      // Half-type values alone stay on the warp tiles, whose 16-byte loads and stores there beat the
      // tiling kernel's scalar ones; with positions, and f32 values, the tiling kernel is faster.
      if constexpr (K == 3 && (kReduction == Reduction::max_with_index ||
                               (kReduction == Reduction::max && sizeof(T) == 4))) {
        // Ceil mode can add a last window that hangs over the row's end: not a tiling.
        if (g.stride_w == K && g.pad_w == 0 && g.dilation_w == 1 && int64_t{g.out_w} * K <= g.in_w) {
          return launch_tiling_windows<T, kReduction, K>(args, x_data, y_data, indices, stream);
        }
      }
      if (aligned_to(x_data, 16) && g.in_w % (16 / sizeof(T)) == 0) {
        const int tile_outputs = warp_tile_outputs<T>(args, x.device);
        if (tile_outputs > 0) {
          return launch_warp_tiles<T, kReduction, K>(args, tile_outputs, x_data, y_data, indices, stream);
        }
      }
      launch_rows<T, kReduction, K>(args, x.device, x_data, y_data, indices, stream);
    };
    // The catalogue's kernel sizes: max 3 and 5, avg 3, 4 and 5.
    if (g.kernel_w == 3) return run.template operator()<3>();
    if (g.kernel_w == 5) return run.template operator()<5>();
    if constexpr (kReduction == Reduction::avg) {
      if (g.kernel_w == 4) return run.template operator()<4>();
    }
    run.template operator()<0>();
  });
  check_launch(op);
}

}  // namespace

void launch_max_pool1d(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                       const TensorRef* indices, cudaStream_t stream) {
  if (indices) {
    launch<Reduction::max_with_index>(op, g, x, y, static_cast<int64_t*>(indices->data), stream);
  } else {
    launch<Reduction::max>(op, g, x, y, nullptr, stream);
  }
}

void launch_avg_pool1d(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                       cudaStream_t stream) {
  launch<Reduction::avg>(op, g, x, y, nullptr, stream);
}

}  // namespace solops::detail
