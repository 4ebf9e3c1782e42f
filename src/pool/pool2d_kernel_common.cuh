// What the pooling kernels share: the reductions, PyTorch's NaN and divisor rules, and the geometry
// the two 2-D sliding-window kernels (pool2d_staged.cuh, pool2d_separable.cuh) receive.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"
#include "pool/pool_geometry.hpp"

namespace solops::detail {

constexpr int kPool2dThreads = 256;

enum class Reduction { max, max_with_index, avg };

// In-plane geometry of one call (all int32: resolve_pool bounds every in-plane size).
struct Pool2dArgs {
  int in_h, in_w, out_h, out_w;
  int kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  bool count_include_pad;
  bool evict_first;      // the separable kernel's read_once_policy choice (input_evict_first)
  int divisor_override;  // 0 = none
};

template <class T>
__device__ __forceinline__ T max_propagating_nan(T a, T b) {
  if constexpr (std::is_same_v<T, float>) {
    float result;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
    return result;
  } else {
    return __hmax_nan(a, b);
  }
}

// The scan rule of max with an index (spec §4.2–4.3): a later tap replaces the best one when it is
// strictly greater or NaN, so ties keep the first tap and NaNs report the last NaN. Callers compare
// in f32 (one conversion per tap). Both tests are evaluated (`|`, not `||`): a short-circuit is
// compiled as a branch per tap, and branches let the compiler sink loads towards their use.
__device__ __forceinline__ bool replaces_best(float value, float best) {
  return (value > best) | isnan(value);
}

// The max of a set of taps and its flat position in the window (-1: no tap). Combining two such
// results gives the rule of the whole scan (spec §4.2–4.3): the last NaN if either holds one,
// else the larger value, and of equal values the earlier position.
struct MaxAt {
  float value;
  int at;
};

__device__ __forceinline__ MaxAt combine(MaxAt a, MaxAt b) {
  if (a.at < 0) return b;
  if (b.at < 0) return a;
  const bool a_nan = isnan(a.value), b_nan = isnan(b.value);
  if (a_nan || b_nan) {
    if (a_nan && b_nan) return a.at > b.at ? a : b;
    return a_nan ? a : b;
  }
  if (a.value != b.value) return a.value > b.value ? a : b;
  return a.at < b.at ? a : b;
}

// The running result of a reduction: add() takes taps in scan order with their flat positions,
// merge() joins the results of two disjoint sets of taps (for the max with positions, the rule
// of `combine`), shuffled() is another lane's result. Lanes that see no taps hold the identity.
template <Reduction kReduction>
struct Accumulator;

template <>
struct Accumulator<Reduction::avg> {
  float sum = 0.f;
  __device__ __forceinline__ void add(float value, int) { sum += value; }
  __device__ __forceinline__ void merge(const Accumulator& other) { sum += other.sum; }
  __device__ __forceinline__ Accumulator shuffled(int lane_mask) const {
    return {__shfl_xor_sync(~0u, sum, lane_mask)};
  }
};

template <>
struct Accumulator<Reduction::max> {
  float best = -INFINITY;
  __device__ __forceinline__ void add(float value, int) { best = max_propagating_nan(best, value); }
  __device__ __forceinline__ void merge(const Accumulator& other) { best = max_propagating_nan(best, other.best); }
  __device__ __forceinline__ Accumulator shuffled(int lane_mask) const {
    return {__shfl_xor_sync(~0u, best, lane_mask)};
  }
};

template <>
struct Accumulator<Reduction::max_with_index> {
  MaxAt best{-INFINITY, -1};
  __device__ __forceinline__ void add(float value, int at) {
    if (best.at < 0 || replaces_best(value, best.value)) best = {value, at};
  }
  __device__ __forceinline__ void merge(const Accumulator& other) { best = combine(best, other.best); }
  __device__ __forceinline__ Accumulator shuffled(int lane_mask) const {
    return {MaxAt{__shfl_xor_sync(~0u, best.value, lane_mask), __shfl_xor_sync(~0u, best.at, lane_mask)}};
  }
};

// ptxas moves loads down towards their first use, counting on other warps to hide the latency; a
// thread then waits for one load before it issues the next, one DRAM round trip per group of
// loads, which small grids (few warps) cannot hide. A branch ptxas cannot remove ends the block
// the loads are in, so all of them are issued before any is used. `never` must be a run-time
// condition that is never true (e.g. an input size that is always positive).
__device__ __forceinline__ void keep_loads_above(bool never) {
  if (never) __nanosleep(0);
}

// Joins the results of kLanes adjacent lanes (a power of two, aligned); every lane of the warp
// must call it.
template <int kLanes, Reduction kReduction>
__device__ __forceinline__ Accumulator<kReduction> merge_lanes(Accumulator<kReduction> acc) {
#pragma unroll
  for (int lane_mask = kLanes / 2; lane_mask > 0; lane_mask /= 2) acc.merge(acc.shuffled(lane_mask));
  return acc;
}

// Taps of one axis that PyTorch's avg-pool divides by (spec §4.1), for the window starting at
// `start`: the window end is clipped to the padded extent, so a ceil-mode overhang never counts,
// and padding counts only with count_include_pad.
__device__ __forceinline__ int avg_window_taps(int start, int kernel, int in, int pad,
                                               bool count_include_pad) {
  const int end = min(start + kernel, in + pad);
  return count_include_pad ? end - start : min(end, in) - max(start, 0);
}

// A window's average: the sum times the hardware reciprocal of the divisor, two instructions where
// an IEEE division is about ten (within 2 ulp of sum / divisor: inside the spec's 1e-5 on f32, and
// at most one unit of the last place on f16 and bf16 outputs).
__device__ __forceinline__ float window_average(float sum, int divisor) {
  return __fdividef(sum, static_cast<float>(divisor));
}

__device__ __forceinline__ int avg_divisor(const Pool2dArgs& a, int h0, int w0) {
  if (a.divisor_override != 0) return a.divisor_override;
  return avg_window_taps(h0, a.kernel_h, a.in_h, a.pad_h, a.count_include_pad) *
         avg_window_taps(w0, a.kernel_w, a.in_w, a.pad_w, a.count_include_pad);
}

// The separable 2-D and 3-D kernels and the row segments load a max's input evict-first where it is
// a quarter of the L2 or more. A max reads four to eight times what it writes: on large inputs its
// evict-first loads leave the lines the benchmark's flush dirtied in the L2 instead of making DRAM
// write them back during the kernel, while inputs well inside the L2 are faster kept (the boundary
// measured lies between a fifth and two fifths of the L2). With positions, and for averages, the
// same kernels measured level or slower, so they keep evict_last (the separable kernels compile the
// choice out: read_once_policy(kReduction == Reduction::max && a.evict_first)).
template <class T, Reduction kReduction>
bool input_evict_first(const PoolGeometry& g, const TensorRef& x) {
  const int64_t input_bytes = g.planes * g.in_d * g.in_h * g.in_w * static_cast<int64_t>(sizeof(T));
  return kReduction == Reduction::max && input_bytes >= l2_cache_bytes(x.device) / 4;
}

// The kernels index their tiles with int32: planes are launched in groups that keep a launch's
// tiles in range. Calls launch(first_plane, tiles, blocks) for each group.
template <class Launch>
void for_each_plane_group(int64_t planes, int64_t tiles_per_plane, int threads_per_block, Launch&& launch) {
  const int64_t planes_per_launch = (INT_MAX - threads_per_block) / tiles_per_plane;
  for (int64_t first = 0; first < planes; first += planes_per_launch) {
    const auto tiles = static_cast<int>(std::min(planes_per_launch, planes - first) * tiles_per_plane);
    launch(first, tiles, static_cast<unsigned>((tiles + threads_per_block - 1) / threads_per_block));
  }
}

}  // namespace solops::detail
