// Row-norm backward kernels and their launcher, instantiated once per statistic (norm_rms.cu,
// norm_layer.cu).
//
// grad_x is a row op like the forward: one block (or a group of short rows) per row, the row of x,
// grad_out and the weight at the same columns held in registers while the block sums
// h = grad_out * weight and h * x_hat over the row in f32, then grad_x written from the held
// values (the forward's launch shapes and streaming fallback). grad_weight and grad_bias are sums
// over the rows of each column, taken from the same held values: each block of the row kernel adds
// its rows' terms per column in shared memory (each thread its own columns, in row order), writes
// them as one f32 row of the caller's workspace, and add_partials sums each column's block rows in
// block order (blocks of several rows where the rows are short enough: launch_backward_partials).
// Many rows that fill the blocks of the staged kernel run it instead (row_norm_backward_staged:
// rows staged ahead in shared memory, each thread's column sums in registers over its rows), which
// measured faster on every width.
// x and grad_out are read once (a column kernel that read them again took 2·M·N more bytes and
// measured far slower); the block count, and so the order of the sums, is a function of the shape
// and the device, so the result is the same on every run. A single row (decode) has no sum to
// take: the row kernel writes its terms. Rows too long for registers (streaming kernel) keep the
// column kernel, which reads x and grad_out again.
#pragma once

#include "core/evict_last.cuh"
#include "norm/row_norm.cuh"
#include "norm/staged_rows.cuh"

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
  float* partial;  // the workspace: [blocks, N] weight terms, then [blocks, N] bias terms
};

// terms[e] added to the kVec floats at `at` (16-byte aligned where kVec is a multiple of 4).
template <int kVec>
__device__ __forceinline__ void add_terms(float* at, const float (&terms)[kVec]) {
  if constexpr (kVec % 4 == 0) {
#pragma unroll
    for (int q = 0; q < kVec / 4; ++q) {
      float4 sum = reinterpret_cast<float4*>(at)[q];
      sum.x += terms[4 * q];
      sum.y += terms[4 * q + 1];
      sum.z += terms[4 * q + 2];
      sum.w += terms[4 * q + 3];
      reinterpret_cast<float4*>(at)[q] = sum;
    }
  } else {
#pragma unroll
    for (int e = 0; e < kVec; ++e) at[e] += terms[e];
  }
}

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

// The row means of h and of h * x_hat from this thread's sums of them: LayerNorm's two in one round
// of barriers; RMSNorm has no mean of h (0).
template <NormKind kKind, class Reduction>
__device__ __forceinline__ float2 row_means(Reduction& reduce, float h_sum, float projection, float inv_len) {
  if constexpr (kKind == NormKind::layer) {
    const auto add = [](float a, float b) { return a + b; };
    const float2 sums = reduce.pair(h_sum, projection, 0.0f, 0.0f, add, add);
    return {sums.x * inv_len, sums.y * inv_len};
  } else {
    return {0.0f, reduce.sum(projection) * inv_len};
  }
}

// grad_weight and grad_bias, where asked for (non-null): kPartials, per-block column sums into
// `partial`, added by add_partials; otherwise the kernel has a single row, whose terms are the
// gradients. kPartials is a template parameter, not a run-time mode: compiled for one of them,
// both the partials kernels and the single-row (decode) kernels measured faster. With partials, the
// dynamic shared memory holds this block's column sums: blockDim.y rows of N floats for the weight
// terms, then as many for the bias terms, each thread touching only its own columns. The parameter
// terms need only the saved statistics, so they are taken in the pass of the row sums, before the
// reduction: the row's values are unpacked twice, not three times.
// kRowBarriers: blocks of several rows, each reducing on its own barriers (row_sync). kWhole: every
// row fills its threads' vectors (launch_whole_rows_or_not).
template <class T, NormKind kKind, int kVec, int kVecs, bool kPartials, bool kRowBarriers = false, bool kWhole = false>
__global__ void __launch_bounds__(max_threads(kVec, kVecs))
    row_norm_backward_in_registers(const BackwardPointers<T> p, const RowShape s) {
  using P = Pack<T, kVec>;
  extern __shared__ float4 column_storage[];
  const int vectors = s.row_len / kVec;
  const int64_t terms_per_gradient = int64_t{blockDim.y} * s.row_len;
  // This thread's column sums of vector i: weight terms, and bias terms terms_per_gradient later.
  const auto column_terms = [&](int i) {
    return reinterpret_cast<float*>(column_storage) + threadIdx.y * int64_t{s.row_len} +
           int64_t{threadIdx.x + i * blockDim.x} * kVec;
  };
  if constexpr (kPartials) {
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (static_cast<int>(threadIdx.x + i * blockDim.x) >= vectors) continue;
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        if (p.grad_weight) column_terms(i)[e] = 0;
        if (p.grad_bias) column_terms(i)[terms_per_gradient + e] = 0;
      }
    }
  }
  for_each_held_row<kVec, kVecs, kRowBarriers>(s, [&](const HeldRow& r, HeldRowReduction<kVecs, kRowBarriers>& reduce) {
    P x[kVecs], dy[kVecs], weight[kVecs];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds<kWhole>(i)) continue;
      const int v = r.vector(i);
      // Loaded as torch.compile's kernels load theirs (core/evict_last.cuh): faster than __ldg on
      // the decode rows, and on the prefill rows in the staged kernel (staged_rows.cuh).
      x[i] = load_evict_last(reinterpret_cast<const P*>(p.x) + r.first + v, evict_last_policy());
      dy[i] = load_evict_last(reinterpret_cast<const P*>(p.grad_out) + r.first + v, evict_last_policy());
      if (p.weight) weight[i] = load_evict_last(reinterpret_cast<const P*>(p.weight) + v, evict_last_policy());
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
      if (!r.holds<kWhole>(i)) continue;
      float weight_terms[kVec], bias_terms[kVec];
      for_terms(i, [&](int e, float x_hat, float h, float dy_e) {
        h_sum += h;
        projection += h * x_hat;
        weight_terms[e] = dy_e * x_hat;
        bias_terms[e] = dy_e;
      });
      if constexpr (kPartials) {
        if (p.grad_weight) add_terms<kVec>(column_terms(i), weight_terms);
        if (p.grad_bias) add_terms<kVec>(column_terms(i) + terms_per_gradient, bias_terms);
      } else {
        if (p.grad_weight) reinterpret_cast<P*>(p.grad_weight)[r.vector(i)] = pack<T, kVec>(weight_terms);
        if (p.grad_bias) reinterpret_cast<P*>(p.grad_bias)[r.vector(i)] = dy[i];
      }
    }
    const float2 means = row_means<kKind>(reduce, h_sum, projection, s.inv_len);
    const float h_mean = means.x;
    projection = means.y;

#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds<kWhole>(i)) continue;
      float out[kVec];
      for_terms(i, [&](int e, float x_hat, float h, float) {
        out[e] = input_gradient(x_hat, h, rstd, h_mean, projection);
      });
      reinterpret_cast<P*>(p.grad_x)[r.first + r.vector(i)] = pack<T, kVec>(out);
    }
  });
  if constexpr (!kPartials) return;
  // The block's sums (its rows of threadIdx.y added in order) as row blockIdx.x of the partials.
  __syncthreads();
  if (threadIdx.y != 0) return;
  const int64_t partials_per_gradient = int64_t{gridDim.x} * s.row_len;
  // gradient 0: the weight's terms, 1: the bias's.
  const auto write_sums = [&](int i, int gradient) {
    float sums[kVec] = {};
    for (unsigned y = 0; y < blockDim.y; ++y) {
      const float* const terms = reinterpret_cast<const float*>(column_storage) + gradient * terms_per_gradient +
                                 y * int64_t{s.row_len} + int64_t{threadIdx.x + i * blockDim.x} * kVec;
#pragma unroll
      for (int e = 0; e < kVec; ++e) sums[e] += terms[e];
    }
    float* const at = p.partial + gradient * partials_per_gradient + blockIdx.x * int64_t{s.row_len} +
                      int64_t{threadIdx.x + i * blockDim.x} * kVec;
#pragma unroll
    for (int e = 0; e < kVec; ++e) at[e] = sums[e];
  };
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    if (static_cast<int>(threadIdx.x + i * blockDim.x) >= vectors) continue;
    if (p.grad_weight) write_sums(i, 0);
    if (p.grad_bias) write_sums(i, 1);
  }
}

// Many rows whose vectors fill whole blocks, staged ahead (staged_rows.cuh): x and grad_out rows,
// the weight (ones without one) as a column vector. The parameter terms of the thread's columns add
// up in registers over its rows and leave once, as the block's row of the partials. kEvictFirst: x
// and grad_out copied evict-first (launch_backward_staged says where).
template <class T, NormKind kKind, int kVecs, bool kEvictFirst>
__global__ void __launch_bounds__(kMaxStagedThreads)
    row_norm_backward_staged(const BackwardPointers<T> p, const RowShape s) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  extern __shared__ uint4 staged_shared[];
  __shared__ alignas(16) float partials[2 * kHeldRowPartials];
  unsigned reductions = 0;
  StagedRows<kVecs, 2, 1, kEvictFirst> staged(staged_shared, s.rows);
  const int threads = blockDim.x, vectors = s.row_len / kVec;
  float ones[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) ones[e] = 1;
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    staged.set_column_vector(
        0, i,
        p.weight ? __ldg(reinterpret_cast<const uint4*>(p.weight) + threadIdx.x + i * threads) : pack<T, kVec>(ones));
  }
  const auto statistics = [&](int64_t row) {
    const bool exists = row < s.rows;
    return float2{kKind == NormKind::layer && exists ? p.mean[row] : 0.0f, exists ? p.rstd[row] : 0.0f};
  };

  float weight_terms[kVecs][kVec] = {}, bias_terms[kVecs][kVec] = {};
  float2 stats = statistics(blockIdx.x);
  const uint4* const tensors[2] = {reinterpret_cast<const uint4*>(p.x), reinterpret_cast<const uint4*>(p.grad_out)};
  staged.for_each_row(tensors, [&](int64_t row, int stage) {
    const float2 next_stats = statistics(row + gridDim.x);
    const float rstd = stats.y, centred_shift = -stats.x * stats.y;  // x_hat = x * rstd + centred_shift
    // Calls f(e, x, dy, weight) for each element e of this row's vector i.
    const auto for_elements = [&](int i, auto f) {
      float xs[kVec], dys[kVec], ws[kVec];
      unpack<T, kVec>(staged.row_vector(stage, 0, i), xs);
      unpack<T, kVec>(staged.row_vector(stage, 1, i), dys);
      unpack<T, kVec>(staged.column_vector(0, i), ws);
#pragma unroll
      for (int e = 0; e < kVec; ++e) f(e, xs[e], dys[e], ws[e]);
    };
    // The RMS kind's sums leave rstd out (dy * x taken once for both), LayerNorm's carry it in x_hat.
    float h_sum = 0, projection = 0;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      for_elements(i, [&](int e, float x, float dy, float weight) {
        if constexpr (kKind == NormKind::layer) {
          const float x_hat = fmaf(x, rstd, centred_shift), h = dy * weight;
          h_sum += h;
          projection = fmaf(h, x_hat, projection);
          weight_terms[i][e] = fmaf(dy, x_hat, weight_terms[i][e]);
          bias_terms[i][e] += dy;
        } else {
          const float dy_x = dy * x;
          projection = fmaf(weight, dy_x, projection);
          weight_terms[i][e] = fmaf(rstd, dy_x, weight_terms[i][e]);
        }
      });
    }
    RowReduction<false> reduce(partials, reductions, nullptr);
    const float2 means = row_means<kKind>(reduce, h_sum, projection, s.inv_len);
    const float h_mean = means.x;
    // The RMS kind's sum left rstd out.
    projection = kKind == NormKind::layer ? means.y : means.y * rstd;
    // grad_x = rstd * (h - h_mean - x_hat * projection) = rstd * h + x_scale * x + shift.
    const float x_scale = -rstd * projection * rstd, shift = -rstd * (h_mean + projection * centred_shift);
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      float out[kVec];
      for_elements(i, [&](int e, float x, float dy, float weight) {
        out[e] = fmaf(rstd, dy * weight, fmaf(x_scale, x, shift));
      });
      reinterpret_cast<uint4*>(p.grad_x)[row * vectors + threadIdx.x + i * threads] = pack<T, kVec>(out);
    }
    stats = next_stats;
  });
  // The block's row of the partials: gradient 0 the weight's terms, 1 the bias's.
  const auto write_terms = [&](const float (&terms)[kVecs][kVec], int gradient) {
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      store_floats<kVec>(p.partial + (gradient * int64_t{gridDim.x} + blockIdx.x) * s.row_len +
                             int64_t{threadIdx.x + i * threads} * kVec,
                         terms[i]);
    }
  };
  if (p.grad_weight) write_terms(weight_terms, 0);
  if constexpr (kKind == NormKind::layer) {
    if (p.grad_bias) write_terms(bias_terms, 1);
  }
}

// Rows too long for registers, one element per access: the second pass reads the row again.
template <class T, NormKind kKind>
__global__ void __launch_bounds__(kStreamingThreads)
    row_norm_backward_streaming(const BackwardPointers<T> p, const RowShape s) {
  __shared__ alignas(16) float partial[padded_warps(kStreamingThreads / kWarp)];
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

// add_partials' blocks: 64 columns of 16 lanes, so that 16384 columns are 256 blocks of 1024
// threads, one wave on 132 SMs (32 columns of 32 lanes ran two), with eight rows a lane in flight:
// measured faster on every width.
constexpr int kPartialColumns = 2 * kWarp;
constexpr int kPartialLanes = 16;

// Column j of gradient g (weight 0, bias 1; blockIdx.y counts the gradients asked for) as the sum
// of column j over the `blocks` rows of its partials ([blocks, N] each, the weight's first), in row
// order: lane threadIdx.y adds rows y, y + kPartialLanes, ..., then the lanes are added in order.
// A warp reads 32 adjacent floats of a partial row; one column a thread keeps N / 64 blocks a
// gradient (four columns a thread gave 32 blocks in all for N = 4096).
template <class T>
__global__ void __launch_bounds__(kPartialColumns * kPartialLanes)
    add_partials(const float* __restrict__ partial, int64_t blocks, int row_len, T* grad_weight, T* grad_bias) {
  __shared__ float lane_sums[kPartialLanes][kPartialColumns];
  const int gradient = static_cast<int>(blockIdx.y) + (grad_weight ? 0 : 1);
  const float* const rows = partial + gradient * blocks * row_len;
  const int column = static_cast<int>(blockIdx.x) * kPartialColumns + static_cast<int>(threadIdx.x);
  float sum = 0;
  if (column < row_len) {
#pragma unroll 8
    for (int64_t block = threadIdx.y; block < blocks; block += kPartialLanes) sum += rows[block * row_len + column];
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y != 0 || column >= row_len) return;
  float total = 0;
  for (int lane = 0; lane < kPartialLanes; ++lane) total += lane_sums[lane][threadIdx.x];
  (gradient == 0 ? grad_weight : grad_bias)[column] = from_float<T>(total);
}

// Shared memory a block may have, static and dynamic together, without asking for more
// (cudaFuncSetAttribute).
constexpr size_t kDefaultSharedBytes = 48 * 1024;

// The column sums' bytes a row of a block: N floats a gradient.
template <class T>
size_t column_sum_bytes(const BackwardPointers<T>& p, const RowShape& s) {
  return static_cast<size_t>(s.row_len) * sizeof(float) * (p.grad_bias ? 2 : 1);
}

// A row kernel's launch with partials: the dynamic shared memory of its column sums, blockDim.y
// rows of N floats a gradient (asked for beyond the default), and its blocks, each writing a row
// of the partials: at most `groups` (its groups of rows), every one resident, since a second wave
// would only add partial rows, and at most the workspace's rows.
struct PartialsLaunch {
  size_t shared_bytes;
  int64_t blocks;
};

template <class T, class Kernel>
PartialsLaunch partials_launch(std::string_view op, Kernel kernel, const BackwardPointers<T>& p, const RowShape& s,
                               dim3 block, int64_t groups, int multiprocessors) {
  const size_t shared_bytes = block.y * column_sum_bytes(p, s);
  const auto* function = reinterpret_cast<const void*>(kernel);
  if (shared_bytes + kHeldRowSharedBytes > kDefaultSharedBytes) set_dynamic_shared_bytes(op, function, shared_bytes);
  const int resident = resident_blocks(op, function, static_cast<int>(block.x * block.y), shared_bytes);
  return {shared_bytes, std::min({groups, int64_t{std::max(resident, 1)} * multiprocessors,
                                  backward_partial_blocks({s.rows, s.row_len})})};
}

// Column sums a block of the partials kernel keeps in shared memory, at most (rows of N floats a
// gradient).
constexpr size_t kMaxColumnSumBytes = 160 * 1024;

// The row kernel with partials over rows of up to 512 threads at two vectors a thread (N <= 4096
// f32, 8192 f16/bf16): its blocks are few, since each writes a row of N floats a gradient, and loop
// over the rows. Two vectors a thread keep it at 64 registers, and each block holds several rows,
// each reducing on its own barriers (row_sync), so that an SM runs 32 warps. One row a 256-thread
// block, 8 warps, two blocks an SM, had left the schedulers issuing 0.37 instructions a cycle and
// DRAM at a third of its peak (ncu); with the next row's loads in flight it was no faster. More
// warps an SM is what helped: two rows a 512-thread block at N = 4096 (four a 1024-thread block
// measured slower), two rows a 1024-thread block at N = 8192 (one a 512-thread block slower).
// Longer rows keep eight vectors at 256 threads: one 1024-thread row a block was slower. Returns the
// blocks, the rows of the partials.
template <class T, NormKind kKind>
int64_t launch_backward_partials(std::string_view op, const BackwardPointers<T>& p, const RowShape& s,
                                 int multiprocessors, cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  constexpr int kVecs = 2;
  const auto kernel = row_norm_backward_in_registers<T, kKind, kVec, kVecs, true, true>;
  const auto threads = static_cast<int>(ceil_div(s.row_len / kVec, kVecs * kWarp) * kWarp);
  // Rows of up to 256 threads in blocks of 512 (two an SM), longer ones in blocks of 1024.
  const int block_threads = threads <= kManyRowsThreads ? kMaxThreads / 2 : kMaxThreads;
  const size_t row_bytes = column_sum_bytes(p, s);
  const int64_t rows_per_block =
      std::min<int64_t>({block_threads / threads, kMaxRowBarriers, static_cast<int64_t>(kMaxColumnSumBytes / row_bytes),
                         ceil_div(s.rows, int64_t{multiprocessors})});
  const dim3 block(threads, static_cast<unsigned>(rows_per_block));
  const auto [shared_bytes, blocks] =
      partials_launch(op, kernel, p, s, block, ceil_div(s.rows, rows_per_block), multiprocessors);
  kernel<<<static_cast<unsigned>(blocks), block, shared_bytes, stream>>>(p, s);
  return blocks;
}

// Runs row_norm_backward_staged where it applies: many rows (one an SM or more) of 16-byte vectors
// that fill its blocks (staged_vecs), as many blocks as are resident, within the workspace's rows of
// partials. Returns the blocks, 0 where it does not apply.
// x and grad_out are copied evict-first where together they fit the L2: they are read once, and
// keeping them would push out the weight. For LayerNorm also where they fit twice the L2; the RMS
// kind at 8192 and both kinds at 16384 columns measured slower with evict-first (docs/perf/norm.md).
template <class T, NormKind kKind>
int64_t launch_backward_staged(std::string_view op, const BackwardPointers<T>& p, const RowShape& s,
                               int multiprocessors, int64_t l2_bytes, cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  if (!has_many_rows(s, multiprocessors) || !rows_of_vectors<T>({p.grad_out, p.x, p.weight, p.grad_x}, s.row_len)) {
    return 0;
  }
  const int vectors = s.row_len / kVec;
  const int64_t input_bytes = 2 * s.rows * s.row_len * int64_t{sizeof(T)};
  const bool evict_first = input_bytes <= l2_bytes || (kKind == NormKind::layer && input_bytes <= 2 * l2_bytes);
  const auto launch = [&]<int kVecs>() {
    const auto kernel = evict_first ? row_norm_backward_staged<T, kKind, kVecs, true>
                                    : row_norm_backward_staged<T, kKind, kVecs, false>;
    return launch_staged(op, kernel, vectors / kVecs, StagedRows<kVecs, 2, 1>::bytes(vectors), s.rows,
                         backward_partial_blocks({s.rows, s.row_len}), multiprocessors, stream, p, s);
  };
  switch (staged_vecs(vectors)) {
    case 2: return launch.template operator()<2>();
    case 4: return launch.template operator()<4>();
    default: return 0;
  }
}

// The staged kernel where it applies, else the partials kernel, else the row kernel of the
// forward's shapes: one row a block (or short rows sharing one), with partials over rows of single
// elements or of more than 512 threads' vectors, and the streaming kernel with the column kernel
// beyond.
template <class T, NormKind kKind>
void launch_backward_typed(std::string_view op, const BackwardPointers<T>& p, const RowShape& s, int multiprocessors,
                           int64_t l2_bytes, cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const bool parameters = p.grad_weight || p.grad_bias;
  const bool partials = parameters && s.rows > 1;
  bool column_kernel = parameters;  // until the row kernel takes the gradients
  int64_t blocks = 0;               // the row kernel's blocks, rows of the partials
  if (const int64_t staged_blocks = launch_backward_staged<T, kKind>(op, p, s, multiprocessors, l2_bytes, stream)) {
    column_kernel = false;
    if (partials) blocks = staged_blocks;
  } else if (partials && s.row_len / kVec <= kMaxThreads &&
      rows_of_vectors<T>({p.grad_out, p.x, p.weight, p.grad_x}, s.row_len)) {
    blocks = launch_backward_partials<T, kKind>(op, p, s, multiprocessors, stream);
    column_kernel = false;
  } else if (s.rows > 0) {
    launch_row_kernel<T>(
        {p.grad_out, p.x, p.weight, p.grad_x, p.grad_weight, p.grad_bias}, s, multiprocessors,
        // The partials' column sums index the block's own threads: rows are shared only without them.
        partials ? kUnsharedSpread : kHeavySpread,
        [&]<int kRowVec, int kVecs>(dim3 grid, dim3 block, unsigned cluster) {
          launch_whole_rows_or_not<kRowVec, kVecs, 2>(s, block, cluster, [&]<bool kWhole>() {
            column_kernel = false;
            if (partials) {
              const auto kernel = row_norm_backward_in_registers<T, kKind, kRowVec, kVecs, true, false, kWhole>;
              const PartialsLaunch launch = partials_launch(op, kernel, p, s, block, grid.x, multiprocessors);
              grid.x = static_cast<unsigned>(launch.blocks);
              blocks = launch.blocks;
              launch_clustered(kernel, grid, block, cluster, launch.shared_bytes, stream, p, s);
            } else {
              const auto kernel = row_norm_backward_in_registers<T, kKind, kRowVec, kVecs, false, false, kWhole>;
              launch_clustered(kernel, grid, block, cluster, 0, stream, p, s);
            }
          });
        },
        [&](unsigned grid) { row_norm_backward_streaming<T, kKind><<<grid, kStreamingThreads, 0, stream>>>(p, s); });
  }
  if (column_kernel) {
    const auto grid = static_cast<unsigned>((s.row_len + kColumnsPerBlock - 1) / kColumnsPerBlock);
    row_norm_column_sums<T, kKind><<<grid, dim3(kColumnsPerBlock, kColumnLanes), 0, stream>>>(p, s);
  }
  if (blocks == 0) return;
  const dim3 grid(static_cast<unsigned>((s.row_len + kPartialColumns - 1) / kPartialColumns),
                  (p.grad_weight ? 1 : 0) + (p.grad_bias ? 1 : 0));
  add_partials<T><<<grid, dim3(kPartialColumns, kPartialLanes), 0, stream>>>(p.partial, blocks, s.row_len,
                                                                           p.grad_weight, p.grad_bias);
}

}  // namespace solops::detail::row_norm

namespace solops::detail {

template <NormKind kKind>
void launch_rows_backward(std::string_view op, const RowGeometry& g, const RowNormBackwardTensors& t,
                          cudaStream_t stream) {
  using namespace row_norm;
  const RowShape s = row_shape(g, {kKind});
  const int multiprocessors = multiprocessor_count(t.x.device);
  const int64_t l2_bytes = l2_cache_bytes(t.x.device);
  dispatch_float(t.x.dtype, [&]<class T>() {
    const BackwardPointers<T> p{data_of<T>(&t.grad_out),   data_of<T>(&t.x),          data_of<T>(t.weight),
                                data_of<float>(t.mean),    data_of<float>(&t.rstd),   data_of<T>(&t.grad_x),
                                data_of<T>(t.grad_weight), data_of<T>(t.grad_bias),  data_of<float>(t.workspace)};
    launch_backward_typed<T, kKind>(op, p, s, multiprocessors, l2_bytes, stream);
  });
  check_launch(op);
}

}  // namespace solops::detail
