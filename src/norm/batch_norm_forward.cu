// BatchNormFwd in training mode (spec §2.6): each channel's mean and biased variance over its L
// values, y = (x - mean) * invstd * weight + bias, the saved mean and invstd, and the running
// statistics' update, all in f32.
//
// Statistics. Each block holds a chunk of a channel's values in registers and takes the chunk's exact
// moments: its count, its mean, then the sum of squared deviations from that mean (M2), two sums over
// the block. Chunks then meet by Chan's formula (merge below), which keeps M2's precision where a
// sum of squares minus the squared sum would cancel (values far from zero relative to their spread).
//
// Two plans (plan_batch_norm):
// - clustered, where a cluster of at most 8 blocks holds a channel (every catalogue row but the
//   largest): one kernel, forward_clustered. The blocks exchange their moments through distributed
//   shared memory, each merges them in rank order, and normalizes the values it holds: x is read once.
// - two passes, for channels a cluster cannot hold ([4, 128, 1024, 1024] f16: 8 MiB a channel):
//   forward_partials writes each chunk's moments to the workspace; forward_finish merges a channel's
//   chunks in one warp and writes the saved statistics and the running ones; forward_normalize reads x
//   again and writes y, its blocks in reverse order, so that the chunks the first pass read last (still
//   in the L2) are read first.
// In both, one thread a channel writes the saved and running statistics.
#include <cooperative_groups.h>

#include "core/device.hpp"
#include "norm/batch_norm.cuh"

namespace solops::detail::batch_norm_kernels {
namespace {

namespace cg = cooperative_groups;

// The [C] tensors of a forward and its scalars.
struct ForwardChannels {
  ChannelTensor running_mean, running_var, weight, bias;
  float* save_mean;
  float* save_invstd;
  float4* partials;  // two passes: (count, mean, M2, unused) of chunk k of channel c at c * chunks + k
  float momentum;
  float eps;
};

// A chunk's or a channel's count of values, mean and sum of squared deviations from the mean.
struct Moments {
  float count = 0.0f, mean = 0.0f, m2 = 0.0f;
};

// Chan, Golub and LeVeque's combination of the moments of two sets of values. An empty set leaves
// the other as it is. Where a mean is infinite (or NaN) the difference of the means is not finite and
// the formula would give NaN where the mean of all values is that infinity (-inf and a finite mean,
// or -inf twice): the count-weighted sum of the means gives it, and M2 is NaN as the reference's is.
__device__ __forceinline__ Moments merge(const Moments& a, const Moments& b) {
  if (b.count == 0.0f) return a;
  if (a.count == 0.0f) return b;
  const float count = a.count + b.count, delta = b.mean - a.mean, share = b.count / count;
  if (!isfinite(delta)) return {count, (a.mean * a.count + b.mean * b.count) / count, a.m2 + b.m2 + delta};
  return {count, fmaf(delta, share, a.mean), a.m2 + b.m2 + delta * delta * a.count * share};
}

// The moments of the values this block holds of its channel: a count and a sum, the mean, then the
// squared deviations from it.
template <class T, int kVec, int kHeld>
__device__ Moments chunk_moments(const Pack<T, kVec> (&bits)[kHeld], const Walk& w, const Place& p,
                                 ChannelPartials<2>& partials) {
  float sums[2] = {0.0f, 0.0f};
  for_each_held<T, kVec, kHeld>(bits, w, p, [&](int, const float (&values)[kVec]) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) sums[0] += values[e];
    sums[1] += kVec;
  });
  block_channel_sums(sums, w, partials);
  const float mean = sums[1] > 0.0f ? sums[0] / sums[1] : 0.0f;
  float squares[1] = {0.0f};
  for_each_held<T, kVec, kHeld>(bits, w, p, [&](int, const float (&values)[kVec]) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) squares[0] = fmaf(values[e] - mean, values[e] - mean, squares[0]);
  });
  block_channel_sums(squares, w, reinterpret_cast<ChannelPartials<1>&>(partials));
  return {sums[1], mean, squares[0]};
}

// The per-channel results of the channel's moments (one thread a channel): the saved mean and invstd
// and the running statistics' update (with the unbiased variance). A channel without values saves
// NaN (0 / 0) and leaves the running statistics alone.
// A channel's running statistics as the finishing thread read them, before they are updated: their
// bits (load_channel_bits), converted where they are used.
struct Running {
  uint32_t mean = 0, var = 0;
};

template <class T>
__device__ __forceinline__ Running load_running(const ForwardChannels& f, int64_t c) {
  return {load_channel_bits<T>(f.running_mean, c), load_channel_bits<T>(f.running_var, c)};
}

// `running`: the channel's running statistics, loaded by the caller (the clustered kernel loads them
// with x, so that their round trip is not one more after the reductions).
template <class T>
__device__ void finish_channel(const ForwardChannels& f, const Walk& w, int64_t c, const Moments& m,
                               const Running& running) {
  if (w.count == 0.0f) {
    f.save_mean[c] = __int_as_float(0x7fffffff);
    f.save_invstd[c] = __int_as_float(0x7fffffff);
    return;
  }
  f.save_mean[c] = m.mean;
  f.save_invstd[c] = 1.0f / sqrtf(m.m2 / w.count + f.eps);
  if (f.running_mean.data) {
    const float keep = 1.0f - f.momentum;
    const float mean = channel_value<T>(f.running_mean, running.mean, 0.0f);
    const float var = channel_value<T>(f.running_var, running.var, 0.0f);
    store_channel<T>(f.running_mean, c, keep * mean + f.momentum * m.mean);
    store_channel<T>(f.running_var, c, keep * var + f.momentum * (m.m2 / (w.count - 1.0f)));
  }
}

// y of the vectors this thread holds: (x - mean) * scale + bias, scale = invstd * weight.
template <class T, int kVec, int kHeld>
__device__ __forceinline__ void store_normalized(const Pack<T, kVec> (&bits)[kHeld], T* y, const Walk& w,
                                                 const Place& p, float mean, float scale, float shift) {
  auto* out = reinterpret_cast<Pack<T, kVec>*>(y);
  for_each_held<T, kVec, kHeld>(bits, w, p, [&](int i, float (&values)[kVec]) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) values[e] = fmaf(values[e] - mean, scale, shift);
    out[w.offset(p.channel, p.vector<kHeld>(w, i))] = row_norm::pack<T, kVec>(values);
  });
}

// A channel's chunks are the blocks of a cluster (or one block): everything in one kernel.
template <class T, int kVec, int kHeld>
__global__ void __launch_bounds__(kThreads)
    forward_clustered(const T* __restrict__ x, T* __restrict__ y, const ForwardChannels f, const Walk w) {
  __shared__ alignas(16) ChannelPartials<2> partials;
  __shared__ float4 slots[kMaxClusterBlocks][kMaxBlockChannels];
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned blocks = cluster.num_blocks();
  if (blocks > 1) cluster.barrier_arrive();  // exchange_in_cluster waits
  const Place p = place_of(w, blockIdx.x);
  // The [C] values are loaded with x, not after the reductions: each would be a DRAM round trip of
  // its own at the end of the kernel's critical path. Their bits, converted after x's loads.
  const bool finishes = p.active && p.chunk == 0 && p.rank == 0;
  const Running running = finishes ? load_running<T>(f, p.channel) : Running{};
  const uint32_t weight_bits = p.active ? load_channel_bits<T>(f.weight, p.channel) : 0;
  const uint32_t bias_bits = p.active ? load_channel_bits<T>(f.bias, p.channel) : 0;
  Pack<T, kVec> bits[kHeld];
  load_held<T, kVec, kHeld>(x, w, p, bits);
  Moments m = chunk_moments<T, kVec, kHeld>(bits, w, p, partials);
  if (blocks > 1) {
    exchange_in_cluster(cluster, slots, p, make_float4(m.count, m.mean, m.m2, 0.0f));
    m = {};
    for (unsigned rank = 0; rank < blocks; ++rank) {
      const float4 slot = slots[rank][p.slot];
      m = merge(m, {slot.x, slot.y, slot.z});
    }
  }
  if (!p.active) return;
  if (finishes) finish_channel<T>(f, w, p.channel, m, running);
  const float invstd = 1.0f / sqrtf(m.m2 / w.count + f.eps);
  const float weight = channel_value<T>(f.weight, weight_bits, 1.0f), bias = channel_value<T>(f.bias, bias_bits, 0.0f);
  store_normalized<T, kVec, kHeld>(bits, y, w, p, m.mean, invstd * weight, bias);
}

// Two passes, the first: each chunk's moments to the workspace.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads)
    forward_partials(const T* __restrict__ x, const ForwardChannels f, const Walk w) {
  __shared__ alignas(16) ChannelPartials<2> partials;
  const Place p = place_of(w, blockIdx.x);
  Pack<T, kVec> bits[kPassHeld];
  load_held<T, kVec, kPassHeld>(x, w, p, bits);
  const Moments m = chunk_moments<T, kVec, kPassHeld>(bits, w, p, partials);
  if (p.active && p.rank == 0) f.partials[p.channel * w.chunks + p.chunk] = make_float4(m.count, m.mean, m.m2, 0.0f);
}

// A warp a channel merges its chunks' moments: lane l those of chunks l, l + 32, ... in order, then
// the lanes pairwise in a fixed tree to lane 0, which finishes the channel. With no chunks (a channel
// of no values) it only saves NaN.
template <class T>
__global__ void __launch_bounds__(kThreads) forward_finish(const ForwardChannels f, const Walk w) {
  const int64_t c = int64_t{blockIdx.x} * kWarps + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (c >= w.channels) return;
  Moments m;
  for (int k = lane; k < w.chunks; k += kWarp) {
    const float4 chunk = f.partials[c * w.chunks + k];
    m = merge(m, {chunk.x, chunk.y, chunk.z});
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const Moments other{__shfl_down_sync(0xffffffffu, m.count, offset), __shfl_down_sync(0xffffffffu, m.mean, offset),
                        __shfl_down_sync(0xffffffffu, m.m2, offset)};
    if (lane < offset) m = merge(m, other);
  }
  if (lane == 0) finish_channel<T>(f, w, c, m, load_running<T>(f, c));
}

// Two passes, the second: y from x and the saved statistics, kPassHeld loads in flight a thread.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads)
    forward_normalize(const T* __restrict__ x, T* __restrict__ y, const ForwardChannels f, const Walk w) {
  const Place p = place_of(w, gridDim.x - 1 - blockIdx.x);
  if (!p.active) return;
  Pack<T, kVec> bits[kPassHeld];
  load_held<T, kVec, kPassHeld>(x, w, p, bits);
  const float scale = f.save_invstd[p.channel] * load_channel<T>(f.weight, p.channel, 1.0f);
  store_normalized<T, kVec, kPassHeld>(bits, y, w, p, f.save_mean[p.channel], scale,
                                       load_channel<T>(f.bias, p.channel, 0.0f));
}

template <class T, int kVec>
void launch_forward(const BatchNormPlan& plan, const BatchNormTrainingTensors& t, const ForwardChannels& f,
                    cudaStream_t stream) {
  const Walk w = walk_of(plan);
  const auto* x = static_cast<const T*>(t.x.data);
  auto* y = static_cast<T*>(t.y.data);
  const int64_t blocks = plan.groups() * plan.chunks;
  if (plan.clustered) {
    dispatch_held(plan.held, [&]<int kHeld>() {
      launch(forward_clustered<T, kVec, kHeld>, blocks, plan.chunks, stream, x, y, f, w);
    });
    return;
  }
  launch(forward_partials<T, kVec>, blocks, 1, stream, x, f, w);
  launch(forward_finish<T>, ceil_div(plan.planes.channels, kWarps), 1, stream, f, w);
  launch(forward_normalize<T, kVec>, blocks, 1, stream, x, y, f, w);
}

}  // namespace
}  // namespace solops::detail::batch_norm_kernels

namespace solops::detail {

void launch_batch_norm_training(std::string_view op, const BatchNormPlanes& planes, const BatchNormTrainingTensors& t,
                                const BatchNormTraining& p, cudaStream_t stream) {
  using namespace batch_norm_kernels;
  if (planes.channels == 0) return;
  const ForwardChannels f{channel_tensor(t.running_mean),
                          channel_tensor(t.running_var),
                          channel_tensor(t.weight),
                          channel_tensor(t.bias),
                          static_cast<float*>(t.save_mean.data),
                          static_cast<float*>(t.save_invstd.data),
                          t.workspace ? static_cast<float4*>(t.workspace->data) : nullptr,
                          static_cast<float>(p.momentum),
                          static_cast<float>(p.eps)};
  dispatch_batch_norm(
      planes, t.x.dtype, {t.x.data, t.y.data},
      // No values: only the saved statistics (NaN) are written.
      [&]<class T>(const Walk& w) { launch(forward_finish<T>, ceil_div(planes.channels, kWarps), 1, stream, f, w); },
      [&]<class T, int kVec>(const BatchNormPlan& plan) { launch_forward<T, kVec>(plan, t, f, stream); });
  check_launch(op);
}

}  // namespace solops::detail
