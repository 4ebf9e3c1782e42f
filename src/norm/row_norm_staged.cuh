// The row-norm kernel for many rows of 16-byte vectors (prefill): rows staged through shared memory.
//
// The in-register kernel loads a row, reduces it and writes it in turn, so DRAM idles while each
// block reduces, and the few blocks an SM holds cannot cover that. Here a persistent block keeps
// the next stages - 1 rows of its share in flight as bulk copies (core/bulk_copy.cuh) while it
// reduces and writes the current one: the bytes in flight no longer cost registers, and a thread
// holds only the vector it works on. Each pass reads the staged row from shared memory.
// The forward launcher, which picks between this kernel and those of row_norm.cuh, closes the file.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "core/bulk_copy.cuh"
#include "norm/row_norm.cuh"

namespace solops::detail::row_norm {

constexpr int kStagedThreads = 256;
constexpr int kMaxStages = 4;
// Shared memory a block stages into when two blocks share an SM (228 KB), and when one block has it.
constexpr int64_t kTwoBlockStaging = 96 * 1024;
constexpr int64_t kOneBlockStaging = 200 * 1024;

// Stages of `stage_bytes` (a row of x, and of residual for the fused ops) a block uses: as many as
// fit the two-block budget, or failing two, the one-block budget; 0 when not even two fit there.
inline int staged_stages(int64_t stage_bytes) {
  const auto fitting = [&](int64_t budget) { return static_cast<int>(std::min<int64_t>(kMaxStages, budget / stage_bytes)); };
  if (fitting(kTwoBlockStaging) >= 2) return fitting(kTwoBlockStaging);
  return fitting(kOneBlockStaging) >= 2 ? std::min(3, fitting(kOneBlockStaging)) : 0;
}

template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups>
__global__ void __launch_bounds__(kStagedThreads) row_norm_staged(const RowPointers<T> p, const RowShape s, int stages) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  constexpr int kInputs = kResidual ? 2 : 1;
  using P = Pack<T, kVec>;
  extern __shared__ __align__(16) unsigned char staged[];
  __shared__ uint64_t full[kMaxStages];
  __shared__ float partial[kStagedThreads / kWarp];
  const int vectors = s.row_len / kVec;
  const auto row_bytes = static_cast<uint32_t>(s.row_len * sizeof(T));
  // This block's rows: blockIdx.x, blockIdx.x + gridDim.x, ...; its k-th lives in stage k % stages.
  const int64_t block_rows = (s.rows - 1 - blockIdx.x) / gridDim.x + 1;
  const auto row_of = [&](int64_t k) { return blockIdx.x + k * gridDim.x; };
  const auto stage_of = [&](int64_t k) {
    return reinterpret_cast<const P*>(staged + k % stages * kInputs * static_cast<int64_t>(row_bytes));
  };
  const auto issue = [&](int64_t k) {  // by thread 0
    if (k >= block_rows) return;
    const int64_t first = row_of(k) * s.row_len;
    P* const target = const_cast<P*>(stage_of(k));
    bulk_copy(target, p.x + first, row_bytes, &full[k % stages]);
    if constexpr (kResidual) bulk_copy(target + vectors, p.residual + first, row_bytes, &full[k % stages]);
  };
  if (threadIdx.x == 0) {
    for (int stage = 0; stage < stages; ++stage) barrier_init(&full[stage], kInputs);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int k = 0; k + 1 < stages; ++k) issue(k);
  }
  for (int64_t k = 0; k < block_rows; ++k) {
    // Row k - 1's stage is refilled only once every thread is done with it.
    __syncthreads();
    if (threadIdx.x == 0) issue(k + stages - 1);
    barrier_wait(&full[k % stages], static_cast<uint32_t>(k / stages) & 1);
    const int64_t row = row_of(k), first = row * vectors;
    const P* const x = stage_of(k);
    // The values of vector v: x, or x + residual rounded to T (what residual_out holds).
    const auto row_values = [&](int v, float (&values)[kVec]) {
      unpack<T, kVec>(x[v], values);
      if constexpr (kResidual) {
        float other[kVec];
        unpack<T, kVec>(x[vectors + v], other);
#pragma unroll
        for (int e = 0; e < kVec; ++e) values[e] = to_float(from_float<T>(values[e] + other[e]));
      }
    };

    float sum = 0;
    for (int v = threadIdx.x; v < vectors; v += kStagedThreads) {
      float values[kVec];
      row_values(v, values);
      if constexpr (kResidual) reinterpret_cast<P*>(p.residual_out)[first + v] = pack<T, kVec>(values);
#pragma unroll
      for (int e = 0; e < kVec; ++e) sum += kKind == NormKind::layer ? values[e] : values[e] * values[e];
    }
    float mean = 0, squares = sum;
    if constexpr (kKind == NormKind::layer) {
      mean = row_sum(sum, partial) * s.inv_len;
      squares = 0;
      for (int v = threadIdx.x; v < vectors; v += kStagedThreads) {
        float values[kVec];
        row_values(v, values);
#pragma unroll
        for (int e = 0; e < kVec; ++e) squares += (values[e] - mean) * (values[e] - mean);
      }
    }
    const float inv_std = rsqrtf(row_sum(squares, partial) * s.inv_len + s.eps);
    if (threadIdx.x == 0) write_stats(p, row, mean, inv_std);

    const int64_t affine = affine_first<kGroups>(row, first, vectors, s.modulation, s.groups);
    // f(v, values) for each of this thread's vectors v with its output values.
    const auto for_each_output = [&](auto f) {
      for (int v = threadIdx.x; v < vectors; v += kStagedThreads) {
        float values[kVec], scale[kVec], shift[kVec];
        row_values(v, values);
        if (p.weight) {
          unpack<T, kVec>(__ldg(reinterpret_cast<const P*>(p.weight) + affine + v), scale);
#pragma unroll
          for (int e = 0; e < kVec; ++e) scale[e] += s.weight_offset;
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) scale[e] = 1;
        }
        if (kKind == NormKind::layer && p.bias) {
          unpack<T, kVec>(__ldg(reinterpret_cast<const P*>(p.bias) + affine + v), shift);
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) shift[e] = 0;
        }
#pragma unroll
        for (int e = 0; e < kVec; ++e) values[e] = normalized<kKind>(values[e], mean, inv_std, scale[e], shift[e]);
        f(v, values);
      }
    };
    if constexpr (kQuant) {
      float amax = 0;
      for_each_output([&](int, const float (&values)[kVec]) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) amax = nan_max(fabsf(values[e]), amax);
      });
      const float row_scale = row_quant_scale(amax, partial, p.row_scale, row, true);
      for_each_output([&](int v, const float (&values)[kVec]) {
        reinterpret_cast<Codes<kVec>*>(p.codes)[first + v] = quantize<kVec>(values, row_scale);
      });
    } else {
      for_each_output([&](int v, const float (&values)[kVec]) {
        reinterpret_cast<P*>(p.y)[first + v] = pack<T, kVec>(values);
      });
    }
  }
}

// The forward launch: the staged kernel for many rows of at least one vector a thread that fit its
// shared memory (every tensor 16-byte aligned), otherwise the in-register or streaming kernel.
template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups = false>
void launch_typed(std::string_view op, const RowPointers<T>& p, const RowShape& s, int multiprocessors,
                  cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  const std::initializer_list<const void*> pointers{p.x, p.residual, p.weight, p.bias, p.y, p.residual_out, p.codes};
  const int64_t stage_bytes = (kResidual ? 2 : 1) * int64_t{s.row_len} * static_cast<int64_t>(sizeof(T));
  const int stages = staged_stages(stage_bytes);
  const bool many_rows = s.rows >= multiprocessors;
  if (many_rows && stages > 0 && s.row_len % kVec == 0 && s.row_len / kVec >= kStagedThreads &&
      std::ranges::all_of(pointers, aligned_to_vector)) {
    const auto kernel = row_norm_staged<T, kKind, kResidual, kQuant, kGroups>;
    const auto shared = static_cast<int>(stages * stage_bytes);
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared), op,
               "cudaFuncSetAttribute");
    int per_multiprocessor = 0;
    check_cuda(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, kernel, kStagedThreads, shared), op,
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    const int64_t resident = int64_t{std::max(1, per_multiprocessor)} * multiprocessors;
    kernel<<<static_cast<unsigned>(std::min(s.rows, resident)), kStagedThreads, shared, stream>>>(p, s, stages);
    return;
  }
  launch_row_kernel<T>(
      pointers, s, many_rows,
      [&]<int kVecIn, int kVecs>(dim3 grid, dim3 block) {
        row_norm_in_registers<T, kKind, kResidual, kQuant, kGroups, kVecIn, kVecs><<<grid, block, 0, stream>>>(p, s);
      },
      [&](unsigned grid) {
        row_norm_streaming<T, kKind, kResidual, kQuant, kGroups><<<grid, kStreamingThreads, 0, stream>>>(p, s);
      });
}

}  // namespace solops::detail::row_norm

namespace solops::detail {

template <NormKind kKind>
void launch_rows(std::string_view op, const RowGeometry& g, const NormMath& math, const RowNormTensors& t,
                 cudaStream_t stream) {
  using namespace row_norm;
  if (g.rows == 0) return;
  const RowShape s = row_shape(g, math, t.affine == AffineRows::per_row, group_count(t));
  const int multiprocessors = multiprocessor_count(t.x.device);
  dispatch_float(t.x.dtype, [&]<class T>() {
    // The quantizing norms (row_scale given) write y's fp8 codes through `codes`; they have no residual,
    // and neither has GroupRMSNorm, the one RMS norm with weight rows.
    const bool quant = t.row_scale != nullptr;
    T* const y = quant ? nullptr : data_of<T>(&t.y);
    __nv_fp8_storage_t* const codes = quant ? data_of<__nv_fp8_storage_t>(&t.y) : nullptr;
    const RowPointers<T> p{data_of<T>(&t.x),      data_of<T>(t.residual), data_of<T>(t.weight),
                           data_of<T>(t.bias),    y,                      data_of<T>(t.residual_out),
                           data_of<float>(t.mean), data_of<float>(t.rstd), codes,
                           data_of<float>(t.row_scale)};
    if (quant) launch_typed<T, kKind, false, true>(op, p, s, multiprocessors, stream);
    else if (t.residual) launch_typed<T, kKind, true, false>(op, p, s, multiprocessors, stream);
    else if (kKind == NormKind::rms && t.affine == AffineRows::per_group)
      launch_typed<T, kKind, false, false, kKind == NormKind::rms>(op, p, s, multiprocessors, stream);
    else launch_typed<T, kKind, false, false>(op, p, s, multiprocessors, stream);
  });
  check_launch(op);
}

}  // namespace solops::detail
