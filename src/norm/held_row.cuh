// A row held in registers, by one block or by the blocks of a cluster: the layout of a thread's
// share of it (HeldRow), the walk over a kernel's rows (for_each_held_row), the reductions over a
// row (RowReduction, and the block-wide ones beneath it) and the choice of a launch's shape
// (launch_row_kernel: vectors a thread, threads a block, blocks a row). The row norms, their
// backward, WeightNorm's rows and SpectralNorm's one-row W are kernels of this pattern.
#pragma once

#include <algorithm>
#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include <cooperative_groups.h>

#include "core/check.hpp"
#include "core/cluster_launch.cuh"
#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/evict_first.cuh"
#include "core/integer.hpp"
#include "norm/row_norm.hpp"

namespace solops::detail::row_norm {

constexpr int kVectorBytes = 16;
constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
constexpr int kMinBlockThreads = 128;
// Blocks this wide keep the row's vectors few per thread and leave room for several blocks per SM.
constexpr int kManyRowsThreads = 256;

// A block's lanes (blockDim.x) where each of its threads takes vectors of one row or plane: the row's
// vectors rounded up to a power of two, at most `threads`, so that short rows share a block
// (blockDim.y of them).
inline int row_lanes(int64_t vectors, int threads) {
  return static_cast<int>(std::bit_ceil(static_cast<uint64_t>(std::min<int64_t>(vectors, threads))));
}

// Threads a block may have when each holds kVecs vectors of kVec elements (with the weight and bias
// at the same columns): the registers of one block must fit the SM's 64 K. Scalar threads hold at
// most 8 elements and always fit 1024.
__host__ __device__ constexpr int max_threads(int vec, int vecs) {
  return vec == 1 || vecs <= 2 ? kMaxThreads : vecs <= 4 ? 512 : 256;
}

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

// The 16-byte vector at `address` where `valid`, zeros elsewhere: a predicated load on the read-only
// path, no branch. Under a branch a vector (`if (valid) bits = __ldg(...)`) nvcc moved an f16
// vector's lanes into the registers the sums use inside the branch, right after the load, so each of
// a thread's loads waited for the one before: one 16-byte load in flight a warp (SASS of every f16
// BatchNorm kernel). volatile: nvcc keeps the loads where the caller issues them, together, rather
// than sinking each down to its vector's use.
__device__ __forceinline__ uint4 load_vector_if(const uint4* address, bool valid) {
  uint4 bits{0, 0, 0, 0};
  asm volatile("{\n"
      "  .reg .pred p;\n"
      "  setp.ne.b32 p, %5, 0;\n"
      "  @p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      "}"
      : "+r"(bits.x), "+r"(bits.y), "+r"(bits.z), "+r"(bits.w)
      : "l"(address), "r"(static_cast<int>(valid)));
  return bits;
}

// The Pack at `address` where `valid`, zeros elsewhere: load_vector_if for a vector, a read-only
// load for a single element.
template <class T, int kVec>
__device__ __forceinline__ Pack<T, kVec> load_pack_if(const Pack<T, kVec>* address, bool valid) {
  if constexpr (kVec == 1) {
    return valid ? __ldg(address) : T{};
  } else {
    return load_vector_if(address, valid);
  }
}

// `bits` by value: bound by reference to global or shared memory, the memcpy below read it a byte or
// two at a time (16 LDG.U8 a vector in the fused add-norms, LDS.U16 in a staged kernel).
template <class T, int kVec>
__device__ __forceinline__ void unpack(const Pack<T, kVec> bits, float (&values)[kVec]) {
  if constexpr (std::is_same_v<T, __nv_bfloat16> && kVec % 2 == 0) {
    // A bf16 is the top half of its float: one shift or one mask an element, where converting lane
    // by lane took a byte permute and a multiply for every odd lane (SASS of the row kernels).
    uint32_t words[kVec / 2];
    memcpy(words, &bits, sizeof bits);
#pragma unroll
    for (int k = 0; k < kVec / 2; ++k) {
      values[2 * k] = __uint_as_float(words[k] << 16);
      values[2 * k + 1] = __uint_as_float(words[k] & 0xffff0000u);
    }
  } else {
    T lanes[kVec];
    memcpy(lanes, &bits, sizeof bits);
#pragma unroll
    for (int e = 0; e < kVec; ++e) values[e] = to_float(lanes[e]);
  }
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

// kVec floats to `at`: kVec / 4 16-byte stores (16-byte aligned `at`), or one element.
template <int kVec>
__device__ __forceinline__ void store_floats(float* at, const float (&values)[kVec]) {
  if constexpr (kVec == 1) {
    at[0] = values[0];
  } else {
#pragma unroll
    for (int q = 0; q < kVec / 4; ++q) {
      reinterpret_cast<float4*>(at)[q] =
          make_float4(values[4 * q], values[4 * q + 1], values[4 * q + 2], values[4 * q + 3]);
    }
  }
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

// The barrier of a row's reduction: the whole block's, or with kRowBarriers (kernels whose blocks
// hold several rows, blockDim.y) named barrier threadIdx.y + 1 for the row's threads alone, so that
// a row does not wait on the others' loads and stores. At most kMaxRowBarriers rows a block. A
// compile-time choice: a run-time branch on blockDim.y made the forward kernels much slower.
constexpr int kMaxRowBarriers = 15;

template <bool kRowBarriers>
__device__ __forceinline__ void row_sync() {
  if constexpr (kRowBarriers) {
    asm volatile("bar.sync %0, %1;" ::"r"(threadIdx.y + 1), "r"(blockDim.x) : "memory");
  } else {
    __syncthreads();
  }
}

// Warp partials of a row in shared memory: one float a warp, padded with the identity to a multiple
// of 8 floats (and 16-byte aligned), which combine_partials reads as float4s.
__host__ __device__ constexpr int padded_warps(int warps) { return (warps + 7) / 8 * 8; }

// Eight partials combined in one fixed order: their two loads issued together, then the adds.
template <class Combine>
__device__ __forceinline__ float combine_eight(const float* partials, Combine combine) {
  const float4 low = reinterpret_cast<const float4*>(partials)[0];
  const float4 high = reinterpret_cast<const float4*>(partials)[1];
  const auto quad = [&](const float4& v) { return combine(combine(v.x, v.y), combine(v.z, v.w)); };
  return combine(quad(low), quad(high));
}

// The row's warp partials (`padded` floats from row_partial) combined by every thread in one fixed
// order, so every thread gets the same bits: eight at a time, one shared-memory round trip each (one
// for rows of up to 8 warps), where a butterfly of shuffles over them took five dependent shuffles
// (~30 cycles each) on the critical path of every reduction. The loop stays rolled: unrolled for 32
// warps, its loads took 16 more registers from every kernel (RMSNorm's 2-vector kernel then held one
// block an SM fewer).
template <class Combine>
__device__ __forceinline__ float combine_partials(const float* row_partial, int padded, Combine combine) {
  float total = combine_eight(row_partial, combine);
#pragma unroll 1
  for (int k = 8; k < padded; k += 8) total = combine(total, combine_eight(row_partial + k, combine));
  return total;
}

// Stores this warp's partial `value` (lane 0) at row_partial[warp]; warp 0's other lanes fill the
// padding up to padded_warps(warps) with `identity`.
__device__ __forceinline__ void store_partial(float* row_partial, float value, float identity) {
  const int warps = blockDim.x / kWarp, warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (lane == 0) row_partial[warp] = value;
  else if (warp == 0 && warps + lane - 1 < padded_warps(warps)) row_partial[warps + lane - 1] = identity;
}

// The reduction by `combine` (whose identity is `identity`) over the threads of this thread's row
// (threadIdx.y); rows are whole warps. Every thread of the row must call it. `partial`: 16-byte
// aligned, padded_warps(blockDim.x / kWarp) floats a row of the block.
// block_reduce leaves `partial` in use until the caller's next barrier; row_reduce ends it.
template <bool kRowBarriers = false, class Combine>
__device__ __forceinline__ float block_reduce(float value, float* partial, float identity, Combine combine) {
  value = warp_reduce(value, combine);
  const int warps = blockDim.x / kWarp;
  if (warps == 1) return value;
  const int padded = padded_warps(warps);
  float* const row_partial = partial + threadIdx.y * padded;
  store_partial(row_partial, value, identity);
  row_sync<kRowBarriers>();
  return combine_partials(row_partial, padded, combine);
}

template <bool kRowBarriers = false, class Combine>
__device__ __forceinline__ float row_reduce(float value, float* partial, float identity, Combine combine) {
  const float total = block_reduce<kRowBarriers>(value, partial, identity, combine);
  if (blockDim.x > kWarp) row_sync<kRowBarriers>();  // the next call overwrites partial
  return total;
}

__device__ __forceinline__ float row_sum(float value, float* partial) {
  return row_reduce(value, partial, 0.0f, [](float a, float b) { return a + b; });
}

// The larger of a and b, NaN if either is: a row's NaN reaches its scale and codes (spec §2.15),
// where fmaxf would drop it.
__device__ __forceinline__ float nan_max(float a, float b) { return a > b || a != a ? a : b; }

// The larger of two magnitudes given by their bits (row_norm.cuh's magnitude_bits: non-negative
// floats, every NaN's bits above +inf's) as unsigned integers: one instruction a step of a
// reduction, where nan_max takes three; its identity is 0.
__device__ __forceinline__ float larger_magnitude(float a, float b) {
  return __uint_as_float(max(__float_as_uint(a), __float_as_uint(b)));
}

// The reductions of a by combine_a and of b by combine_b (identities identity_a, identity_b) over this
// thread's row of the block, in every thread, both in one round of barriers; `partial` (twice
// block_reduce's) stays in use until the caller's next barrier.
template <bool kRowBarriers = false, class CombineA, class CombineB>
__device__ __forceinline__ float2 block_reduce_pair(float a, float b, float* partial, float identity_a,
                                                    float identity_b, CombineA combine_a, CombineB combine_b) {
  a = warp_reduce(a, combine_a);
  b = warp_reduce(b, combine_b);
  const int warps = blockDim.x / kWarp;
  if (warps == 1) return {a, b};
  const int padded = padded_warps(warps);
  float* const row_partial = partial + threadIdx.y * 2 * padded;
  store_partial(row_partial, a, identity_a);
  store_partial(row_partial + padded, b, identity_b);
  row_sync<kRowBarriers>();
  return {combine_partials(row_partial, padded, combine_a), combine_partials(row_partial + padded, padded, combine_b)};
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
// barrier a reduction, measured slower on rows of one reduction and faster on those of two or three:
// docs/perf/norm.md.)
// One RowReduction a row, made before the row's loads: in a cluster it arrives at a barrier that
// its first reduction waits on before storing, since a block may store into another's shared memory
// only once that block runs and has read the previous row's slots. A reduction's slots are the
// other pair from the previous one's: a block may store the next totals before a slower block has
// read these, but not the ones after, which wait for the next barrier and so for every block to
// have read. Every thread of the block must take part in each reduction.
// The block stage's successive reductions take the two buffers of `partials` in turn (`reductions`
// counts them over the kernel's rows), so none needs a barrier after it: a thread stores into a
// buffer two reductions after its last use, past the barrier of the reduction between, which every
// thread of the row reaches only after reading that buffer (a barrier a reduction fewer: LayerNorm
// takes two a row).
// kShared compiles the cluster stage in: only into kernels that hold one vector a thread
// (for_each_held_row), since its registers made some of the others, compiled at their register bound,
// spill (RMSNormQuant at 4 vectors a thread), and took a block an SM from others (the fused RMSNorm at
// 2 vectors a thread); launch_row_kernel shares rows only among those. A block's share of a row of up
// to 65536 half-type elements is one vector a thread; rows of single elements are not shared.
constexpr int kSharedRowVecs = 1;

// Floats of one buffer of a block's partials (RowReduction): a pair (block_reduce_pair) for each
// padded warp of each of the block's rows, as many as rows of two or more warps take at most (rows of
// one warp store none).
constexpr int row_partials_bound() {
  int most = 0;
  for (int warps = 2; warps <= kMaxThreads / kWarp; ++warps) {
    const int floats = 2 * (kMaxThreads / kWarp / warps) * padded_warps(warps);
    most = floats > most ? floats : most;
  }
  return most;
}
constexpr int kHeldRowPartials = row_partials_bound();

template <bool kShared, bool kRowBarriers = false>
class RowReduction {
 public:
  // `partials`: two buffers of kHeldRowPartials floats; `totals`: this block's slots.
  __device__ RowReduction(float* partials, unsigned& reductions, ClusterTotals* totals)
      : partials_(partials), reductions_(reductions), totals_(totals) {
    if (kShared && __clusterSizeInBlocks() > 1) cooperative_groups::this_cluster().barrier_arrive();
  }

  template <class CombineA, class CombineB>
  __device__ float2 pair(float a, float b, float identity_a, float identity_b, CombineA combine_a, CombineB combine_b) {
    const float2 totals =
        block_reduce_pair<kRowBarriers>(a, b, next_partials(), identity_a, identity_b, combine_a, combine_b);
    return across_blocks(totals, {identity_a, identity_b}, combine_a, combine_b);
  }

  __device__ float sum(float value) {
    const float total = block_reduce<kRowBarriers>(value, next_partials(), 0.0f, plus);
    return across_blocks({total, 0.0f}, {0.0f, 0.0f}, plus, plus).x;
  }

  // The largest of the row's magnitudes, each given by its bits (larger_magnitude).
  __device__ float magnitude_max(unsigned bits) {
    const float total = block_reduce<kRowBarriers>(__uint_as_float(bits), next_partials(), 0.0f, larger_magnitude);
    return across_blocks({total, 0.0f}, {0.0f, 0.0f}, larger_magnitude, larger_magnitude).x;
  }

  // The row's sum of `sum` and largest magnitude of `bits`, in one round of barriers.
  __device__ float2 sum_and_magnitude_max(float sum, unsigned bits) {
    return pair(sum, __uint_as_float(bits), 0.0f, 0.0f, plus, larger_magnitude);
  }

 private:
  static __device__ float plus(float a, float b) { return a + b; }

  __device__ float* next_partials() { return partials_ + (reductions_++ % 2) * kHeldRowPartials; }

  // The row's totals from this block's.
  template <class CombineA, class CombineB>
  __device__ float2 across_blocks(float2 totals, float2 identities, CombineA combine_a, CombineB combine_b) {
    if (!kShared || __clusterSizeInBlocks() == 1) return totals;
    const cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    if (round_ == 0) cluster.barrier_wait();
    float2* const slots = totals_->slots[round_ % 2];
    // Thread t stores into block t's slot for this block.
    if (threadIdx.x < cluster.num_blocks()) {
      *cluster.map_shared_rank(slots + cluster.block_rank(), threadIdx.x) = totals;
    }
    cluster.sync();
    ++round_;
    float2 combined = identities;
    for (unsigned k = 0; k < cluster.num_blocks(); ++k) {
      combined.x = combine_a(combined.x, slots[k].x);
      combined.y = combine_b(combined.y, slots[k].y);
    }
    return combined;
  }

  float* partials_;
  unsigned& reductions_;
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
  // Whether this thread holds vector i of the row; in kernels of whole rows (kWhole, taken where
  // launch_whole_rows_or_not finds every row filling its threads' vectors) it always does.
  template <bool kWhole = false>
  __device__ bool holds(int i) const {
    return kWhole || (active && vector(i) < vectors);
  }
  // Whether this thread writes the row's own outputs (statistics, scale): one thread of the row.
  __device__ bool leads() const { return active && lane == 0; }
  // This row counted from row `from` of the launch (the second tensor of a pair).
  __device__ HeldRow counted_from(int64_t from) const {
    HeldRow shifted = *this;
    shifted.row = row - from;
    shifted.first = shifted.row * vectors;
    return shifted;
  }
};

// Shared memory of for_each_held_row: the block stage's two buffers of partials and the cluster's
// totals.
constexpr size_t kHeldRowSharedBytes = 2 * kHeldRowPartials * sizeof(float) + sizeof(ClusterTotals);

// The reductions of a kernel holding kVecs vectors a thread.
template <int kVecs, bool kRowBarriers = false>
using HeldRowReduction = RowReduction<kVecs == kSharedRowVecs, kRowBarriers>;

// Calls body(HeldRow, HeldRowReduction&) for each row of this thread: row threadIdx.y of each group
// of blockDim.y rows, the groups strided over the grid, or, for kernels of kSharedRowVecs vectors a
// thread, over its clusters (one block each outside a cluster launch; where a cluster shares a row,
// blockDim.y is 1). Kernels of more vectors count blocks, not clusters: the cluster registers'
// 64-bit row arithmetic made kernels compiled at their register bound spill. The loop runs while a
// group's first row exists, the same test for every thread of the cluster; counting the groups
// instead took a 64-bit division before the first load (about 20 dependent instructions, on every
// decode row's critical path).
template <int kVec, int kVecs, bool kRowBarriers = false, class Body>
__device__ __forceinline__ void for_each_held_row(const RowShape& s, Body body) {
  constexpr bool kShared = kVecs == kSharedRowVecs;
  __shared__ alignas(16) float partials[2 * kHeldRowPartials];
  __shared__ ClusterTotals totals;
  unsigned reductions = 0;
  const int vectors = s.row_len / kVec;
  const unsigned first_group = kShared ? __clusterIdx().x : blockIdx.x;
  const unsigned groups = kShared ? __clusterGridDimInClusters().x : gridDim.x;
  for (int64_t group_row = int64_t{first_group} * blockDim.y; group_row < s.rows;
       group_row += int64_t{groups} * blockDim.y) {
    const int64_t row = group_row + threadIdx.y;
    const unsigned rank = kShared ? __clusterRelativeBlockRank() : 0, blocks = kShared ? __clusterSizeInBlocks() : 1;
    HeldRowReduction<kVecs, kRowBarriers> reduce(partials, reductions, &totals);
    body(HeldRow{row, row * vectors, vectors, row < s.rows, static_cast<int>(rank * blockDim.x + threadIdx.x),
                 static_cast<int>(blocks * blockDim.x)},
         reduce);
  }
}

// Vectors per thread (0: the streaming kernel) and threads per block for rows of `units` vectors of
// kVec elements (a block's share of them where blocks share a row): the first of kCandidates, up to
// kMostVecs, that fits. Few rows (decode) spread one row over many threads, for the shortest latency
// (launch_row_kernel lists two vectors a thread first, one where a cluster shares the row); many
// rows keep blocks at most kManyRowsThreads wide, but at kMostVecs, which take as many threads as
// the kernel allows (launch_row_kernel's kMostVecs says why).
struct LaunchShape {
  int vecs = 0;
  int threads = 0;
};

template <int kMostVecs, int... kCandidates>
LaunchShape choose_shape(int units, int vec, bool many_rows, int few_rows_threads = kMaxThreads) {
  const auto threads_for = [&](int vecs) { return (units + vecs * kWarp - 1) / (vecs * kWarp) * kWarp; };
  for (int vecs : {kCandidates...}) {
    const int many_rows_limit = vecs == kMostVecs ? kMaxThreads : kManyRowsThreads;
    const int limit = std::min(max_threads(vec, vecs), many_rows ? many_rows_limit : few_rows_threads);
    if (vecs <= kMostVecs && threads_for(vecs) <= limit) return {vecs, threads_for(vecs)};
  }
  for (int vecs : {kCandidates...}) {
    if (vecs <= kMostVecs && threads_for(vecs) <= max_threads(vec, vecs)) return {vecs, threads_for(vecs)};
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
// count `shape.vecs` (one of kCandidates; those over kMostVecs are never compiled): `cluster` blocks
// a row, or rows_per_block rows of a short row sharing a block.
template <int kVec, int kMostVecs, int... kCandidates, class InRegisters>
void launch_in_registers(const LaunchShape& shape, int64_t rows, int cluster, InRegisters in_registers) {
  const int rows_per_block = cluster > 1 ? 1 : std::max(1, kMinBlockThreads / shape.threads);
  const int64_t groups = (rows + rows_per_block - 1) / rows_per_block;
  const auto grid = static_cast<unsigned>(std::min<int64_t>(groups, INT_MAX / cluster) * cluster);
  const dim3 block(shape.threads, rows_per_block);
  const auto launch_if_chosen = [&]<int kVecs>() {
    if constexpr (kVecs <= kMostVecs) {
      if (shape.vecs == kVecs) {
        in_registers.template operator()<kVec, kVecs>(grid, block, static_cast<unsigned>(cluster));
      }
    }
  };
  (launch_if_chosen.template operator()<kCandidates>(), ...);
}

// Calls launch.template operator()<kWhole>() with kWhole true where every row of the launch exists
// and fills each thread's kVecs vectors (N exactly a row's threads' vectors, rows a multiple of the
// block's, as every catalogue row), so that a kernel's kWhole form may leave out HeldRow::holds and
// its branches: about a quarter of the instructions of LayerNorm's 2-vector kernel (624 against
// 472), on decode rows whose 8 warps leave each scheduler two to issue, so that every instruction
// left out is on the critical path. The kernels of 16-byte vectors and at most kWholeVecs a thread
// have a kWhole form; the others run as kWhole = false.
// kWholeVecs: four for the row norms' forward, whose 4-vector kWhole forms gained on the LayerNorm
// kind's and the quantizing norms' rows (the bf16 LayerNorm kernel even though it spills 40 bytes)
// and left the RMS kind's level; two for the others, whose 4-vector kWhole forms lost (WeightNorm,
// the backward).
template <int kVec, int kVecs, int kWholeVecs, class Launch>
void launch_whole_rows_or_not(const RowShape& s, dim3 block, unsigned cluster, Launch launch) {
  if constexpr (kVec > 1 && kVecs <= kWholeVecs) {
    if (s.row_len == int64_t{kVec} * kVecs * block.x * cluster && s.rows % block.y == 0) {
      return launch.template operator()<true>();
    }
  }
  launch.template operator()<false>();
}

inline bool aligned_to_vector(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % kVectorBytes == 0;
}

// Whether rows of T can be moved as 16-byte vectors: row_len a multiple of the vector width and
// every tensor of `pointers` aligned to one.
template <class T>
bool rows_of_vectors(std::initializer_list<const void*> pointers, int row_len) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  return row_len % kVec == 0 && std::ranges::all_of(pointers, aligned_to_vector);
}

// How a row kernel spreads its rows over blocks, beyond the vectors a thread holds (kMostVecs).
// min_shared_row_bytes: few rows whose x takes at least this many bytes are shared among the
// blocks of a cluster (RowReduction, HeldRow). A cluster launch, and each reduction over a cluster,
// cost more than one block's (docs/perf/norm.md): the forward rows of 4096 and 8192 bf16 lose by
// sharing, rows of 16384, which one SM would move alone through its own L1, gain. Kernels that move
// more a row share from 8192 bf16: the backward (x, grad_out, grad_x and the parameter gradients).
// SpectralNorm's one row (f32 v_out) shares as the forward rows do since its v_out goes out in whole
// lines (one block of 8192 then beat the cluster).
// few_rows_threads: the widest block of few unshared rows, which take two vectors a thread where
// that fits and more where it does not.
// many_rows_four_vecs: many rows of at least four vectors for each of kMinBlockThreads threads hold
// four a thread, not two (rows of 4096 half elements in 128 threads, not 256).
// few_rows_four_vecs: few rows of at least four vectors for each of kManyRowsThreads threads hold
// four a thread (rows of 8192 half elements in 256 threads, not 512).
// many_rows_eight_vecs: many rows of at least eight vectors for each of kMinBlockThreads threads hold
// eight a thread (rows of 8192 and 16384 half elements in 128 and 256 threads); the kernel's
// launch_row_kernel must compile eight (kMostVecs).
struct RowSpread {
  int64_t min_shared_row_bytes;
  int few_rows_threads = kMaxThreads;
  bool many_rows_four_vecs = false;
  bool few_rows_four_vecs = false;
  bool many_rows_eight_vecs = false;
};
constexpr RowSpread kForwardSpread{32 * 1024};
// The most of x one 512-thread block holds at four vectors a thread: 32 KB.
constexpr int64_t kOneBlockRowBytes = 512 * 4 * kVectorBytes;
// Few rows of up to 32 KB in one block of at most 512 threads, those of 8192 half elements and more
// at four vectors a thread (in 256 and 512 threads), not a cluster of eight and not two vectors in
// 512; longer rows are shared. Rows of 4096 keep two vectors in 256 threads (four in 128 measured
// slower). Measured faster on the 405b and 70b decode rows of the forward kernels of
// - the RMS kind without a residual or codes, and WeightNorm's, as Liger holds its rows;
// - the LayerNorm kind without a residual, in row_norm's few_rows, which hold weight and bias from
//   the start.
// The fused norms and RMSNormQuant lost in one block (their 4-vector forms spill or read the weight
// late), and one 1024-thread block of two vectors lost on the RMS kind.
constexpr RowSpread kOneBlockSpread{kOneBlockRowBytes + 1, 512, false, true};
// Many rows of 4096 at four vectors: RMSNormQuant, whose 4-vector kWhole kernel beats the two-vector
// one with or without the register ceiling of rms_norm_quant_many_rows, and the LayerNorm kind's f16
// rows without a residual, whose 4-vector kernels hold at most 64 registers (eight 128-thread blocks
// an SM) where the 2-vector ones hold 56 (four of 256). The others stay at two: they measured slower
// at four (the bf16 LayerNorm kind's 4-vector kWhole kernel spills).
constexpr RowSpread kFourVectorSpread{32 * 1024, kMaxThreads, true};
// The LayerNorm kind's f16 rows without a residual: few rows as kOneBlockSpread, many as
// kFourVectorSpread.
constexpr RowSpread kOneBlockFourVectorSpread{kOneBlockSpread.min_shared_row_bytes, kOneBlockSpread.few_rows_threads,
                                              true, kOneBlockSpread.few_rows_four_vecs};
// The quantizing norms' many long rows at eight vectors a thread (in blocks of at most 128
// registers, min_blocks), where four (or LayerNormQuant's bf16 rows staged) are left to the other
// rows. These issue-bound kernels gain from sharing a row's setup and reductions among fewer warps
// (their rows of 4096 level); every other forward kind lost at eight, needing its warps to cover
// latency more than it needs fewer instructions.
constexpr RowSpread with_eight_vectors(RowSpread spread) {
  spread.many_rows_eight_vecs = true;
  return spread;
}
constexpr RowSpread kHeavySpread{16 * 1024};
constexpr RowSpread kUnsharedSpread{INT64_MAX};

// Whether a launch has many rows (at least one an SM), the rule launch_row_kernel spreads rows by
// (RowSpread) and its callers choose kernels by.
inline bool has_many_rows(const RowShape& s, int multiprocessors) { return s.rows >= multiprocessors; }

// Picks the kernel shape of a row op over T: 16-byte vectors where every tensor of `pointers` is
// aligned and N a multiple of the vector width, single elements otherwise, and the streaming
// kernel (streaming(grid), one row per block) for rows too long to hold.
// kMostVecs: the most vectors a thread holds. Four, in blocks of up to 512 threads on many rows:
// two blocks an SM at the 4-vector kernels' bound of 64 registers, 32 warps for two rows in flight,
// where eight vectors in 256 threads took 88-125 registers in the row norms and their backward, two
// blocks of 8 warps: twice the warps to cover each row's reductions and output pass. Eight for
// WeightNorm's rows, whose 8-vector kernel holds 60 registers, four 256-thread blocks (four rows) an
// SM against three of 512 threads at four vectors (slower), and for the quantizing norms' long rows
// (with_eight_vectors). Two for SpectralNorm's one row: few rows take two
// vectors wherever four would fit (or one in a cluster), so more are never launched.
template <class T, int kMostVecs = 4, class InRegisters, class Streaming>
void launch_row_kernel(std::initializer_list<const void*> pointers, const RowShape& s, int multiprocessors,
                       RowSpread spread, InRegisters in_registers, Streaming streaming) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const bool many_rows = has_many_rows(s, multiprocessors);
  if (rows_of_vectors<T>(pointers, s.row_len)) {
    const int units = s.row_len / kVec;
    // Each row split over a cluster where that leaves kSharedRowVecs vectors a thread.
    if (s.row_len * int64_t{sizeof(T)} >= spread.min_shared_row_bytes) {
      const int cluster = cluster_blocks(units, s.rows, multiprocessors);
      const LaunchShape shared =
          choose_shape<kMostVecs, 1, 2, 4, 8>(static_cast<int>(ceil_div(units, cluster)), kVec, false);
      if (cluster > 1 && shared.vecs == kSharedRowVecs) {
        return launch_in_registers<kVec, kMostVecs, 1, 2, 4, 8>(shared, s.rows, cluster, in_registers);
      }
    }
    // Few rows take two vectors a thread where that fits (256 threads on a row of 4096 half
    // elements, as Liger runs its decode rows): half the warps in each reduction. Long rows take
    // four, or eight, where the spread says so.
    const bool eight_vecs = many_rows && spread.many_rows_eight_vecs && units >= 8 * kMinBlockThreads;
    const bool four_vecs = many_rows ? spread.many_rows_four_vecs && units >= 4 * kMinBlockThreads
                                     : spread.few_rows_four_vecs && units >= 4 * kManyRowsThreads;
    const LaunchShape shape =
        eight_vecs  ? choose_shape<kMostVecs, 8, 4, 2, 1>(units, kVec, true)
        : four_vecs ? choose_shape<kMostVecs, 4, 1, 2, 8>(units, kVec, many_rows, spread.few_rows_threads)
        : many_rows ? choose_shape<kMostVecs, 1, 2, 4, 8>(units, kVec, true)
                    : choose_shape<kMostVecs, 2, 1, 4, 8>(units, kVec, false, spread.few_rows_threads);
    if (shape.vecs) return launch_in_registers<kVec, kMostVecs, 1, 2, 4, 8>(shape, s.rows, 1, in_registers);
  }
  // Rows of single elements hold two or eight a thread, in as many threads as a block has, and are
  // never shared.
  const LaunchShape shape = choose_shape<8, 2, 8>(s.row_len, 1, many_rows);
  if (shape.vecs) return launch_in_registers<1, 8, 2, 8>(shape, s.rows, 1, in_registers);
  streaming(static_cast<unsigned>(std::min<int64_t>(s.rows, INT_MAX)));
}

// `grid` capped at the blocks of `kernel` the SMs hold at once: each block then walks several rows
// (for_each_held_row), paying its setup (parameters, cache policy) once, not once a row.
template <class Kernel>
dim3 resident_grid(std::string_view op, Kernel kernel, dim3 grid, dim3 block, int multiprocessors) {
  const int resident =
      resident_blocks(op, reinterpret_cast<const void*>(kernel), static_cast<int>(block.x * block.y), 0);
  grid.x = std::min(grid.x, static_cast<unsigned>(std::max(resident, 1) * multiprocessors));
  return grid;
}

// The norms' kernels launch through row_norm::launch_clustered.
using detail::launch_clustered;

inline RowShape row_shape(const RowGeometry& g, const NormMath& math, bool modulation = false, int groups = 1) {
  return {g.rows, g.row_len, 1.0f / static_cast<float>(g.row_len), static_cast<float>(math.eps), math.weight_offset,
          groups, modulation};
}

}  // namespace solops::detail::row_norm
