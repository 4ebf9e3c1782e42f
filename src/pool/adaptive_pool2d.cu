// Adaptive 2-D pooling kernel: one warp per output bin. A 1×1 output (global pooling) runs the
// global kernel (global_pool.cu) instead, which packs several small planes into a warp.
//
// A bin of up to 32 columns spreads its rows over the lanes, 32 / width rows at a time, so every
// lane works however narrow the bin (a 6×6 grid of 56×56 planes has 10-column bins); wider bins
// take 32 columns of a row at a time. Each lane visits its taps in scan order, then the warp
// merges the lanes' results with shuffles. Blocks run along one plane's bins (grid y is the
// plane), so no 64-bit division is needed.
#include <algorithm>

#include "core/device.hpp"
#include "pool/adaptive_pool2d.hpp"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"

namespace solops::detail {
namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 8;
constexpr int kMaxGridY = 65535;

struct AdaptiveArgs {
  int in_h, in_w, out_h, out_w;
  int64_t planes;
};

template <class T, Reduction kReduction>
__global__ void __launch_bounds__(kWarp * kWarpsPerBlock)
    adaptive_pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                           const AdaptiveArgs a) {
  const int lane = threadIdx.x % kWarp;
  // bin is the same for every lane of a warp, so the shuffles see whole warps.
  const unsigned warp_bin = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarp;  // no int overflow
  if (warp_bin >= static_cast<unsigned>(a.out_h * a.out_w)) return;
  const int bin = static_cast<int>(warp_bin);
  const AdaptiveBin rows = adaptive_bin(bin / a.out_w, a.in_h, a.out_h);
  const AdaptiveBin cols = adaptive_bin(bin % a.out_w, a.in_w, a.out_w);
  const int height = rows.end - rows.start, width = cols.end - cols.start;
  const int rows_per_pass = max(1, kWarp / width);
  const int lane_row = width <= kWarp ? lane / width : 0;
  const int lane_col = width <= kWarp ? lane % width : lane;
  for (int64_t plane = blockIdx.y; plane < a.planes; plane += gridDim.y) {
    const T* const bin_x = x + plane * a.in_h * a.in_w + int64_t{rows.start} * a.in_w + cols.start;
    Accumulator<kReduction> acc;
    if (lane_row < rows_per_pass) {
#pragma unroll 4
      for (int r = lane_row; r < height; r += rows_per_pass) {  // unrolled: 4 rows' loads at once
        for (int c = lane_col; c < width; c += kWarp) acc.add(to_float(__ldg(bin_x + r * a.in_w + c)), r * width + c);
      }
    }
    acc = merge_lanes<kWarp>(acc);
    if (lane != 0) continue;
    const int64_t out = plane * a.out_h * a.out_w + bin;
    if constexpr (kReduction == Reduction::avg) {
      y[out] = from_float<T>(acc.sum / static_cast<float>(height * width));
    } else if constexpr (kReduction == Reduction::max) {
      y[out] = from_float<T>(acc.best);
    } else {
      y[out] = from_float<T>(acc.best.value);
      indices[out] = int64_t{rows.start + acc.best.at / width} * a.in_w + cols.start + acc.best.at % width;
    }
  }
}

template <Reduction kReduction>
void launch(std::string_view op, const AdaptiveGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  const AdaptiveArgs args{g.in_h, g.in_w, g.out_h, g.out_w, g.planes};
  const dim3 grid(static_cast<unsigned>((int64_t{g.out_h} * g.out_w + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(std::min<int64_t>(g.planes, kMaxGridY)));
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
