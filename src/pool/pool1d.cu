// 1-D pooling ([N, C, L] rows): consecutive threads compute consecutive outputs of one row,
// straight from global memory.
//
// A warp's loads of one tap then fall on one or two cache lines whatever the stride, and the taps
// that neighbouring windows share are re-read from L1, so every input byte crosses DRAM once
// without staging. On large rows a thread computes kOutputsPerThread outputs (kThreads apart, so
// the loads stay coalesced) and, for the catalogue's kernel sizes, issues all their taps' loads
// before reducing any: enough bytes in flight per SM to cover DRAM latency. Calls whose outputs
// fit in one wave of threads take one output per thread (one round trip to DRAM each); larger
// ones take kOutputsPerThread, which fewer waves of block launches and DRAM round trips pay for.
#include <algorithm>
#include <climits>

#include "core/device.hpp"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"

namespace solops::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kOutputsPerThread = 4;
constexpr int kThreadsPerSm = 2048;
constexpr int kMaxGridY = 65535;

struct Pool1dArgs {
  int in_w, out_w, kernel, stride, pad, dilation;
  bool count_include_pad;
  int divisor_override;  // 0 = none
  int64_t rows;
};

// A tap outside the row as the reduction sees it: nothing to add, nothing to win.
template <Reduction kReduction, class T>
__device__ __forceinline__ T neutral_tap() {
  return from_float<T>(kReduction == Reduction::avg ? 0.f : -INFINITY);
}

// Reduces the taps of the window starting at `start`; tap(k) reads tap k, the neutral value where
// it lies outside the row.
template <Reduction kReduction, int K, class T, class Tap>
__device__ __forceinline__ void pool_window(const Pool1dArgs& a, int start, Tap tap, T& out, int64_t& out_at) {
  const int kernel = K > 0 ? K : a.kernel;
  if constexpr (kReduction == Reduction::avg) {
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < kernel; ++k) sum += to_float(tap(k));
    const int divisor = a.divisor_override != 0 ? a.divisor_override
                                                : avg_window_taps(start, kernel, a.in_w, a.pad, a.count_include_pad);
    out = from_float<T>(sum / static_cast<float>(divisor));
  } else if constexpr (kReduction == Reduction::max) {
    T best = tap(0);
#pragma unroll
    for (int k = 1; k < kernel; ++k) best = max_propagating_nan(best, tap(k));
    out = best;
  } else {
    // Real taps in order; the first seeds the scan, so an all -inf window reports it.
    T best = neutral_tap<kReduction, T>();
    float best_value = -INFINITY;
    int best_at = -1;
#pragma unroll
    for (int k = 0; k < kernel; ++k) {
      const int w = start + k * a.dilation;
      if (static_cast<unsigned>(w) >= static_cast<unsigned>(a.in_w)) continue;
      const T v = tap(k);
      const float value = to_float(v);
      if (best_at < 0 || replaces_best(value, best_value)) {
        best = v;
        best_value = value;
        best_at = w;
      }
    }
    out = best;
    out_at = best_at;
  }
}

// K > 0: the kernel size at compile time (the catalogue's); K = 0: read from args.
template <class T, Reduction kReduction, int K, int V>
__global__ void __launch_bounds__(kThreads)
    pool1d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices, const Pool1dArgs a) {
  const int first = blockIdx.x * (kThreads * V) + threadIdx.x;
  for (int64_t row = blockIdx.y; row < a.rows; row += gridDim.y) {
    const T* const x_row = x + row * a.in_w;
    const int64_t out_row = row * a.out_w;
    const auto load = [&](int w) {
      return static_cast<unsigned>(w) < static_cast<unsigned>(a.in_w) ? __ldg(x_row + w) : neutral_tap<kReduction, T>();
    };
    [[maybe_unused]] T taps[K > 0 ? V : 1][K > 0 ? K : 1];
    if constexpr (K > 0) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int o = first + j * kThreads;
        const int start = min(o, a.out_w - 1) * a.stride - a.pad;  // a real window for every thread
#pragma unroll
        for (int k = 0; k < K; ++k) taps[j][k] = load(start + k * a.dilation);
      }
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const int o = first + j * kThreads;
      if (o >= a.out_w) break;
      const int start = o * a.stride - a.pad;
      T out;
      int64_t out_at = -1;
      if constexpr (K > 0) {
        pool_window<kReduction, K>(a, start, [&](int k) { return taps[j][k]; }, out, out_at);
      } else {
        pool_window<kReduction, K>(a, start, [&](int k) { return load(start + k * a.dilation); }, out, out_at);
      }
      y[out_row + o] = out;
      if constexpr (kReduction == Reduction::max_with_index) indices[out_row + o] = out_at;
    }
  }
}

template <class T, Reduction kReduction, int K>
void launch_rows(const Pool1dArgs& args, int device, const T* x, T* y, int64_t* indices, cudaStream_t stream) {
  const auto run = [&]<int V>() {
    const dim3 grid(static_cast<unsigned>((args.out_w + kThreads * V - 1) / (kThreads * V)),
                    static_cast<unsigned>(std::min<int64_t>(args.rows, kMaxGridY)));
    pool1d_kernel<T, kReduction, K, V><<<grid, kThreads, 0, stream>>>(x, y, indices, args);
  };
  if (args.rows * args.out_w > int64_t{kThreadsPerSm} * multiprocessor_count(device)) {
    run.template operator()<kOutputsPerThread>();
  } else {
    run.template operator()<1>();
  }
}

template <Reduction kReduction>
void launch(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  const Pool1dArgs args{g.in_w,     g.out_w,          g.kernel_w, g.stride_w, g.pad_w, g.dilation_w,
                        g.count_include_pad, g.divisor_override, g.planes};
  dispatch_float(x.dtype, [&]<class T>() {
    const auto run = [&]<int K>() {
      launch_rows<T, kReduction, K>(args, x.device, static_cast<const T*>(x.data), static_cast<T*>(y.data), indices, stream);
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
