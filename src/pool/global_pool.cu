// Global pooling: one window covers a whole contiguous plane (adaptive pools to 1×1, and sliding
// windows whose one output per plane reads every input element, such as a 1-D max over the whole
// sequence).
//
// A group of kLanes adjacent lanes reduces one plane: lane i takes loads i, i + kLanes, ... of
// the plane, so a warp's loads cover 32 / kLanes adjacent planes, one contiguous range, and the
// group merges its lanes' results with shuffles. Loads are 16 bytes where every plane starts
// 16-byte aligned, else one element. Planes of few loads (a 7×7 plane: 49) take groups of 8 lanes,
// so that no lane idles and the shuffle tree stays short; larger ones whole warps.
#include <algorithm>
#include <climits>
#include <cstring>

#include "core/device.hpp"
#include "core/evict_last.cuh"
#include "pool/pool2d_kernel_common.cuh"
#include "pool/pool_launch.hpp"

namespace solops::detail {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;
// Loads of a lane issued before any of them is reduced. Eight single elements, so that a group of
// 8 lanes issues a 7×7 plane's 49 loads in one round, where four took two rounds, two DRAM round
// trips (16 lanes of four loads, the other way to one round, gained on the unbatched planes only).
// Four 16-byte vectors: eight take 66 registers and made the whole-sequence 1-D max
// ([64, 256, 128] f16) slower.
template <int kElements>
constexpr int kLoadsInFlight = kElements == 1 ? 8 : 4;
// Planes of at least this many loads take a whole warp each: single elements past one round of a
// group of 8 lanes; 16-byte vectors from 128.
template <int kElements>
constexpr int kWarpPlaneLoads = kElements == 1 ? 8 * kLoadsInFlight<1> + 1 : 128;

// kElements consecutive elements of a plane, read with one load, as torch.compile's kernels load
// theirs (core/evict_last.cuh): faster than __ldg on the rows of a few DRAM round trips.
template <class T, int kElements>
struct Load {
  T element[kElements];

  __device__ __forceinline__ static Load at(const T* __restrict__ plane, int index) {
    Load load;
    if constexpr (kElements == 1) {
      load.element[0] = load_evict_last(plane + index, evict_last_policy());
    } else {
      static_assert(sizeof(Load) == sizeof(uint4));
      const uint4 raw = load_evict_last(reinterpret_cast<const uint4*>(plane) + index, evict_last_policy());
      memcpy(load.element, &raw, sizeof(raw));
    }
    return load;
  }
};

template <class T, Reduction kReduction, int kLanes, int kElements>
__global__ void __launch_bounds__(kThreads)
    global_pool_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t* __restrict__ indices,
                       int64_t planes, int plane_size, float divisor) {
  constexpr int kGroupsPerBlock = kThreads / kLanes;
  const int lane = threadIdx.x % kLanes;
  const int plane_loads = plane_size / kElements;
  // Every lane runs the same number of iterations, so the shuffles always see whole warps; the
  // lanes of planes past the end take no loads.
  for (int64_t first = int64_t{blockIdx.x} * kGroupsPerBlock; first < planes;
       first += int64_t{gridDim.x} * kGroupsPerBlock) {
    const int64_t plane = first + threadIdx.x / kLanes;
    const int loads = plane < planes ? plane_loads : 0;
    const T* const plane_x = x + plane * plane_size;
    Accumulator<kReduction> acc;
    for (int l0 = lane; l0 < loads; l0 += kLanes * kLoadsInFlight<kElements>) {
      Load<T, kElements> load[kLoadsInFlight<kElements>];
#pragma unroll
      for (int i = 0; i < kLoadsInFlight<kElements>; ++i) {
        if (l0 + i * kLanes < loads) load[i] = Load<T, kElements>::at(plane_x, l0 + i * kLanes);
      }
#pragma unroll
      for (int i = 0; i < kLoadsInFlight<kElements>; ++i) {
        if (l0 + i * kLanes >= loads) break;
#pragma unroll
        for (int e = 0; e < kElements; ++e) {  // a lane's taps come in plane order
          acc.add(to_float(load[i].element[e]), (l0 + i * kLanes) * kElements + e);
        }
      }
    }
    acc = merge_lanes<kLanes>(acc);
    if (lane == 0 && plane < planes) {
      if constexpr (kReduction == Reduction::avg) {
        y[plane] = from_float<T>(acc.sum / divisor);
      } else if constexpr (kReduction == Reduction::max) {
        y[plane] = from_float<T>(acc.best);
      } else {
        y[plane] = from_float<T>(acc.best.value);
        indices[plane] = acc.best.at;
      }
    }
  }
}

template <Reduction kReduction>
void launch(std::string_view op, int64_t planes, int plane_size, float divisor, const TensorRef& x,
            const TensorRef& y, int64_t* indices, cudaStream_t stream) {
  if (planes == 0) return;
  dispatch_float(x.dtype, [&]<class T>() {
    constexpr int kVector = 16 / sizeof(T);
    const auto run = [&]<int kLanes, int kElements>() {
      const int64_t blocks = (planes + kThreads / kLanes - 1) / (kThreads / kLanes);
      global_pool_kernel<T, kReduction, kLanes, kElements>
          <<<static_cast<unsigned>(std::min<int64_t>(blocks, INT_MAX)), kThreads, 0, stream>>>(
              static_cast<const T*>(x.data), static_cast<T*>(y.data), indices, planes, plane_size, divisor);
    };
    const bool vectors = reinterpret_cast<uintptr_t>(x.data) % 16 == 0 && plane_size % kVector == 0;
    const int plane_loads = vectors ? plane_size / kVector : plane_size;
    if (vectors) {
      if (plane_loads >= kWarpPlaneLoads<kVector>) return run.template operator()<kWarp, kVector>();
      return run.template operator()<8, kVector>();
    }
    if (plane_loads >= kWarpPlaneLoads<1>) return run.template operator()<kWarp, 1>();
    run.template operator()<8, 1>();
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
