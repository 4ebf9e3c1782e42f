// Adaptive 2-D pooling kernel: a group of kLanes lanes per output bin. A 1×1 output (global
// pooling) runs the global kernel (global_pool.cu) instead, which packs several small planes into
// a warp.
//
// The lanes of a group take the bin's taps flat in scan order, lane l the taps l, l + kLanes,
// l + 2·kLanes, ..., kLoads of them a pass, every load of a pass issued before any is used; the
// group then merges its lanes' results with shuffles. Bins of up to 8·kLoads taps take groups of
// 8 lanes, so one pass covers them, a warp serves 4 bins and its shuffle tree is 3 steps: a 6×6
// grid over 56×56 planes (100-tap bins) is 2.3 K warps, one wave, where a warp per bin made
// 9.2 K warps and a second wave. Larger bins take whole warps and as many passes as they need.
//
// Groups run over the bins of consecutive planes (one 32-bit division finds the plane); planes
// are launched in groups that keep a launch's bins in int32.
#include <algorithm>

#include "core/device.hpp"
#include "pool/adaptive_pool2d.hpp"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"

namespace solops::detail {
namespace {

constexpr int kThreads = 128;
constexpr int kLoads = 16;  // loads of one lane in one pass
constexpr int kSmallBinLanes = 8;

struct AdaptiveArgs {
  int in_h, in_w, out_h, out_w;
};

template <class T, Reduction kReduction, int kLanes>
__global__ void __launch_bounds__(kThreads)
    adaptive_pool2d_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                           const AdaptiveArgs a, const int bins) {
  const int lane = threadIdx.x % kLanes;
  // Groups past the last bin redo it without storing: every lane of a warp takes part in the
  // shuffles.
  const int group = blockIdx.x * (kThreads / kLanes) + threadIdx.x / kLanes;
  const int flat_bin = min(group, bins - 1);
  const int bins_per_plane = a.out_h * a.out_w;
  const int plane = flat_bin / bins_per_plane;
  const int bin = flat_bin - plane * bins_per_plane;
  const int oh = bin / a.out_w;
  const AdaptiveBin rows = adaptive_bin(oh, a.in_h, a.out_h);
  const AdaptiveBin cols = adaptive_bin(bin - oh * a.out_w, a.in_w, a.out_w);
  const int height = rows.end - rows.start, width = cols.end - cols.start;
  const int bin_start = rows.start * a.in_w + cols.start;  // in-plane positions stay in int32
  const T* const plane_x = x + int64_t{plane} * a.in_h * a.in_w;
  // The lane's next tap (row r, column c of the bin) and the step to the one after, so that no
  // tap needs a division.
  int r = lane / width, c = lane - r * width;
  const int step_rows = kLanes / width, step_cols = kLanes - step_rows * width;
  constexpr float kIdentity = kReduction == Reduction::avg ? 0.f : -INFINITY;
  Accumulator<kReduction> acc;
#pragma unroll 1
  for (int first = 0; first < height * width; first += kLanes * kLoads) {
    T value[kLoads];
    int at[kLoads];  // in-plane position of the tap, -1 past the bin's end
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
      const bool tap = r < height;
      at[k] = tap ? bin_start + r * a.in_w + c : -1;
      value[k] = T{};
      if (tap) value[k] = __ldg(plane_x + at[k]);  // predicated, not a branch
      c += step_cols;
      const bool next_row = c >= width;
      c -= next_row ? width : 0;
      r += step_rows + next_row;
    }
    keep_loads_above(a.in_h <= 0);
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
      // Converted before the choice (see reduce_across_row); a missing tap of the max with
      // positions is {-inf, -1}, which `add` never lets replace a real tap.
      const float v = to_float(value[k]);
      acc.add(at[k] < 0 ? kIdentity : v, at[k]);
    }
  }
  acc = merge_lanes<kLanes>(acc);
  if (lane != 0 || group >= bins) return;
  if constexpr (kReduction == Reduction::avg) {
    y[flat_bin] = from_float<T>(acc.sum / static_cast<float>(height * width));
  } else if constexpr (kReduction == Reduction::max) {
    y[flat_bin] = from_float<T>(acc.best);
  } else {
    y[flat_bin] = from_float<T>(acc.best.value);
    indices[flat_bin] = acc.best.at;
  }
}

// The most taps a bin of an axis of `in` elements split into `out` bins can have.
int max_bin_extent(int in, int out) { return in % out == 0 ? in / out : in / out + 2; }

template <Reduction kReduction>
void launch(std::string_view op, const AdaptiveGeometry& g, const TensorRef& x, const TensorRef& y,
            int64_t* indices, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  const AdaptiveArgs args{g.in_h, g.in_w, g.out_h, g.out_w};
  const int64_t max_taps = int64_t{max_bin_extent(g.in_h, g.out_h)} * max_bin_extent(g.in_w, g.out_w);
  const int64_t in_plane = int64_t{g.in_h} * g.in_w, bins_per_plane = int64_t{g.out_h} * g.out_w;
  dispatch_float(x.dtype, [&]<class T>() {
    const auto* x_data = static_cast<const T*>(x.data);
    auto* y_data = static_cast<T*>(y.data);
    const auto run = [&]<int kLanes>() {
      for_each_plane_group(g.planes, bins_per_plane, kThreads / kLanes, [&](int64_t first, int bins, unsigned blocks) {
        adaptive_pool2d_kernel<T, kReduction, kLanes><<<blocks, kThreads, 0, stream>>>(
            x_data + first * in_plane, y_data + first * bins_per_plane,
            indices ? indices + first * bins_per_plane : nullptr, args, bins);
        check_launch(op);
      });
    };
    if (max_taps <= kSmallBinLanes * kLoads) {
      run.template operator()<kSmallBinLanes>();
    } else {
      run.template operator()<32>();
    }
  });
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
