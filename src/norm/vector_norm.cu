// L1NormFwd, L2NormFwd and WeightNormFwd kernels. Memory-bound: x is read once. Each output's
// reduction is split into plan.splits chunks of its reduced index range, one block a chunk.
// Where each output's reduced elements are one contiguous run of aligned 16-byte vectors (full
// reductions, reductions over trailing dims), split_norms sums a chunk of two or four vectors a
// thread and writes a partial, and add_partials adds each output's partials in split order: the
// split reduction torch.compile runs. Other layouts with one split, where the output's runs are
// whole, aligned 16-byte vectors that a block loads in one round of at most eight a thread:
// run_norms loads them all at once with no index arithmetic but an add (as [4, 128, 4096] over
// dims 0 and 2: four runs of 4096, one load a run a thread). Otherwise, where every run of the
// innermost reduced dim is whole, aligned 16-byte vectors, a block loads its chunk's vectors eight
// a thread at a time across runs (vector_runs_sum); else it walks the chunk run by run
// (walked_runs_sum: vectors within a contiguous run with a scalar head and tail, or strided
// elements). f32 accumulation, then the block sum of row_norm's reduction. There, with more than
// one split, the partials meet at a grid-wide barrier in the same kernel (reduce_norms).
// WeightNorm whose slices are contiguous rows (dim 0) holds each row in registers and writes its
// f32 norm and the scaled row in one pass (weight_norm_rows); other dims write the norms the same
// way as the vector norms, then one elementwise pass scales v by g / norm of its slice.
#include <algorithm>
#include <climits>
#include <optional>
#include <utility>

#include <cooperative_groups.h>

#include "core/device.hpp"
#include "core/evict_last.cuh"
#include "core/integer.hpp"
#include "norm/held_row.cuh"
#include "norm/vector_norm.hpp"

namespace solops::detail::vector_norm_kernels {

using row_norm::kVectorBytes;
using row_norm::kWarp;
using row_norm::row_sum;

constexpr int kMaxThreads = 256;
// Blocks of the reduction kernel resident on an SM (its registers bounded to 64 a thread for the
// vector walk, 85 for the run walk, whose eight-vector loads and run offsets spilled at 64): a
// cooperative launch of split reductions may have this many on every SM.
constexpr int resident_reduction_blocks(bool vector_runs) { return vector_runs ? 4 : 3; }
// The scaling pass's grid: 16 blocks on each of the 132 SMs fill them; more would only add blocks
// that start after others finish, so larger tensors are walked grid-stride.
constexpr int64_t kMaxScaleBlocks = 132 * 16;

// The plan's index maps, as kernel parameters.
struct Dims {
  int rank;
  int64_t sizes[kMaxRank];
  int64_t strides[kMaxRank];
};

// The offset of flat index `index` (< the product of their sizes) over dims[0, rank), the last one
// innermost. The outermost dim takes what is left of the index without a division: one output dim
// (kept_rank 1) costs a multiply, not a 64-bit division before the block's first load.
__host__ __device__ __forceinline__ int64_t offset_of(int64_t index, const Dims& dims, int rank) {
  if (rank == 0) return 0;
  int64_t offset = 0;
  for (int d = rank - 1; d > 0; --d) {
    offset += index % dims.sizes[d] * dims.strides[d];
    index /= dims.sizes[d];
  }
  return offset + index * dims.strides[0];
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
  // a block's chunk is a few vectors a thread, and one at a time left the full reductions at a
  // fraction of the copy rate.
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

// This thread's share of the sum of term over the reduced elements [begin, end) of the output
// whose first element is at x, walked run by run (any strides, any alignment).
template <class T, int kOrd>
__device__ __forceinline__ float walked_runs_sum(const T* x, const Dims& reduced, const Shape& s, int64_t begin,
                                                 int64_t end) {
  float sum = 0;
  for (int64_t run = begin / s.inner; run * s.inner < end; ++run) {
    const int64_t lo = ::max(begin, run * s.inner) - run * s.inner;
    const int64_t hi = ::min(end, (run + 1) * s.inner) - run * s.inner;
    const T* first = x + offset_of(run, reduced, reduced.rank - 1) + lo * s.inner_stride;
    if (s.inner_stride == 1) {
      sum += contiguous_sum<T, kOrd>(first, hi - lo);
    } else {
      for (int64_t j = threadIdx.x; j < hi - lo; j += blockDim.x) {
        sum += term<kOrd>(to_float(first[j * s.inner_stride]));
      }
    }
  }
  return sum;
}

// Runs of whole 16-byte vectors, each starting on a 16-byte boundary: vector w of an output's
// reduced range lies in run w / vectors_per_run, whose place among the reduced dims outside the run
// (outer_sizes, outer_strides) gives its offset. Indices and offsets fit 32 bits (the launcher
// checks): eight 64-bit offsets a thread spilled.
struct VectorRuns {
  FastDivisor vectors_per_run;
  int outer_rank;
  FastDivisor outer_sizes[kMaxRank];
  int outer_strides[kMaxRank];

  template <int kVec>
  __device__ __forceinline__ int offset(int w) const {
    int run = vectors_per_run.divide(w);
    int offset = (w - run * vectors_per_run.divisor()) * kVec;
    for (int d = outer_rank - 1; d >= 0; --d) {
      const int outer = outer_sizes[d].divide(run);
      offset += (run - outer * outer_sizes[d].divisor()) * outer_strides[d];
      run = outer;
    }
    return offset;
  }
};

// Loads a thread of vector_runs_sum issues before it sums any: a chunk of the plan's size (16384 half
// elements, 256 threads) is one such round, so that a block waits on one round trip, not one a run.
// At the 64-register bound ptxas spills 8 bytes; six in flight (58 registers, no spill) measured
// the same on [2048, 4096] and slower on the rows of 4 MB.
constexpr int kVectorsInFlight = 8;

// This thread's share of the sum of term over the vectors [begin, end) of the output whose first
// element is at x.
template <class T, int kOrd>
__device__ __forceinline__ float vector_runs_sum(const T* x, const VectorRuns& runs, int begin, int end) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  constexpr int kInFlight = kVectorsInFlight;
  float sum = 0;
  for (int first = begin + static_cast<int>(threadIdx.x); first < end; first += kInFlight * blockDim.x) {
    uint4 bits[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int w = first + k * static_cast<int>(blockDim.x);
      if (w < end) bits[k] = __ldg(reinterpret_cast<const uint4*>(x + runs.offset<kVec>(w)));
    }
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      if (first + k * static_cast<int>(blockDim.x) >= end) continue;
      float values[kVec];
      row_norm::unpack<T, kVec>(bits[k], values);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += term<kOrd>(values[e]);
    }
  }
  return sum;
}

// The reduction into y (Y: x's type for the vector norms, f32 for WeightNorm's norms). Block b of
// the plan's outputs x splits sums chunk b % splits of output b / splits. With one split it writes
// the result; with more it writes an f32 partial, and after a grid-wide barrier (a cooperative
// launch, every block resident: resident_reduction_blocks) one block an output adds that output's
// partials in split order, so the sum's order, and the result, is the same on every run. One
// kernel instead of a second one for the partials: a second launch is a large share of rows whose
// reads take a few microseconds.
template <class T, class Y, int kOrd, bool kVectorRuns>
__global__ void __launch_bounds__(kMaxThreads, resident_reduction_blocks(kVectorRuns))
    reduce_norms(const T* __restrict__ x, Y* __restrict__ y, float* __restrict__ partial, const Dims kept,
                 const Dims reduced, const VectorRuns runs, const Shape s) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kMaxThreads / kWarp)];
  for (int64_t block = blockIdx.x; block < s.outputs * s.splits; block += gridDim.x) {
    const int64_t output = block / s.splits, split = block % s.splits;
    const int64_t begin = split * s.chunk, end = ::min(begin + s.chunk, s.reduced);
    const T* const first = x + offset_of(output, kept, kept.rank);
    float sum;
    if constexpr (kVectorRuns) {
      sum = vector_runs_sum<T, kOrd>(first, runs, static_cast<int>(begin / kVec), static_cast<int>(end / kVec));
    } else {
      sum = walked_runs_sum<T, kOrd>(first, reduced, s, begin, end);
    }
    sum = row_sum(sum, warp_sums);
    if (threadIdx.x == 0) {
      if (s.splits == 1) y[output] = from_float<Y>(finish<kOrd>(sum));
      else partial[block] = sum;
    }
  }
  if (s.splits == 1) return;
  cooperative_groups::this_grid().sync();
  for (int64_t output = blockIdx.x; output < s.outputs; output += gridDim.x) {
    const float* const partials = partial + output * s.splits;
    float sum = 0;
    // __ldcg: the partials were written by other SMs during this kernel, past their L1s.
    row_norm::for_each_strided<8>(s.splits, [partials](int64_t i) { return __ldcg(partials + i); },
                                  [&sum](float value, int64_t) { sum += value; });
    sum = row_sum(sum, warp_sums);
    if (threadIdx.x == 0) y[output] = from_float<Y>(finish<kOrd>(sum));
  }
}

// split_norms' blocks fill an SM's threads (kThreadsPerSm, at most 32 registers): 512 threads, four
// an SM, or 256, eight an SM. The plan's chunk of 8192 elements is one round of a block's loads: two
// or four 16-byte vectors a thread of half types, four or eight of f32.
template <class T>
constexpr int kSplitRoundVectors = 8192 * static_cast<int>(sizeof(T)) / kVectorBytes;

// Output o's run: vectors [0, vectors) from element o * output_stride of x, split into chunks of
// chunk_vectors (the last of a run may have fewer), `splits` an output.
struct SplitShape {
  int vectors;
  int chunk_vectors;
  int64_t output_stride;
  FastDivisor splits;
};

// Block b sums chunk b % splits of output b / splits into partial[b], or with one split writes the
// output. A thread's vectors lie blockDim apart, so each load of a warp covers 512 contiguous bytes;
// all of a round's loads are issued before any is summed. Indices are 32-bit (the launcher checks):
// the block's prologue is a multiply-high, and its loads wait on no other arithmetic. Loads as
// torch.compile's kernels issue theirs (core/evict_last.cuh), which measured faster than
// evict-first loads on every row.
template <class T, class Y, int kOrd, int kThreads>
__global__ void __launch_bounds__(kThreads, kThreadsPerSm / kThreads)
    split_norms(const T* __restrict__ x, Y* __restrict__ y, float* __restrict__ partial, const SplitShape s) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  constexpr int kLoads = kSplitRoundVectors<T> / kThreads;
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kThreads / kWarp)];
  const int output = s.splits.divide(static_cast<int>(blockIdx.x));
  const int split = static_cast<int>(blockIdx.x) - output * s.splits.divisor();
  const uint4* const run = reinterpret_cast<const uint4*>(x + output * s.output_stride);
  const int begin = split * s.chunk_vectors, end = ::min(begin + s.chunk_vectors, s.vectors);
  const int step = static_cast<int>(blockDim.x);
  const uint64_t policy = evict_last_policy();
  float sum = 0;
  for (int first = begin + static_cast<int>(threadIdx.x); first < end; first += kLoads * step) {
    uint4 bits[kLoads];
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
      bits[k] = load_evict_last(run + first + k * step, first + k * step < end, policy);
    }
    // Vectors past the chunk's end are zeros, which add nothing.
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
      float values[kVec];
      row_norm::unpack<T, kVec>(bits[k], values);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += term<kOrd>(values[e]);
    }
  }
  sum = row_sum(sum, warp_sums);
  if (threadIdx.x == 0) {
    if (s.splits.divisor() == 1) y[output] = from_float<Y>(finish<kOrd>(sum));
    else partial[blockIdx.x] = sum;
  }
}

// add_partials: a block an output, each thread loading up to kPartialsPerThread of its partials at
// once (1024 partials: 256 threads, one round trip; one small block adding them serially waited on
// one round trip each).
constexpr int kPartialsPerThread = 4;

// Output blockIdx.x's `splits` partials added in a fixed order (thread t adds partials t,
// t + blockDim, ... in turn, then the block's shuffle tree), so the result is the same bits on
// every run.
template <class Y, int kOrd>
__global__ void __launch_bounds__(kMaxThreads)
    add_partials(const float* __restrict__ partial, Y* __restrict__ y, int splits) {
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kMaxThreads / kWarp)];
  const float* const partials = partial + int64_t{blockIdx.x} * splits;
  float values[kPartialsPerThread];
#pragma unroll
  for (int k = 0; k < kPartialsPerThread; ++k) {
    const int i = static_cast<int>(threadIdx.x + k * blockDim.x);
    values[k] = i < splits ? partials[i] : 0.0f;
  }
  float sum = 0;
#pragma unroll
  for (int k = 0; k < kPartialsPerThread; ++k) sum += values[k];
  sum = row_sum(sum, warp_sums);
  if (threadIdx.x == 0) y[blockIdx.x] = from_float<Y>(finish<kOrd>(sum));
}

// run_norms' blocks: at most 512 threads of at most kRunSlots loads each.
constexpr int kRunThreads = 512;
constexpr int kRunSlots = 8;

// An output's reduced elements as run_norms' block loads them, laid out by the launcher: thread t's
// load i is vector first_vector[i] + t of the run that starts run_offset[i] elements after the
// output's first element, dropped where i >= slots or the vector is past the run's run_vectors.
struct RunSlots {
  int slots;
  int run_vectors;
  int first_vector[kRunSlots];
  int64_t run_offset[kRunSlots];
};

// Output blockIdx.x's norm, its runs' vectors all loaded before any is summed. A slot's vectors are
// consecutive across the block's threads, so each load of a warp covers 512 contiguous bytes. The
// vector walk (vector_runs_sum) maps each of a thread's eight vectors to its run with a division and
// a loop over the reduced dims before issuing its load: eight loads one after another, each behind
// about thirty dependent instructions, which left [4, 128, 4096] over dims 0 and 2 behind
// torch.compile. Loads evict_last as split_norms' (faster than evict-first here too).
template <class T, class Y, int kOrd>
__global__ void __launch_bounds__(kRunThreads, 2)
    run_norms(const T* __restrict__ x, Y* __restrict__ y, const Dims kept, const RunSlots s) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kRunThreads / kWarp)];
  const T* const first = x + offset_of(blockIdx.x, kept, kept.rank);
  const int lane = static_cast<int>(threadIdx.x);
  const uint64_t policy = evict_last_policy();
  uint4 bits[kRunSlots];
#pragma unroll
  for (int i = 0; i < kRunSlots; ++i) {
    const int vector = s.first_vector[i] + lane;
    const auto* run = reinterpret_cast<const uint4*>(first + s.run_offset[i]);
    bits[i] = load_evict_last(run + vector, i < s.slots && vector < s.run_vectors, policy);
  }
  // Dropped loads are zeros, which add nothing; slots past s.slots are skipped (the same for the
  // whole block).
  float sum = 0;
#pragma unroll
  for (int i = 0; i < kRunSlots; ++i) {
    if (i >= s.slots) break;
    float values[kVec];
    row_norm::unpack<T, kVec>(bits[i], values);
#pragma unroll
    for (int e = 0; e < kVec; ++e) sum += term<kOrd>(values[e]);
  }
  sum = row_sum(sum, warp_sums);
  if (threadIdx.x == 0) y[blockIdx.x] = from_float<Y>(finish<kOrd>(sum));
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
// kWhole: every row fills its threads' vectors (row_norm::launch_whole_rows_or_not).
template <class T, int kVec, int kVecs, bool kWhole>
__global__ void __launch_bounds__(row_norm::max_threads(kVec, kVecs))
    weight_norm_rows(const T* __restrict__ x, const T* __restrict__ g, float* __restrict__ norm, T* __restrict__ y,
                     const row_norm::RowShape s) {
  using P = row_norm::Pack<T, kVec>;
  using Reduction = row_norm::HeldRowReduction<kVecs>;
  row_norm::for_each_held_row<kVec, kVecs>(s, [&](const row_norm::HeldRow& r, Reduction& reduce) {
    // v loads as torch.compile's kernels load theirs (core/evict_last.cuh), faster than __ldg.
    P held[kVecs];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (r.holds<kWhole>(i)) {
        held[i] = load_evict_last(reinterpret_cast<const P*>(x) + r.first + r.vector(i), evict_last_policy());
      }
    }
    // f(i, values) for each held vector i, its elements in f32.
    const auto for_each_held = [&](auto f) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds<kWhole>(i)) continue;
        float values[kVec];
        row_norm::unpack<T, kVec>(held[i], values);
        f(i, values);
      }
    };
    // The row's gain read with x: read after the reduction (as the source had it), its DRAM round
    // trip followed the barrier, on a decode row's critical path.
    const float gain = r.active ? to_float(__ldg(g + r.row)) : 0.0f;
    float squares = 0;
    for_each_held([&](int, float(&values)[kVec]) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) squares += values[e] * values[e];
    });
    const float length = sqrtf(reduce.sum(squares));
    if (!r.active) return;
    if (r.leads()) norm[r.row] = length;
    const float scale = gain / length;
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

// The vector walk of x's reduction, when every run is whole 16-byte vectors starting on a 16-byte
// boundary and every offset fits the walk's 32 bits.
template <class T>
std::optional<VectorRuns> vector_runs_of(const ReductionPlan& plan, const T* x) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const auto aligned = [](int64_t stride) { return stride % kVec == 0; };
  const int outer_rank = plan.reduced_rank - 1;
  // The last round's indices run up to a round of a block's loads past the range's end.
  const int64_t elements = plan.outputs * plan.reduced + int64_t{kVectorsInFlight} * kMaxThreads * kVec;
  if (plan.reduced_rank == 0 || plan.inner_stride != 1 || plan.inner % kVec != 0 || elements > INT_MAX ||
      reinterpret_cast<uintptr_t>(x) % kVectorBytes != 0 ||
      !std::all_of(plan.kept_strides.begin(), plan.kept_strides.begin() + plan.kept_rank, aligned) ||
      !std::all_of(plan.reduced_strides.begin(), plan.reduced_strides.begin() + outer_rank, aligned)) {
    return std::nullopt;
  }
  VectorRuns runs{FastDivisor(static_cast<int>(plan.inner / kVec)), outer_rank, {}, {}};
  for (int d = 0; d < outer_rank; ++d) {
    runs.outer_sizes[d] = FastDivisor(static_cast<int>(plan.reduced_sizes[static_cast<size_t>(d)]));
    runs.outer_strides[d] = static_cast<int>(plan.reduced_strides[static_cast<size_t>(d)]);
  }
  return runs;
}

// split_norms' shape of x's reduction, when each output's reduced elements are one run of whole
// 16-byte vectors starting on a 16-byte boundary and every index fits its 32 bits.
template <class T>
std::optional<SplitShape> split_shape_of(const ReductionPlan& plan, const T* x) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const int64_t output_stride = plan.kept_rank == 1 ? plan.kept_strides[0] : 0;
  // The last round's indices run up to a round of a block's loads past the run's end.
  const int64_t last_index = plan.inner / kVec + kSplitRoundVectors<T>;
  if (!plan.one_run_an_output() || plan.kept_rank > 1 || plan.inner % kVec != 0 || output_stride % kVec != 0 ||
      reinterpret_cast<uintptr_t>(x) % kVectorBytes != 0 || last_index > INT_MAX ||
      plan.outputs * plan.splits > INT_MAX || plan.splits > kPartialsPerThread * kMaxThreads) {
    return std::nullopt;
  }
  return SplitShape{static_cast<int>(plan.inner / kVec), static_cast<int>(plan.chunk / kVec), output_stride,
                    FastDivisor(static_cast<int>(plan.splits))};
}

// run_norms' loads of x's reduction and its threads a block, when each output is one block's (one
// split), every run is whole 16-byte vectors starting on a 16-byte boundary, and the runs fit one
// round of kRunSlots loads a thread: each run takes ceil(vectors / kRunThreads) slots.
template <class T>
std::optional<std::pair<RunSlots, int>> run_slots_of(const ReductionPlan& plan, const T* x) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const auto aligned = [](int64_t stride) { return stride % kVec == 0; };
  const int outer_rank = plan.reduced_rank - 1;
  if (plan.splits != 1 || plan.reduced_rank == 0 || plan.inner_stride != 1 || plan.inner % kVec != 0 ||
      plan.outputs > INT_MAX || reinterpret_cast<uintptr_t>(x) % kVectorBytes != 0 ||
      !std::all_of(plan.kept_strides.begin(), plan.kept_strides.begin() + plan.kept_rank, aligned) ||
      !std::all_of(plan.reduced_strides.begin(), plan.reduced_strides.begin() + outer_rank, aligned)) {
    return std::nullopt;
  }
  const int64_t runs = plan.reduced / plan.inner, run_vectors = plan.inner / kVec;
  const int64_t slots_a_run = ceil_div(run_vectors, kRunThreads);
  if (runs * slots_a_run > kRunSlots) return std::nullopt;
  const int threads = static_cast<int>(ceil_div(ceil_div(run_vectors, slots_a_run), kWarp) * kWarp);
  RunSlots s{static_cast<int>(runs * slots_a_run), static_cast<int>(run_vectors), {}, {}};
  const Dims reduced = dims_of(plan.reduced_rank, plan.reduced_sizes, plan.reduced_strides);
  for (int64_t run = 0; run < runs; ++run) {
    // The run's offset over the reduced dims outside the innermost, as walked_runs_sum finds it.
    const int64_t offset = offset_of(run, reduced, outer_rank);
    for (int64_t k = 0; k < slots_a_run; ++k) {
      const auto slot = static_cast<size_t>(run * slots_a_run + k);
      s.first_vector[slot] = static_cast<int>(k * threads);
      s.run_offset[slot] = offset;
    }
  }
  return std::pair{s, threads};
}

// The launch of the reduction over `plan` into y of type Y.
template <class T, class Y>
void reduce(const ReductionPlan& plan, int ord, const T* x, Y* y, float* partial, int multiprocessors,
            cudaStream_t stream) {
  const int64_t blocks = plan.outputs * plan.splits;
  if (const std::optional<SplitShape> split = split_shape_of(plan, x)) {
    const auto run = [&]<int kOrd>() {
      // Whole warps of a round's loads a thread over a chunk, at most kThreads.
      const auto launch = [&]<int kThreads>() {
        const int64_t warps = ceil_div(split->chunk_vectors, int64_t{kSplitRoundVectors<T> / kThreads} * kWarp);
        const int threads = static_cast<int>(std::min<int64_t>(warps * kWarp, kThreads));
        split_norms<T, Y, kOrd, kThreads><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(x, y, partial, *split);
      };
      // 512 threads where the grid fits one wave of them, else 256, which fit twice the blocks in
      // one wave: a second wave of 512-thread blocks cost hidden-state's 1024 blocks more than
      // 256-thread blocks, which left long-seq's 256 blocks half of each SM's threads (slower there).
      // 1024 threads, two an SM, were slower on both.
      if (blocks <= int64_t{kThreadsPerSm / 512} * multiprocessors) launch.template operator()<512>();
      else launch.template operator()<256>();
      if (plan.splits == 1) return;
      const int64_t adding_warps = ceil_div(plan.splits, int64_t{kPartialsPerThread} * kWarp);
      add_partials<Y, kOrd><<<static_cast<unsigned>(plan.outputs), static_cast<unsigned>(adding_warps * kWarp), 0,
                              stream>>>(partial, y, static_cast<int>(plan.splits));
    };
    if (ord == 1) run.template operator()<1>();
    else run.template operator()<2>();
    return;
  }
  const Dims kept = dims_of(plan.kept_rank, plan.kept_sizes, plan.kept_strides);
  if (const auto run_slots = run_slots_of(plan, x)) {
    const auto& [slots, threads] = *run_slots;
    const auto grid = static_cast<unsigned>(plan.outputs);
    if (ord == 1) run_norms<T, Y, 1><<<grid, threads, 0, stream>>>(x, y, kept, slots);
    else run_norms<T, Y, 2><<<grid, threads, 0, stream>>>(x, y, kept, slots);
    return;
  }
  const Dims reduced = dims_of(plan.reduced_rank, plan.reduced_sizes, plan.reduced_strides);
  const Shape s{plan.outputs, plan.reduced, plan.inner, plan.inner_stride, plan.splits, plan.chunk};
  const std::optional<VectorRuns> vector_runs = vector_runs_of(plan, x);
  const VectorRuns runs = vector_runs.value_or(VectorRuns{});
  const auto run = [&]<int kOrd, bool kVectorRuns>() {
    const auto kernel = reduce_norms<T, Y, kOrd, kVectorRuns>;
    const dim3 block(threads_for(plan.chunk));
    if (plan.splits == 1) {
      kernel<<<grid_for(blocks), block, 0, stream>>>(x, y, partial, kept, reduced, runs, s);
      return;
    }
    cudaLaunchAttribute cooperative{};
    cooperative.id = cudaLaunchAttributeCooperative;
    cooperative.val.cooperative = 1;
    const int64_t resident = int64_t{resident_reduction_blocks(kVectorRuns)} * multiprocessors;
    const dim3 grid(grid_for(std::min(blocks, resident)));
    const cudaLaunchConfig_t config{grid, block, 0, stream, &cooperative, 1};
    static_cast<void>(cudaLaunchKernelEx(&config, kernel, x, y, partial, kept, reduced, runs, s));
  };
  const auto with_ord = [&]<bool kVectorRuns>() {
    if (ord == 1) run.template operator()<1, kVectorRuns>();
    else run.template operator()<2, kVectorRuns>();
  };
  if (vector_runs) with_ord.template operator()<true>();
  else with_ord.template operator()<false>();
}

}  // namespace solops::detail::vector_norm_kernels

namespace solops::detail {

void launch_vector_norm(std::string_view op, const ReductionPlan& plan, int ord, const TensorRef& x,
                        const TensorRef& y, const TensorRef* workspace, cudaStream_t stream) {
  if (plan.outputs == 0) return;
  float* const partial = workspace ? static_cast<float*>(workspace->data) : nullptr;
  dispatch_float(x.dtype, [&]<class T>() {
    vector_norm_kernels::reduce(plan, ord, static_cast<const T*>(x.data), static_cast<T*>(y.data), partial,
                                multiprocessor_count(x.device), stream);
  });
  check_launch(op);
}

void launch_weight_norm(std::string_view op, const WeightNormPlan& plan, const TensorRef& v, const TensorRef& g,
                        const TensorRef& y, const TensorRef& norm, const TensorRef* workspace, cudaStream_t stream) {
  using namespace vector_norm_kernels;
  if (plan.norms.outputs == 0) return;
  float* const partial = workspace ? static_cast<float*>(workspace->data) : nullptr;
  auto* const norms = static_cast<float*>(norm.data);
  const int multiprocessors = multiprocessor_count(v.device);
  const int64_t numel = plan.norms.outputs * plan.norms.reduced;
  dispatch_float(v.dtype, [&]<class T>() {
    const auto* x = static_cast<const T*>(v.data);
    const auto* gain = static_cast<const T*>(g.data);
    auto* out = static_cast<T*>(y.data);
    // The norms by the vector-norm reduction, then a pass scaling v.
    const auto two_passes = [&] {
      reduce(plan.norms, 2, x, norms, partial, multiprocessors, stream);
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
    row_norm::launch_row_kernel<T, 8>(
        {x, out}, s, multiprocessors, row_norm::kOneBlockSpread,
        [&]<int kVec, int kVecs>(dim3 grid, dim3 block, unsigned cluster) {
          row_norm::launch_whole_rows_or_not<kVec, kVecs, 2>(s, block, cluster, [&]<bool kWhole>() {
            row_norm::launch_clustered(weight_norm_rows<T, kVec, kVecs, kWhole>, grid, block, cluster, 0, stream, x,
                                       gain, norms, out, s);
          });
        },
        [&](unsigned) { two_passes(); });
  });
  check_launch(op);
}

}  // namespace solops::detail
