// Global pooling: one window covers a whole contiguous plane (adaptive pools to 1×1, and sliding
// windows whose one output per plane reads every input element, such as a 1-D max over the whole
// sequence).
//
// A group of kLanes adjacent lanes reduces one plane: lane i takes elements i, i + kLanes, ...,
// so a warp's loads cover 32 / kLanes adjacent planes, one contiguous range, and the group
// combines its partial results with shuffles. Small planes (7×7 = 49 elements) take groups of 8,
// so every lane has several taps and no lane idles; larger ones take whole warps.
#include <algorithm>
#include <climits>

#include "core/device.hpp"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"

namespace solops::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
// Planes of at least this many elements take a whole warp each.
constexpr int kWarpPlaneSize = 128;
// Taps of a lane loaded before any of them is reduced.
constexpr int kTapsInFlight = 4;

template <class T, Reduction kReduction, int kLanes>
__global__ void __launch_bounds__(kThreads)
    global_pool_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                       int64_t planes, int plane_size, float divisor) {
  constexpr int kGroupsPerBlock = kThreads / kLanes;
  const int lane = threadIdx.x % kLanes;
  // Every lane runs the same number of iterations, so the shuffles always see whole warps; the
  // lanes of planes past the end take no taps.
  for (int64_t first = int64_t{blockIdx.x} * kGroupsPerBlock; first < planes;
       first += int64_t{gridDim.x} * kGroupsPerBlock) {
    const int64_t plane = first + threadIdx.x / kLanes;
    const int taps = plane < planes ? plane_size : 0;
    const T* const plane_x = x + plane * plane_size;
    float sum = 0.f;
    MaxAt best{-INFINITY, -1};
    for (int t0 = lane; t0 < taps; t0 += kLanes * kTapsInFlight) {
      float value[kTapsInFlight];
#pragma unroll
      for (int i = 0; i < kTapsInFlight; ++i) {
        const int t = t0 + i * kLanes;
        value[i] = t < taps ? to_float(__ldg(plane_x + t)) : 0.f;
      }
#pragma unroll
      for (int i = 0; i < kTapsInFlight; ++i) {
        const int t = t0 + i * kLanes;
        if constexpr (kReduction == Reduction::avg) {
          sum += value[i];
        } else if (t < taps && (best.at < 0 || replaces_best(value[i], best.value))) {
          best = {value[i], t};  // a lane's taps come in plane order: the scan rule applies
        }
      }
    }
#pragma unroll
    for (int offset = kLanes / 2; offset > 0; offset /= 2) {
      if constexpr (kReduction == Reduction::avg) {
        sum += __shfl_xor_sync(~0u, sum, offset);
      } else {
        best = combine(best, MaxAt{__shfl_xor_sync(~0u, best.value, offset), __shfl_xor_sync(~0u, best.at, offset)});
      }
    }
    if (lane == 0 && plane < planes) {
      if constexpr (kReduction == Reduction::avg) {
        y[plane] = from_float<T>(sum / divisor);
      } else {
        y[plane] = from_float<T>(best.value);
        if constexpr (kReduction == Reduction::max_with_index) indices[plane] = best.at;
      }
    }
  }
}

template <Reduction kReduction>
void launch(std::string_view op, int64_t planes, int plane_size, float divisor, const TensorRef& x,
            const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  if (planes == 0) return;
  dispatch_float(x.dtype, [&]<class T>() {
    const auto run = [&]<int kLanes>() {
      const int64_t blocks = (planes + kThreads / kLanes - 1) / (kThreads / kLanes);
      global_pool_kernel<T, kReduction, kLanes>
          <<<static_cast<unsigned>(std::min<int64_t>(blocks, INT_MAX)), kThreads, 0, stream>>>(
              static_cast<const T*>(x.data), static_cast<T*>(y.data), indices, planes, plane_size, divisor);
    };
    if (plane_size >= kWarpPlaneSize) {
      run.template operator()<kWarp>();
    } else {
      run.template operator()<8>();
    }
  });
  check_launch(op);
}

}  // namespace

void launch_global_max_pool(std::string_view op, int64_t planes, int plane_size, const TensorRef& x,
                            const TensorRef& y, const TensorRef* indices, cudaStream_t stream) {
  if (indices) {
    launch<Reduction::max_with_index>(op, planes, plane_size, 0.f, x, y, static_cast<int64_t*>(indices->data), stream);
  } else {
    launch<Reduction::max>(op, planes, plane_size, 0.f, x, y, nullptr, stream);
  }
}

void launch_global_avg_pool(std::string_view op, int64_t planes, int plane_size, int64_t divisor,
                            const TensorRef& x, const TensorRef& y, cudaStream_t stream) {
  launch<Reduction::avg>(op, planes, plane_size, static_cast<float>(divisor), x, y, nullptr, stream);
}

}  // namespace solops::detail
