// What the training forward's and the backward's kernels share (batch_norm_forward.cu,
// batch_norm_backward.cu): the launch's walk over each channel's values (BatchNormPlan), a
// thread's place in it, the sums over a channel's threads of a block, and the launches of both kinds
// of plan.
//
// Determinism: every sum over a block is a butterfly of shuffles (a + b and b + a are the same bits,
// so every lane ends with the same value) and then the warps' partials added in warp order; a
// cluster's blocks exchange their partials through distributed shared memory and each adds them in
// rank order; two-pass partials meet in one warp a channel, each lane taking a fixed stride of them,
// the lanes then combined in a fixed tree. No float atomics.
#pragma once

#include <cooperative_groups.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "core/dispatch.cuh"
#include "core/integer.hpp"
#include "norm/batch_norm.hpp"
#include "norm/batch_norm_channel.cuh"
#include "norm/held_row.cuh"

namespace solops::detail::batch_norm_kernels {

constexpr int kThreads = kBatchNormThreads;
constexpr int kWarp = 32;
constexpr int kWarps = kThreads / kWarp;
constexpr int kMaxBlockChannels = 32;
constexpr int kMaxClusterBlocks = 8;
// Vectors a thread of a two-pass kernel holds: one chunk a block, all its loads in flight at once.
constexpr int kPassHeld = 8;

using row_norm::Pack;

// The launch's view of a BatchNormPlan.
struct Walk {
  int64_t channels;
  int plane_vectors;
  FastDivisor plane;  // divides by plane_vectors
  int channel_vectors;
  int lane_bits, channel_bits;
  int chunks;
  float count;  // L, a channel's values

  __device__ int team() const { return kThreads >> channel_bits; }

  // The offset, in vectors, of vector j (< channel_vectors) of channel c.
  __device__ int64_t offset(int64_t c, int64_t vector) const {
    const int j = static_cast<int>(vector);
    const int b = plane.divide(j);
    return (int64_t{b} * channels + c) * plane_vectors + (j - b * plane_vectors);
  }
};

inline Walk walk_of(const BatchNormPlan& plan) {
  return {plan.planes.channels,
          plan.plane_vectors,
          FastDivisor(std::max(plan.plane_vectors, 1)),
          plan.channel_vectors,
          plan.lane_bits,
          plan.channel_bits,
          plan.chunks,
          static_cast<float>(plan.planes.batch * plan.planes.plane)};
}

// A thread's place: its channel (the block's slot-th; inactive past the last channel), its rank in
// the channel's team of the block and the chunk that block holds. A thread's index is, from the
// lowest bit: lane_bits of its lane in a plane, channel_bits of the slot, then the rest of its rank.
struct Place {
  int64_t channel;
  int slot;
  int rank;
  int chunk;
  bool active;

  // The channel's vector this thread holds in its i-th register of kHeld: strided by the team over
  // the chunk (64-bit: the last chunk's may pass 2^31).
  template <int kHeld>
  __device__ int64_t vector(const Walk& w, int i) const {
    return (int64_t{chunk} * kHeld + i) * w.team() + rank;
  }
  template <int kHeld>
  __device__ bool holds(const Walk& w, int i) const {
    return active && vector<kHeld>(w, i) < w.channel_vectors;
  }
};

// `block`: the block's index in the launch, channel groups major, chunks minor.
__device__ __forceinline__ Place place_of(const Walk& w, unsigned block) {
  const int lane = threadIdx.x & ((1 << w.lane_bits) - 1);
  const int slot = (threadIdx.x >> w.lane_bits) & ((1 << w.channel_bits) - 1);
  const int rest = threadIdx.x >> (w.lane_bits + w.channel_bits);
  const unsigned group = block / w.chunks;
  const int64_t channel = (int64_t{group} << w.channel_bits) + slot;
  return {channel, slot, lane | (rest << w.lane_bits), static_cast<int>(block - group * w.chunks),
          channel < w.channels};
}

// Shared memory of block_channel_sums: kN partials a warp and channel slot.
template <int kN>
using ChannelPartials = float[kWarps * kMaxBlockChannels * kN];

// Each of `values` summed over the threads of this thread's channel in the block, the same bits in
// every one of them. Every thread of the block must call it.
template <int kN>
__device__ __forceinline__ void block_channel_sums(float (&values)[kN], const Walk& w, ChannelPartials<kN>& partials) {
  const int lanes = 1 << w.lane_bits, spread = 1 << (w.lane_bits + w.channel_bits);
  // Within the warp: over the lane bits and over the rank bits above the slot's.
#pragma unroll
  for (int offset = 1; offset < kWarp; offset *= 2) {
    if (offset < lanes || offset >= spread) {
#pragma unroll
      for (int k = 0; k < kN; ++k) values[k] += __shfl_xor_sync(0xffffffffu, values[k], offset);
    }
  }
  // Every warp holds every slot (lanes * slots <= 32): one thread each stores the warp's partial.
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int slot = (threadIdx.x >> w.lane_bits) & ((1 << w.channel_bits) - 1);
  if (lane < spread && (lane & (lanes - 1)) == 0) {
#pragma unroll
    for (int k = 0; k < kN; ++k) partials[(warp * kMaxBlockChannels + slot) * kN + k] = values[k];
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    float total = 0.0f;
#pragma unroll
    for (int u = 0; u < kWarps; ++u) total += partials[(u * kMaxBlockChannels + slot) * kN + k];
    values[k] = total;
  }
  __syncthreads();  // the next call stores into the same partials
}

// This thread's vectors of x: kHeld loads in flight at once; those it does not hold stay zero.
template <class T, int kVec, int kHeld>
__device__ __forceinline__ void load_held(const T* x, const Walk& w, const Place& p, Pack<T, kVec> (&bits)[kHeld]) {
  const auto* vectors = reinterpret_cast<const Pack<T, kVec>*>(x);
#pragma unroll
  for (int i = 0; i < kHeld; ++i) {
    bits[i] = row_norm::load_pack_if<T, kVec>(vectors + w.offset(p.channel, p.vector<kHeld>(w, i)),
                                             p.holds<kHeld>(w, i));
  }
}

// A cluster's exchange of its blocks' partials, one Slot a channel slot a block: `mine` (the same in
// every thread of the channel) goes to slot [this block's rank] of every block's `slots`; after the
// cluster's barrier slots[r][slot] holds block r's. The kernel must have arrived at the cluster's
// barrier at its start (a block may store into another's shared memory only once that one runs).
template <class Slot>
__device__ __forceinline__ void exchange_in_cluster(const cooperative_groups::cluster_group& cluster,
                                                    Slot (&slots)[kMaxClusterBlocks][kMaxBlockChannels],
                                                    const Place& p, const Slot& mine) {
  cluster.barrier_wait();
  if (p.rank == 0) {
    for (unsigned rank = 0; rank < cluster.num_blocks(); ++rank) {
      *cluster.map_shared_rank(&slots[p.chunk][p.slot], rank) = mine;
    }
  }
  cluster.sync();
}

// f(i, values) for each vector i this thread holds, its kVec elements widened to f32.
template <class T, int kVec, int kHeld, class F>
__device__ __forceinline__ void for_each_held(const Pack<T, kVec> (&bits)[kHeld], const Walk& w, const Place& p, F f) {
#pragma unroll
  for (int i = 0; i < kHeld; ++i) {
    if (!p.holds<kHeld>(w, i)) continue;
    float values[kVec];
    row_norm::unpack<T, kVec>(bits[i], values);
    f(i, values);
  }
}

// Launches `kernel` on `blocks` blocks of kThreads, `cluster` of them a cluster (1: a plain launch).
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), int64_t blocks, int cluster, cudaStream_t stream, const Args&... args) {
  row_norm::launch_clustered(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads),
                             static_cast<unsigned>(cluster), 0, stream, args...);
}

// The launcher's choice for a call on x of `dtype`: without values (an empty batch or empty planes)
// no_values.template operator()<T>(walk), a walk of no chunks; else launch.template operator()<T,
// kVec>(plan) with 16-byte vectors where the planes and every pointer of `tensors` allow them, single
// elements elsewhere.
template <class NoValues, class Launch>
void dispatch_batch_norm(const BatchNormPlanes& planes, DType dtype,
                         std::initializer_list<const void*> tensors, NoValues no_values, Launch launch) {
  dispatch_float(dtype, [&]<class T>() {
    constexpr int kVec = row_norm::kVectorBytes / sizeof(T);
    if (planes.batch * planes.plane == 0) {
      Walk w = walk_of(plan_batch_norm(planes, 1));
      w.chunks = 0;
      no_values.template operator()<T>(w);
    } else if (planes.plane % kVec == 0 && std::ranges::all_of(tensors, row_norm::aligned_to_vector)) {
      launch.template operator()<T, kVec>(plan_batch_norm(planes, kVec));
    } else {
      launch.template operator()<T, 1>(plan_batch_norm(planes, 1));
    }
  });
}

// Calls f.template operator()<kHeld>() with the plan's held count, one of 2, 4 and 8.
template <class F>
void dispatch_held(int held, F&& f) {
  switch (held) {
    case 2: f.template operator()<2>(); return;
    case 4: f.template operator()<4>(); return;
    default: f.template operator()<8>(); return;
  }
}

}  // namespace solops::detail::batch_norm_kernels
