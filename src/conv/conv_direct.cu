// The direct convolution on CUDA cores: every f32 call (full f32, spec §6.12), and the f16/bf16
// calls whose GEMM would leave a tensor-core tile mostly empty (few output channels a group:
// depthwise, small groups; or a reduction shorter than one MMA step: C_in = 1).
//
// A thread computes one output pixel for kCo consecutive output channels of one group: it reads
// each input value of its window once and multiplies it into all kCo sums (f32 FMAs), the weights
// coming through the L1 cache, where a warp's threads share each one (they differ in the pixel
// only). Taps that fall in the padding are skipped. Every tensor is addressed through its strides,
// so channels_last calls take the same path. Work items are (image, group, channel chunk, block of
// pixels), walked grid-stride, pixels fastest.
#include "conv/conv.hpp"
#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"

namespace solops::detail::conv_direct {

constexpr int kThreads = 128;

template <class T, int kCo>
__global__ void __launch_bounds__(kThreads)
    direct(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias, T* __restrict__ y,
           const ConvProblem p, const int64_t co_chunks, const int64_t pixel_blocks, const int64_t items) {
  const int plane_hw = p.out_h * p.out_w;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t pixel_block = item % pixel_blocks;
    const int64_t rest = item / pixel_blocks;
    const int64_t chunk = rest % co_chunks;
    const int64_t image_group = rest / co_chunks;
    const int64_t n = image_group / p.groups;
    const int group = static_cast<int>(image_group - n * p.groups);
    const int64_t pixel = pixel_block * kThreads + threadIdx.x;
    if (pixel >= p.out_plane) continue;
    const int q = static_cast<int>(pixel);
    const int od = q / plane_hw, in_plane = q - od * plane_hw;
    const int oh = in_plane / p.out_w, ow = in_plane - oh * p.out_w;
    const int origin_z = od * p.stride_d - p.pad_d, origin_y = oh * p.stride_h - p.pad_h,
              origin_x = ow * p.stride_w - p.pad_w;
    const int co0 = static_cast<int>(chunk * kCo);
    const int channels = min(kCo, p.out_per_group - co0);  // this chunk's, <= kCo
    const int64_t first_co = int64_t{group} * p.out_per_group + co0;
    const T* x_group = x + n * p.x.n + int64_t{group} * p.in_per_group * p.x.c;
    const T* w_chunk = weight + first_co * p.weight.n;

    float sums[kCo];
#pragma unroll
    for (int j = 0; j < kCo; ++j) sums[j] = bias && j < channels ? to_float(bias[first_co + j]) : 0.0f;
    for (int ci = 0; ci < p.in_per_group; ++ci) {
      const T* x_channel = x_group + ci * p.x.c;
      const T* w_channel = w_chunk + ci * p.weight.c;
      for (int kd = 0; kd < p.kernel_d; ++kd) {
        const int z = origin_z + kd * p.dilation_d;
        if (static_cast<unsigned>(z) >= static_cast<unsigned>(p.in_d)) continue;
        for (int kh = 0; kh < p.kernel_h; ++kh) {
          const int yy = origin_y + kh * p.dilation_h;
          if (static_cast<unsigned>(yy) >= static_cast<unsigned>(p.in_h)) continue;
          const T* x_row = x_channel + z * p.x.d + yy * p.x.h;
          const T* w_row = w_channel + kd * p.weight.d + kh * p.weight.h;
          for (int kw = 0; kw < p.kernel_w; ++kw) {
            const int xx = origin_x + kw * p.dilation_w;
            if (static_cast<unsigned>(xx) >= static_cast<unsigned>(p.in_w)) continue;
            const float value = to_float(x_row[xx * p.x.w]);
            const T* w_tap = w_row + kw * p.weight.w;
#pragma unroll
            for (int j = 0; j < kCo; ++j) {
              if (j < channels) sums[j] = fmaf(value, to_float(w_tap[j * p.weight.n]), sums[j]);
            }
          }
        }
      }
    }
    T* y_pixel = y + n * p.y.n + first_co * p.y.c + od * p.y.d + oh * p.y.h + ow * p.y.w;
#pragma unroll
    for (int j = 0; j < kCo; ++j) {
      if (j >= channels) break;
      // relu(NaN) is NaN: the comparison is false for it.
      const float v = p.relu && sums[j] < 0.0f ? 0.0f : sums[j];
      y_pixel[j * p.y.c] = from_float<T>(v);
    }
  }
}

template <class T, int kCo>
void launch(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y, cudaStream_t stream) {
  const int64_t co_chunks = ceil_div(p.out_per_group, kCo);
  const int64_t pixel_blocks = ceil_div(p.out_plane, kThreads);
  const int64_t items = p.batch * p.groups * co_chunks * pixel_blocks;
  direct<T, kCo><<<grid_for(items), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<const T*>(weight),
                                                            static_cast<const T*>(bias), static_cast<T*>(y), p,
                                                            co_chunks, pixel_blocks, items);
}

}  // namespace solops::detail::conv_direct

namespace solops::detail {

void launch_conv_direct(const ConvProblem& problem, DType dtype, const void* x, const void* weight, const void* bias,
                        void* y, cudaStream_t stream) {
  dispatch_float(dtype, [&]<class T>() {
    // One output channel a group (depthwise) takes one a thread; any other count eight, the last
    // chunk of a group masked.
    if (problem.out_per_group == 1) conv_direct::launch<T, 1>(problem, x, weight, bias, y, stream);
    else conv_direct::launch<T, 8>(problem, x, weight, bias, y, stream);
  });
}

}  // namespace solops::detail
