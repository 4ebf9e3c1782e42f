// The direct convolution on CUDA cores: every f32 call (full f32, spec §6.12), and the f16/bf16
// calls whose GEMM would leave a tensor-core tile mostly empty (few output channels a group:
// depthwise, small groups; or a reduction shorter than one MMA step: C_in = 1).
//
// A thread computes kPix consecutive outputs of one output row (along W) for kCo consecutive
// output channels of one group, kPix * kCo f32 sums in registers (f32 FMAs):
//   - per tap, the kCo weights are loaded once and used for kPix outputs, and the kPix inputs once
//     and used for kCo channels, so loads per FMA fall from 1 + 1/kCo to 1/kPix + 1/kCo;
//   - the kPix input loads of a tap are independent (each predicated on the padding, not
//     branched), and the taps along W are unrolled by two, so a thread has up to 2 * (kPix + kCo)
//     loads in flight instead of one tap's: a small call is a few memory round trips a thread, not
//     one per tap (unrolling by four costs about 60 more registers);
//   - the position decode (work item, row, segment) is paid once for kPix * kCo outputs.
// A call too small to give every SM eight warps that way takes one output a thread (kPix = 1): its
// time is each thread's chain of memory round trips, which more threads shorten.
// The inputs a warp's neighbouring threads share (overlapping windows) come from L1. Every tensor
// is addressed through its strides, so channels_last calls take the same path, but depthwise ones
// that fill the SMs, which walk channels instead (depthwise_channels_last). 1-D calls with one input
// channel a group and many output channels compute from a staged segment of x (signal_conv1d).
// Work items are (image, group, channel chunk, block of row segments), walked grid-stride, segments
// fastest.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "conv/conv.hpp"
#include "conv/work_items.hpp"
#include "conv/x_runs.cuh"
#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"

namespace solops::detail::conv_direct {

constexpr int kThreads = 128;

// The kPix inputs of one tap, x_tap[i * pixel_step] for the thread's outputs i (xx: the first's
// position in its row), zero in the padding and past the row's last output. Where a 16-bit row is
// contiguous along W with stride 1 or 2 (run_stride) and the thread has all 8 outputs, the inputs are
// a run of x: two or three 16-byte loads (x_runs.cuh) where those lie inside x's memory (which starts
// at x); otherwise one load an input.
template <class T, int kPix>
__device__ __forceinline__ void load_inputs(const T* x, const T* x_tap, int xx, int pixels, const ConvProblem& p,
                                            int64_t pixel_step, int run_stride, float (&values)[kPix]) {
  if constexpr (sizeof(T) == 2 && kPix == 8) {
    const auto* src = reinterpret_cast<const uint16_t*>(x_tap);
    const auto* x_begin = reinterpret_cast<const uint16_t*>(x);
    const auto* x_end = x_begin + p.x_elements;
    if (pixels == kPix && (run_stride == 1 ? run_blocks_inside<1>(src, x_begin, x_end)
                                           : run_stride == 2 && run_blocks_inside<2>(src, x_begin, x_end))) {
      // The run's elements [lo, hi) of x_tap[0, 7 s + 1) lie inside the row.
      const int lo = max(0, -xx), hi = min(7 * run_stride + 1, p.in_w - xx);
      uint32_t words[4] = {};
      if (lo < hi) {
        HeldRun run;
        if (run_stride == 1) fetch_run<1>(src, lo, hi, run);
        else fetch_run<2>(src, lo, hi, run);
        finish_run(run, words);
      }
#pragma unroll
      for (int i = 0; i < kPix; ++i) {
        values[i] = bits_to_float<T>(run_element(words, i));
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kPix; ++i) {
    // Past the row's last output (whose position could overflow), or in the padding: contributes
    // zero.
    const bool inside = i < pixels && static_cast<unsigned>(xx + i * p.stride_w) < static_cast<unsigned>(p.in_w);
    values[i] = inside ? to_float(x_tap[i * pixel_step]) : 0.0f;
  }
}

// Stores a thread's kPix outputs of one channel (ReLU applied): one run (store_run) where they are
// 8 consecutive elements of a 16-bit y, else one store an output.
template <class T, int kPix>
__device__ __forceinline__ void store_outputs(T* y_run, const float (&sums)[kPix], int pixels, const ConvProblem& p) {
  float v[kPix];
#pragma unroll
  for (int i = 0; i < kPix; ++i) v[i] = p.relu && sums[i] < 0.0f ? 0.0f : sums[i];  // relu(NaN) is NaN
  if constexpr (sizeof(T) == 2 && kPix == 8) {
    if (p.y.w == 1 && pixels == kPix) {
      store_run_of_8<T>(y_run, v);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kPix; ++i) {
    if (i < pixels) y_run[i * p.y.w] = from_float<T>(v[i]);
  }
}

// Calls row(kd, kh, z, yy) for each kernel row (kd, kh) whose input row (z, yy) lies inside x:
// the rows wholly in the padding add nothing and are skipped.
template <class Row>
__device__ __forceinline__ void for_each_row_inside(const ConvProblem& p, int origin_z, int origin_y, Row&& row) {
  for (int kd = 0; kd < p.kernel_d; ++kd) {
    const int z = origin_z + kd * p.dilation_d;
    if (static_cast<unsigned>(z) >= static_cast<unsigned>(p.in_d)) continue;
    for (int kh = 0; kh < p.kernel_h; ++kh) {
      const int yy = origin_y + kh * p.dilation_h;
      if (static_cast<unsigned>(yy) >= static_cast<unsigned>(p.in_h)) continue;
      row(kd, kh, z, yy);
    }
  }
}

// Row segment `segment` of kRun outputs along W (segments numbered along W, then along the rows
// (od, oh)): its output position and the origin of its window in x.
struct RowSegment {
  int od, oh, ow0, origin_z, origin_y, origin_x;
};

template <int kRun>
__device__ __forceinline__ RowSegment row_segment(const ConvProblem& p, int segment,
                                                  const FastDivisor& segments_per_row, const FastDivisor& out_h) {
  const int row = segments_per_row.divide(segment);  // od * out_h + oh
  const int od = out_h.divide(row), oh = row - od * p.out_h;
  const int ow0 = (segment - row * segments_per_row.divisor()) * kRun;
  return {od, oh, ow0, od * p.stride_d - p.pad_d, oh * p.stride_h - p.pad_h, ow0 * p.stride_w - p.pad_w};
}

// Every output's sum starts at its channel's bias: channels first_co + j, j < channels (0 past them or
// without a bias).
template <class T, int kCo, int kPix>
__device__ __forceinline__ void start_at_bias(float (&sums)[kCo][kPix], const T* bias, int64_t first_co, int channels) {
#pragma unroll
  for (int j = 0; j < kCo; ++j) {
    const float b = bias && j < channels ? to_float(bias[first_co + j]) : 0.0f;
#pragma unroll
    for (int i = 0; i < kPix; ++i) sums[j][i] = b;
  }
}

template <class T, int kCo, int kPix>
// At least one block an SM: without it ptxas caps the kernel near 96 registers and spills.
__global__ void __launch_bounds__(kThreads, 1)
    direct(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ y,
           const ConvProblem p, const FastDivisor segments_per_row, const FastDivisor out_h, const int segments,
           const WorkItems items, const int run_stride) {
  for (int64_t index = blockIdx.x; index < items.count; index += gridDim.x) {
    const auto [n, chunk, segment_block, group] = decode(items, p.groups, index);
    const int64_t segment64 = segment_block * kThreads + threadIdx.x;
    if (segment64 >= segments) continue;
    const auto [od, oh, ow0, origin_z, origin_y, origin_x] =
        row_segment<kPix>(p, static_cast<int>(segment64), segments_per_row, out_h);
    const int co0 = static_cast<int>(chunk * kCo);
    const int channels = min(kCo, p.out_per_group - co0);  // this chunk's, <= kCo
    const int64_t first_co = int64_t{group} * p.out_per_group + co0;
    const T* x_group = x + n * p.x.n + int64_t{group} * p.in_per_group * p.x.c;
    const T* w_chunk = weight + first_co * p.weight.n;
    const int64_t pixel_step = int64_t{p.stride_w} * p.x.w;  // between a thread's outputs' windows
    const int pixels = min(kPix, p.out_w - ow0);               // this segment's, <= kPix

    float sums[kCo][kPix];
    start_at_bias(sums, bias, first_co, channels);
    for (int ci = 0; ci < p.in_per_group; ++ci) {
      const T* x_channel = x_group + ci * p.x.c;
      const T* w_channel = w_chunk + ci * p.weight.c;
      for_each_row_inside(p, origin_z, origin_y, [&](int kd, int kh, int z, int yy) {
        const T* x_row = x_channel + z * p.x.d + yy * p.x.h;
        const T* w_row = w_channel + kd * p.weight.d + kh * p.weight.h;
#pragma unroll 2  // the taps along W whose loads a thread issues together
        for (int kw = 0; kw < p.kernel_w; ++kw) {
          const int xx = origin_x + kw * p.dilation_w;
          const T* x_tap = x_row + int64_t{xx} * p.x.w;
          float values[kPix];
          load_inputs<T, kPix>(x, x_tap, xx, pixels, p, pixel_step, run_stride, values);
          const T* w_tap = w_row + kw * p.weight.w;
#pragma unroll
          for (int j = 0; j < kCo; ++j) {
            const float w = j < channels ? to_float(w_tap[j * p.weight.n]) : 0.0f;
#pragma unroll
            for (int i = 0; i < kPix; ++i) sums[j][i] = fmaf(values[i], w, sums[j][i]);
          }
        }
      });
    }
    T* y_row = y + n * p.y.n + first_co * p.y.c + od * p.y.d + oh * p.y.h + int64_t{ow0} * p.y.w;
#pragma unroll
    for (int j = 0; j < kCo; ++j) {
      if (j < channels) store_outputs<T, kPix>(y_row + j * p.y.c, sums[j], pixels, p);
    }
  }
}

// Depthwise calls (one input and one output channel a group) on channels_last x and y: a thread
// computes kChannelRun consecutive channels of kPixelRun consecutive output pixels of one row, so
// that a warp's loads and stores are runs of channels (16 bytes a thread where they are whole and
// aligned), where the walk above gives a thread one channel's pixels, C elements apart in
// channels_last memory. A tap's kPixelRun runs are loaded before any is used: the bytes a thread
// has in flight, not its instructions, bound a call this shaped (a 1x1 depthwise is a scaled copy).
// Threads walk the (row segment, channel run) pairs of one image, runs fastest; images along the
// grid's y.
constexpr int kChannelRun = 8, kPixelRun = 4;

// The channels [0, count) of a run at `from` (16 bytes at once where they are whole and aligned).
template <class T>
__device__ __forceinline__ void load_channel_run(const T* from, int count, float (&values)[kChannelRun]) {
  if (count == kChannelRun && aligned_16(from)) {
    if constexpr (sizeof(T) == 2) {
      const uint4 block = __ldg(reinterpret_cast<const uint4*>(from));
      const uint32_t words[4] = {block.x, block.y, block.z, block.w};
#pragma unroll
      for (int j = 0; j < kChannelRun; ++j) {
        values[j] = bits_to_float<T>(run_element(words, j));
      }
      return;
    } else {
      const float4 low = __ldg(reinterpret_cast<const float4*>(from));
      const float4 high = __ldg(reinterpret_cast<const float4*>(from) + 1);
      const float words[8] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
#pragma unroll
      for (int j = 0; j < kChannelRun; ++j) values[j] = words[j];
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < kChannelRun; ++j) values[j] = j < count ? to_float(from[j]) : 0.0f;
}

template <class T>
__device__ __forceinline__ void store_channel_run(T* to, int count, const float (&values)[kChannelRun], bool relu) {
  float v[kChannelRun];
#pragma unroll
  for (int j = 0; j < kChannelRun; ++j) v[j] = relu && values[j] < 0.0f ? 0.0f : values[j];  // relu(NaN) is NaN
  if constexpr (sizeof(T) == 2) {
    if (count == kChannelRun) {
      store_run_of_8<T>(to, v);
      return;
    }
  } else if (count == kChannelRun && aligned_16(to)) {
    reinterpret_cast<float4*>(to)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(to)[1] = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
#pragma unroll
  for (int j = 0; j < kChannelRun; ++j) {
    if (j < count) to[j] = from_float<T>(v[j]);
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads, 1)  // as direct's: without it ptxas spills
    depthwise_channels_last(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                            T* __restrict__ y, const ConvProblem p, const FastDivisor runs,
                            const FastDivisor segments_per_row, const FastDivisor out_h, const int items) {
  for (int64_t n = blockIdx.y; n < p.batch; n += gridDim.y) {
    for (int64_t item64 = blockIdx.x * int64_t{kThreads} + threadIdx.x; item64 < items;
         item64 += int64_t{gridDim.x} * kThreads) {
      const int item = static_cast<int>(item64);
      const int segment = runs.divide(item);
      const int c0 = (item - segment * runs.divisor()) * kChannelRun;
      const int count = min(kChannelRun, p.groups - c0);
      const auto [od, oh, ow0, origin_z, origin_y, origin_x] =
          row_segment<kPixelRun>(p, segment, segments_per_row, out_h);
      const int pixels = min(kPixelRun, p.out_w - ow0);
      const T* x_image = x + n * p.x.n + c0;
      float sums[kPixelRun][kChannelRun];
#pragma unroll
      for (int j = 0; j < kChannelRun; ++j) {
        const float b = bias && j < count ? to_float(bias[c0 + j]) : 0.0f;
#pragma unroll
        for (int i = 0; i < kPixelRun; ++i) sums[i][j] = b;
      }
      for_each_row_inside(p, origin_z, origin_y, [&](int kd, int kh, int z, int yy) {
        const T* x_row = x_image + z * p.x.d + yy * p.x.h;
        for (int kw = 0; kw < p.kernel_w; ++kw) {
          float values[kPixelRun][kChannelRun];
#pragma unroll
          for (int i = 0; i < kPixelRun; ++i) {
            const int xx = origin_x + i * p.stride_w + kw * p.dilation_w;
            // Pixels past the row's end and taps in the padding add zeros.
            const bool inside = i < pixels && static_cast<unsigned>(xx) < static_cast<unsigned>(p.in_w);
            load_channel_run(x_row + int64_t{xx} * p.x.w, inside ? count : 0, values[i]);
          }
          const T* w_tap = weight + int64_t{c0} * p.weight.n + kd * p.weight.d + kh * p.weight.h + kw * p.weight.w;
#pragma unroll
          for (int j = 0; j < kChannelRun; ++j) {
            const float w = j < count ? to_float(w_tap[j * p.weight.n]) : 0.0f;
#pragma unroll
            for (int i = 0; i < kPixelRun; ++i) sums[i][j] = fmaf(values[i][j], w, sums[i][j]);
          }
        }
      });
      T* y_segment = y + n * p.y.n + c0 + od * p.y.d + oh * p.y.h + int64_t{ow0} * p.y.w;
#pragma unroll
      for (int i = 0; i < kPixelRun; ++i) {
        if (i < pixels) store_channel_run(y_segment + i * p.y.w, count, sums[i], p.relu);
      }
    }
  }
}

// A launch that gives every SM fewer warps than this is bound by each thread's chain of memory
// round trips, which more threads of less work each shorten and register blocking does not.
constexpr int kWarpsPerSm = 8;

// The (row segment, channel run) pairs of one image that depthwise_channels_last walks.
int64_t depthwise_channels_last_items(const ConvProblem& p) {
  return int64_t{p.out_d} * p.out_h * ceil_div(p.out_w, kPixelRun) * ceil_div(p.groups, kChannelRun);
}

// Whether depthwise_channels_last serves a call: one channel a group, x's and y's channels
// contiguous, one image's pairs indexable in 31 bits, and enough of them to give every SM
// kWarpsPerSm warps (a smaller call takes one output a thread through the strides).
bool fits_depthwise_channels_last(const ConvProblem& p, int multiprocessors) {
  const int64_t items = depthwise_channels_last_items(p);
  return p.in_per_group == 1 && p.out_per_group == 1 && p.x.c == 1 && p.y.c == 1 && items < INT_MAX &&
         p.batch * items >= int64_t{multiprocessors} * kWarpsPerSm * 32;
}

template <class T>
void launch_depthwise_channels_last(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y,
                                    cudaStream_t stream) {
  const int runs = static_cast<int>(ceil_div(p.groups, kChannelRun));
  const int segments_per_row = static_cast<int>(ceil_div(p.out_w, kPixelRun));
  const int items = static_cast<int>(depthwise_channels_last_items(p));  // < 2^31 (fits_depthwise_channels_last)
  const dim3 grid(grid_for(ceil_div(items, kThreads)), static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  depthwise_channels_last<T><<<grid, kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T*>(y), p,
      FastDivisor(runs), FastDivisor(segments_per_row), FastDivisor(p.out_h), items);
}

// 1-D calls with one input channel a group and at least kSignalChannels output channels a group
// (a waveform filtered into many channels: wav2vec2's and EnCodec's first layers). The walk above
// gives a thread one tap's inputs and weights a memory round trip at a time, for a few outputs:
// such a call is a chain of round trips a thread. Here a block first stages the segment of x that
// its outputs read (f32, zero in the padding) and its chunk's weights in shared memory, one
// coalesced pass each, then computes kSignalChannels channels x kOutputs positions a thread from
// shared memory. A thread's positions are kSignalThreads apart: its reads of the segment are a
// stride apart across a warp, and its stores, channel by channel, a warp's consecutive positions.
// kOutputs is kSignalOutputs where that gives every SM kWarpsPerSm warps, else kSignalFewOutputs: a
// block's time is its threads' chain of staging, FMAs and stores, which a small call (one waveform:
// wav2vec2's 512 channels of 3 199 positions) does not hide behind other warps.
constexpr int kSignalThreads = 128, kSignalChannels = 8, kSignalOutputs = 8, kSignalFewOutputs = 2;
constexpr int kSignalSharedBytes = 48 * 1024;  // no opt-in needed

// The x elements a block's kSignalThreads * outputs positions read (their windows), rounded up to
// whole float4s so that the weights after them are 16-byte aligned.
int64_t signal_segment(const ConvProblem& p, int outputs) {
  const int64_t reach =
      int64_t{kSignalThreads * outputs - 1} * p.stride_w + int64_t{p.kernel_w - 1} * p.dilation_w + 1;
  return ceil_div(reach, 4) * 4;
}

int64_t signal_shared_bytes(const ConvProblem& p, int outputs) {
  return (signal_segment(p, outputs) + int64_t{p.kernel_w} * kSignalChannels) * sizeof(float);
}

// Decided at the larger block, which then fits either way.
bool fits_signal(const ConvProblem& p) {
  return p.in_per_group == 1 && p.out_per_group >= kSignalChannels && p.in_d == 1 && p.in_h == 1 && p.out_d == 1 &&
         p.out_h == 1 && signal_shared_bytes(p, kSignalOutputs) <= kSignalSharedBytes;
}

template <class T, int kOutputs>
__global__ void __launch_bounds__(kSignalThreads)
    signal_conv1d(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                  T* __restrict__ y, const ConvProblem p, const int segment, const WorkItems items) {
  extern __shared__ float signal_shared[];
  float* const xs = signal_shared;           // [segment]: x from the block's first window on
  float* const ws = signal_shared + segment;  // [kernel_w][kSignalChannels]
  const int tid = threadIdx.x;
  for (int64_t index = blockIdx.x; index < items.count; index += gridDim.x) {
    const auto [n, chunk, position_block, group] = decode(items, p.groups, index);
    const int l0 = static_cast<int>(position_block) * kSignalThreads * kOutputs;
    const int co0 = static_cast<int>(chunk) * kSignalChannels;
    const int channels = min(kSignalChannels, p.out_per_group - co0);
    const int64_t first_co = int64_t{group} * p.out_per_group + co0;
    const T* x_row = x + n * p.x.n + int64_t{group} * p.x.c;
    const int first_input = l0 * p.stride_w - p.pad_w;
    __syncthreads();  // the previous item's reads of xs and ws are done
    for (int e = tid; e < segment; e += kSignalThreads) {
      const int64_t position = int64_t{first_input} + e;  // in the padding outside [0, in_w)
      xs[e] = position >= 0 && position < p.in_w ? to_float(x_row[position * p.x.w]) : 0.0f;
    }
    for (int e = tid; e < p.kernel_w * kSignalChannels; e += kSignalThreads) {
      const int tap = e / kSignalChannels, j = e % kSignalChannels;
      ws[e] = j < channels ? to_float(weight[(first_co + j) * p.weight.n + int64_t{tap} * p.weight.w]) : 0.0f;
    }
    __syncthreads();

    float sums[kSignalChannels][kOutputs];
    start_at_bias(sums, bias, first_co, channels);
    for (int tap = 0; tap < p.kernel_w; ++tap) {
      const float4 low = reinterpret_cast<const float4*>(ws + tap * kSignalChannels)[0];
      const float4 high = reinterpret_cast<const float4*>(ws + tap * kSignalChannels)[1];
      const float w[kSignalChannels] = {low.x, low.y, low.z, low.w, high.x, high.y, high.z, high.w};
      const float* x_tap = xs + tap * p.dilation_w + tid * p.stride_w;
#pragma unroll
      for (int i = 0; i < kOutputs; ++i) {
        const float v = x_tap[i * kSignalThreads * p.stride_w];
#pragma unroll
        for (int j = 0; j < kSignalChannels; ++j) sums[j][i] = fmaf(v, w[j], sums[j][i]);
      }
    }

    T* y_chunk = y + n * p.y.n + first_co * p.y.c;
#pragma unroll
    for (int j = 0; j < kSignalChannels; ++j) {
      if (j >= channels) break;
#pragma unroll
      for (int i = 0; i < kOutputs; ++i) {
        const int position = l0 + tid + i * kSignalThreads;
        const float v = p.relu && sums[j][i] < 0.0f ? 0.0f : sums[j][i];  // relu(NaN) is NaN
        if (position < p.out_w) y_chunk[j * p.y.c + int64_t{position} * p.y.w] = from_float<T>(v);
      }
    }
  }
}

template <class T, int kOutputs>
void launch_signal(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y,
                   cudaStream_t stream) {
  const int segment = static_cast<int>(signal_segment(p, kOutputs));
  const WorkItems items = work_items(p.batch, p.groups, static_cast<int>(ceil_div(p.out_per_group, kSignalChannels)),
                                     static_cast<int>(ceil_div(p.out_w, kSignalThreads * kOutputs)));
  signal_conv1d<T, kOutputs><<<grid_for(items.count), kSignalThreads, signal_shared_bytes(p, kOutputs), stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T*>(y), p,
      segment, items);
}

template <class T>
void launch_signal(const ConvProblem& p, int multiprocessors, const void* x, const void* weight, const void* bias,
                   void* y, cudaStream_t stream) {
  const int64_t threads = p.batch * p.groups * ceil_div(p.out_per_group, kSignalChannels) *
                          ceil_div(p.out_w, kSignalThreads * kSignalOutputs) * kSignalThreads;
  if (threads >= int64_t{multiprocessors} * kWarpsPerSm * 32) {
    launch_signal<T, kSignalOutputs>(p, x, weight, bias, y, stream);
  } else {
    launch_signal<T, kSignalFewOutputs>(p, x, weight, bias, y, stream);
  }
}

// Threads of a launch with kPix outputs a thread.
int64_t threads_for(const ConvProblem& p, int co, int pixels) {
  return p.batch * p.groups * ceil_div(p.out_per_group, co) * p.out_d * p.out_h * ceil_div(p.out_w, pixels);
}

template <class T, int kCo, int kPix>
void launch(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y, cudaStream_t stream) {
  const int segments_per_row = static_cast<int>(ceil_div(p.out_w, kPix));
  const int rows = p.out_d * p.out_h;
  const int segments = rows * segments_per_row;  // <= out_plane < 2^31
  const int co_chunks = static_cast<int>(ceil_div(p.out_per_group, kCo));
  const int segment_blocks = static_cast<int>(ceil_div(segments, kThreads));
  const WorkItems items = work_items(p.batch, p.groups, co_chunks, segment_blocks);
  direct<T, kCo, kPix><<<grid_for(items.count), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T*>(y), p,
      FastDivisor(segments_per_row), FastDivisor(p.out_h), segments, items,
      p.x.w == 1 && (p.stride_w == 1 || p.stride_w == 2) ? p.stride_w : 0);
}

// kPix outputs a thread where that still gives every SM kWarpsPerSm warps, else one.
template <class T, int kCo, int kPix>
void launch_blocked(const ConvProblem& p, int multiprocessors, const void* x, const void* weight, const void* bias,
                    void* y, cudaStream_t stream) {
  if (threads_for(p, kCo, kPix) >= int64_t{multiprocessors} * kWarpsPerSm * 32) {
    launch<T, kCo, kPix>(p, x, weight, bias, y, stream);
  } else {
    launch<T, kCo, 1>(p, x, weight, bias, y, stream);
  }
}

}  // namespace solops::detail::conv_direct

namespace solops::detail {

void launch_conv_direct(const ConvProblem& problem, DType dtype, const void* x, const void* weight, const void* bias,
                        void* y, cudaStream_t stream) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "conv", "cudaGetDevice");
  const int multiprocessors = multiprocessor_count(device);
  dispatch_float(dtype, [&]<class T>() {
    // kCo: the group's channel count rounded up to a power of two, at most eight (a larger group is
    // walked in chunks of eight, the last one masked). kPix: eight outputs a thread, four for eight
    // channels (at most 32 sums: no spills), or one for a small call.
    const int channels = problem.out_per_group;
    using namespace conv_direct;
    if (fits_depthwise_channels_last(problem, multiprocessors))
      launch_depthwise_channels_last<T>(problem, x, weight, bias, y, stream);
    else if (fits_signal(problem)) launch_signal<T>(problem, multiprocessors, x, weight, bias, y, stream);
    else if (channels == 1) launch_blocked<T, 1, 8>(problem, multiprocessors, x, weight, bias, y, stream);
    else if (channels == 2) launch_blocked<T, 2, 8>(problem, multiprocessors, x, weight, bias, y, stream);
    else if (channels <= 4) launch_blocked<T, 4, 8>(problem, multiprocessors, x, weight, bias, y, stream);
    else launch_blocked<T, 8, 4>(problem, multiprocessors, x, weight, bias, y, stream);
  });
}

}  // namespace solops::detail
