// Row-norm kernels and their launcher, instantiated once per statistic (norm_rms.cu, norm_layer.cu).
//
// The op is memory-bound: a row is read once and written once. One block (or, for rows of at most
// two warps, a group of threadIdx.y rows in a block of 128 threads; or, for few long rows, a
// cluster of blocks on as many SMs: RowSharing) normalizes one row at a time.
// The row stays in registers between the reduction and the output pass: each thread loads its
// kVecs vectors (16 bytes each where every tensor is 16-byte aligned and N a multiple of the
// vector width, one element otherwise) and the weight and bias at the same columns (AdaLayerNorm:
// of the same row, GroupRMSNorm: of weight row m % G) before any arithmetic, so a block has all of
// its row's loads in flight at once; where holding weight and bias would halve the blocks an SM,
// they are read in the output pass instead (reads_affine_late).
// Statistics run in f32; LayerNorm takes the mean first and then the sum of squared deviations
// from the held values (no E[x^2] - E[x]^2 cancellation). LayerNormQuant then takes a second pass
// over the held row for its amax (the normalized values are recomputed rather than kept, which
// would double the registers a thread needs) and a third that writes the fp8 codes; RMSNormQuant
// takes its amax from x · weight in the first pass, beside the squares. Rows too long to hold
// (over 16384 f16/bf16 elements, 8192 f32 ones or 8192 without vectors; with vectors, few rows are
// held up to eight times longer by a cluster) take the streaming kernel, which reads the row again
// each pass.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include <cooperative_groups.h>
#include <cuda_fp8.h>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"
#include "norm/row_norm.hpp"

namespace solops::detail::row_norm {

constexpr int kVectorBytes = 16;
constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
constexpr int kMinBlockThreads = 128;
// Blocks this wide keep the row's vectors few per thread and leave room for several blocks per SM.
constexpr int kManyRowsThreads = 256;

// Threads a block may have when each holds kVecs vectors of kVec elements (with the weight and bias
// at the same columns): the registers of one block must fit the SM's 64 K. Scalar threads hold at
// most 8 elements and always fit 1024.
__host__ __device__ constexpr int max_threads(int vec, int vecs) {
  return vec == 1 || vecs <= 2 ? kMaxThreads : vecs <= 4 ? 512 : 256;
}

template <class T>
struct RowPointers {
  const T* x;
  const T* residual;
  const T* weight;
  const T* bias;
  T* y;
  T* residual_out;
  float* mean;  // the training forward's statistics, written when non-null
  float* rstd;
  // The quantizing norms write codes and row_scale instead of y.
  __nv_fp8_storage_t* codes;
  float* row_scale;
};

struct RowShape {
  int64_t rows;
  int row_len;
  float inv_len;  // 1 / row_len
  float eps;
  float weight_offset;
  int groups;       // kGroups kernels (GroupRMSNorm): row m of x takes weight row m % groups
  bool modulation;  // weight and bias hold one value per element of x (AdaLayerNorm), not per column
};

// kVec elements move as one 16-byte access, a single element as itself.
template <class T, int kVec>
using Pack = std::conditional_t<kVec == 1, T, uint4>;

// `bits` by value: bound by reference to global or shared memory, the memcpy below read it a byte or
// two at a time (16 LDG.U8 a vector in the fused add-norms, LDS.U16 in 3fe6b67's staged kernel).
template <class T, int kVec>
__device__ __forceinline__ void unpack(const Pack<T, kVec> bits, float (&values)[kVec]) {
  T lanes[kVec];
  memcpy(lanes, &bits, sizeof bits);
#pragma unroll
  for (int e = 0; e < kVec; ++e) values[e] = to_float(lanes[e]);
}

template <class T, int kVec>
__device__ __forceinline__ Pack<T, kVec> pack(const float (&values)[kVec]) {
  T lanes[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) lanes[e] = from_float<T>(values[e]);
  Pack<T, kVec> bits;
  memcpy(&bits, lanes, sizeof bits);
  return bits;
}

// The reduction by `combine` over a warp, the same value in every lane.
template <class Combine>
__device__ __forceinline__ float warp_reduce(float value, Combine combine) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value = combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// The reduction by `combine` (whose identity is `identity`) over the threads of this thread's row
// (threadIdx.y); rows are whole warps. Every thread of the block must call it. Each warp reduces
// the row's warp partials itself, in the same butterfly, so every thread gets the same bits: one
// shared-memory load and five shuffles, where a loop over the partials waited on one load a warp
// (32 at 1024 threads, ~0.4 µs on a decode row's critical path, for every reduction).
// block_reduce leaves `partial` in use until the caller's next barrier; row_reduce ends it.
template <class Combine>
__device__ __forceinline__ float block_reduce(float value, float* partial, float identity, Combine combine) {
  value = warp_reduce(value, combine);
  const int warps = blockDim.x / kWarp, lane = threadIdx.x % kWarp;
  if (warps == 1) return value;
  float* row_partial = partial + threadIdx.y * warps;
  if (lane == 0) row_partial[threadIdx.x / kWarp] = value;
  __syncthreads();
  return warp_reduce(lane < warps ? row_partial[lane] : identity, combine);
}

template <class Combine>
__device__ __forceinline__ float row_reduce(float value, float* partial, float identity, Combine combine) {
  const float total = block_reduce(value, partial, identity, combine);
  if (blockDim.x > kWarp) __syncthreads();  // the next call overwrites partial
  return total;
}

__device__ __forceinline__ float row_sum(float value, float* partial) {
  return row_reduce(value, partial, 0.0f, [](float a, float b) { return a + b; });
}

// The larger of a and b, NaN if either is: a row's NaN reaches its scale and codes (spec §2.15),
// where fmaxf would drop it.
__device__ __forceinline__ float nan_max(float a, float b) { return a > b || a != a ? a : b; }

// The reductions of a by combine_a and of b by combine_b (identities identity_a, identity_b) over this
// thread's row of the block, in every thread, both in one round of barriers; `partial` (two values a
// warp) stays in use until the caller's next barrier.
template <class CombineA, class CombineB>
__device__ __forceinline__ float2 block_reduce_pair(float a, float b, float* partial, float identity_a,
                                                    float identity_b, CombineA combine_a, CombineB combine_b) {
  a = warp_reduce(a, combine_a);
  b = warp_reduce(b, combine_b);
  const int warps = blockDim.x / kWarp, lane = threadIdx.x % kWarp;
  if (warps == 1) return {a, b};
  float* row_partial = partial + threadIdx.y * 2 * warps;
  if (lane == 0) {
    row_partial[threadIdx.x / kWarp] = a;
    row_partial[warps + threadIdx.x / kWarp] = b;
  }
  __syncthreads();
  a = warp_reduce(lane < warps ? row_partial[lane] : identity_a, combine_a);
  b = warp_reduce(lane < warps ? row_partial[warps + lane] : identity_b, combine_b);
  return {a, b};
}

// Blocks a row may be split over (the portable cluster size).
constexpr int kMaxClusterBlocks = 8;

// A block's slots for the row totals of its cluster's blocks: two reductions' worth, used in turn.
struct ClusterTotals {
  float2 slots[2][kMaxClusterBlocks];
};

// The reductions over a held row (for_each_held_row), whose vectors are this block's alone or, in a
// cluster launch (few long rows, launch_row_kernel), shared by the cluster's blocks. There each block
// reduces its share and stores its totals into a slot of every block of the cluster; after a cluster
// barrier each block combines the slots in rank order, so that every block finds the same bits.
// (Sending the totals with st.async, counted on the receiving block's mbarrier, instead of a cluster
// barrier a reduction, d8f77d1, measured 0-0.16 µs slower on decode rows of one reduction and
// 0.25-0.4 µs faster on those of two or three: H200, docs/perf-notes.md.)
// One RowReduction a row, made before the row's loads: in a cluster it arrives at a barrier that
// its first reduction waits on before storing, since a block may store into another's shared memory
// only once that block runs and has read the previous row's slots. A reduction's slots are the
// other pair from the previous one's: a block may store the next totals before a slower block has
// read these, but not the ones after, which wait for the next barrier and so for every block to
// have read. Every thread of the block must take part in each reduction.
// kShared compiles the cluster stage in: only into kernels that hold one vector a thread
// (for_each_held_row), since its registers made some of the others, compiled at their register bound,
// spill (RMSNormQuant at 4 vectors a thread), and took a block an SM from others (the fused RMSNorm at
// 2 vectors a thread); launch_row_kernel shares rows only among those. A block's share of a row of up
// to 65536 half-type elements is one vector a thread; rows of single elements are not shared.
constexpr int kSharedRowVecs = 1;

template <bool kShared>
class RowReduction {
 public:
  // `partial`: two values a warp of the block; `totals`: this block's slots.
  __device__ RowReduction(float* partial, ClusterTotals* totals) : partial_(partial), totals_(totals) {
    if (kShared && __clusterSizeInBlocks() > 1) cooperative_groups::this_cluster().barrier_arrive();
  }

  template <class CombineA, class CombineB>
  __device__ float2 pair(float a, float b, float identity_a, float identity_b, CombineA combine_a, CombineB combine_b) {
    const float2 totals = block_reduce_pair(a, b, partial_, identity_a, identity_b, combine_a, combine_b);
    return across_blocks(totals, {identity_a, identity_b}, combine_a, combine_b);
  }

  __device__ float sum(float value) {
    const float total = block_reduce(value, partial_, 0.0f, plus);
    return across_blocks({total, 0.0f}, {0.0f, 0.0f}, plus, plus).x;
  }

  // The largest (nan_max) of the row's values.
  __device__ float max(float value) {
    const float total = block_reduce(value, partial_, -INFINITY, larger);
    return across_blocks({total, -INFINITY}, {-INFINITY, -INFINITY}, larger, larger).x;
  }

  // The row's sum of `sum` and largest of `maximum`, in one round of barriers.
  __device__ float2 sum_and_max(float sum, float maximum) { return pair(sum, maximum, 0.0f, -INFINITY, plus, larger); }

 private:
  static __device__ float plus(float a, float b) { return a + b; }
  static __device__ float larger(float a, float b) { return nan_max(a, b); }

  // The row's totals from this block's (block_reduce's, `partial` still in use).
  template <class CombineA, class CombineB>
  __device__ float2 across_blocks(float2 totals, float2 identities, CombineA combine_a, CombineB combine_b) {
    if (!kShared || __clusterSizeInBlocks() == 1) {
      if (blockDim.x > kWarp) __syncthreads();  // the next reduction overwrites partial
      return totals;
    }
    const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    if (round_ == 0) cluster.barrier_wait();
    float2* const slots = totals_->slots[round_ % 2];
    // Thread t stores into block t's slot for this block.
    if (threadIdx.x < cluster.num_blocks()) {
      *cluster.map_shared_rank(slots + cluster.block_rank(), threadIdx.x) = totals;
    }
    cluster.sync();  // also ends this block's use of partial
    ++round_;
    float2 combined = identities;
    for (unsigned k = 0; k < cluster.num_blocks(); ++k) {
      combined.x = combine_a(combined.x, slots[k].x);
      combined.y = combine_b(combined.y, slots[k].y);
    }
    return combined;
  }

  float* partial_;
  ClusterTotals* totals_;
  int round_ = 0;
};

// f(values[i], i) for this thread's elements i = threadIdx.x, threadIdx.x + blockDim.x, ... < n of
// a block-strided walk, kInFlight elements loaded (load(i)) before any is used: with one load at a
// time, a walk of a few elements a thread waits on one round trip per element.
template <int kInFlight, class Load, class F>
__device__ __forceinline__ void for_each_strided(int64_t n, Load load, F f) {
  for (int64_t base = threadIdx.x; base < n; base += kInFlight * int64_t{blockDim.x}) {
    float values[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int64_t i = base + k * int64_t{blockDim.x};
      values[k] = i < n ? load(i) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int64_t i = base + k * int64_t{blockDim.x};
      if (i < n) f(values[k], i);
    }
  }
}

// |value|'s bits: as unsigned integers they order like the magnitudes, and every NaN's lie above
// +inf's, so an integer max over them is an amax that a NaN reaches (spec §2.15): a mask and an
// integer max an element, where nan_max over fabsf takes three instructions.
__device__ __forceinline__ unsigned magnitude_bits(float value) { return __float_as_uint(value) & 0x7fffffffu; }

// A row's quantization scale as quotient uses it: its reciprocal, and the scale itself for the
// correction, 0 where it is infinite (an infinite weight), so that a finite value's quotient stays
// 0 as with a division (with inf, its correction would be 0 * inf = NaN).
struct QuantScale {
  float scale;
  float inverse;
};

// The row's scale from its amax, stored where `stores` (one thread of the row).
__device__ __forceinline__ QuantScale quant_scale(float amax, float* row_scale, int64_t row, bool stores) {
  const float scale = nan_max(amax, kMinAmax) / kE4m3Max;
  if (stores) row_scale[row] = scale;
  return {isinf(scale) ? 0.0f : scale, 1.0f / scale};
}

// value / scale by the row's reciprocal and one FMA correction (Markstein): the correctly rounded
// quotient wherever it is a normal float, in three instructions where a division takes about ten
// and a branch, an element (the quantizing norms were issue-bound: 40-47 instructions an element).
// Below the normal range the quotient is far under e4m3's smallest code, so its code is 0 either way.
__device__ __forceinline__ float quotient(float value, const QuantScale& q) {
  const float estimate = value * q.inverse;
  return fmaf(fmaf(-estimate, q.scale, value), q.inverse, estimate);
}

// Round to nearest even, saturating to +-448 (spec §2.15; NaN stays NaN).
__device__ __forceinline__ __nv_fp8_storage_t quantize(float value, const QuantScale& q) {
  return __nv_cvt_float_to_fp8(quotient(value, q), __NV_SATFINITE, __NV_E4M3);
}

// kVec codes, stored as one access. Vectors convert in pairs: one instruction, and a 16-bit lane
// that packs into the store without byte shuffles.
template <int kVec>
struct alignas(kVec) Codes {
  __nv_fp8x2_storage_t pairs[kVec / 2];
};
template <>
struct Codes<1> {
  __nv_fp8_storage_t code;
};

template <int kVec>
__device__ __forceinline__ Codes<kVec> quantize(const float (&values)[kVec], const QuantScale& q) {
  Codes<kVec> codes;
  if constexpr (kVec == 1) {
    codes.code = quantize(values[0], q);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; e += 2) {
      codes.pairs[e / 2] = __nv_cvt_float2_to_fp8x2(make_float2(quotient(values[e], q), quotient(values[e + 1], q)),
                                                     __NV_SATFINITE, __NV_E4M3);
    }
  }
  return codes;
}

// x + residual rounded to T (residual_out), written out and returned: the norm reads the rounded sum.
template <class T, int kVec>
__device__ __forceinline__ Pack<T, kVec> add_residual(const Pack<T, kVec>& x, const Pack<T, kVec>& residual,
                                                      Pack<T, kVec>* residual_out) {
  float sum[kVec], other[kVec];
  unpack<T, kVec>(x, sum);
  unpack<T, kVec>(residual, other);
#pragma unroll
  for (int e = 0; e < kVec; ++e) sum[e] += other[e];
  const Pack<T, kVec> rounded = pack<T, kVec>(sum);
  *residual_out = rounded;
  return rounded;
}

// This thread's share of a row held in registers: vectors lane + i * stride of `row`, where lane
// and stride count the threads of all the blocks that share the row (a cluster's, or one block's).
// Threads of a missing last row (inactive) hold nothing but still reach every barrier.
struct HeldRow {
  int64_t row;
  int64_t first;  // the row's first vector
  int vectors;    // vectors per row
  bool active;
  int lane;
  int stride;

  __device__ int vector(int i) const { return lane + i * stride; }
  __device__ bool holds(int i) const { return active && vector(i) < vectors; }
  // Whether this thread writes the row's own outputs (statistics, scale): one thread of the row.
  __device__ bool leads() const { return active && lane == 0; }
};

// Shared memory of for_each_held_row: the block stage's partials (two values a warp) and the cluster's
// totals.
constexpr size_t kHeldRowSharedBytes = 2 * kMaxThreads / kWarp * sizeof(float) + sizeof(ClusterTotals);

// The reductions of a kernel holding kVecs vectors a thread.
template <int kVecs>
using HeldRowReduction = RowReduction<kVecs == kSharedRowVecs>;

// Calls body(HeldRow, HeldRowReduction&) for each row of this thread: row threadIdx.y of each group
// of blockDim.y rows, the groups strided over the grid, or, for kernels of kSharedRowVecs vectors a
// thread, over its clusters (one block each outside a cluster launch; where a cluster shares a row,
// blockDim.y is 1). Kernels of more vectors count blocks, not clusters: the cluster registers'
// 64-bit row arithmetic made kernels compiled at their register bound spill. The loop runs while a
// group's first row exists, the same test for every thread of the cluster; counting the groups
// instead took a 64-bit division before the first load (about 20 dependent instructions, on every
// decode row's critical path).

template <int kVec, int kVecs, class Body>
__device__ __forceinline__ void for_each_held_row(const RowShape& s, Body body) {
  constexpr bool kShared = kVecs == kSharedRowVecs;
  __shared__ float partial[2 * kMaxThreads / kWarp];
  __shared__ ClusterTotals totals;
  const int vectors = s.row_len / kVec;
  const unsigned first_group = kShared ? __clusterIdx().x : blockIdx.x;
  const unsigned groups = kShared ? __clusterGridDimInClusters().x : gridDim.x;
  for (int64_t group_row = int64_t{first_group} * blockDim.y; group_row < s.rows;
       group_row += int64_t{groups} * blockDim.y) {
    const int64_t row = group_row + threadIdx.y;
    const unsigned rank = kShared ? __clusterRelativeBlockRank() : 0, blocks = kShared ? __clusterSizeInBlocks() : 1;
    HeldRowReduction<kVecs> reduce(partial, &totals);
    body(HeldRow{row, row * vectors, vectors, row < s.rows, static_cast<int>(rank * blockDim.x + threadIdx.x),
                 static_cast<int>(blocks * blockDim.x)},
         reduce);
  }
}

template <class T>
__device__ __forceinline__ void write_stats(const RowPointers<T>& p, int64_t row, float mean, float inv_std) {
  if (p.mean) p.mean[row] = mean;
  if (p.rstd) p.rstd[row] = inv_std;
}

template <NormKind kKind>
__device__ __forceinline__ float normalized(float value, float mean, float inv_std, float scale, float shift) {
  if constexpr (kKind == NormKind::layer) return (value - mean) * inv_std * scale + shift;
  else return value * inv_std * scale;
}

// x, residual and the outputs are not __restrict__ and x is not read through the read-only cache:
// the fused add-norms' in-place form aliases them. Each element is read before the same thread
// writes it, and never read again.
// Whether weight and bias are read in the output pass rather than held beside x from the start.
// Held, they cost LayerNorm (with or without quantization) and the fused norms at 4 and 8 vectors
// a thread half their blocks an SM (LayerNorm at 8 vectors: 150 registers, one block); read late,
// they put a weight round trip after the reduction, which the other kernels pay for (H200, 2100838
// against 555284e: LayerNorm 2048 x 16384 75.1 -> 53.3 µs late, but RMSNorm 2048 x 4096 12.1 ->
// 13.1 and every decode row +0.3-1.2 µs). AdaLayerNorm's per-row scale and shift, streamed from
// DRAM, are held at its catalogue widths (1 and 2 vectors a thread); GroupRMSNorm is an RMS norm;
// RMSNormQuant holds its weight, whose products with x give its amax in the first pass.
template <NormKind kKind, bool kResidual, int kVecs>
__host__ __device__ constexpr bool reads_affine_late() {
  return kVecs >= 4 && (kKind == NormKind::layer || kResidual);
}

// Blocks an SM the kernel must allow, which bounds its registers. 8-vector kernels that read their
// affine late, and the quantizing ones: two 256-thread blocks (one, 8 warps, cannot hide the DRAM
// latency; they fit 128 registers without spilling). 4-vector kernels: two 512-thread blocks, so
// at most 64 registers and four 256-thread blocks an SM on many rows instead of three (H200,
// 75fe655 against this bound: RMSNorm 2048 x 8192 bf16 20.8 -> 18.6 µs, LayerNorm 26.6 -> 24.0),
// but for the fused LayerNorm, which spills at 64 (39.5 -> 49.6 µs).
template <NormKind kKind, bool kResidual, bool kQuant, int kVec, int kVecs>
__host__ __device__ constexpr int min_blocks() {
  if (max_threads(kVec, kVecs) == 512) return kKind == NormKind::layer && kResidual ? 1 : 2;
  return (reads_affine_late<kKind, kResidual, kVecs>() || kQuant) && max_threads(kVec, kVecs) == 256 ? 2 : 1;
}

// Where row `row` (its first element or vector `first`, `row_units` of them a row) finds its weight
// and bias. kGroups (GroupRMSNorm's weight rows) is a template flag, not a runtime one like
// modulation: its 64-bit row offset, live beside x's, would push the quantizing LayerNorm, compiled
// at exactly its 128-register bound, into spills.
// The shape's fields pass by value: a reference to the kernel parameter costs a local copy of it.
template <bool kGroups>
__device__ __forceinline__ int64_t affine_first(int64_t row, int64_t first, int64_t row_units, bool modulation,
                                                int groups) {
  if constexpr (kGroups) return row % groups * row_units;
  else return modulation ? first : 0;
}

template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups, int kVec, int kVecs>
__global__ void __launch_bounds__(max_threads(kVec, kVecs), min_blocks<kKind, kResidual, kQuant, kVec, kVecs>())
    row_norm_in_registers(const RowPointers<T> p, const RowShape s) {
  using P = Pack<T, kVec>;
  constexpr bool kLateAffine = reads_affine_late<kKind, kResidual, kVecs>();
  constexpr int kHeldAffine = kLateAffine ? 1 : kVecs;
  // Late affine vectors loaded together in the output pass: all of RMSNormQuant's; two at a time
  // where a bias or the residual's registers leave no room for more without losing a block an SM.
  constexpr int kAffineBatch = !kLateAffine ? 1 : kKind == NormKind::layer || kResidual ? 2 : kVecs;
  for_each_held_row<kVec, kVecs>(s, [&](const HeldRow& r, HeldRowReduction<kVecs>& reduce) {
    const int64_t first = r.first;
    // The weight and bias vectors at held vector i's columns, read into w and b.
    const auto read_affine = [&](int i, P& w, P& b) {
      const int64_t affine = affine_first<kGroups>(r.row, first, r.vectors, s.modulation, s.groups) + r.vector(i);
      if (p.weight) w = __ldg(reinterpret_cast<const P*>(p.weight) + affine);
      if (kKind == NormKind::layer && p.bias) b = __ldg(reinterpret_cast<const P*>(p.bias) + affine);
    };
    P held[kVecs], residual[kResidual ? kVecs : 1], weight[kHeldAffine], bias[kHeldAffine];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds(i)) continue;
      const int v = r.vector(i);
      held[i] = reinterpret_cast<const P*>(p.x)[first + v];
      if constexpr (kResidual) residual[i] = reinterpret_cast<const P*>(p.residual)[first + v];
      if constexpr (!kLateAffine) read_affine(i, weight[i], bias[i]);
    }
    // After every load of the row: the compiler may not move a load above a store that could alias
    // it (the in-place form does alias), and with the add beside the loads it serialized them and
    // read the residual a byte at a time.
    if constexpr (kResidual) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds(i)) continue;
        P* const residual_out = reinterpret_cast<P*>(p.residual_out) + first + r.vector(i);
        held[i] = add_residual<T, kVec>(held[i], residual[i], residual_out);
      }
    }
    const auto held_values = [&](int i, float (&values)[kVec]) { unpack<T, kVec>(held[i], values); };

    // The sum of term(value) over the elements this thread holds.
    const auto held_sum = [&](auto term) {
      float total = 0;
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds(i)) continue;
        float values[kVec];
        held_values(i, values);
#pragma unroll
        for (int e = 0; e < kVec; ++e) total += term(values[e]);
      }
      return total;
    };
    // The scale the weight vector w gives (weight_offset + w, or 1 without a weight).
    const auto weight_scale = [&](const P& w, float (&scale)[kVec]) {
      if (p.weight) {
        unpack<T, kVec>(w, scale);
#pragma unroll
        for (int e = 0; e < kVec; ++e) scale[e] += s.weight_offset;
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) scale[e] = 1;
      }
    };
    // RMSNormQuant takes its amax in the first pass, as inv_std · max |x · scale| (inv_std >= 0),
    // and reduces it beside the squares: a pass over the row and a round of barriers fewer than
    // taking it from the output values (its code pass then computes them once).
    constexpr bool kAmaxFromProducts = kQuant && kKind == NormKind::rms;
    float mean = 0, inv_std, product_amax = 0;
    if constexpr (kKind == NormKind::layer) mean = reduce.sum(held_sum([](float v) { return v; })) * s.inv_len;
    if constexpr (kAmaxFromProducts) {
      float squares = 0;
      unsigned amax_bits = 0;
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds(i)) continue;
        float values[kVec], scale[kVec];
        held_values(i, values);
        weight_scale(weight[i], scale);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          squares += values[e] * values[e];
          amax_bits = max(amax_bits, magnitude_bits(values[e] * scale[e]));
        }
      }
      const float2 reduced = reduce.sum_and_max(squares, __uint_as_float(amax_bits));
      inv_std = rsqrtf(reduced.x * s.inv_len + s.eps);
      product_amax = reduced.y;
    } else {
      const float squares = held_sum([mean](float v) { return (v - mean) * (v - mean); });
      inv_std = rsqrtf(reduce.sum(squares) * s.inv_len + s.eps);
    }
    if (r.leads()) write_stats(p, r.row, mean, inv_std);

    // The output values of the held vector i, given the weight and bias at its columns.
    const auto output_values = [&](int i, const P& w, const P& b, float (&values)[kVec]) {
      float scale[kVec], shift[kVec];
      held_values(i, values);
      weight_scale(w, scale);
      if (kKind == NormKind::layer && p.bias) {
        unpack<T, kVec>(b, shift);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) shift[e] = 0;
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        values[e] = normalized<kKind>(values[e], mean, inv_std, scale[e], shift[e]);
      }
    };
    // f(at, values) for each held vector: its index among the tensor's vectors and its output values.
    // Read late, the affine vectors of a batch are all loaded before any is used: one at a time, each
    // vector's output waited on its own L2 round trip (8 in a row a pass at 8 vectors a thread, the
    // quantizing norms' two passes at 0.64 of torch.compile).
    const auto for_each_output = [&](auto f) {
#pragma unroll
      for (int first_of_batch = 0; first_of_batch < kVecs; first_of_batch += kAffineBatch) {
        [[maybe_unused]] P late_weight[kAffineBatch], late_bias[kAffineBatch];
        if constexpr (kLateAffine) {
#pragma unroll
          for (int k = 0; k < kAffineBatch; ++k) {
            if (r.holds(first_of_batch + k)) read_affine(first_of_batch + k, late_weight[k], late_bias[k]);
          }
        }
#pragma unroll
        for (int k = 0; k < kAffineBatch; ++k) {
          const int i = first_of_batch + k;
          if (!r.holds(i)) continue;
          float values[kVec];
          if constexpr (kLateAffine) output_values(i, late_weight[k], late_bias[k], values);
          else output_values(i, weight[i], bias[i], values);
          f(first + r.vector(i), values);
        }
      }
    };
    if constexpr (kQuant) {
      QuantScale row_scale;
      if constexpr (kAmaxFromProducts) {
        row_scale = quant_scale(inv_std * product_amax, p.row_scale, r.row, r.leads());
      } else {
        unsigned amax = 0;
        for_each_output([&](int64_t, const float (&values)[kVec]) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) amax = max(amax, magnitude_bits(values[e]));
        });
        row_scale = quant_scale(reduce.max(__uint_as_float(amax)), p.row_scale, r.row, r.leads());
      }
      for_each_output([&](int64_t at, const float (&values)[kVec]) {
        reinterpret_cast<Codes<kVec>*>(p.codes)[at] = quantize<kVec>(values, row_scale);
      });
    } else {
      for_each_output([&](int64_t at, const float (&values)[kVec]) {
        reinterpret_cast<P*>(p.y)[at] = pack<T, kVec>(values);
      });
    }
  });
}

constexpr int kStreamingThreads = 1024;

// Rows too long for registers, one element per access: each pass reads the row again (the fused
// ops read their rounded sum back from residual_out, each thread only the elements it wrote).
template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups>
__global__ void __launch_bounds__(kStreamingThreads) row_norm_streaming(const RowPointers<T> p, const RowShape s) {
  __shared__ float partial[kStreamingThreads / kWarp];
  for (int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const int64_t first = row * s.row_len;
    const T* source = (kResidual ? p.residual_out : p.x) + first;
    float sum = 0;
    for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
      float value = to_float(p.x[first + j]);
      if constexpr (kResidual) {
        const T rounded = from_float<T>(value + to_float(p.residual[first + j]));
        p.residual_out[first + j] = rounded;
        value = to_float(rounded);
      }
      sum += kKind == NormKind::layer ? value : value * value;
    }
    float mean = 0;
    float squares = sum;
    if constexpr (kKind == NormKind::layer) {
      mean = row_sum(sum, partial) * s.inv_len;
      squares = 0;
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
        const float centred = to_float(source[j]) - mean;
        squares += centred * centred;
      }
    }
    const float inv_std = rsqrtf(row_sum(squares, partial) * s.inv_len + s.eps);
    if (threadIdx.x == 0) write_stats(p, row, mean, inv_std);
    const int64_t affine = affine_first<kGroups>(row, first, s.row_len, s.modulation, s.groups);
    const auto output_value = [&](int j) {
      const float scale = p.weight ? s.weight_offset + to_float(__ldg(p.weight + affine + j)) : 1.0f;
      const float shift = kKind == NormKind::layer && p.bias ? to_float(__ldg(p.bias + affine + j)) : 0.0f;
      return normalized<kKind>(to_float(source[j]), mean, inv_std, scale, shift);
    };
    if constexpr (kQuant) {
      unsigned amax = 0;
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) amax = max(amax, magnitude_bits(output_value(j)));
      const float row_amax =
          row_reduce(__uint_as_float(amax), partial, -INFINITY, [](float a, float b) { return nan_max(a, b); });
      const QuantScale row_scale = quant_scale(row_amax, p.row_scale, row, threadIdx.x == 0);
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
        p.codes[first + j] = quantize(output_value(j), row_scale);
      }
    } else {
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) p.y[first + j] = from_float<T>(output_value(j));
    }
  }
}

// Vectors per thread (0: the streaming kernel) and threads per block for rows of `units` vectors of
// kVec elements (a block's share of them where blocks share a row). Few rows (decode) spread one row
// over as many threads as registers allow, for the shortest latency; many rows keep blocks at most
// kManyRowsThreads wide.
struct LaunchShape {
  int vecs = 0;
  int threads = kStreamingThreads;
};

template <int... kCandidates>
LaunchShape choose_shape(int units, int vec, bool many_rows) {
  const auto threads_for = [&](int vecs) { return (units + vecs * kWarp - 1) / (vecs * kWarp) * kWarp; };
  for (int vecs : {kCandidates...}) {
    const int limit = std::min(max_threads(vec, vecs), many_rows ? kManyRowsThreads : kMaxThreads);
    if (threads_for(vecs) <= limit) return {vecs, threads_for(vecs)};
  }
  for (int vecs : {kCandidates...}) {
    if (threads_for(vecs) <= max_threads(vec, vecs)) return {vecs, threads_for(vecs)};
  }
  return {};
}

// The fewest vectors (or elements) a block of a shared row holds.
constexpr int kMinSharedUnits = 128;

// Blocks each row is shared by: few rows of many units are split over a cluster of SMs, since one
// SM alone takes its share of the row's loads and stores through its own L1 one after another
// (a decode row of 16384 bf16 with its weight: 64 KB in, 32 KB out). At most kMaxClusterBlocks, a
// power of two, each holding at least kMinSharedUnits, and all rows' clusters on at most a quarter
// of the SMs, so that every cluster finds its SMs at once.
inline int cluster_blocks(int units, int64_t rows, int multiprocessors) {
  int blocks = 1;
  while (blocks < kMaxClusterBlocks && units >= 2 * blocks * kMinSharedUnits && rows * 4 * blocks <= multiprocessors) {
    blocks *= 2;
  }
  return blocks;
}

// Calls in_registers.template operator()<kVec, kVecs>(grid, block, cluster) with the compiled vector
// count `shape.vecs` (one of kCandidates): `cluster` blocks a row, or rows_per_block rows of a short
// row sharing a block.
template <int kVec, int... kCandidates, class InRegisters>
void launch_in_registers(const LaunchShape& shape, int64_t rows, int cluster, InRegisters in_registers) {
  const int rows_per_block = cluster > 1 ? 1 : std::max(1, kMinBlockThreads / shape.threads);
  const int64_t groups = (rows + rows_per_block - 1) / rows_per_block;
  const auto grid = static_cast<unsigned>(std::min<int64_t>(groups, INT_MAX / cluster) * cluster);
  const dim3 block(shape.threads, rows_per_block);
  ((shape.vecs == kCandidates
        ? (in_registers.template operator()<kVec, kCandidates>(grid, block, static_cast<unsigned>(cluster)), true)
        : false) ||
   ...);
}

inline bool aligned_to_vector(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % kVectorBytes == 0;
}

// The rows a row kernel shares among the blocks of a cluster (RowReduction, HeldRow): those of few
// rows whose x takes at least min_row_bytes. Measured on the decode rows (H200, 16223e4 against
// 6434209), a cluster launch cost about 0.3 µs and each reduction over a cluster about 0.25 µs more
// than one block's: forward rows of 4096 and 8192 bf16 got 0.2-0.9 µs slower, rows of 16384 up to
// 0.9 µs faster (RMSNormQuant 3.74 -> 3.04 µs, SpectralNorm 4.06 -> 3.20). Kernels that move more a row
// share from 8192 bf16: the backward (x, grad_out, grad_x and the parameter gradients; LayerNormBwd
// 3.71 -> 2.98 µs) and SpectralNorm's one row (f32 v_out; 3.65 µs held by one block at b0c0443,
// 3.04 shared by 8 at 16223e4 and a2a0bda).
struct RowSharing {
  int64_t min_row_bytes;
};
constexpr RowSharing kForwardRowSharing{32 * 1024};
constexpr RowSharing kHeavyRowSharing{16 * 1024};
constexpr RowSharing kNoRowSharing{INT64_MAX};

// Picks the kernel shape of a row op over T: 16-byte vectors where every tensor of `pointers` is
// aligned and N a multiple of the vector width, single elements otherwise, and the streaming
// kernel (streaming(grid), one row per block) for rows too long to hold.
template <class T, class InRegisters, class Streaming>
void launch_row_kernel(std::initializer_list<const void*> pointers, const RowShape& s, int multiprocessors,
                       RowSharing sharing, InRegisters in_registers, Streaming streaming) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const bool many_rows = s.rows >= multiprocessors;
  // The shape for rows of `units` vectors of `vec` elements, each row split over a cluster where
  // that leaves kSharedRowVecs vectors a thread (cluster 1 otherwise).
  const auto shape_for = [&]<int... kCandidates>(int units, int vec, int& cluster) {
    const bool long_rows = s.row_len * int64_t{sizeof(T)} >= sharing.min_row_bytes;
    cluster = long_rows ? cluster_blocks(units, s.rows, multiprocessors) : 1;
    if (cluster > 1) {
      const LaunchShape shared = choose_shape<kCandidates...>(static_cast<int>(ceil_div(units, cluster)), vec, false);
      if (shared.vecs == kSharedRowVecs) return shared;
      cluster = 1;
    }
    return choose_shape<kCandidates...>(units, vec, many_rows);
  };
  int cluster = 1;
  if (s.row_len % kVec == 0 && std::ranges::all_of(pointers, aligned_to_vector)) {
    const LaunchShape shape = shape_for.template operator()<1, 2, 4, 8>(s.row_len / kVec, kVec, cluster);
    if (shape.vecs) return launch_in_registers<kVec, 1, 2, 4, 8>(shape, s.rows, cluster, in_registers);
  }
  const LaunchShape shape = shape_for.template operator()<2, 8>(s.row_len, 1, cluster);
  if (shape.vecs) return launch_in_registers<1, 2, 8>(shape, s.rows, cluster, in_registers);
  streaming(static_cast<unsigned>(std::min<int64_t>(s.rows, INT_MAX)));
}

// kernel<<<grid, block, shared, stream>>>(args...) in clusters of `cluster` blocks along x. A failed
// launch is left to check_launch, as the <<<>>> launches' are.
template <class... Params, class... Args>
void launch_clustered(void (*kernel)(Params...), dim3 grid, dim3 block, unsigned cluster, size_t shared,
                      cudaStream_t stream, const Args&... args) {
  if (cluster == 1) {
    kernel<<<grid, block, shared, stream>>>(args...);
    return;
  }
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  const cudaLaunchConfig_t config{grid, block, shared, stream, &attribute, 1};
  static_cast<void>(cudaLaunchKernelEx(&config, kernel, args...));
}

template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups = false>
void launch_typed(const RowPointers<T>& p, const RowShape& s, int multiprocessors, cudaStream_t stream) {
  launch_row_kernel<T>(
      {p.x, p.residual, p.weight, p.bias, p.y, p.residual_out, p.codes}, s, multiprocessors, kForwardRowSharing,
      [&]<int kVec, int kVecs>(dim3 grid, dim3 block, unsigned cluster) {
        launch_clustered(row_norm_in_registers<T, kKind, kResidual, kQuant, kGroups, kVec, kVecs>, grid, block,
                         cluster, 0, stream, p, s);
      },
      [&](unsigned grid) {
        row_norm_streaming<T, kKind, kResidual, kQuant, kGroups><<<grid, kStreamingThreads, 0, stream>>>(p, s);
      });
}

inline RowShape row_shape(const RowGeometry& g, const NormMath& math, bool modulation = false, int groups = 1) {
  return {g.rows, g.row_len, 1.0f / static_cast<float>(g.row_len), static_cast<float>(math.eps), math.weight_offset,
          groups, modulation};
}

template <class T>
T* data_of(const TensorRef* tensor) {
  return tensor ? static_cast<T*>(tensor->data) : nullptr;
}

}  // namespace solops::detail::row_norm

namespace solops::detail {

template <NormKind kKind>
void launch_rows(std::string_view op, const RowGeometry& g, const NormMath& math, const RowNormTensors& t,
                 cudaStream_t stream) {
  using namespace row_norm;
  if (g.rows == 0) return;
  const RowShape s = row_shape(g, math, t.affine == AffineRows::per_row, group_count(t));
  const int multiprocessors = multiprocessor_count(t.x.device);
  dispatch_float(t.x.dtype, [&]<class T>() {
    // The quantizing norms (row_scale given) write y's fp8 codes through `codes`; they have no residual,
    // and neither has GroupRMSNorm, the one RMS norm with weight rows.
    const bool quant = t.row_scale != nullptr;
    T* const y = quant ? nullptr : data_of<T>(&t.y);
    __nv_fp8_storage_t* const codes = quant ? data_of<__nv_fp8_storage_t>(&t.y) : nullptr;
    const RowPointers<T> p{data_of<T>(&t.x),      data_of<T>(t.residual), data_of<T>(t.weight),
                           data_of<T>(t.bias),    y,                      data_of<T>(t.residual_out),
                           data_of<float>(t.mean), data_of<float>(t.rstd), codes,
                           data_of<float>(t.row_scale)};
    if (quant) launch_typed<T, kKind, false, true>(p, s, multiprocessors, stream);
    else if (t.residual) launch_typed<T, kKind, true, false>(p, s, multiprocessors, stream);
    else if (kKind == NormKind::rms && t.affine == AffineRows::per_group)
      launch_typed<T, kKind, false, false, kKind == NormKind::rms>(p, s, multiprocessors, stream);
    else launch_typed<T, kKind, false, false>(p, s, multiprocessors, stream);
  });
  check_launch(op);
}

}  // namespace solops::detail
