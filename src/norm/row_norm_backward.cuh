// Row-norm backward kernels and their launcher, instantiated once per statistic (norm_rms.cu,
// norm_layer.cu).
//
// grad_x is a row op like the forward: one block (or a group of short rows) per row, the row of x,
// grad_out and the weight at the same columns held in registers while the block sums
// h = grad_out * weight and h * x_hat over the row in f32, then grad_x written from the held
// values (the forward's launch shapes and streaming fallback). grad_weight and grad_bias are sums
// over the rows of each column: a second kernel gives each block 32 columns and 32 threads per
// column, each summing a fixed stride of rows in f32, then adds the lanes in a fixed order. It
// reads x and grad_out again (2·M·N more bytes than the floor) but needs no workspace, no atomics
// and no allocation, and its result does not depend on the launch (deterministic). A single row
// (decode) has no sum to take: the row kernel writes its terms, and the second launch is saved.
#pragma once

#include "norm/row_norm.cuh"

namespace solops::detail::row_norm {

template <class T>
struct BackwardPointers {
  const T* grad_out;
  const T* x;
  const T* weight;
  const float* mean;  // null for RMSNorm
  const float* rstd;
  T* grad_x;
  T* grad_weight;
  T* grad_bias;
};

// One element's x_hat and h = grad_out * weight.
template <NormKind kKind>
__device__ __forceinline__ void element_terms(float x, float dy, float weight, float mean, float rstd,
                                              float& x_hat, float& h) {
  x_hat = (kKind == NormKind::layer ? x - mean : x) * rstd;
  h = dy * weight;
}

// grad_x = rstd * (h - mean(h) - x_hat * mean(h * x_hat)); RMSNorm has no mean(h) term.
__device__ __forceinline__ float input_gradient(float x_hat, float h, float rstd, float h_mean, float projection) {
  return rstd * (h - h_mean - x_hat * projection);
}

// With `parameter_gradients` (a single row) the kernel also writes grad_weight and grad_bias, which
// are then that row's own terms, and the column kernel is not launched: a decode row's backward is
// one launch, not two.
template <class T, NormKind kKind, int kVec, int kVecs>
__global__ void __launch_bounds__(max_threads(kVec, kVecs))
    row_norm_backward_in_registers(const BackwardPointers<T> p, const RowShape s, bool parameter_gradients) {
  using P = Pack<T, kVec>;
  __shared__ float partial[kMaxThreads / kWarp];
  for_each_held_row<kVec>(s, [&](const HeldRow& r) {
    P x[kVecs], dy[kVecs], weight[kVecs];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds(i)) continue;
      const int v = r.vector(i);
      x[i] = __ldg(reinterpret_cast<const P*>(p.x) + r.first + v);
      dy[i] = __ldg(reinterpret_cast<const P*>(p.grad_out) + r.first + v);
      if (p.weight) weight[i] = __ldg(reinterpret_cast<const P*>(p.weight) + v);
    }
    const float mean = kKind == NormKind::layer && r.active ? p.mean[r.row] : 0.0f;
    const float rstd = r.active ? p.rstd[r.row] : 0.0f;
    // Calls term(e, x_hat, h, dy) for each element e of the held vector i.
    const auto for_terms = [&](int i, auto term) {
      float xs[kVec], dys[kVec], ws[kVec];
      unpack<T, kVec>(x[i], xs);
      unpack<T, kVec>(dy[i], dys);
      if (p.weight) {
        unpack<T, kVec>(weight[i], ws);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) ws[e] = 1;
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        float x_hat, h;
        element_terms<kKind>(xs[e], dys[e], ws[e], mean, rstd, x_hat, h);
        term(e, x_hat, h, dys[e]);
      }
    };

    float h_sum = 0, projection = 0;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds(i)) continue;
      for_terms(i, [&](int, float x_hat, float h, float) {
        h_sum += h;
        projection += h * x_hat;
      });
    }
    float h_mean = 0;
    if constexpr (kKind == NormKind::layer) h_mean = row_sum(h_sum, partial) * s.inv_len;
    projection = row_sum(projection, partial) * s.inv_len;

#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds(i)) continue;
      float out[kVec];
      for_terms(i, [&](int e, float x_hat, float h, float) {
        out[e] = input_gradient(x_hat, h, rstd, h_mean, projection);
      });
      reinterpret_cast<P*>(p.grad_x)[r.first + r.vector(i)] = pack<T, kVec>(out);
    }
    if (!parameter_gradients) return;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds(i)) continue;
      float weight_terms[kVec];
      for_terms(i, [&](int e, float x_hat, float, float dy_e) { weight_terms[e] = dy_e * x_hat; });
      if (p.grad_weight) reinterpret_cast<P*>(p.grad_weight)[r.vector(i)] = pack<T, kVec>(weight_terms);
      if (p.grad_bias) reinterpret_cast<P*>(p.grad_bias)[r.vector(i)] = dy[i];
    }
  });
}

// Rows too long for registers, one element per access: the second pass reads the row again.
template <class T, NormKind kKind>
__global__ void __launch_bounds__(kStreamingThreads)
    row_norm_backward_streaming(const BackwardPointers<T> p, const RowShape s) {
  __shared__ float partial[kStreamingThreads / kWarp];
  for (int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const int64_t first = row * s.row_len;
    const float mean = kKind == NormKind::layer ? p.mean[row] : 0.0f;
    const float rstd = p.rstd[row];
    const auto terms = [&](int j, float& x_hat, float& h) {
      const float weight = p.weight ? to_float(__ldg(p.weight + j)) : 1.0f;
      element_terms<kKind>(to_float(p.x[first + j]), to_float(p.grad_out[first + j]), weight, mean, rstd, x_hat, h);
    };
    float h_sum = 0, projection = 0;
    for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
      float x_hat, h;
      terms(j, x_hat, h);
      h_sum += h;
      projection += h * x_hat;
    }
    float h_mean = 0;
    if constexpr (kKind == NormKind::layer) h_mean = row_sum(h_sum, partial) * s.inv_len;
    projection = row_sum(projection, partial) * s.inv_len;
    for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
      float x_hat, h;
      terms(j, x_hat, h);
      p.grad_x[first + j] = from_float<T>(input_gradient(x_hat, h, rstd, h_mean, projection));
    }
  }
}

// A warp reads 32 adjacent columns of a row (64 bytes in f16/bf16); 32 lanes of rows and four rows
// unrolled a lane keep enough loads in flight although only N / 32 blocks exist (128 for N = 4096).
constexpr int kColumnsPerBlock = kWarp;
constexpr int kColumnLanes = 32;

// grad_weight[j] = sum over rows of grad_out * x_hat, grad_bias[j] = sum of grad_out, in f32. Lane
// threadIdx.y sums rows y, y + kColumnLanes, ...; the lanes are then added in order, so the result
// is the same on every run. With no rows both are zero.
template <class T, NormKind kKind>
__global__ void __launch_bounds__(kColumnsPerBlock * kColumnLanes)
    row_norm_column_sums(const BackwardPointers<T> p, const RowShape s) {
  __shared__ float weight_part[kColumnLanes][kColumnsPerBlock];
  __shared__ float bias_part[kColumnLanes][kColumnsPerBlock];
  const int column = blockIdx.x * kColumnsPerBlock + threadIdx.x;
  float weight_sum = 0, bias_sum = 0;
  if (column < s.row_len) {
#pragma unroll 4
    for (int64_t row = threadIdx.y; row < s.rows; row += kColumnLanes) {
      const int64_t at = row * s.row_len + column;
      const float dy = to_float(p.grad_out[at]);
      const float centred = kKind == NormKind::layer ? to_float(p.x[at]) - p.mean[row] : to_float(p.x[at]);
      weight_sum += dy * centred * p.rstd[row];
      bias_sum += dy;
    }
  }
  weight_part[threadIdx.y][threadIdx.x] = weight_sum;
  bias_part[threadIdx.y][threadIdx.x] = bias_sum;
  __syncthreads();
  if (threadIdx.y != 0 || column >= s.row_len) return;
  weight_sum = 0;
  bias_sum = 0;
  for (int lane = 0; lane < kColumnLanes; ++lane) {
    weight_sum += weight_part[lane][threadIdx.x];
    bias_sum += bias_part[lane][threadIdx.x];
  }
  if (p.grad_weight) p.grad_weight[column] = from_float<T>(weight_sum);
  if (p.grad_bias) p.grad_bias[column] = from_float<T>(bias_sum);
}

template <class T, NormKind kKind>
void launch_backward_typed(const BackwardPointers<T>& p, const RowShape& s, bool many_rows, cudaStream_t stream) {
  bool parameters_done = false;
  if (s.rows > 0) {
    launch_row_kernel<T>(
        {p.grad_out, p.x, p.weight, p.grad_x, p.grad_weight, p.grad_bias}, s, many_rows,
        [&]<int kVec, int kVecs>(dim3 grid, dim3 block) {
          parameters_done = s.rows == 1;
          row_norm_backward_in_registers<T, kKind, kVec, kVecs><<<grid, block, 0, stream>>>(p, s, parameters_done);
        },
        [&](unsigned grid) { row_norm_backward_streaming<T, kKind><<<grid, kStreamingThreads, 0, stream>>>(p, s); });
  }
  if ((p.grad_weight || p.grad_bias) && !parameters_done) {
    const auto grid = static_cast<unsigned>((s.row_len + kColumnsPerBlock - 1) / kColumnsPerBlock);
    row_norm_column_sums<T, kKind><<<grid, dim3(kColumnsPerBlock, kColumnLanes), 0, stream>>>(p, s);
  }
}

}  // namespace solops::detail::row_norm

namespace solops::detail {

template <NormKind kKind>
void launch_rows_backward(std::string_view op, const RowGeometry& g, const RowNormBackwardTensors& t,
                          cudaStream_t stream) {
  using namespace row_norm;
  const RowShape s = row_shape(g, {kKind});
  const bool many_rows = g.rows >= multiprocessor_count(t.x.device);
  dispatch_float(t.x.dtype, [&]<class T>() {
    const BackwardPointers<T> p{data_of<T>(&t.grad_out),   data_of<T>(&t.x),          data_of<T>(t.weight),
                                data_of<float>(t.mean),    data_of<float>(&t.rstd),   data_of<T>(&t.grad_x),
                                data_of<T>(t.grad_weight), data_of<T>(t.grad_bias)};
    launch_backward_typed<T, kKind>(p, s, many_rows, stream);
  });
  check_launch(op);
}

}  // namespace solops::detail
