// BatchNormBwd (spec §2.8): from the forward's saved mean and invstd, each channel's sums over its L
// values, sum_dy = sum(grad_out) and sum_dyc = sum(grad_out * (x - mean)); then grad_bias = sum_dy,
// grad_weight = invstd * sum_dyc and grad_x = (grad_out - sum_dy / L - (x - mean) * invstd^2 *
// sum_dyc / L) * weight * invstd (PyTorch's arrangement), all in f32.
//
// The plans are the forward's (batch_norm_forward.cu): clustered, where a cluster's blocks hold a
// channel's x and grad_out in registers and exchange their sums through distributed shared memory
// (backward_clustered: each is read once); or two passes, for channels a cluster cannot hold:
// backward_partials writes each chunk's two sums to the workspace, backward_finish adds a channel's in
// one warp (the channel's totals to the workspace, and the parameters' gradients), backward_apply reads
// x and grad_out again and writes grad_x, in reverse block order as the forward's second pass.
#include <cooperative_groups.h>

#include "core/device.hpp"
#include "norm/batch_norm.cuh"

namespace solops::detail::batch_norm_kernels {
namespace {

namespace cg = cooperative_groups;

// The [C] tensors of a backward.
struct BackwardChannels {
  ChannelTensor weight, grad_weight, grad_bias;
  const float* save_mean;
  const float* save_invstd;
  float2* partials;  // two passes: the sums of chunk k of channel c at c * chunks + k
  float2* totals;    // two passes: the sums of channel c at c
};

// The sums of the vectors this block holds of its channel: of grad_out, and of grad_out * (x - mean).
template <class T, int kVec, int kHeld>
__device__ float2 chunk_sums(const Pack<T, kVec> (&dy_bits)[kHeld], const Pack<T, kVec> (&x_bits)[kHeld],
                             const Walk& w, const Place& p, float mean, ChannelPartials<2>& partials) {
  float sums[2] = {0.0f, 0.0f};
  for_each_held<T, kVec, kHeld>(dy_bits, w, p, [&](int i, const float (&dy)[kVec]) {
    float x[kVec];
    row_norm::unpack<T, kVec>(x_bits[i], x);
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      sums[0] += dy[e];
      sums[1] = fmaf(dy[e], x[e] - mean, sums[1]);
    }
  });
  block_channel_sums(sums, w, partials);
  return {sums[0], sums[1]};
}

// The channel's gradients of weight and bias from its sums (one thread a channel).
template <class T>
__device__ void store_parameter_gradients(const BackwardChannels& b, int64_t c, float invstd, float2 sums) {
  if (b.grad_weight.data) store_channel<T>(b.grad_weight, c, invstd * sums.y);
  if (b.grad_bias.data) store_channel<T>(b.grad_bias, c, sums.x);
}

// grad_x of the vectors this thread holds, from its channel's sums.
template <class T, int kVec, int kHeld>
__device__ __forceinline__ void store_grad_x(const Pack<T, kVec> (&dy_bits)[kHeld],
                                             const Pack<T, kVec> (&x_bits)[kHeld], T* grad_x, const Walk& w,
                                             const Place& p, float mean, float invstd, float weight, float2 sums) {
  const float grad_mean = sums.x / w.count, projection = sums.y / w.count * invstd * invstd;
  const float scale = weight * invstd;
  auto* out = reinterpret_cast<Pack<T, kVec>*>(grad_x);
  for_each_held<T, kVec, kHeld>(dy_bits, w, p, [&](int i, float (&dy)[kVec]) {
    float x[kVec];
    row_norm::unpack<T, kVec>(x_bits[i], x);
#pragma unroll
    for (int e = 0; e < kVec; ++e) dy[e] = fmaf(-(x[e] - mean), projection, dy[e] - grad_mean) * scale;
    out[w.offset(p.channel, p.vector<kHeld>(w, i))] = row_norm::pack<T, kVec>(dy);
  });
}

// A channel's chunks are the blocks of a cluster (or one block): everything in one kernel.
template <class T, int kVec, int kHeld>
__global__ void __launch_bounds__(kThreads)
    backward_clustered(const T* __restrict__ grad_out, const T* __restrict__ x, T* __restrict__ grad_x,
                       const BackwardChannels b, const Walk w) {
  __shared__ alignas(16) ChannelPartials<2> partials;
  __shared__ float2 slots[kMaxClusterBlocks][kMaxBlockChannels];
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned blocks = cluster.num_blocks();
  if (blocks > 1) cluster.barrier_arrive();  // exchange_in_cluster waits
  const Place p = place_of(w, blockIdx.x);
  // The [C] values are loaded with x and grad_out, not after the reductions (a DRAM round trip each
  // at the end of the kernel's critical path).
  const float mean = p.active ? b.save_mean[p.channel] : 0.0f;
  const float invstd = p.active ? b.save_invstd[p.channel] : 0.0f;
  const uint32_t weight_bits = p.active ? load_channel_bits<T>(b.weight, p.channel) : 0;  // converted after x's loads
  Pack<T, kVec> dy_bits[kHeld], x_bits[kHeld];
  load_held<T, kVec, kHeld>(grad_out, w, p, dy_bits);
  load_held<T, kVec, kHeld>(x, w, p, x_bits);
  const float weight = channel_value<T>(b.weight, weight_bits, 1.0f);
  float2 sums = chunk_sums<T, kVec, kHeld>(dy_bits, x_bits, w, p, mean, partials);
  if (blocks > 1) {
    exchange_in_cluster(cluster, slots, p, sums);
    sums = {0.0f, 0.0f};
    for (unsigned rank = 0; rank < blocks; ++rank) {
      sums.x += slots[rank][p.slot].x;
      sums.y += slots[rank][p.slot].y;
    }
  }
  if (!p.active) return;
  if (p.chunk == 0 && p.rank == 0) store_parameter_gradients<T>(b, p.channel, invstd, sums);
  store_grad_x<T, kVec, kHeld>(dy_bits, x_bits, grad_x, w, p, mean, invstd, weight, sums);
}

// Two passes, the first: each chunk's sums to the workspace.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads)
    backward_partials(const T* __restrict__ grad_out, const T* __restrict__ x, const BackwardChannels b, const Walk w) {
  __shared__ alignas(16) ChannelPartials<2> partials;
  const Place p = place_of(w, blockIdx.x);
  const float mean = p.active ? b.save_mean[p.channel] : 0.0f;
  Pack<T, kVec> dy_bits[kPassHeld], x_bits[kPassHeld];
  load_held<T, kVec, kPassHeld>(grad_out, w, p, dy_bits);
  load_held<T, kVec, kPassHeld>(x, w, p, x_bits);
  const float2 sums = chunk_sums<T, kVec, kPassHeld>(dy_bits, x_bits, w, p, mean, partials);
  if (p.active && p.rank == 0) b.partials[p.channel * w.chunks + p.chunk] = sums;
}

// A warp a channel adds its chunks' sums: lane l those of chunks l, l + 32, ... in order, then the
// lanes in a fixed tree to lane 0, which writes the channel's totals (for backward_apply, where it
// runs) and its parameters' gradients. With no chunks (a channel of no values) the sums are 0.
template <class T>
__global__ void __launch_bounds__(kThreads) backward_finish(const BackwardChannels b, const Walk w) {
  const int64_t c = int64_t{blockIdx.x} * kWarps + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (c >= w.channels) return;
  float2 sums{0.0f, 0.0f};
  for (int k = lane; k < w.chunks; k += kWarp) {
    const float2 chunk = b.partials[c * w.chunks + k];
    sums.x += chunk.x;
    sums.y += chunk.y;
  }
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other_x = __shfl_down_sync(0xffffffffu, sums.x, offset);
    const float other_y = __shfl_down_sync(0xffffffffu, sums.y, offset);
    if (lane < offset) sums = {sums.x + other_x, sums.y + other_y};
  }
  if (lane != 0) return;
  if (b.totals) b.totals[c] = sums;
  store_parameter_gradients<T>(b, c, b.save_invstd[c], sums);
}

// Two passes, the second: grad_x from grad_out, x and the channel's totals.
template <class T, int kVec>
__global__ void __launch_bounds__(kThreads)
    backward_apply(const T* __restrict__ grad_out, const T* __restrict__ x, T* __restrict__ grad_x,
                   const BackwardChannels b, const Walk w) {
  const Place p = place_of(w, gridDim.x - 1 - blockIdx.x);
  if (!p.active) return;
  const uint32_t weight_bits = load_channel_bits<T>(b.weight, p.channel);  // converted after x's loads
  Pack<T, kVec> dy_bits[kPassHeld], x_bits[kPassHeld];
  load_held<T, kVec, kPassHeld>(grad_out, w, p, dy_bits);
  load_held<T, kVec, kPassHeld>(x, w, p, x_bits);
  store_grad_x<T, kVec, kPassHeld>(dy_bits, x_bits, grad_x, w, p, b.save_mean[p.channel], b.save_invstd[p.channel],
                                   channel_value<T>(b.weight, weight_bits, 1.0f), b.totals[p.channel]);
}

template <class T, int kVec>
void launch_backward(const BatchNormPlan& plan, const BatchNormBackwardTensors& t, BackwardChannels b,
                     cudaStream_t stream) {
  const Walk w = walk_of(plan);
  const auto* grad_out = static_cast<const T*>(t.grad_out.data);
  const auto* x = static_cast<const T*>(t.x.data);
  auto* grad_x = static_cast<T*>(t.grad_x.data);
  const int64_t blocks = plan.groups() * plan.chunks;
  if (plan.clustered) {
    dispatch_held(plan.held, [&]<int kHeld>() {
      launch(backward_clustered<T, kVec, kHeld>, blocks, plan.chunks, stream, grad_out, x, grad_x, b, w);
    });
    return;
  }
  b.partials = static_cast<float2*>(t.workspace->data);
  b.totals = b.partials + plan.planes.channels * plan.chunks;
  launch(backward_partials<T, kVec>, blocks, 1, stream, grad_out, x, b, w);
  launch(backward_finish<T>, ceil_div(plan.planes.channels, kWarps), 1, stream, b, w);
  launch(backward_apply<T, kVec>, blocks, 1, stream, grad_out, x, grad_x, b, w);
}

}  // namespace
}  // namespace solops::detail::batch_norm_kernels

namespace solops::detail {

void launch_batch_norm_backward(std::string_view op, const BatchNormPlanes& planes, const BatchNormBackwardTensors& t,
                                cudaStream_t stream) {
  using namespace batch_norm_kernels;
  if (planes.channels == 0) return;
  const BackwardChannels b{channel_tensor(t.weight),
                           channel_tensor(t.grad_weight),
                           channel_tensor(t.grad_bias),
                           static_cast<const float*>(t.save_mean.data),
                           static_cast<const float*>(t.save_invstd.data),
                           nullptr,
                           nullptr};
  dispatch_batch_norm(
      planes, t.x.dtype, {t.grad_out.data, t.x.data, t.grad_x.data},
      // No values: only the parameters' gradients (0) are written.
      [&]<class T>(const Walk& w) { launch(backward_finish<T>, ceil_div(planes.channels, kWarps), 1, stream, b, w); },
      [&]<class T, int kVec>(const BatchNormPlan& plan) { launch_backward<T, kVec>(plan, t, b, stream); });
  check_launch(op);
}

}  // namespace solops::detail
