// Launchers of the 3-D pooling kernels and the choice between them. The path each window takes:
//
//   window (kernel, stride, W padding; dilation 1)  reductions           kernel
//   (2,2,2) s2, pad_w 0 (c3d-pool2, video-2x2x2)    max, positions, avg  static window
//   (3,3,3) s2, pad_w 1 (medicalnet-stem)           max, positions       static window, runs of output
//                                                                        depths carrying the shared tap
//   (1,2,2) s(1,2,2), pad_w 0 (c3d-pool1)           positions            static window
//   (2,3,3) s2, pad_w 1 (ceil-video)                avg                  static window
//   (2,2,3) s2, pad_w 1 (divisor)                   avg                  static window
//   one tap deep, stride 1 on D, no D padding       max, avg             2-D kernels on N*C*D depth
//                                                                        slices (pool.cpp)
//   any other window                                all                  general kernel below
//
// The static-window kernel (pool3d_separable.cuh) reads D and H padding, ceil mode,
// count_include_pad and divisor at run time; averages under two waves of outputs run it with one
// output a thread (launch_window), or, for the video-2x2x2 and divisor windows on aligned rows,
// the small-average kernel (pool_small_avg.cuh); the general kernel computes one output per thread
// with run-time loops over the window.
#include <algorithm>

#include "core/device.hpp"
#include "core/integer.hpp"
#include "pool/pool3d_separable.cuh"
#include "pool/pool_launch.hpp"
#include "pool/pool_small_avg.cuh"

namespace solops::detail {
namespace {

Pool3dArgs kernel_args(const PoolGeometry& g, bool evict_first) {
  return {{g.in_d, g.in_h, g.in_w},
          {g.out_d, g.out_h, g.out_w},
          {g.kernel_d, g.kernel_h, g.kernel_w},
          {g.stride_d, g.stride_h, g.stride_w},
          {g.pad_d, g.pad_h, g.pad_w},
          {g.dilation_d, g.dilation_h, g.dilation_w},
          g.count_include_pad,
          evict_first,
          g.divisor_override,
          g.outputs()};
}

template <class T, Reduction kReduction>
__global__ void __launch_bounds__(kPool2dThreads)
    pool3d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices, const Pool3dArgs a) {
  const int64_t in_plane = int64_t{a.in[0]} * a.in[1] * a.in[2];
  for (int64_t out = int64_t{blockIdx.x} * kPool2dThreads + threadIdx.x; out < a.outputs;
       out += int64_t{gridDim.x} * kPool2dThreads) {
    int64_t rest = out;
    int start[3];
    for (int axis = 2; axis >= 0; --axis) {
      const int o = static_cast<int>(rest % a.out[axis]);
      rest /= a.out[axis];
      start[axis] = o * a.stride[axis] - a.pad[axis];
    }
    const T* const plane_x = x + rest * in_plane;
    if constexpr (kReduction == Reduction::avg) {
      // Window ends clipped to the padded extent, starts and ends clipped to the data (spec §4.1).
      int end[3], real_start[3], real_end[3], pool_size = 1, count = 1;
      for (int axis = 0; axis < 3; ++axis) {
        end[axis] = min(start[axis] + a.kernel[axis], a.in[axis] + a.pad[axis]);
        real_start[axis] = max(start[axis], 0);
        real_end[axis] = min(end[axis], a.in[axis]);
        pool_size *= end[axis] - start[axis];
        count *= real_end[axis] - real_start[axis];
      }
      float sum = 0.f;
      for (int d = real_start[0]; d < real_end[0]; ++d) {
        for (int h = real_start[1]; h < real_end[1]; ++h) {
          for (int w = real_start[2]; w < real_end[2]; ++w) sum += to_float(plane_x[(d * a.in[1] + h) * a.in[2] + w]);
        }
      }
      const int divisor = a.divisor_override != 0 ? a.divisor_override : a.count_include_pad ? pool_size : count;
      y[out] = from_float<T>(window_average(sum, divisor));
    } else {
      // Real taps in (d, h, w) order; the first seeds the scan, so an all -inf window reports it.
      float best = -INFINITY;
      int best_at = -1;
      for (int kd = 0; kd < a.kernel[0]; ++kd) {
        const int d = start[0] + kd * a.dilation[0];
        if (static_cast<unsigned>(d) >= static_cast<unsigned>(a.in[0])) continue;
        for (int kh = 0; kh < a.kernel[1]; ++kh) {
          const int h = start[1] + kh * a.dilation[1];
          if (static_cast<unsigned>(h) >= static_cast<unsigned>(a.in[1])) continue;
          for (int kw = 0; kw < a.kernel[2]; ++kw) {
            const int w = start[2] + kw * a.dilation[2];
            if (static_cast<unsigned>(w) >= static_cast<unsigned>(a.in[2])) continue;
            const int at = (d * a.in[1] + h) * a.in[2] + w;
            const float value = to_float(plane_x[at]);
            if (best_at < 0 || replaces_best(value, best)) {
              best = value;
              best_at = at;
            }
          }
        }
      }
      y[out] = from_float<T>(best);
      if constexpr (kReduction == Reduction::max_with_index) indices[out] = best_at;
    }
  }
}

template <class T, Reduction kReduction>
void launch_general(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                    int64_t* indices, cudaStream_t stream) {
  const Pool3dArgs args = kernel_args(g, false);
  const auto grid =
      static_cast<unsigned>(std::min<int64_t>((args.outputs + kPool2dThreads - 1) / kPool2dThreads, INT_MAX));
  pool3d_kernel<T, kReduction><<<grid, kPool2dThreads, 0, stream>>>(static_cast<const T*>(x.data),
                                                                    static_cast<T*>(y.data), indices, args);
  check_launch(op);
}

// Windows that overlap along depth carry shared depth taps through a run of output depths: the
// longer the run, the fewer taps are loaded twice, but the fewer threads there are. Runs are as
// long as still leaves one full wave of threads (kThreadsPerSm on every SM); other windows run one
// output depth per thread.
template <class T, Reduction kReduction, class Window>
void launch_static(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                   int64_t* indices, cudaStream_t stream) {
  const auto* x_data = static_cast<const T*>(x.data);
  auto* y_data = static_cast<T*>(y.data);
  // Vector row loads need aligned rows and whole chunks; whole-tile stores need out_w to be a
  // multiple of the tile width and aligned outputs.
  const bool aligned_loads = aligned_to(x_data, sizeof(typename Window::Vector)) && g.in_w % Window::kChunk == 0;
  Pool3dTiling tiling{};
  const int64_t col_tiles = ceil_div(g.out_w, Window::kCols);
  tiling.col_tiles = FastDivisor(static_cast<int>(col_tiles));
  tiling.out_h = FastDivisor(static_cast<int>(g.out_h));
  tiling.whole_tiles = g.out_w % Window::kCols == 0 && aligned_to(y_data, Window::kValuesAlignment) &&
                       (indices == nullptr || aligned_to(indices, Window::kIndicesAlignment));
  tiling.depth_run = 1;
  if constexpr (Window::kCarried > 0) {
    const int64_t threads_per_depth = g.planes * g.out_h * col_tiles;
    const int64_t wave = int64_t{kThreadsPerSm} * multiprocessor_count(x.device);
    tiling.depth_run = static_cast<int>(std::clamp<int64_t>(g.out_d * threads_per_depth / wave, 1, g.out_d));
  }
  const int64_t runs = ceil_div(g.out_d, tiling.depth_run);
  const int64_t tiles_per_plane = runs * g.out_h * col_tiles;
  tiling.tiles_per_plane = FastDivisor(static_cast<int>(tiles_per_plane));
  const auto kernel = aligned_loads ? pool3d_separable_kernel<T, kReduction, Window, true>
                                    : pool3d_separable_kernel<T, kReduction, Window, false>;
  const Pool3dArgs args = kernel_args(g, input_evict_first<T, kReduction>(g, x));
  const int64_t in_volume = int64_t{g.in_d} * g.in_h * g.in_w, out_volume = int64_t{g.out_d} * g.out_h * g.out_w;
  for_each_plane_group(g.planes, tiles_per_plane, kPool3dThreads, [&](int64_t first, int tiles, unsigned blocks) {
    tiling.tiles = tiles;
    int64_t* launch_indices = indices ? indices + first * out_volume : nullptr;
    kernel<<<blocks, kPool3dThreads, 0, stream>>>(x_data + first * in_volume, y_data + first * out_volume,
                                                  launch_indices, args, tiling);
    check_launch(op);
  });
}

// The window (kernel, stride, W padding) compiled in: tiles of 16 bytes of input columns per row,
// or, for averages whose outputs are under two waves of threads, one output a thread (a vector of
// stride_w elements per row: 4 bytes for half types, 8 for f32), so that four times the threads
// each run a quarter of the chain. Max kernels are not compiled with one output a thread: the
// catalogue's max rows are large.
//
// Of those small averages, the windows of video-2x2x2 (without edges, as the catalogue runs it) and
// of the divisor rows run small_avg_pool_kernel where rows are aligned to the vector: the same
// loads, with a third of the instructions before they leave (pool_small_avg.cuh).
template <class T, Reduction kReduction, int KD, int KH, int KW, int SD, int SH, int SW, int PW>
void launch_window(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                   int64_t* indices, cudaStream_t stream) {
  if constexpr (kReduction == Reduction::avg) {
    if (g.outputs() <= int64_t{2} * kThreadsPerSm * multiprocessor_count(x.device)) {
      using Narrow = Pool3dWindow<T, KD, KH, KW, SD, SH, SW, PW, SW * sizeof(T)>;
      constexpr bool kVideoWindow = KD == 2 && KH == 2 && KW == 2 && PW == 0;
      constexpr bool kDivisorWindow = KD == 2 && KH == 2 && KW == 3 && PW == 1;
      const auto* x_data = static_cast<const T*>(x.data);
      auto* y_data = static_cast<T*>(y.data);
      if (aligned_to(x_data, sizeof(typename Narrow::Vector)) && g.in_w % Narrow::kChunk == 0) {
        if constexpr (kVideoWindow) {
          if (!has_edges(g)) return launch_small_avg<T, Narrow, true, false>(op, g, x_data, y_data, stream);
        } else if constexpr (kDivisorWindow) {
          return launch_small_avg<T, Narrow, true, true>(op, g, x_data, y_data, stream);
        }
      }
      return launch_static<T, kReduction, Narrow>(op, g, x, y, indices, stream);
    }
  }
  launch_static<T, kReduction, Pool3dWindow<T, KD, KH, KW, SD, SH, SW, PW, 16>>(op, g, x, y, indices, stream);
}

template <Reduction kReduction>
void launch(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  dispatch_float(x.dtype, [&]<class T>() {
    const auto window_is = [&](int kd, int kh, int kw, int sd, int sh, int sw, int pw) {
      return g.kernel_d == kd && g.kernel_h == kh && g.kernel_w == kw && g.stride_d == sd &&
             g.stride_h == sh && g.stride_w == sw && g.pad_w == pw && g.dilation_d == 1 &&
             g.dilation_h == 1 && g.dilation_w == 1;
    };
    if (window_is(2, 2, 2, 2, 2, 2, 0)) {
      return launch_window<T, kReduction, 2, 2, 2, 2, 2, 2, 0>(op, g, x, y, indices, stream);
    }
    if constexpr (kReduction == Reduction::avg) {
      if (window_is(2, 3, 3, 2, 2, 2, 1)) {
        return launch_window<T, kReduction, 2, 3, 3, 2, 2, 2, 1>(op, g, x, y, indices, stream);
      }
      if (window_is(2, 2, 3, 2, 2, 2, 1)) {
        return launch_window<T, kReduction, 2, 2, 3, 2, 2, 2, 1>(op, g, x, y, indices, stream);
      }
    } else {
      if (window_is(3, 3, 3, 2, 2, 2, 1)) {
        return launch_window<T, kReduction, 3, 3, 3, 2, 2, 2, 1>(op, g, x, y, indices, stream);
      }
      if constexpr (kReduction == Reduction::max_with_index) {
        if (window_is(1, 2, 2, 1, 2, 2, 0)) {
          return launch_window<T, kReduction, 1, 2, 2, 1, 2, 2, 0>(op, g, x, y, indices, stream);
        }
      }
    }
    launch_general<T, kReduction>(op, g, x, y, indices, stream);
  });
}

}  // namespace

void launch_max_pool3d(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                       const TensorRef* indices, cudaStream_t stream) {
  if (indices) {
    launch<Reduction::max_with_index>(op, g, x, y, static_cast<int64_t*>(indices->data), stream);
  } else {
    launch<Reduction::max>(op, g, x, y, nullptr, stream);
  }
}

void launch_avg_pool3d(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
                       cudaStream_t stream) {
  launch<Reduction::avg>(op, g, x, y, nullptr, stream);
}

}  // namespace solops::detail
