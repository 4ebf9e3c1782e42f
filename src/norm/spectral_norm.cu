// SpectralNormPowerIterFwd kernels. An iteration is two dependent GEMVs, each followed by the norm of
// its result, so it runs as a chain of kernels on the caller's stream:
//   W^T u  a block takes a tile of columns (32 lanes of kVec adjacent columns: one 16-byte load of a
//          row where W's rows are 16-byte aligned, one element otherwise) and a chunk of rows, its 8
//          warps every 8th row of the chunk; a lane sums its columns in f32 in row order, then the
//          warps' sums are added in warp order. One chunk writes v_out; more write f32 partials to
//          the workspace, which a second kernel adds in chunk order.
//   W t    t = v_out = W^T u before its normalization: W v = (W t) / d_v with d_v = max(||t||, eps),
//          so W takes t and the scale is applied after both GEMVs, not by a kernel between them.
//          One block a row, 16-byte loads of W and of t, f32 sums in a fixed order, into u_out.
//   v, u   finish_iteration, one block of 1024 threads holding both vectors in registers: v_out =
//          t / d_v, W v = u_out / d_v, u_out = W v / max(||W v||, eps), the squares summed in a fixed
//          order. The last iteration also takes sigma = u^T (W v) there, so sigma needs no third
//          GEMV. Vectors too long to hold are normalized in place one after the other (normalize),
//          v before W v reads it.
// n_iter = 0 writes W v into u_out, takes sigma = u^T (W v) from it, then copies u and v out.
// A W of one row (the decode shape [1, I]) with n_iter >= 1 runs one kernel instead of the chain
// (one_row_power_iteration, below) where the row fits in registers.
// Nothing is atomic and every launch shape follows from the shape and the pointers' alignment, so
// a call gives the same bits on every run.
#include <algorithm>

#include "core/device.hpp"
#include "core/evict_last.cuh"
#include "core/integer.hpp"
#include "norm/held_row.cuh"
#include "norm/spectral_norm.hpp"

namespace solops::detail::spectral_norm_kernels {

using row_norm::kVectorBytes;
using row_norm::for_each_strided;
using row_norm::kWarp;
using row_norm::nan_max;
using row_norm::Pack;
using row_norm::row_sum;
using row_norm::store_floats;
using row_norm::unpack;

constexpr int kColumnWarps = 8;
constexpr int kColumnThreads = kColumnWarps * kWarp;
// Rows of W each lane of column_sums loads before it sums any, and its blocks an SM (the plan's
// split counts on four: spectral_norm_rules.cpp's kTargetBlocks).
constexpr int kRowsInFlight = 6;
constexpr int kColumnBlocksPerSm = 4;
constexpr int kRowThreads = 256;
constexpr int kVectorThreads = 1024;
// Loads a thread keeps in flight in the single-block walks over a vector (for_each_strided).
constexpr int kInFlight = 8;
// W v's grid: 16 blocks an SM fill the device; more rows are walked grid-stride.
constexpr int64_t kRowBlocksPerMultiprocessor = 16;

struct Matrix {
  int64_t rows;
  int cols;
};

// out[blockIdx.y * cols + c] = sum over the rows r of chunk blockIdx.y of w[r, c] * u[r].
template <class T, int kVec>
__global__ void __launch_bounds__(kColumnThreads, kColumnBlocksPerSm)
    column_sums(const T* __restrict__ w, const float* __restrict__ u, float* __restrict__ out, const Matrix m,
                int64_t chunk_rows) {
  constexpr int kTile = kWarp * kVec;
  __shared__ float warp_sums[kColumnWarps][kTile];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t tile_first = int64_t{blockIdx.x} * kTile, first_col = tile_first + lane * kVec;
  const int64_t begin = int64_t{blockIdx.y} * chunk_rows, end = ::min(begin + chunk_rows, m.rows);
  float sums[kVec] = {};
  // With kVec > 1, cols is a multiple of kVec: a vector that starts inside the row ends inside it.
  // A warp's rows kRowsInFlight at a time, all loaded before any is summed: written as one loop,
  // ptxas placed each load just above its multiply-adds (a little slower). W, u and (row_dots) W
  // again load as torch.compile's kernels load theirs (core/evict_last.cuh), faster than __ldg over
  // the whole chain.
  if (first_col < m.cols) {
    for (int64_t first = begin + warp; first < end; first += kRowsInFlight * kColumnWarps) {
      Pack<T, kVec> bits[kRowsInFlight];
      float weights[kRowsInFlight];
#pragma unroll
      for (int k = 0; k < kRowsInFlight; ++k) {
        const int64_t row = first + k * kColumnWarps;
        if (row >= end) continue;
        weights[k] = load_evict_last(u + row, evict_last_policy());
        bits[k] = load_evict_last(reinterpret_cast<const Pack<T, kVec>*>(w + row * m.cols + first_col),
                                  evict_last_policy());
      }
#pragma unroll
      for (int k = 0; k < kRowsInFlight; ++k) {
        if (first + k * kColumnWarps >= end) continue;
        float values[kVec];
        unpack<T, kVec>(bits[k], values);
#pragma unroll
        for (int e = 0; e < kVec; ++e) sums[e] += values[e] * weights[k];
      }
    }
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e) warp_sums[warp][lane * kVec + e] = sums[e];
  __syncthreads();
  for (int c = threadIdx.x; c < kTile && tile_first + c < m.cols; c += kColumnThreads) {
    float total = 0;
    for (int k = 0; k < kColumnWarps; ++k) total += warp_sums[k][c];
    out[int64_t{blockIdx.y} * m.cols + tile_first + c] = total;
  }
}

// out[c] = the sum of the chunks' partials of column c, in chunk order.
__global__ void __launch_bounds__(kRowThreads)
    add_chunks(const float* __restrict__ partial, float* __restrict__ out, const Matrix m, int64_t chunks) {
  for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < m.cols; c += int64_t{gridDim.x} * blockDim.x) {
    float total = 0;
    for (int64_t k = 0; k < chunks; ++k) total += partial[k * m.cols + c];
    out[c] = total;
  }
}

// kVec floats of v from `at`: one or two 16-byte loads (16-byte aligned `at`), or one element.
template <int kVec>
__device__ __forceinline__ void load_floats(const float* at, float (&values)[kVec]) {
  if constexpr (kVec == 1) {
    values[0] = __ldg(at);
  } else {
#pragma unroll
    for (int q = 0; q < kVec / 4; ++q) {
      const float4 four = __ldg(reinterpret_cast<const float4*>(at) + q);
      values[4 * q] = four.x;
      values[4 * q + 1] = four.y;
      values[4 * q + 2] = four.z;
      values[4 * q + 3] = four.w;
    }
  }
}

// out[r] = sum over c of w[r, c] * v[c], one block a row.
template <class T, int kVec>
__global__ void __launch_bounds__(kRowThreads)
    row_dots(const T* __restrict__ w, const float* __restrict__ v, float* __restrict__ out, const Matrix m) {
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kRowThreads / kWarp)];
  const int vectors = m.cols / kVec;
  for (int64_t row = blockIdx.x; row < m.rows; row += gridDim.x) {
    const auto* w_row = reinterpret_cast<const Pack<T, kVec>*>(w + row * m.cols);
    float sum = 0;
    // Unrolled so that a thread's loads of several vectors are in flight together (a decode row is
    // 8 vectors a thread).
#pragma unroll 4
    for (int j = threadIdx.x; j < vectors; j += blockDim.x) {
      float values[kVec], right[kVec];
      unpack<T, kVec>(load_evict_last(w_row + j, evict_last_policy()), values);
      load_floats<kVec>(v + j * kVec, right);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += values[e] * right[e];
    }
    sum = row_sum(sum, warp_sums);
    if (threadIdx.x == 0) out[row] = sum;
  }
}

// a = a / max(||a||, eps) in place; a NaN norm spreads to every element, as F.normalize's clamp_min
// keeps it (fmaxf would drop it). Where sigma is given, also sigma = sum of a_new * a_old.
// Each pass keeps eight loads a thread in flight: one at a time, a 16384-element vector took 16
// dependent round trips a pass.
__global__ void __launch_bounds__(kVectorThreads) normalize(float* a, int64_t n, float eps, float* sigma) {
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kVectorThreads / kWarp)];
  const auto load = [a](int64_t i) { return a[i]; };
  float squares = 0;
  for_each_strided<kInFlight>(n, load, [&](float value, int64_t) { squares += value * value; });
  const float divisor = nan_max(sqrtf(row_sum(squares, warp_sums)), eps);
  float dot = 0;
  for_each_strided<kInFlight>(n, load, [&](float value, int64_t i) {
    const float unit = value / divisor;
    a[i] = unit;
    dot += unit * value;
  });
  if (sigma) {
    dot = row_sum(dot, warp_sums);
    if (threadIdx.x == 0) *sigma = dot;
  }
}

// kWidth floats from `at` (16-byte aligned where kWidth is 4) that the kernel writes later: plain
// loads, not load_floats' read-only ones.
template <int kWidth>
__device__ __forceinline__ void load_written(const float* at, float (&values)[kWidth]) {
  if constexpr (kWidth == 1) {
    values[0] = *at;
  } else {
    static_assert(kWidth == 4);
    const float4 four = *reinterpret_cast<const float4*>(at);
    values[0] = four.x;
    values[1] = four.y;
    values[2] = four.z;
    values[3] = four.w;
  }
}

// Elements of each vector a thread of finish_iteration holds: vectors of up to 16384 elements (the
// catalogue's O and I) in one round of loads.
constexpr int kHeldElements = 16;

// The end of an iteration where v_out holds t = W^T u and u_out holds W t (cols and rows elements,
// each at most kHeldElements * kVectorThreads): v_out = t / d_v, and u_out = W v / max(||W v||, eps)
// with W v = (W t) / d_v, as normalize takes each; where sigma is given, sigma = u_out . W v. One
// block, both vectors loaded in one round and held, where normalize's two launches walked each
// vector twice (measured faster than those two).
// kWidth: elements an access, 4 (16-byte loads and stores) where both vectors are 16-byte aligned
// and their lengths multiples of 4: its time went to issuing 64 scalar accesses a thread (ncu:
// lg_throttle).
template <int kWidth>
__global__ void __launch_bounds__(kVectorThreads)
    finish_iteration(float* __restrict__ v_out, float* __restrict__ u_out, int cols, int rows, float eps,
                     float* __restrict__ sigma) {
  constexpr int kSlots = kHeldElements / kWidth;
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kVectorThreads / kWarp)];
  // The first element of this thread's slot k; a slot lies wholly inside a vector or past its end.
  const auto first = [](int k) { return (static_cast<int>(threadIdx.x) + k * kVectorThreads) * kWidth; };
  float t[kSlots][kWidth] = {}, product[kSlots][kWidth] = {};
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    if (first(k) < cols) load_written<kWidth>(v_out + first(k), t[k]);
    if (first(k) < rows) load_written<kWidth>(u_out + first(k), product[k]);
  }
  // x / d as x times 1 / d, a multiply where a division takes about ten instructions, wherever d
  // and 1 / d are finite: then the two agree within rounding. Otherwise the division, so that NaN,
  // infinite and zero norms give what normalize gives.
  const auto by_reciprocal = [](float d) { return isfinite(d) && isfinite(1.0f / d); };
  float squares = 0;
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
#pragma unroll
    for (int e = 0; e < kWidth; ++e) squares += t[k][e] * t[k][e];
  }
  const float v_divisor = nan_max(sqrtf(row_sum(squares, warp_sums)), eps);
  // t = v_out and W t (product) divided by v_divisor, in place.
  const auto divide_by_v = [&]<bool kByReciprocal>() {
    const float reciprocal = 1.0f / v_divisor;
#pragma unroll
    for (int k = 0; k < kSlots; ++k) {
#pragma unroll
      for (int e = 0; e < kWidth; ++e) {
        t[k][e] = kByReciprocal ? t[k][e] * reciprocal : t[k][e] / v_divisor;
        product[k][e] = kByReciprocal ? product[k][e] * reciprocal : product[k][e] / v_divisor;
      }
    }
  };
  if (by_reciprocal(v_divisor)) divide_by_v.template operator()<true>();
  else divide_by_v.template operator()<false>();
  squares = 0;
#pragma unroll
  for (int k = 0; k < kSlots; ++k) {
    if (first(k) >= rows) continue;
#pragma unroll
    for (int e = 0; e < kWidth; ++e) squares += product[k][e] * product[k][e];
  }
  const float u_divisor = nan_max(sqrtf(row_sum(squares, warp_sums)), eps);
  float dot = 0;
  const auto write = [&]<bool kByReciprocal>() {
    const float reciprocal = 1.0f / u_divisor;
#pragma unroll
    for (int k = 0; k < kSlots; ++k) {
      if (first(k) < cols) store_floats<kWidth>(v_out + first(k), t[k]);
      if (first(k) >= rows) continue;
      float unit[kWidth];
#pragma unroll
      for (int e = 0; e < kWidth; ++e) {
        unit[e] = kByReciprocal ? product[k][e] * reciprocal : product[k][e] / u_divisor;
        dot += unit[e] * product[k][e];
      }
      store_floats<kWidth>(u_out + first(k), unit);
    }
  };
  if (by_reciprocal(u_divisor)) write.template operator()<true>();
  else write.template operator()<false>();
  if (sigma) {
    dot = row_sum(dot, warp_sums);
    if (threadIdx.x == 0) *sigma = dot;
  }
}

// out = sum of a[i] * b[i], in a fixed order.
__global__ void __launch_bounds__(kVectorThreads)
    dot(const float* __restrict__ a, const float* __restrict__ b, int64_t n, float* __restrict__ out) {
  __shared__ alignas(16) float warp_sums[row_norm::padded_warps(kVectorThreads / kWarp)];
  float sum = 0;
  for_each_strided<kInFlight>(n, [a, b](int64_t i) { return a[i] * b[i]; },
                              [&sum](float product, int64_t) { sum += product; });
  sum = row_sum(sum, warp_sums);
  if (threadIdx.x == 0) *out = sum;
}

// The floats of a half-type vector (8 elements, 32 bytes).
constexpr int kLineVec = 8;

// Vector i of the row's v (kLineVec floats a thread) stored in whole lines: each warp's 32 vectors
// pass through its part of `staging`, so that each store instruction of the warp writes 512
// contiguous bytes, where a thread's two 16-byte stores wrote every other 16 bytes of 1 KB. Every
// thread of the warp calls it; those whose vector the row lacks store nothing. (On a decode row of
// 4096 one block writes 16 KB, and the scattered stores were a measured share of its time.)
template <bool kWhole>
__device__ __forceinline__ void store_in_lines(float* __restrict__ v_out, const row_norm::HeldRow& r, int i,
                                               const float (&values)[kLineVec], float* staging) {
  constexpr int kWarpFloats = kWarp * kLineVec;
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warp = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x) / kWarp;
  float* const stage = staging + warp * kWarpFloats;
  store_floats<kLineVec>(stage + lane * kLineVec, values);
  __syncwarp();
  const int first = r.vector(i) - lane;  // the warp's first vector
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int at = half * kWarpFloats / 2 + lane * 4;
    if (kWhole || (r.active && first + at / kLineVec < r.vectors)) {
      *reinterpret_cast<float4*>(v_out + int64_t{first} * kLineVec + at) = *reinterpret_cast<const float4*>(stage + at);
    }
  }
  __syncwarp();
}

// n_iter >= 1 iterations for W = w of one row: every vector of the iteration is then a multiple of
// w, so one sum of squares s = w . w gives them all. With t = W^T u = u w: ||t|| = |u| sqrt(s), so
// v = u w / d with d = max(|u| sqrt(s), eps), W v = u s / d, and the new u = W v / max(|W v|, eps);
// sigma = u (W v). The chain's steps in closed form (equal within rounding; the spec's tolerance is
// 1e-4), with its NaNs and infinities: v is u w / d element by element, not (u / d) w, so that a
// zero w gives 0 where u / d would overflow. w is held in registers as the row norms hold a row
// (for_each_held_row, spread over a cluster of blocks where it is long), so it is read once; every
// block finds the same s and writes its share of v_out, and the row's leading thread u_out and sigma.
// One kernel where the chain takes four (column_sums, normalize, row_dots, normalize), each a
// launch and a dependent round trip to memory.
// kWhole: the row fills its threads' vectors (row_norm::launch_whole_rows_or_not).
template <class T, int kVec, int kVecs, bool kWhole>
__global__ void __launch_bounds__(row_norm::max_threads(kVec, kVecs))
    one_row_power_iteration(const T* __restrict__ w, const float* __restrict__ u, float* __restrict__ u_out,
                            float* __restrict__ v_out, float* __restrict__ sigma, const row_norm::RowShape s,
                            int64_t n_iter, float eps) {
  using P = Pack<T, kVec>;
  [[maybe_unused]] __shared__ alignas(16) float staging[kVec == kLineVec ? row_norm::kMaxThreads * kLineVec : 1];
  row_norm::for_each_held_row<kVec, kVecs>(s, [&](const row_norm::HeldRow& r,
                                                  row_norm::HeldRowReduction<kVecs>& reduce) {
    P held[kVecs];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (r.holds<kWhole>(i)) {
        held[i] = load_evict_last(reinterpret_cast<const P*>(w) + r.vector(i), evict_last_policy());
      }
    }
    float left = __ldg(u), squares = 0;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds<kWhole>(i)) continue;
      float values[kVec];
      unpack<T, kVec>(held[i], values);
#pragma unroll
      for (int e = 0; e < kVec; ++e) squares += values[e] * values[e];
    }
    const float sum_of_squares = reduce.sum(squares);
    // `left` is u before the last step, `divisor` that step's d, `product` its W v.
    float divisor = 0, product = 0, next_left = left;
    for (int64_t step = 0; step < n_iter; ++step) {
      left = next_left;
      divisor = nan_max(fabsf(left) * sqrtf(sum_of_squares), eps);
      product = left * sum_of_squares / divisor;
      next_left = product / nan_max(fabsf(product), eps);
    }
    // v = u w / d as w times u / d, a multiply an element where a division took about ten
    // instructions (sixteen a thread in the 2-vector kernel), wherever u / d and d are finite: then
    // the two agree within rounding. Otherwise element by element, so that a zero w gives 0 where u / d
    // overflows and an infinite d NaN where u w overflows, as the reference's steps do.
    const float ratio = left / divisor;
    // The squares' loop is written out: through one helper taking a lambda, as WeightNorm's rows walk
    // theirs, ptxas made the 8-vector half-type kernels (since dropped) spill 16 bytes.
    const auto store_v = [&]<bool kByRatio>() {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        float values[kVec] = {};
        if (r.holds<kWhole>(i)) {
          unpack<T, kVec>(held[i], values);
#pragma unroll
          for (int e = 0; e < kVec; ++e) values[e] = kByRatio ? values[e] * ratio : left * values[e] / divisor;
        }
        if constexpr (kVec == kLineVec) {
          store_in_lines<kWhole>(v_out, r, i, values, staging);
        } else if (r.holds<kWhole>(i)) {
          store_floats<kVec>(v_out + int64_t{r.vector(i)} * kVec, values);
        }
      }
    };
    if (isfinite(ratio) && isfinite(divisor)) store_v.template operator()<true>();
    else store_v.template operator()<false>();
    if (r.leads()) {
      *u_out = next_left;
      *sigma = next_left * product;
    }
  });
}

// Whole warps with about four vectors each, at most kRowThreads.
int row_threads(int64_t vectors) {
  return static_cast<int>(std::clamp<int64_t>(ceil_div(vectors, 4 * kWarp), 1, kRowThreads / kWarp) * kWarp);
}

void copy(std::string_view op, float* to, const float* from, int64_t elements, cudaStream_t stream) {
  if (elements == 0) return;
  check_cuda(cudaMemcpyAsync(to, from, static_cast<size_t>(elements) * sizeof(float), cudaMemcpyDeviceToDevice,
                             stream),
             op, "cudaMemcpyAsync");
}

template <class T>
void run(std::string_view op, const SpectralNormPlan& plan, const SpectralNormTensors& t, cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const auto* w = static_cast<const T*>(t.x.data);
  const auto* u = static_cast<const float*>(t.u.data);
  const auto* v = static_cast<const float*>(t.v.data);
  auto* const sigma = static_cast<float*>(t.sigma.data);
  auto* const u_out = static_cast<float*>(t.u_out.data);
  auto* const v_out = static_cast<float*>(t.v_out.data);
  float* const partial = t.workspace ? static_cast<float*>(t.workspace->data) : nullptr;
  const Matrix m{plan.rows, static_cast<int>(plan.cols)};
  const auto eps = static_cast<float>(plan.eps);
  // The v that W v reads: the given one for n_iter = 0, else v_out.
  const float* const right = plan.n_iter > 0 ? v_out : v;
  const int64_t row_blocks = std::min(plan.rows, kRowBlocksPerMultiprocessor * multiprocessor_count(t.x.device));
  const auto launch = [&]<int kWidth>() {
    const auto w_times = [&](const float* vector, float* product) {
      row_dots<T, kWidth><<<grid_for(row_blocks), row_threads(plan.cols / kWidth), 0, stream>>>(w, vector, product, m);
    };
    if (plan.n_iter == 0) {
      w_times(v, u_out);  // W v, held in u_out until sigma is taken
      dot<<<1, kVectorThreads, 0, stream>>>(u, u_out, plan.rows, sigma);
      copy(op, u_out, u, plan.rows, stream);
      copy(op, v_out, v, plan.cols, stream);
      return;
    }
    const dim3 blocks(grid_for(ceil_div(plan.cols, kWarp * kWidth)), static_cast<unsigned>(plan.row_chunks));
    const bool split = plan.row_chunks > 1;
    const bool held = std::max(plan.rows, plan.cols) <= int64_t{kHeldElements} * kVectorThreads;
    const bool vectors = plan.rows % 4 == 0 && plan.cols % 4 == 0 && row_norm::aligned_to_vector(v_out) &&
                         row_norm::aligned_to_vector(u_out);
    for (int64_t step = 0; step < plan.n_iter; ++step) {
      column_sums<T, kWidth><<<blocks, kColumnThreads, 0, stream>>>(w, step == 0 ? u : u_out, split ? partial : v_out,
                                                                    m, plan.chunk_rows);
      if (split) {
        add_chunks<<<grid_for(ceil_div(plan.cols, kRowThreads)), kRowThreads, 0, stream>>>(partial, v_out, m,
                                                                                           plan.row_chunks);
      }
      float* const step_sigma = step + 1 == plan.n_iter ? sigma : nullptr;
      if (held) {
        w_times(v_out, u_out);
        const auto finish = vectors ? finish_iteration<4> : finish_iteration<1>;
        finish<<<1, kVectorThreads, 0, stream>>>(v_out, u_out, static_cast<int>(plan.cols),
                                                 static_cast<int>(plan.rows), eps, step_sigma);
      } else {
        normalize<<<1, kVectorThreads, 0, stream>>>(v_out, plan.cols, eps, nullptr);
        w_times(v_out, u_out);
        normalize<<<1, kVectorThreads, 0, stream>>>(u_out, plan.rows, eps, step_sigma);
      }
    }
  };
  using row_norm::aligned_to_vector;
  const auto chain = [&] {
    if (aligned_to_vector(w) && aligned_to_vector(right) && plan.cols % kVec == 0) launch.template operator()<kVec>();
    else launch.template operator()<1>();
  };
  if (plan.rows != 1 || plan.n_iter == 0 || plan.cols == 0) return chain();
  // W of one row: in registers, or by the chain where the row is too long to hold.
  const row_norm::RowShape one_row = row_norm::row_shape({1, static_cast<int>(plan.cols)}, {});
  row_norm::launch_row_kernel<T, 2>(
      {w, v_out}, one_row, multiprocessor_count(t.x.device), row_norm::kForwardSpread,
      [&]<int kWidth, int kVecs>(dim3 grid, dim3 block, unsigned cluster) {
        row_norm::launch_whole_rows_or_not<kWidth, kVecs, 2>(one_row, block, cluster, [&]<bool kWhole>() {
          row_norm::launch_clustered(one_row_power_iteration<T, kWidth, kVecs, kWhole>, grid, block, cluster, 0, stream,
                                     w, u, u_out, v_out, sigma, one_row, plan.n_iter, eps);
        });
      },
      [&](unsigned) { chain(); });
}

}  // namespace solops::detail::spectral_norm_kernels

namespace solops::detail {

void launch_spectral_norm(std::string_view op, const SpectralNormPlan& plan, const SpectralNormTensors& t,
                          cudaStream_t stream) {
  dispatch_float(t.x.dtype, [&]<class T>() { spectral_norm_kernels::run<T>(op, plan, t, stream); });
  check_launch(op);
}

}  // namespace solops::detail
