// 3-D pooling: one thread per output, taps read from global memory (the L1 cache serves the taps
// that neighbouring windows share). A correct baseline for every window; not yet tuned (see
// docs/perf-notes.md).
#include <algorithm>
#include <climits>

#include "core/device.hpp"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"

namespace solops::detail {
namespace {

struct Pool3dArgs {
  int in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];  // (D, H, W)
  bool count_include_pad;
  int divisor_override;  // 0 = none
  int64_t outputs;
};

Pool3dArgs kernel_args(const PoolGeometry& g) {
  return {{g.in_d, g.in_h, g.in_w},
          {g.out_d, g.out_h, g.out_w},
          {g.kernel_d, g.kernel_h, g.kernel_w},
          {g.stride_d, g.stride_h, g.stride_w},
          {g.pad_d, g.pad_h, g.pad_w},
          {g.dilation_d, g.dilation_h, g.dilation_w},
          g.count_include_pad,
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
      y[out] = from_float<T>(sum / static_cast<float>(divisor));
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

template <Reduction kReduction>
void launch(std::string_view op, const PoolGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  const Pool3dArgs args = kernel_args(g);
  if (args.outputs == 0) return;
  const auto grid = static_cast<unsigned>(std::min<int64_t>((args.outputs + kPool2dThreads - 1) / kPool2dThreads, INT_MAX));
  dispatch_float(x.dtype, [&]<class T>() {
    pool3d_kernel<T, kReduction><<<grid, kPool2dThreads, 0, stream>>>(
        static_cast<const T*>(x.data), static_cast<T*>(y.data), indices, args);
  });
  check_launch(op);
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
