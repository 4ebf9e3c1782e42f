// GroupNorm's and InstanceNorm's kernels, forward and backward (spec §2.9-2.12). The catalogue's rows
// are small (0.5-8 MB: 64 to 1024 groups of 784 to 7200 elements), so every call is one kernel of one
// block a group, which PyTorch spreads over two or three (statistics, fused parameters, output).
//
// Forward (normalize_groups): a group (b, g) is K = (C / G) * S contiguous elements of x. A block
// walks them as a row of vectors (16 bytes, or 8, or single elements: the widest whose width divides
// S, so that every vector lies in one channel, at aligned x and y), each thread holding kItems of
// them in registers from one round of loads; groups too long to hold (over 8 * kMaxThreads
// vectors) are read again each pass, from L1 or L2. Two block sums give the mean and then the squared
// deviations from it (no E[x^2] - E[x]^2 cancellation), each in one fixed order (warp shuffles, then
// the warps' partials added in warp order), so the same inputs give the same bits. The output pass
// takes each vector's channel (a multiply-high division of its index by S) for its weight and bias.
// Groups of at most one warp's vectors take a warp each, four a block, with no barrier.
// InstanceNorm is this kernel with one channel a group; by its running statistics (use_input_stats
// off) it reads them instead of reducing. Its running-statistics update averages each channel over
// the batch, whose instances other blocks normalize: each block leaves its instance's mean and
// variance in the workspace and update_running_stats adds them in batch order (deterministic, no
// atomics; a last-block counter would need zeroed memory every call).
//
// Backward (group_gradients): the parameter gradients and the group's means of h = grad_out * w and
// h * x_hat all come from each plane's two sums, of grad_out * x_hat and of grad_out. A warp takes a
// plane (the group's planes strided over the block's warps, so each plane's channel and weight are
// fixed), holds it in registers where it has at most 8 vectors a lane (all its loads in one round),
// else reads it in rounds and again (from L1) for grad_x; it sums it with shuffles, and the warps'
// weighted shares give the group's means (added in warp order). The parameter gradients sum each
// channel over the batch. Where a group's planes over the whole batch fit a block's 16 warps (every
// InstanceNorm row of the catalogue: B <= 16), one block takes them all and adds its planes' sums in
// batch order itself: one kernel, as many warps as the per-sample launch. Otherwise blocks are
// per-sample and each plane's sums go to the workspace, which add_channel_partials adds in batch
// order, a second small kernel for the same reason as the update's. The gradient through fixed
// statistics with no parameter gradient asked for (InstanceNorm by its running statistics) is a
// scaled copy of grad_out and takes scale_planes, which reads no x.
//
// channels_last x (4-D) has kernels of its own (normalize_groups_channels_last,
// group_gradients_channels_last, below): a group is S rows of C / G adjacent channels, walked as rows of
// channel vectors by tiles of a sample's groups, each thread's channels fixed; the forward's two sums
// per group and the backward's per-channel column sums are added in fixed orders through shared
// memory, and the backward's (b, c) sums always go through the workspace and add_channel_partials.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"
#include "norm/group_norm.hpp"
#include "norm/held_row.cuh"

namespace solops::detail::group_norm_kernels {

using row_norm::kWarp;
constexpr int kMaxThreads = 512;
// The forward's preferred most threads a group (four warps).
constexpr int kCompactThreads = 128;
// Vectors of a thread loaded before any is used, where a group is read again each pass.
constexpr int kInFlight = 4;
// Blocks of groups no longer than a warp's vectors: a warp a group.
constexpr int kWarpGroupsPerBlock = 4;
constexpr int kChannelThreads = 256;

// kVec elements of T as one access: 16 or 8 bytes, or the element itself.
template <class T, int kVec>
using Bits = std::conditional_t<kVec == 1, T, std::conditional_t<kVec * sizeof(T) == 16, uint4, uint2>>;

template <class T, int kVec>
__device__ __forceinline__ void unpack(const Bits<T, kVec> bits, float (&values)[kVec]) {
  T lanes[kVec];
  memcpy(lanes, &bits, sizeof bits);
#pragma unroll
  for (int e = 0; e < kVec; ++e) values[e] = to_float(lanes[e]);
}

template <class T, int kVec>
__device__ __forceinline__ Bits<T, kVec> pack(const float (&values)[kVec]) {
  T lanes[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) lanes[e] = from_float<T>(values[e]);
  Bits<T, kVec> bits;
  memcpy(&bits, lanes, sizeof bits);
  return bits;
}

// The (x, grad_out) pairs of vectors a thread walks in a backward kernel: positions first, first +
// step, ... below count, position i at x[i * stride] and grad_out[i * stride] (a plane's vectors, a
// tile column's rows).
template <class T, int kVec>
struct PairWalk {
  const Bits<T, kVec> *x, *grad_out;
  int64_t stride, first, step, count;
};

// A thread's pairs of a walk: kItems > 0, hold() loads them (at most kItems) in one round and
// for_each() replays them from registers; 0, for_each() reads them in rounds, kInFlight of each
// tensor loaded before any is used. Only the held vectors live here (the walk is rebuilt where used,
// which keeps its pointers and bounds out of the registers the held planes need).
template <class T, int kVec, int kItems>
struct HeldPairs {
  using B = Bits<T, kVec>;
  B x[kItems > 0 ? kItems : 1], grad_out[kItems > 0 ? kItems : 1];

  __device__ __forceinline__ void hold(const PairWalk<T, kVec>& walk) {
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int64_t at = walk.first + i * walk.step;
      if (at < walk.count) {
        x[i] = walk.x[at * walk.stride];
        grad_out[i] = walk.grad_out[at * walk.stride];
      }
    }
  }

  // f(position, x's values, grad_out's values) for each pair of the walk.
  template <class F>
  __device__ __forceinline__ void for_each(const PairWalk<T, kVec>& walk, F f) const {
    if constexpr (kItems > 0) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int64_t at = walk.first + i * walk.step;
        if (at >= walk.count) continue;
        float x_values[kVec], dy_values[kVec];
        unpack<T, kVec>(x[i], x_values);
        unpack<T, kVec>(grad_out[i], dy_values);
        f(at, x_values, dy_values);
      }
    } else {
      for (int64_t base = walk.first; base < walk.count; base += kInFlight * walk.step) {
        B x_bits[kInFlight], dy_bits[kInFlight];
#pragma unroll
        for (int k = 0; k < kInFlight; ++k) {
          const int64_t at = base + k * walk.step;
          if (at < walk.count) {
            x_bits[k] = walk.x[at * walk.stride];
            dy_bits[k] = walk.grad_out[at * walk.stride];
          }
        }
#pragma unroll
        for (int k = 0; k < kInFlight; ++k) {
          const int64_t at = base + k * walk.step;
          if (at >= walk.count) continue;
          float x_values[kVec], dy_values[kVec];
          unpack<T, kVec>(x_bits[k], x_values);
          unpack<T, kVec>(dy_bits[k], dy_values);
          f(at, x_values, dy_values);
        }
      }
    }
  }
};

__device__ __forceinline__ float plus(float a, float b) { return a + b; }

// The sum of `value` over the block's threads, in every thread, in one fixed order: a warp's shuffles,
// then the warps' partials in warp order. `partials`: a float a warp. Every thread must call it (a
// block of one warp may hold several groups: it needs no barrier).
__device__ __forceinline__ float block_sum(float value, float* partials) {
  value = row_norm::warp_reduce(value, plus);
  const int warps = blockDim.x / kWarp;
  if (warps == 1) return value;
  if (threadIdx.x % kWarp == 0) partials[threadIdx.x / kWarp] = value;
  __syncthreads();
  // Unrolled to the most warps, so that every partial's load issues before the adds (still in warp order).
  float total = 0;
#pragma unroll
  for (int w = 0; w < kMaxThreads / kWarp; ++w) {
    if (w < warps) total += partials[w];
  }
  __syncthreads();  // the next sum overwrites partials
  return total;
}

template <class T>
struct ForwardPointers {
  const T* x;
  const T* weight;  // null: scale 1
  const T* bias;    // null: shift 0
  T* y;
  float* mean;  // each group's statistics, written where non-null
  float* rstd;
  const float* running_mean;  // by the running statistics (InstanceNorm without use_input_stats)
  const float* running_var;
  float* instance_stats;  // [2][groups]: each instance's mean and variance, for the running update
};

struct ForwardShape {
  int64_t groups;             // B * G
  int64_t num_groups;         // G
  int group_vectors;          // K / kVec
  FastDivisor plane_vectors;  // S / kVec: a vector's plane within its group
  int channels_per_group;
  float inv_len;  // 1 / K, 0 for empty groups
  float eps;
  bool input_stats;
};

// kItems: the vectors a thread holds (its group's vectors threadIdx.x + i * blockDim.x); 0: the group is
// read again each pass, kInFlight vectors a thread at a time.
template <class T, int kVec, int kItems>
__global__ void __launch_bounds__(kMaxThreads) normalize_groups(const ForwardPointers<T> p, const ForwardShape s) {
  using B = Bits<T, kVec>;
  __shared__ float partials[kMaxThreads / kWarp];
  const B* const x = reinterpret_cast<const B*>(p.x);
  B* const y = reinterpret_cast<B*>(p.y);
  const int threads = blockDim.x;
  for (int64_t group = int64_t{blockIdx.x} * blockDim.y + threadIdx.y; group < s.groups;
       group += int64_t{gridDim.x} * blockDim.y) {
    const int64_t first = group * s.group_vectors;
    const int64_t first_channel = group % s.num_groups * s.channels_per_group;
    // The weight and bias of a vector's channel; null tensors give 1 and 0.
    const auto affine_of = [&](int u) {
      const int64_t channel = first_channel + s.plane_vectors.divide(u);
      return make_float2(p.weight ? to_float(p.weight[channel]) : 1.0f, p.bias ? to_float(p.bias[channel]) : 0.0f);
    };
    [[maybe_unused]] B held[kItems > 0 ? kItems : 1];
    // Held vectors' weights and biases are loaded with x: after the reductions they would be one more
    // DRAM round trip on the kernel's critical path.
    [[maybe_unused]] float2 held_affine[kItems > 0 ? kItems : 1];
    if constexpr (kItems > 0) {
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int u = threadIdx.x + i * threads;
        if (u < s.group_vectors) held[i] = x[first + u];
      }
#pragma unroll
      for (int i = 0; i < kItems; ++i) {
        const int u = threadIdx.x + i * threads;
        if (u < s.group_vectors) held_affine[i] = affine_of(u);
      }
    }
    // f(i, u, values) for each vector u of this thread's share of the group, with its values; i: its
    // register when held.
    const auto for_each_vector = [&](auto f) {
      if constexpr (kItems > 0) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int u = threadIdx.x + i * threads;
          if (u >= s.group_vectors) continue;
          float values[kVec];
          unpack<T, kVec>(held[i], values);
          f(i, u, values);
        }
      } else {
        for (int64_t base = threadIdx.x; base < s.group_vectors; base += int64_t{kInFlight} * threads) {
          B bits[kInFlight];
#pragma unroll
          for (int k = 0; k < kInFlight; ++k) {
            const int64_t u = base + int64_t{k} * threads;
            if (u < s.group_vectors) bits[k] = x[first + u];
          }
#pragma unroll
          for (int k = 0; k < kInFlight; ++k) {
            const int64_t u = base + int64_t{k} * threads;
            if (u >= s.group_vectors) continue;
            float values[kVec];
            unpack<T, kVec>(bits[k], values);
            f(k, static_cast<int>(u), values);
          }
        }
      }
    };
    float mean, rstd;
    if (s.input_stats) {
      float sum = 0;
      for_each_vector([&](int, int, float(&values)[kVec]) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) sum += values[e];
      });
      mean = block_sum(sum, partials) * s.inv_len;
      float squares = 0;
      for_each_vector([&](int, int, float(&values)[kVec]) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) squares += (values[e] - mean) * (values[e] - mean);
      });
      const float var = block_sum(squares, partials) * s.inv_len;
      // An empty group has mean 0 and rstd NaN, as PyTorch's.
      rstd = s.group_vectors > 0 ? rsqrtf(var + s.eps) : __int_as_float(0x7fc00000);
      if (p.instance_stats && threadIdx.x == 0) {
        p.instance_stats[group] = mean;
        p.instance_stats[s.groups + group] = var;
      }
    } else {
      // A correctly rounded square root and division, as batch_norm_inference's.
      mean = p.running_mean[first_channel];
      rstd = 1.0f / sqrtf(p.running_var[first_channel] + s.eps);
    }
    if (threadIdx.x == 0) {
      if (p.mean) p.mean[group] = mean;
      if (p.rstd) p.rstd[group] = rstd;
    }
    for_each_vector([&](int i, int u, float(&values)[kVec]) {
      float2 affine;
      if constexpr (kItems > 0) affine = held_affine[i];
      else affine = affine_of(u);
      const float scale = affine.x * rstd;
#pragma unroll
      for (int e = 0; e < kVec; ++e) values[e] = fmaf(values[e] - mean, scale, affine.y);
      y[first + u] = pack<T, kVec>(values);
    });
  }
}

// running = (1 - momentum) * running + momentum * (the batch average of the instances' statistics),
// the variance unbiased; each channel's instances added in batch order.
__global__ void update_running_stats(const float* __restrict__ instance_stats, float* __restrict__ running_mean,
                                     float* __restrict__ running_var, int64_t batch, int64_t channels, float momentum,
                                     float unbiased) {
  const int64_t instances = batch * channels;
  for (int64_t c = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; c < channels; c += int64_t{gridDim.x} * blockDim.x) {
    float mean_sum = 0, var_sum = 0;
    for (int64_t b = 0; b < batch; ++b) {
      mean_sum += instance_stats[b * channels + c];
      var_sum += instance_stats[instances + b * channels + c];
    }
    // An empty batch averages no instances: 0 / 0, NaN, as PyTorch's.
    const auto count = static_cast<float>(batch);
    running_mean[c] = (1 - momentum) * running_mean[c] + momentum * (mean_sum / count);
    running_var[c] = (1 - momentum) * running_var[c] + momentum * (var_sum * unbiased / count);
  }
}

template <class T>
struct BackwardPointers {
  const T* grad_out;
  const T* x;
  const T* weight;  // null: scale 1
  const float* mean;
  const float* rstd;
  T* grad_x;
  float* partials;  // [2][B * C]: each plane's sums of grad_out * x_hat and of grad_out; null: not needed
  T* grad_weight;   // written by a whole batch's kernel (null: not asked for)
  T* grad_bias;
};

struct BackwardShape {
  int64_t groups;      // B * G
  int64_t num_groups;  // G
  int64_t planes;      // B * C
  int channels_per_group;
  int plane_vectors;  // S / kVec
  float inv_len;      // 1 / K, 0 for empty groups
  bool centred;       // the gradient of statistics taken from x, else of fixed ones
};

// Each warp takes planes of the block's groups: kWholeBatch, the block is group g of every sample,
// warp w plane (b, c) = (w / (C / G), w % (C / G)) (the launcher's B * C / G <= 16); otherwise each
// block row is one group (b, g), its planes strided over the row's warps. kItems > 0: a warp has one
// plane and holds its vectors lane + i * 32 in registers, loaded in one round; 0: planes are read in
// rounds of kInFlight vectors and read again (from L1) for grad_x.
template <class T, int kVec, int kItems, bool kWholeBatch>
__global__ void __launch_bounds__(kMaxThreads) group_gradients(const BackwardPointers<T> p, const BackwardShape s) {
  using B = Bits<T, kVec>;
  static_assert(!kWholeBatch || kItems > 0, "a whole batch's warps hold their planes");
  constexpr int kMaxWarps = kMaxThreads / kWarp;
  __shared__ float2 warp_shares[kMaxWarps];
  // kWholeBatch: each warp's plane's sums of grad_out * x_hat and of grad_out, for the parameter gradients.
  __shared__ float2 plane_sums[kWholeBatch ? kMaxWarps : 1];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, warps = blockDim.x / kWarp;
  const int cpg = s.channels_per_group;
  // kWholeBatch: this warp's sample, and the first of its sample's warps.
  const int sample = kWholeBatch ? warp / cpg : 0, sample_warps = kWholeBatch ? sample * cpg : 0;
  const int first_c = kWholeBatch ? warp - sample_warps : warp, c_step = kWholeBatch ? cpg : warps;
  const int64_t units = kWholeBatch ? s.num_groups : s.groups;
  for (int64_t unit = int64_t{blockIdx.x} * blockDim.y + threadIdx.y; unit < units;
       unit += int64_t{gridDim.x} * blockDim.y) {
    const int64_t group = kWholeBatch ? sample * s.num_groups + unit : unit;
    const float mean = p.mean[group], rstd = p.rstd[group];
    const int64_t first_channel = group % s.num_groups * cpg;
    const int64_t first_plane = group * cpg;  // b * C + first_channel
    // This lane's share of `plane`'s vectors.
    const auto walk_of = [&](int64_t plane) {
      return PairWalk<T, kVec>{reinterpret_cast<const B*>(p.x) + plane * s.plane_vectors,
                               reinterpret_cast<const B*>(p.grad_out) + plane * s.plane_vectors, 1, lane, kWarp,
                               s.plane_vectors};
    };
    // kItems > 0: the warp's one plane, held.
    [[maybe_unused]] HeldPairs<T, kVec, kItems> held;
    if (kItems > 0 && first_c < cpg) held.hold(walk_of(first_plane + first_c));
    // f(u, x, grad_out) for each vector u of this lane's share of `plane`: held, or read in rounds.
    const auto for_each_vector = [&](int64_t plane, auto f) { held.for_each(walk_of(plane), f); };
    // This warp's share of the group's sums of h and h * x_hat, its planes in order.
    float h_sum = 0, hx_sum = 0;
    for (int c = first_c; c < cpg; c += c_step) {
      const int64_t plane = first_plane + c;
      const float scale = p.weight ? to_float(p.weight[first_channel + c]) : 1.0f;
      float dy_x_hat = 0, dy_sum = 0;
      for_each_vector(plane, [&](int, const float(&x)[kVec], const float(&dy)[kVec]) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          dy_x_hat += dy[e] * ((x[e] - mean) * rstd);
          dy_sum += dy[e];
        }
      });
      dy_x_hat = row_norm::warp_reduce(dy_x_hat, plus);
      dy_sum = row_norm::warp_reduce(dy_sum, plus);
      if (lane == 0) {
        if constexpr (kWholeBatch) {
          plane_sums[warp] = make_float2(dy_x_hat, dy_sum);
        } else if (p.partials) {
          p.partials[plane] = dy_x_hat;
          p.partials[s.planes + plane] = dy_sum;
        }
      }
      h_sum += scale * dy_sum;
      hx_sum += scale * dy_x_hat;
    }
    if (kWholeBatch || warps > 1) {
      // The group's sums: its warps' shares in warp order (kWholeBatch: the sample's warps').
      if (lane == 0) warp_shares[warp] = make_float2(h_sum, hx_sum);
      __syncthreads();
      const int group_warps = kWholeBatch ? cpg : warps;
      h_sum = hx_sum = 0;
      for (int w = 0; w < group_warps; ++w) {
        h_sum += warp_shares[sample_warps + w].x;
        hx_sum += warp_shares[sample_warps + w].y;
      }
      if constexpr (kWholeBatch) {
        // The first sample's warps write their channels' gradients: the planes' sums in batch order.
        if (sample == 0 && lane == 0 && (p.grad_weight || p.grad_bias)) {
          const int batch = warps / cpg;
          float weight_sum = 0, bias_sum = 0;
          for (int b = 0; b < batch; ++b) {
            weight_sum += plane_sums[b * cpg + warp].x;
            bias_sum += plane_sums[b * cpg + warp].y;
          }
          if (p.grad_weight) p.grad_weight[first_channel + warp] = from_float<T>(weight_sum);
          if (p.grad_bias) p.grad_bias[first_channel + warp] = from_float<T>(bias_sum);
        }
      }
      __syncthreads();  // the next group overwrites warp_shares and plane_sums
    }
    const float h_mean = h_sum * s.inv_len, hx_mean = hx_sum * s.inv_len;
    for (int c = first_c; c < cpg; c += c_step) {
      const int64_t plane = first_plane + c;
      const float scale = p.weight ? to_float(p.weight[first_channel + c]) : 1.0f;
      B* const grad_x = reinterpret_cast<B*>(p.grad_x) + plane * s.plane_vectors;
      for_each_vector(plane, [&](int u, const float(&x)[kVec], const float(&dy)[kVec]) {
        float values[kVec];
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float h = dy[e] * scale;
          values[e] = s.centred ? rstd * (h - h_mean - (x[e] - mean) * rstd * hx_mean) : h * rstd;
        }
        grad_x[u] = pack<T, kVec>(values);
      });
    }
  }
}

// The gradient through fixed statistics when no parameter gradient is asked for (InstanceNorm by
// its running statistics, output_mask [false, false]): grad_x = grad_out * weight[c] * rstd[b, c],
// plane by plane, which needs neither x nor a reduction: a copy's traffic. A block is lanes x planes
// threads, lanes the plane's vectors rounded up to a power of two (at most the block's threads), so
// that short planes share a block; a thread moves kInFlight vectors of one plane, all loaded before
// any is stored. grid.x is the plane groups (walked grid-stride) times the chunks of a plane.
struct ScaleShape {
  int64_t planes;         // B * C
  int64_t channels;       // C
  int64_t plane_vectors;  // S / kVec
  int chunks;             // of a plane, kInFlight * blockDim.x vectors each
};

template <class T, int kVec>
__global__ void __launch_bounds__(kMaxThreads)
    scale_planes(const T* __restrict__ grad_out, const T* __restrict__ weight, const float* __restrict__ rstd,
                 T* __restrict__ grad_x, const ScaleShape s) {
  using B = Bits<T, kVec>;
  const unsigned plane_group = blockIdx.x / s.chunks;
  const int64_t first = int64_t{blockIdx.x - plane_group * s.chunks} * kInFlight * blockDim.x + threadIdx.x;
  const int64_t plane_step = int64_t{gridDim.x / s.chunks} * blockDim.y;
  for (int64_t plane = int64_t{plane_group} * blockDim.y + threadIdx.y; plane < s.planes; plane += plane_step) {
    const B* const in = reinterpret_cast<const B*>(grad_out) + plane * s.plane_vectors;
    B* const out = reinterpret_cast<B*>(grad_x) + plane * s.plane_vectors;
    B bits[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int64_t v = first + k * int64_t{blockDim.x};
      if (v < s.plane_vectors) bits[k] = in[v];
    }
    const float scale = weight ? to_float(weight[plane % s.channels]) : 1.0f, plane_rstd = rstd[plane];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int64_t v = first + k * int64_t{blockDim.x};
      if (v >= s.plane_vectors) break;
      float values[kVec];
      unpack<T, kVec>(bits[k], values);
      // As group_gradients' uncentred form, h * rstd with h = grad_out * weight: the same bits.
#pragma unroll
      for (int e = 0; e < kVec; ++e) values[e] = values[e] * scale * plane_rstd;
      out[v] = pack<T, kVec>(values);
    }
  }
}

// grad_weight and grad_bias of each channel: its planes' sums over the batch, in batch order.
template <class T>
__global__ void add_channel_partials(const float* __restrict__ partials, T* __restrict__ grad_weight,
                                     T* __restrict__ grad_bias, int64_t batch, int64_t channels) {
  const int64_t planes = batch * channels;
  for (int64_t c = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; c < channels; c += int64_t{gridDim.x} * blockDim.x) {
    float weight_sum = 0, bias_sum = 0;
    for (int64_t b = 0; b < batch; ++b) {
      weight_sum += partials[b * channels + c];
      bias_sum += partials[planes + b * channels + c];
    }
    if (grad_weight) grad_weight[c] = from_float<T>(weight_sum);
    if (grad_bias) grad_bias[c] = from_float<T>(bias_sum);
  }
}

// ---- channels_last x (4-D): group (b, g) is S rows of C / G adjacent channels, rows C apart ----

// A launch's walk of channels_last x, in vectors of kVec channels of one position (kVec divides C / G,
// so that a vector lies in one group). A block takes a tile: `groups_per_tile` consecutive groups of
// one sample, S rows of tile_columns = groups_per_tile * columns adjacent vectors. Its thread t takes
// column t % column_threads (and every column_threads-th after it), rows t / column_threads, plus
// row_threads = blockDim.x / column_threads, ...: a thread's channels stay fixed across its rows, so
// their weights load once, and a warp reads runs of adjacent vectors of a row.
struct ChannelsLastShape {
  int64_t tiles;         // B * tiles_per_sample
  int64_t groups;        // B * G
  int64_t num_groups;    // G
  int64_t planes;        // B * C
  int64_t row_vectors;   // C / kVec: from one position to the next
  int tiles_per_sample;  // ceil(G / groups_per_tile)
  int groups_per_tile;   // at most kWarp
  int columns;           // (C / G) / kVec: a group's vectors in a row
  int column_threads;    // tile_columns, or fewer where a tile is one group wider than a block
  int rows;              // S
  int channels_per_group;
  float inv_len;     // 1 / K
  float eps;         // forward
  bool input_stats;  // forward: statistics from x, else from the running statistics
  bool centred;      // backward: the gradient of statistics taken from x, else of fixed ones
};

// One tile of a launch.
struct Tile {
  int64_t origin;         // the vector of row 0, column 0
  int64_t first_group;    // b * G + the tile's first group of its sample
  int64_t first_channel;  // the channel of column 0's first element
  int groups;             // the tile's groups: groups_per_tile, fewer in a sample's last tile
  int columns;            // its vectors in a row
};

__device__ __forceinline__ Tile tile_of(const ChannelsLastShape& s, int64_t index) {
  const int64_t sample = index / s.tiles_per_sample;
  const int64_t first = index % s.tiles_per_sample * s.groups_per_tile;
  const int groups = static_cast<int>(min(int64_t{s.groups_per_tile}, s.num_groups - first));
  return {sample * s.rows * s.row_vectors + first * s.columns, sample * s.num_groups + first,
          first * s.channels_per_group, groups, groups * s.columns};
}

// The sum of `value` over the threads of each group of the tile; returns the sum of the thread's own
// group (`group`: its group in the tile). One fixed order: warp w adds group w's threads' values
// (strided over its lanes, then shuffles). `partials`: a float a thread; `totals`: kWarp. Every thread
// must call it.
__device__ __forceinline__ float tile_group_sum(float value, int group, const ChannelsLastShape& s, int tile_groups,
                                                float* partials, float* totals) {
  partials[threadIdx.x] = value;
  __syncthreads();
  const int row_threads = blockDim.x / s.column_threads;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (int member = warp; member < tile_groups; member += blockDim.x / kWarp) {
    // The group's threads: its columns among the first column_threads, every row.
    const int first = member * s.columns, width = min(s.columns, s.column_threads - first);
    const int count = row_threads * width;
    float sum = 0;
    for (int k = lane; k < count; k += kWarp) sum += partials[k / width * s.column_threads + first + k % width];
    sum = row_norm::warp_reduce(sum, plus);
    if (lane == 0) totals[member] = sum;
  }
  __syncthreads();
  // No barrier after this read: the next call writes totals only after its first barrier.
  return totals[group];
}

// The forward of channels_last x, a tile a block iteration. kItems > 0: the tile's columns are the
// block's (column_threads = tile_columns) and each thread holds its column's rows first_row + i *
// row_threads in registers, with its channels' weights and biases; 0: rows are read again each pass,
// kInFlight a thread at a time.
template <class T, int kVec, int kItems>
__global__ void __launch_bounds__(kMaxThreads, 1)
    normalize_groups_channels_last(const ForwardPointers<T> p, const ChannelsLastShape s) {
  using B = Bits<T, kVec>;
  __shared__ float partials[kMaxThreads];
  __shared__ float totals[kWarp];
  const B* const x = reinterpret_cast<const B*>(p.x);
  B* const y = reinterpret_cast<B*>(p.y);
  const int row_threads = blockDim.x / s.column_threads;
  const int first_column = threadIdx.x % s.column_threads, first_row = threadIdx.x / s.column_threads;
  // The last threads of a block of whole warps may have no row.
  const bool has_row = first_row < row_threads;
  const int member = first_column / s.columns;  // the thread's group in its tile
  for (int64_t index = blockIdx.x; index < s.tiles; index += gridDim.x) {
    const Tile tile = tile_of(s, index);
    const bool has_column = has_row && first_column < tile.columns;
    // The weights and biases of a column's kVec channels; null tensors give 1 and 0.
    const auto affine_of = [&](int column, float(&scale)[kVec], float(&shift)[kVec]) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const int64_t channel = tile.first_channel + column * kVec + e;
        scale[e] = p.weight ? to_float(p.weight[channel]) : 1.0f;
        shift[e] = p.bias ? to_float(p.bias[channel]) : 0.0f;
      }
    };
    [[maybe_unused]] B held[kItems > 0 ? kItems : 1];
    // The weights and biases of the thread's column (kItems == 0: of the column the output pass is at).
    float held_scale[kVec], held_shift[kVec];
    if constexpr (kItems > 0) {
      if (has_column) {
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int row = first_row + i * row_threads;
          if (row < s.rows) held[i] = x[tile.origin + row * s.row_vectors + first_column];
        }
        affine_of(first_column, held_scale, held_shift);
      }
    }
    // f(column, row, values) for each vector of this thread's share of the tile, column by column.
    const auto for_each_vector = [&](auto f) {
      if constexpr (kItems > 0) {
        if (!has_column) return;
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
          const int row = first_row + i * row_threads;
          if (row >= s.rows) continue;
          float values[kVec];
          unpack<T, kVec>(held[i], values);
          f(first_column, row, values);
        }
      } else {
        if (!has_row) return;
        for (int column = first_column; column < tile.columns; column += s.column_threads) {
          for (int64_t base = first_row; base < s.rows; base += int64_t{kInFlight} * row_threads) {
            B bits[kInFlight];
#pragma unroll
            for (int k = 0; k < kInFlight; ++k) {
              const int64_t row = base + k * row_threads;
              if (row < s.rows) bits[k] = x[tile.origin + row * s.row_vectors + column];
            }
#pragma unroll
            for (int k = 0; k < kInFlight; ++k) {
              const int64_t row = base + k * row_threads;
              if (row >= s.rows) continue;
              float values[kVec];
              unpack<T, kVec>(bits[k], values);
              f(column, row, values);
            }
          }
        }
      }
    };
    const int64_t group = tile.first_group + member;
    // The thread that writes its group's statistics: the group's first column, first row.
    const bool writes_stats = has_column && first_row == 0 && first_column % s.columns == 0;
    float mean = 0, rstd = 0;
    if (s.input_stats) {
      float sum = 0;
      for_each_vector([&](int, int64_t, const float(&values)[kVec]) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) sum += values[e];
      });
      mean = tile_group_sum(sum, member, s, tile.groups, partials, totals) * s.inv_len;
      float squares = 0;
      for_each_vector([&](int, int64_t, const float(&values)[kVec]) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) squares += (values[e] - mean) * (values[e] - mean);
      });
      const float var = tile_group_sum(squares, member, s, tile.groups, partials, totals) * s.inv_len;
      rstd = rsqrtf(var + s.eps);  // channels_last x is never empty
      if (p.instance_stats && writes_stats) {
        p.instance_stats[group] = mean;
        p.instance_stats[s.groups + group] = var;
      }
    } else if (has_column) {
      // InstanceNorm by its running statistics (a group a channel), as the contiguous kernel.
      const int64_t channel = tile.first_channel + int64_t{member} * s.channels_per_group;
      mean = p.running_mean[channel];
      rstd = 1.0f / sqrtf(p.running_var[channel] + s.eps);
    }
    if (writes_stats) {
      if (p.mean) p.mean[group] = mean;
      if (p.rstd) p.rstd[group] = rstd;
    }
    // Rows read again: the column's weights and biases, loaded as the walk reaches it.
    [[maybe_unused]] int loaded_column = -1;
    for_each_vector([&](int column, int64_t row, const float(&values)[kVec]) {
      if constexpr (kItems == 0) {
        if (column != loaded_column) {
          affine_of(column, held_scale, held_shift);
          loaded_column = column;
        }
      }
      float out[kVec];
#pragma unroll
      for (int e = 0; e < kVec; ++e) out[e] = fmaf(values[e] - mean, held_scale[e] * rstd, held_shift[e]);
      y[tile.origin + row * s.row_vectors + column] = pack<T, kVec>(out);
    });
  }
}

// The backward of channels_last x, a tile a block iteration. Each channel's sums over the tile's rows
// (of grad_out * x_hat and of grad_out) are column sums: each thread adds its column's rows per
// channel, and, a pass over the block's columns at a time, a thread a channel adds the threads' sums
// in row order, writes them to the workspace for the parameter gradients (add_channel_partials then
// adds them over the batch) and leaves them, times the weight, for a warp a group to add in channel
// order. kItems > 0: one pass, each thread holding its column's rows of x and grad_out in registers;
// 0: rows read in rounds, and again for grad_x.
template <class T, int kVec, int kItems>
__global__ void __launch_bounds__(kMaxThreads, 1)
    group_gradients_channels_last(const BackwardPointers<T> p, const ChannelsLastShape s) {
  using B = Bits<T, kVec>;
  // Each thread's kVec channels' sums (x: grad_out * x_hat, y: grad_out); after a pass's barrier, at
  // [q], channel q of the pass's sums over the rows, times its weight.
  __shared__ float2 channel_sums[kMaxThreads * kVec];
  __shared__ float2 group_sums[kWarp];  // each group's sums of h * x_hat and of h
  const B* const x = reinterpret_cast<const B*>(p.x);
  const B* const grad_out = reinterpret_cast<const B*>(p.grad_out);
  B* const grad_x = reinterpret_cast<B*>(p.grad_x);
  const int row_threads = blockDim.x / s.column_threads;
  const int pass_channels = s.column_threads * kVec;
  const int first_column = threadIdx.x % s.column_threads, first_row = threadIdx.x / s.column_threads;
  const bool has_row = first_row < row_threads;
  const int member = first_column / s.columns;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  for (int64_t index = blockIdx.x; index < s.tiles; index += gridDim.x) {
    const Tile tile = tile_of(s, index);
    const bool has_column = has_row && first_column < tile.columns;
    const int64_t group = tile.first_group + member;
    const float mean = has_column ? p.mean[group] : 0.0f, rstd = has_column ? p.rstd[group] : 0.0f;
    const auto weights_of = [&](int column, float(&scale)[kVec]) {
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        scale[e] = p.weight ? to_float(p.weight[tile.first_channel + column * kVec + e]) : 1.0f;
      }
    };
    // This thread's rows of `column`.
    const auto walk_of = [&](int column) {
      return PairWalk<T, kVec>{x + tile.origin + column, grad_out + tile.origin + column, s.row_vectors, first_row,
                               row_threads, s.rows};
    };
    [[maybe_unused]] HeldPairs<T, kVec, kItems> held;
    [[maybe_unused]] float held_scale[kVec];
    if constexpr (kItems > 0) {
      if (has_column) {
        held.hold(walk_of(first_column));
        weights_of(first_column, held_scale);
      }
    }
    // f(row, x, grad_out) for each of this thread's rows of `column` (one of its columns; kItems > 0:
    // first_column, held), or read in rounds.
    const auto for_each_row = [&](int column, auto f) { held.for_each(walk_of(column), f); };
    if (threadIdx.x < kWarp) group_sums[threadIdx.x] = make_float2(0.0f, 0.0f);
    for (int first = 0; first < tile.columns; first += s.column_threads) {
      const int column = first + first_column;
      float dy_x_hat[kVec] = {}, dy_sum[kVec] = {};
      if (has_row && column < tile.columns) {
        for_each_row(column, [&](int64_t, const float(&x_values)[kVec], const float(&dy)[kVec]) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            dy_x_hat[e] += dy[e] * ((x_values[e] - mean) * rstd);
            dy_sum[e] += dy[e];
          }
        });
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) channel_sums[threadIdx.x * kVec + e] = make_float2(dy_x_hat[e], dy_sum[e]);
      __syncthreads();
      // Channel q of the pass: entry q of each row of threads, added in row order by one thread, which
      // alone reads those entries and so may overwrite the first.
      const int channels = min(s.column_threads, tile.columns - first) * kVec;
      for (int q = threadIdx.x; q < channels; q += blockDim.x) {
        float2 total = make_float2(0.0f, 0.0f);
        for (int r = 0; r < row_threads; ++r) {
          total.x += channel_sums[r * pass_channels + q].x;
          total.y += channel_sums[r * pass_channels + q].y;
        }
        const int64_t in_tile = int64_t{first} * kVec + q;
        if (p.partials) {
          // The plane (b, c) of the channel: the tile's first, b * C + its first channel, is first_group * C / G.
          const int64_t plane = tile.first_group * s.channels_per_group + in_tile;
          p.partials[plane] = total.x;
          p.partials[s.planes + plane] = total.y;
        }
        const float scale = p.weight ? to_float(p.weight[tile.first_channel + in_tile]) : 1.0f;
        channel_sums[q] = make_float2(scale * total.x, scale * total.y);
      }
      __syncthreads();
      // Each group's channels of the pass, in channel order, a warp a group.
      for (int g = warp; g < tile.groups; g += blockDim.x / kWarp) {
        const int lo = max(g * s.channels_per_group - first * kVec, 0);
        const int hi = min((g + 1) * s.channels_per_group - first * kVec, channels);
        float hx = 0, h = 0;
        for (int q = lo + lane; q < hi; q += kWarp) {
          hx += channel_sums[q].x;
          h += channel_sums[q].y;
        }
        hx = row_norm::warp_reduce(hx, plus);
        h = row_norm::warp_reduce(h, plus);
        if (lane == 0) {
          group_sums[g].x += hx;
          group_sums[g].y += h;
        }
      }
      __syncthreads();  // the next pass overwrites channel_sums
    }
    const float2 sums = group_sums[member];
    __syncthreads();  // the next tile zeroes group_sums
    const float hx_mean = sums.x * s.inv_len, h_mean = sums.y * s.inv_len;
    if (!has_column) continue;
    for (int column = first_column; column < tile.columns; column += s.column_threads) {
      float scale[kVec];
      if constexpr (kItems > 0) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) scale[e] = held_scale[e];
      } else {
        weights_of(column, scale);
      }
      for_each_row(column, [&](int64_t row, const float(&x_values)[kVec], const float(&dy)[kVec]) {
        float values[kVec];
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float h = dy[e] * scale[e];
          values[e] = s.centred ? rstd * (h - h_mean - (x_values[e] - mean) * rstd * hx_mean) : h * rstd;
        }
        grad_x[tile.origin + row * s.row_vectors + column] = pack<T, kVec>(values);
      });
    }
  }
}

template <class T>
T* data_of(const TensorRef* t) {
  return t ? static_cast<T*>(t->data) : nullptr;
}

template <class T>
ForwardPointers<T> forward_pointers(const GroupNormMath& math, const GroupNormTensors& t) {
  return {data_of<const T>(&t.x),
          data_of<const T>(t.weight),
          data_of<const T>(t.bias),
          data_of<T>(&t.y),
          data_of<float>(t.mean),
          data_of<float>(t.rstd),
          data_of<const float>(t.running_mean),
          data_of<const float>(t.running_var),
          math.update_running ? data_of<float>(t.workspace) : nullptr};
}

// The workspace's partials only where a parameter gradient is asked for.
template <class T>
BackwardPointers<T> backward_pointers(const GroupNormBackwardTensors& t) {
  return {data_of<const T>(&t.grad_out),
          data_of<const T>(&t.x),
          data_of<const T>(t.weight),
          data_of<const float>(&t.mean),
          data_of<const float>(&t.rstd),
          data_of<T>(&t.grad_x),
          t.grad_weight || t.grad_bias ? data_of<float>(t.workspace) : nullptr,
          data_of<T>(t.grad_weight),
          data_of<T>(t.grad_bias)};
}

bool aligned(const void* pointer, size_t bytes) { return reinterpret_cast<uintptr_t>(pointer) % bytes == 0; }

// Calls launch.template operator()<kVec>() with the widest access (16 bytes, 8, or one element) whose
// elements divide the run a vector lies in (S; channels_last: C / G, so that a vector lies in one group)
// and at which every tensor of `pointers` is aligned.
template <class T, class Launch>
void with_vector_width(const SpatialGroups& g, std::initializer_list<const void*> pointers, Launch launch) {
  const int64_t run = g.channels_last ? g.channels_per_group : g.plane;
  const auto fits = [&](int vec) {
    return run % vec == 0 &&
           std::ranges::all_of(pointers, [&](const void* at) { return aligned(at, vec * sizeof(T)); });
  };
  constexpr int kWide = 16 / sizeof(T), kNarrow = 8 / sizeof(T);
  if (fits(kWide)) launch.template operator()<kWide>();
  else if (fits(kNarrow)) launch.template operator()<kNarrow>();
  else launch.template operator()<1>();
}

unsigned channel_blocks(int64_t channels) { return grid_for(ceil_div(channels, kChannelThreads)); }

template <class T, int kVec>
void launch_forward(const SpatialGroups& g, const GroupNormMath& math, const GroupNormTensors& t, cudaStream_t stream) {
  const int64_t len = g.group_len();
  const auto group_vectors = static_cast<int>(len / kVec);
  const ForwardShape s{g.group_count(),
                       g.groups,
                       group_vectors,
                       FastDivisor(static_cast<int>(std::max<int64_t>(g.plane / kVec, 1))),
                       static_cast<int>(g.channels_per_group),
                       len > 0 ? 1.0f / static_cast<float>(len) : 0.0f,
                       static_cast<float>(math.eps),
                       math.input_stats};
  const ForwardPointers<T> p = forward_pointers<T>(math, t);
  // The fewest vectors a thread that hold the group in at most kCompactThreads threads, else the fewest
  // that hold it in kMaxThreads: a block sum's barrier and its adds of the warps' partials lengthen
  // with the block's warps, while a thread's held vectors all load in the same round.
  int items = 0, threads = kMaxThreads;
  for (const int most_threads : {kCompactThreads, kMaxThreads}) {
    for (int candidate : {1, 2, 4, 8}) {
      const auto needed = static_cast<int>(ceil_div(ceil_div(group_vectors, candidate), kWarp) * kWarp);
      if (needed <= most_threads) {
        items = candidate;
        threads = std::max(needed, kWarp);
        break;
      }
    }
    if (items > 0) break;
  }
  const int rows = threads == kWarp ? kWarpGroupsPerBlock : 1;
  const dim3 grid(grid_for(ceil_div(s.groups, rows))), block(threads, rows);
  switch (items) {
    case 1: normalize_groups<T, kVec, 1><<<grid, block, 0, stream>>>(p, s); break;
    case 2: normalize_groups<T, kVec, 2><<<grid, block, 0, stream>>>(p, s); break;
    case 4: normalize_groups<T, kVec, 4><<<grid, block, 0, stream>>>(p, s); break;
    case 8: normalize_groups<T, kVec, 8><<<grid, block, 0, stream>>>(p, s); break;
    default: normalize_groups<T, kVec, 0><<<grid, block, 0, stream>>>(p, s); break;
  }
}

template <class T, int kVec>
void launch_scale_planes(const SpatialGroups& g, const GroupNormBackwardTensors& t, cudaStream_t stream) {
  const int64_t plane_vectors = g.plane / kVec;
  if (plane_vectors == 0) return;  // empty planes: no gradient to write
  const int lanes = row_norm::row_lanes(plane_vectors, kMaxThreads);
  const int planes_a_block = kMaxThreads / lanes;
  const auto chunks = static_cast<int>(ceil_div(plane_vectors, int64_t{kInFlight} * lanes));
  const int64_t plane_groups = std::min<int64_t>(ceil_div(g.batch * g.channels, planes_a_block), INT_MAX / chunks);
  const ScaleShape s{g.batch * g.channels, g.channels, plane_vectors, chunks};
  scale_planes<T, kVec><<<grid_for(plane_groups * chunks), dim3(lanes, planes_a_block), 0, stream>>>(
      data_of<const T>(&t.grad_out), data_of<const T>(t.weight), static_cast<const float*>(t.rstd.data),
      data_of<T>(&t.grad_x), s);
}

// Launches the backward's kernel; returns whether it wrote the parameter gradients (a whole batch in
// a block), else the caller adds the workspace's partials.
template <class T, int kVec>
bool launch_backward(const SpatialGroups& g, bool centred, const GroupNormBackwardTensors& t, cudaStream_t stream) {
  if (!centred && !t.grad_weight && !t.grad_bias) {
    launch_scale_planes<T, kVec>(g, t, stream);
    return false;
  }
  const int64_t len = g.group_len();
  const BackwardShape s{g.group_count(),
                        g.groups,
                        g.batch * g.channels,
                        static_cast<int>(g.channels_per_group),
                        static_cast<int>(g.plane / kVec),
                        len > 0 ? 1.0f / static_cast<float>(len) : 0.0f,
                        centred};
  const BackwardPointers<T> p = backward_pointers<T>(t);
  constexpr int kMaxWarps = kMaxThreads / kWarp;
  // Vectors a lane holds of its plane: 4 or 8, the fewer that hold it; 0 for longer planes.
  const int items = s.plane_vectors <= 4 * kWarp ? 4 : s.plane_vectors <= 8 * kWarp ? 8 : 0;
  const auto launch = [&]<bool kWholeBatch>(dim3 grid, dim3 block, int held) {
    if constexpr (kWholeBatch) {
      if (held == 4) group_gradients<T, kVec, 4, true><<<grid, block, 0, stream>>>(p, s);
      else group_gradients<T, kVec, 8, true><<<grid, block, 0, stream>>>(p, s);
    } else {
      switch (held) {
        case 4: group_gradients<T, kVec, 4, false><<<grid, block, 0, stream>>>(p, s); break;
        case 8: group_gradients<T, kVec, 8, false><<<grid, block, 0, stream>>>(p, s); break;
        default: group_gradients<T, kVec, 0, false><<<grid, block, 0, stream>>>(p, s); break;
      }
    }
  };
  // Where every sample's planes of a group fit a block's warps, one plane each, a block takes the
  // group across the batch: its channels' parameter gradients are then its own, summed in batch order,
  // with no second kernel and no workspace. The launch has as many warps as the per-sample one.
  const int64_t batch_planes = g.batch * g.channels_per_group;
  if (items > 0 && batch_planes <= kMaxWarps) {
    launch.template operator()<true>(dim3(grid_for(g.groups)), dim3(static_cast<unsigned>(batch_planes) * kWarp),
                                     items);
    return true;
  }
  // A warp a plane: as many warps as the group has planes, at most a block's (a warp of one plane holds
  // it); one-plane groups (InstanceNorm) a warp each, several a block.
  const int warps = static_cast<int>(std::clamp<int64_t>(g.channels_per_group, 1, kMaxWarps));
  const int rows = warps == 1 ? kWarpGroupsPerBlock : 1;
  launch.template operator()<false>(dim3(grid_for(ceil_div(s.groups, rows))), dim3(warps * kWarp, rows),
                                    warps == g.channels_per_group ? items : 0);
  return false;
}

// The channels_last launch of `g` in vectors of `vec` channels: its shape (eps and the flags for the
// caller to set), block and held rows.
struct ChannelsLastPlan {
  ChannelsLastShape s;
  int threads;
  int items;
};

// Groups narrower than a warp's vectors share a tile, up to a warp's vectors of a row, so that a
// warp reads runs of a row rather than scattered pieces; but never so many that the tiles fall below
// one an SM while fewer would not (the catalogue's rows are a few MB: idle SMs cost more than short
// runs). The block: as for contiguous x, the fewest rows a thread (of `held`) that hold the tile in at
// most kCompactThreads threads, else in kMaxThreads; otherwise the rows are read again each pass.
ChannelsLastPlan plan_channels_last(const SpatialGroups& g, int vec, int multiprocessors,
                                    std::initializer_list<int> held) {
  const auto columns = static_cast<int>(g.channels_per_group / vec);
  int64_t per_tile = columns >= kWarp ? 1 : std::min<int64_t>(kWarp / columns, g.groups);
  while (per_tile > 1 && g.batch * ceil_div(g.groups, per_tile) < multiprocessors) per_tile = (per_tile + 1) / 2;
  const int tile_columns = static_cast<int>(per_tile) * columns;
  const auto rows = static_cast<int>(g.plane);
  ChannelsLastPlan plan{.s = {.tiles = g.batch * ceil_div(g.groups, per_tile),
                              .groups = g.group_count(),
                              .num_groups = g.groups,
                              .planes = g.batch * g.channels,
                              .row_vectors = g.channels / vec,
                              .tiles_per_sample = static_cast<int>(ceil_div(g.groups, per_tile)),
                              .groups_per_tile = static_cast<int>(per_tile),
                              .columns = columns,
                              .column_threads = std::min(tile_columns, kMaxThreads),
                              .rows = rows,
                              .channels_per_group = static_cast<int>(g.channels_per_group),
                              .inv_len = 1.0f / static_cast<float>(g.group_len()),
                              .eps = 0.0f,
                              .input_stats = true,
                              .centred = true},
                        .threads = kMaxThreads,
                        .items = 0};
  for (const int most_threads : {kCompactThreads, kMaxThreads}) {
    for (const int candidate : held) {
      const int64_t needed = ceil_div(int64_t{tile_columns} * ceil_div(rows, candidate), int64_t{kWarp}) * kWarp;
      if (tile_columns <= most_threads && needed <= most_threads) {
        plan.items = candidate;
        plan.threads = static_cast<int>(std::max<int64_t>(needed, kWarp));
        return plan;
      }
    }
  }
  return plan;
}

template <class T, int kVec>
void launch_forward_channels_last(const SpatialGroups& g, const GroupNormMath& math, const GroupNormTensors& t,
                                  cudaStream_t stream) {
  ChannelsLastPlan plan = plan_channels_last(g, kVec, multiprocessor_count(t.x.device), {1, 2, 4, 8});
  plan.s.eps = static_cast<float>(math.eps);
  plan.s.input_stats = math.input_stats;
  const ForwardPointers<T> p = forward_pointers<T>(math, t);
  const dim3 grid(grid_for(plan.s.tiles)), block(plan.threads);
  switch (plan.items) {
    case 1: normalize_groups_channels_last<T, kVec, 1><<<grid, block, 0, stream>>>(p, plan.s); break;
    case 2: normalize_groups_channels_last<T, kVec, 2><<<grid, block, 0, stream>>>(p, plan.s); break;
    case 4: normalize_groups_channels_last<T, kVec, 4><<<grid, block, 0, stream>>>(p, plan.s); break;
    case 8: normalize_groups_channels_last<T, kVec, 8><<<grid, block, 0, stream>>>(p, plan.s); break;
    default: normalize_groups_channels_last<T, kVec, 0><<<grid, block, 0, stream>>>(p, plan.s); break;
  }
}

// The parameter gradients are left in the workspace (add_channel_partials adds them over the batch).
template <class T, int kVec>
void launch_backward_channels_last(const SpatialGroups& g, bool centred, const GroupNormBackwardTensors& t,
                                   cudaStream_t stream) {
  // Fewer rows held than the forward: each is a vector of x and one of grad_out.
  ChannelsLastPlan plan = plan_channels_last(g, kVec, multiprocessor_count(t.x.device), {1, 2, 4});
  plan.s.centred = centred;
  const BackwardPointers<T> p = backward_pointers<T>(t);
  const dim3 grid(grid_for(plan.s.tiles)), block(plan.threads);
  switch (plan.items) {
    case 1: group_gradients_channels_last<T, kVec, 1><<<grid, block, 0, stream>>>(p, plan.s); break;
    case 2: group_gradients_channels_last<T, kVec, 2><<<grid, block, 0, stream>>>(p, plan.s); break;
    case 4: group_gradients_channels_last<T, kVec, 4><<<grid, block, 0, stream>>>(p, plan.s); break;
    default: group_gradients_channels_last<T, kVec, 0><<<grid, block, 0, stream>>>(p, plan.s); break;
  }
}

}  // namespace solops::detail::group_norm_kernels

namespace solops::detail {

void launch_group_norm(std::string_view op, const SpatialGroups& g, const GroupNormMath& math,
                       const GroupNormTensors& t, cudaStream_t stream) {
  using namespace group_norm_kernels;
  dispatch_float(t.x.dtype, [&]<class T>() {
    if (g.group_count() > 0) {
      with_vector_width<T>(g, {t.x.data, t.y.data}, [&]<int kVec>() {
        if (g.channels_last) launch_forward_channels_last<T, kVec>(g, math, t, stream);
        else launch_forward<T, kVec>(g, math, t, stream);
      });
    }
  });
  if (math.update_running && g.plane > 0 && g.channels > 0) {
    update_running_stats<<<channel_blocks(g.channels), kChannelThreads, 0, stream>>>(
        static_cast<const float*>(t.workspace ? t.workspace->data : nullptr), static_cast<float*>(t.running_mean->data),
        static_cast<float*>(t.running_var->data), g.batch, g.channels, static_cast<float>(math.momentum),
        static_cast<float>(static_cast<double>(g.plane) / static_cast<double>(g.plane - 1)));
  }
  check_launch(op);
}

void launch_group_norm_backward(std::string_view op, const SpatialGroups& g, bool centred,
                                const GroupNormBackwardTensors& t, cudaStream_t stream) {
  using namespace group_norm_kernels;
  dispatch_float(t.x.dtype, [&]<class T>() {
    bool parameters_written = false;
    if (g.group_count() > 0) {
      with_vector_width<T>(g, {t.x.data, t.grad_out.data, t.grad_x.data}, [&]<int kVec>() {
        if (g.channels_last) launch_backward_channels_last<T, kVec>(g, centred, t, stream);
        else parameters_written = launch_backward<T, kVec>(g, centred, t, stream);
      });
    }
    if ((t.grad_weight || t.grad_bias) && g.channels > 0 && !parameters_written) {
      add_channel_partials<T><<<channel_blocks(g.channels), kChannelThreads, 0, stream>>>(
          static_cast<const float*>(t.workspace ? t.workspace->data : nullptr), data_of<T>(t.grad_weight),
          data_of<T>(t.grad_bias), g.batch, g.channels);
    }
  });
  check_launch(op);
}

}  // namespace solops::detail
