// L1NormFwd, L2NormFwd and WeightNormFwd kernels. Memory-bound: x is read once. Each output's reduction is split
// into plan.splits contiguous chunks of its reduced index range, one block a chunk; a block walks
// its chunk as runs of the innermost reduced dim (one offset decode per run, not per element),
// 16-byte vectors within a contiguous run (a scalar head and tail around them), f32 accumulation,
// then the block sum of row_norm's reduction. With one split the block writes the result; with
// more it writes an f32 partial to the caller's workspace, and a second kernel (one block an
// output) adds each output's partials, in the same order on every run. WeightNorm whose slices are
// contiguous rows (dim 0) holds each row in registers and writes its f32 norm and the scaled row in
// one pass (weight_norm_rows); other dims write the norms the same way as the vector norms, then
// one elementwise pass scales v by g / norm of its slice.
#include <algorithm>
#include <climits>

#include "core/device.hpp"
#include "core/integer.hpp"
#include "norm/held_row.cuh"
#include "norm/vector_norm.hpp"

namespace solops::detail::vector_norm_kernels {

using row_norm::kVectorBytes;
using row_norm::kWarp;
using row_norm::row_sum;

constexpr int kMaxThreads = 256;
// The scaling pass's grid: 16 blocks on each of the 132 SMs fill them; more would only add blocks
// that start after others finish, so larger tensors are walked grid-stride.
constexpr int64_t kMaxScaleBlocks = 132 * 16;

// The plan's index maps, as kernel parameters.
struct Dims {
  int rank;
  int64_t sizes[kMaxRank];
  int64_t strides[kMaxRank];
};

// The offset of flat index `index` over dims[0, rank), the last one innermost.
__device__ __forceinline__ int64_t offset_of(int64_t index, const Dims& dims, int rank) {
  int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += index % dims.sizes[d] * dims.strides[d];
    index /= dims.sizes[d];
  }
  return offset;
}

struct Shape {
  int64_t outputs, reduced, inner, inner_stride, splits, chunk;
};

template <int kOrd>
__device__ __forceinline__ float term(float v) {
  if constexpr (kOrd == 1) return fabsf(v);
  else return v * v;
}

template <int kOrd>
__device__ __forceinline__ float finish(float sum) {
  if constexpr (kOrd == 1) return sum;
  else return sqrtf(sum);
}

// This thread's share of the sum of term over n contiguous elements at `run`.
template <class T, int kOrd>
__device__ __forceinline__ float contiguous_sum(const T* run, int64_t n) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const auto misalignment = static_cast<int64_t>(reinterpret_cast<uintptr_t>(run) % kVectorBytes / sizeof(T));
  const int64_t head = ::min(n, misalignment ? kVec - misalignment : int64_t{0});
  const int64_t vectors = (n - head) / kVec;
  float sum = 0;
  if (threadIdx.x < head) sum += term<kOrd>(to_float(run[threadIdx.x]));
  const uint4* body = reinterpret_cast<const uint4*>(run + head);
  // Eight vectors a thread loaded before any is summed, so that eight loads are in flight, not one:
  // a block's chunk is a few vectors a thread, and one at a time left the L1/L2 rows (2048 x 4096)
  // at 13.9 µs against a 3.9 µs floor.
  constexpr int kInFlight = 8;
  for (int64_t first = threadIdx.x; first < vectors; first += kInFlight * int64_t{blockDim.x}) {
    uint4 bits[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      if (first + k * blockDim.x < vectors) bits[k] = __ldg(body + first + k * blockDim.x);
    }
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      if (first + k * blockDim.x >= vectors) continue;
      T lanes[kVec];
      memcpy(lanes, &bits[k], sizeof bits[k]);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += term<kOrd>(to_float(lanes[e]));
    }
  }
  for (int64_t j = head + vectors * kVec + threadIdx.x; j < n; j += blockDim.x) sum += term<kOrd>(to_float(run[j]));
  return sum;
}

// Y: the result's type, x's for the vector norms, f32 for WeightNorm's norms.
// Three blocks an SM: the plan's kTargetBlocks, all resident at once.
template <class T, class Y, int kOrd>
__global__ void __launch_bounds__(kMaxThreads, 3)
    partial_norms(const T* __restrict__ x, Y* __restrict__ y, float* __restrict__ partial, const Dims kept,
                  const Dims reduced, const Shape s) {
  __shared__ float warp_sums[kMaxThreads / kWarp];
  for (int64_t block = blockIdx.x; block < s.outputs * s.splits; block += gridDim.x) {
    const int64_t output = block / s.splits, split = block % s.splits;
    const int64_t begin = split * s.chunk, end = ::min(begin + s.chunk, s.reduced);
    const int64_t kept_offset = offset_of(output, kept, kept.rank);
    float sum = 0;
    for (int64_t run = begin / s.inner; run * s.inner < end; ++run) {
      const int64_t lo = ::max(begin, run * s.inner) - run * s.inner;
      const int64_t hi = ::min(end, (run + 1) * s.inner) - run * s.inner;
      const T* first = x + kept_offset + offset_of(run, reduced, reduced.rank - 1) + lo * s.inner_stride;
      if (s.inner_stride == 1) {
        sum += contiguous_sum<T, kOrd>(first, hi - lo);
      } else {
        for (int64_t j = threadIdx.x; j < hi - lo; j += blockDim.x) {
          sum += term<kOrd>(to_float(first[j * s.inner_stride]));
        }
      }
    }
    sum = row_sum(sum, warp_sums);
    if (threadIdx.x == 0) {
      if (s.splits == 1) y[output] = from_float<Y>(finish<kOrd>(sum));
      else partial[block] = sum;
    }
  }
}

template <class Y, int kOrd>
__global__ void __launch_bounds__(kMaxThreads)
    finish_norms(const float* __restrict__ partial, Y* __restrict__ y, const Shape s) {
  __shared__ float warp_sums[kMaxThreads / kWarp];
  for (int64_t output = blockIdx.x; output < s.outputs; output += gridDim.x) {
    const float* const partials = partial + output * s.splits;
    float sum = 0;
    // Loads in flight together: one at a time, 1024 partials took 8 round trips (ncu: 5.2 µs).
    row_norm::for_each_strided<8>(s.splits, [partials](int64_t i) { return partials[i]; },
                                  [&sum](float value, int64_t) { sum += value; });
    sum = row_sum(sum, warp_sums);
    if (threadIdx.x == 0) y[output] = from_float<Y>(finish<kOrd>(sum));
  }
}

// y = x * (g[k] / norm[k]) for slice k = (i / inner) % slices of element i. kVec elements a step:
// inner a multiple of kVec keeps a vector within one slice.
template <class T, int kVec>
__global__ void __launch_bounds__(kMaxThreads)
    scale_slices(const T* __restrict__ x, const T* __restrict__ g, const float* __restrict__ norm, T* __restrict__ y,
                 int64_t numel, int64_t inner, int64_t slices) {
  using Vector = row_norm::Pack<T, kVec>;
  const int64_t steps = numel / kVec;
  for (int64_t step = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; step < steps;
       step += int64_t{gridDim.x} * blockDim.x) {
    const int64_t slice = step * kVec / inner % slices;
    const float scale = to_float(__ldg(g + slice)) / __ldg(norm + slice);
    float values[kVec];
    row_norm::unpack<T, kVec>(__ldg(reinterpret_cast<const Vector*>(x) + step), values);
#pragma unroll
    for (int e = 0; e < kVec; ++e) values[e] *= scale;
    reinterpret_cast<Vector*>(y)[step] = row_norm::pack<T, kVec>(values);
  }
}

// WeightNorm over rows (every slice one contiguous run: dim 0, or leading dims of size 1): a row
// held in registers as the row norms hold theirs, its norm taken and the row scaled by g / norm in
// one pass, so v is read once instead of twice. Rows too long to hold take the two-pass path.
template <class T, int kVec, int kVecs>
__global__ void __launch_bounds__(row_norm::max_threads(kVec, kVecs))
    weight_norm_rows(const T* __restrict__ x, const T* __restrict__ g, float* __restrict__ norm, T* __restrict__ y,
                     const row_norm::RowShape s) {
  using P = row_norm::Pack<T, kVec>;
  using Reduction = row_norm::HeldRowReduction<kVecs>;
  row_norm::for_each_held_row<kVec, kVecs>(s, [&](const row_norm::HeldRow& r, Reduction& reduce) {
    P held[kVecs];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (r.holds(i)) held[i] = __ldg(reinterpret_cast<const P*>(x) + r.first + r.vector(i));
    }
    // f(i, values) for each held vector i, its elements in f32.
    const auto for_each_held = [&](auto f) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds(i)) continue;
        float values[kVec];
        row_norm::unpack<T, kVec>(held[i], values);
        f(i, values);
      }
    };
    float squares = 0;
    for_each_held([&](int, float(&values)[kVec]) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) squares += values[e] * values[e];
    });
    const float length = sqrtf(reduce.sum(squares));
    if (!r.active) return;
    if (r.leads()) norm[r.row] = length;
    const float scale = to_float(__ldg(g + r.row)) / length;
    for_each_held([&](int i, float(&values)[kVec]) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) values[e] *= scale;
      reinterpret_cast<P*>(y)[r.first + r.vector(i)] = row_norm::pack<T, kVec>(values);
    });
  });
}

Dims dims_of(int rank, const std::array<int64_t, kMaxRank>& sizes, const std::array<int64_t, kMaxRank>& strides) {
  Dims dims{rank, {}, {}};
  std::copy(sizes.begin(), sizes.end(), dims.sizes);
  std::copy(strides.begin(), strides.end(), dims.strides);
  return dims;
}

// Whole warps, about eight elements a thread, at most kMaxThreads.
int threads_for(int64_t elements) {
  const int64_t warps = (elements + 8 * kWarp - 1) / (8 * kWarp);
  return static_cast<int>(std::clamp<int64_t>(warps, 1, kMaxThreads / kWarp) * kWarp);
}

// The launch of the reduction over `plan` into y of type Y.
template <class T, class Y>
void reduce(const ReductionPlan& plan, int ord, const T* x, Y* y, float* partial, cudaStream_t stream) {
  const Dims kept = dims_of(plan.kept_rank, plan.kept_sizes, plan.kept_strides);
  const Dims reduced = dims_of(plan.reduced_rank, plan.reduced_sizes, plan.reduced_strides);
  const Shape s{plan.outputs, plan.reduced, plan.inner, plan.inner_stride, plan.splits,
                (plan.reduced + plan.splits - 1) / plan.splits};
  const auto run = [&]<int kOrd>() {
    partial_norms<T, Y, kOrd><<<grid_for(plan.outputs * plan.splits), threads_for(s.chunk), 0, stream>>>(
        x, y, partial, kept, reduced, s);
    if (plan.splits > 1) {
      finish_norms<Y, kOrd><<<grid_for(plan.outputs), threads_for(plan.splits), 0, stream>>>(partial, y, s);
    }
  };
  if (ord == 1) run.template operator()<1>();
  else run.template operator()<2>();
}

}  // namespace solops::detail::vector_norm_kernels

namespace solops::detail {

void launch_vector_norm(std::string_view op, const ReductionPlan& plan, int ord, const TensorRef& x,
                        const TensorRef& y, const TensorRef* workspace, cudaStream_t stream) {
  if (plan.outputs == 0) return;
  float* const partial = workspace ? static_cast<float*>(workspace->data) : nullptr;
  dispatch_float(x.dtype, [&]<class T>() {
    vector_norm_kernels::reduce(plan, ord, static_cast<const T*>(x.data), static_cast<T*>(y.data), partial, stream);
  });
  check_launch(op);
}

void launch_weight_norm(std::string_view op, const WeightNormPlan& plan, const TensorRef& v, const TensorRef& g,
                        const TensorRef& y, const TensorRef& norm, const TensorRef* workspace, cudaStream_t stream) {
  using namespace vector_norm_kernels;
  if (plan.norms.outputs == 0) return;
  float* const partial = workspace ? static_cast<float*>(workspace->data) : nullptr;
  auto* const norms = static_cast<float*>(norm.data);
  const int64_t numel = plan.norms.outputs * plan.norms.reduced;
  dispatch_float(v.dtype, [&]<class T>() {
    const auto* x = static_cast<const T*>(v.data);
    const auto* gain = static_cast<const T*>(g.data);
    auto* out = static_cast<T*>(y.data);
    // The norms by the vector-norm reduction, then a pass scaling v.
    const auto two_passes = [&] {
      reduce(plan.norms, 2, x, norms, partial, stream);
      if (numel == 0) return;
      constexpr int kVec = kVectorBytes / sizeof(T);
      const bool aligned = (reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(out)) % kVectorBytes == 0;
      const auto scale = [&]<int kStep>() {
        const int64_t steps = numel / kStep;
        scale_slices<T, kStep><<<grid_for(std::min((steps + kMaxThreads - 1) / kMaxThreads, kMaxScaleBlocks)),
                                 kMaxThreads, 0, stream>>>(x, gain, norms, out, numel, plan.inner, plan.slices);
      };
      if (aligned && plan.inner % kVec == 0) scale.template operator()<kVec>();
      else scale.template operator()<1>();
    };
    // Slices that are contiguous rows go through weight_norm_rows, or, too long to hold, two passes.
    const int64_t rows = plan.slices;
    if (numel == 0 || rows * plan.inner != numel || plan.inner > INT_MAX) return two_passes();
    const row_norm::RowShape s = row_norm::row_shape({rows, static_cast<int>(plan.inner)}, {});
    row_norm::launch_row_kernel<T>(
        {x, out}, s, multiprocessor_count(v.device), row_norm::kForwardRowSharing,
        [&]<int kVec, int kVecs>(dim3 grid, dim3 block, unsigned cluster) {
          row_norm::launch_clustered(weight_norm_rows<T, kVec, kVecs>, grid, block, cluster, 0, stream, x, gain, norms,
                                     out, s);
        },
        [&](unsigned) { two_passes(); });
  });
  check_launch(op);
}

}  // namespace solops::detail
