// The depthwise causal 1-D convolution of Mamba-style short convolutions: x [N, C, L], weight
// [C, 1, kW] with kW <= 4, groups = C, stride 1, dilation 1; output t of a row is
// bias + sum_j w[j] * x[t - (kW - 1) + j]. Memory-bound: x is read once and y written once.
//
// A thread computes eight consecutive outputs of one row from the eight inputs at the same
// positions, one 16-byte load (two for f32) where the row allows it, and the kW - 1 inputs before
// them, scalar loads that the previous thread's vector brought into L1. Rows are split into
// chunks of eight, walked grid-stride.
#include <cstdint>

#include "conv/conv.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"

namespace solops::detail::conv_causal {

constexpr int kThreads = 256;
constexpr int kSpan = 8;  // outputs a thread
constexpr int kMaxTaps = 4;

// kSpan elements of T, loaded or stored as 16-byte words.
template <class T>
struct alignas(16) Span {
  T values[kSpan];
};

template <class T, int kTaps>
__global__ void __launch_bounds__(kThreads)
    causal_depthwise(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                     T* __restrict__ y, const int channels, const int length, const int64_t chunks_per_row,
                     const int64_t chunks, const bool vectors) {
  for (int64_t chunk = blockIdx.x * int64_t{kThreads} + threadIdx.x; chunk < chunks;
       chunk += int64_t{gridDim.x} * kThreads) {
    const int64_t row = chunk / chunks_per_row;
    const int t0 = static_cast<int>(chunk - row * chunks_per_row) * kSpan;
    const int c = static_cast<int>(row % channels);
    const T* x_row = x + row * length;
    float taps[kTaps];
#pragma unroll
    for (int j = 0; j < kTaps; ++j) taps[j] = to_float(weight[c * kTaps + j]);
    // window[i] = x[t0 - (kTaps - 1) + i], zero before the row's start and past its end.
    float window[kSpan + kTaps - 1];
#pragma unroll
    for (int i = 0; i < kTaps - 1; ++i) {
      const int t = t0 - (kTaps - 1) + i;
      window[i] = t >= 0 ? to_float(x_row[t]) : 0.0f;
    }
    const bool whole = int64_t{t0} + kSpan <= length;
    if (vectors && whole) {
      const Span<T> in = *reinterpret_cast<const Span<T>*>(x_row + t0);
#pragma unroll
      for (int i = 0; i < kSpan; ++i) window[kTaps - 1 + i] = to_float(in.values[i]);
    } else {
#pragma unroll
      for (int i = 0; i < kSpan; ++i) window[kTaps - 1 + i] = t0 + i < length ? to_float(x_row[t0 + i]) : 0.0f;
    }
    const float shift = bias ? to_float(bias[c]) : 0.0f;
    Span<T> out;
#pragma unroll
    for (int i = 0; i < kSpan; ++i) {
      float sum = shift;
#pragma unroll
      for (int j = 0; j < kTaps; ++j) sum = fmaf(taps[j], window[i + j], sum);
      out.values[i] = from_float<T>(sum);
    }
    T* y_row = y + row * length;
    if (vectors && whole) {
      *reinterpret_cast<Span<T>*>(y_row + t0) = out;
    } else {
#pragma unroll
      for (int i = 0; i < kSpan; ++i) {
        if (t0 + i < length) y_row[t0 + i] = out.values[i];
      }
    }
  }
}

template <class T, int kTaps>
void launch(const ConvGeometry& g, const void* x, const void* weight, const void* bias, void* y, cudaStream_t stream) {
  const int length = g.in[2];
  const int64_t chunks_per_row = ceil_div(length, kSpan);
  const int64_t chunks = g.batch * g.in_channels * chunks_per_row;
  // Every row starts on a 16-byte boundary when the length is a multiple of the span and the
  // tensors are aligned.
  const bool vectors = length % kSpan == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(y) % 16 == 0;
  causal_depthwise<T, kTaps><<<grid_for(ceil_div(chunks, kThreads)), kThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<const T*>(bias), static_cast<T*>(y),
      g.in_channels, length, chunks_per_row, chunks, vectors);
}

}  // namespace solops::detail::conv_causal

namespace solops::detail {

bool fits_causal_depthwise(const ConvGeometry& g, const TensorRef& x, const TensorRef& y) {
  return g.causal && g.in_per_group == 1 && g.out_per_group == 1 && g.stride[2] == 1 && g.dilation[2] == 1 &&
         g.kernel[2] <= conv_causal::kMaxTaps && x.is_contiguous() && y.is_contiguous();
}

void launch_conv_causal_depthwise(const ConvGeometry& g, DType dtype, const void* x, const void* weight,
                                  const void* bias, void* y, cudaStream_t stream) {
  dispatch_float(dtype, [&]<class T>() {
    switch (g.kernel[2]) {
      case 1: return conv_causal::launch<T, 1>(g, x, weight, bias, y, stream);
      case 2: return conv_causal::launch<T, 2>(g, x, weight, bias, y, stream);
      case 3: return conv_causal::launch<T, 3>(g, x, weight, bias, y, stream);
      default: return conv_causal::launch<T, 4>(g, x, weight, bias, y, stream);
    }
  });
}

}  // namespace solops::detail
