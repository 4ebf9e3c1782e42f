// Adaptive 2-D pooling kernel: one warp per output bin. A 1×1 output (global pooling) runs the
// global kernel (global_pool.cu) instead, which packs several small planes into a warp.
//
// The lanes take the bin's taps in turn (flat row-major positions t = lane, lane + 32, ...), so
// every lane works whatever the bin's width, then the warp combines the lanes' partial results
// with shuffles. Bins are 1 to a few thousand taps in practice (global pooling of 7×7 planes,
// 6×6 grids of 56×56 planes).
#include <algorithm>
#include <climits>

#include "core/device.hpp"
#include "pool/adaptive_pool2d.hpp"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"

namespace solops::detail {
namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;

struct AdaptiveArgs {
  int in_h, in_w, out_h, out_w;
  int64_t bins;
};

template <class T, Reduction kReduction>
__device__ __forceinline__ void reduce_bin(const T* __restrict__ x, T* __restrict__ y,
                                           int64_t* __restrict__ indices, const AdaptiveArgs& a,
                                           int64_t bin, int lane, int out_plane) {
  const int64_t plane = bin / out_plane;
  const int in_plane_bin = static_cast<int>(bin - plane * out_plane);
  const AdaptiveBin rows = adaptive_bin(in_plane_bin / a.out_w, a.in_h, a.out_h);
  const AdaptiveBin cols = adaptive_bin(in_plane_bin % a.out_w, a.in_w, a.out_w);
  const int width = cols.end - cols.start;
  const int taps = (rows.end - rows.start) * width;
  const T* const bin_x = x + plane * a.in_h * a.in_w + int64_t{rows.start} * a.in_w + cols.start;
  const auto tap = [&](int t) { return to_float(bin_x[t / width * a.in_w + t % width]); };
  if constexpr (kReduction == Reduction::avg) {
    float sum = 0.f;
    for (int t = lane; t < taps; t += kWarp) sum += tap(t);
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) sum += __shfl_xor_sync(~0u, sum, offset);
    if (lane == 0) y[bin] = from_float<T>(sum / static_cast<float>(taps));
  } else {
    MaxAt best{-INFINITY, -1};
    for (int t = lane; t < taps; t += kWarp) best = combine(best, MaxAt{tap(t), t});
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      best = combine(best, MaxAt{__shfl_xor_sync(~0u, best.value, offset), __shfl_xor_sync(~0u, best.at, offset)});
    }
    if (lane == 0) {
      y[bin] = from_float<T>(best.value);
      if constexpr (kReduction == Reduction::max_with_index) {
        indices[bin] = int64_t{rows.start + best.at / width} * a.in_w + cols.start + best.at % width;
      }
    }
  }
}

template <class T, Reduction kReduction>
__global__ void __launch_bounds__(kWarp * kWarpsPerBlock)
    adaptive_pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                           const AdaptiveArgs a) {
  const int lane = threadIdx.x % kWarp;
  const int out_plane = a.out_h * a.out_w;
  // bin is the same for every lane of a warp, so the shuffles below see whole warps.
  for (int64_t bin = int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / kWarp; bin < a.bins;
       bin += int64_t{gridDim.x} * kWarpsPerBlock) {
    reduce_bin<T, kReduction>(x, y, indices, a, bin, lane, out_plane);
  }
}

template <Reduction kReduction>
void launch(std::string_view op, const AdaptiveGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  const AdaptiveArgs args{g.in_h, g.in_w, g.out_h, g.out_w, g.outputs()};
  if (args.bins == 0) return;
  const auto grid = static_cast<unsigned>(std::min<int64_t>((args.bins + kWarpsPerBlock - 1) / kWarpsPerBlock, INT_MAX));
  dispatch_float(x.dtype, [&]<class T>() {
    adaptive_pool2d_kernel<T, kReduction><<<grid, kWarp * kWarpsPerBlock, 0, stream>>>(
        static_cast<const T*>(x.data), static_cast<T*>(y.data), indices, args);
  });
  check_launch(op);
}

}  // namespace

void launch_adaptive_max_pool2d(std::string_view op, const AdaptiveGeometry& g, const TensorRef& x,
                                const TensorRef& y, const TensorRef* indices, cudaStream_t stream) {
  if (g.out_h == 1 && g.out_w == 1) return launch_global_max_pool(op, g.planes, g.in_h * g.in_w, x, y, indices, stream);
  if (indices) {
    launch<Reduction::max_with_index>(op, g, x, y, static_cast<int64_t*>(indices->data), stream);
  } else {
    launch<Reduction::max>(op, g, x, y, nullptr, stream);
  }
}

void launch_adaptive_avg_pool2d(std::string_view op, const AdaptiveGeometry& g, const TensorRef& x,
                                const TensorRef& y, cudaStream_t stream) {
  if (g.out_h == 1 && g.out_w == 1) {
    return launch_global_avg_pool(op, g.planes, g.in_h * g.in_w, int64_t{g.in_h} * g.in_w, x, y, stream);
  }
  launch<Reduction::avg>(op, g, x, y, nullptr, stream);
}

}  // namespace solops::detail
