// Row-norm kernels and their launcher, instantiated once per statistic (norm_rms.cu, norm_layer.cu),
// on the held-row pattern of held_row.cuh.
//
// The op is memory-bound: a row is read once and written once. One block (or, for rows of at most
// two warps, a group of threadIdx.y rows in a block of 128 threads; or, for few long rows, a
// cluster of blocks on as many SMs: RowSpread) normalizes one row at a time.
// The row stays in registers between the reduction and the output pass: each thread loads its
// kVecs vectors (16 bytes each where every tensor is 16-byte aligned and N a multiple of the
// vector width, one element otherwise) and the weight and bias at the same columns (AdaLayerNorm:
// of the same row, GroupRMSNorm: of weight row m % G) before any arithmetic, so a block has all of
// its row's loads in flight at once; where holding weight and bias would halve the blocks an SM,
// they are read in the output pass instead (reads_affine_late).
// Statistics run in f32; LayerNorm takes the mean first and then the sum of squared deviations
// from the held values (no E[x^2] - E[x]^2 cancellation). LayerNormQuant then takes a second pass
// over the held row for its amax (the normalized values are recomputed rather than kept, which
// would double the registers a thread needs) and a third that writes the fp8 codes; RMSNormQuant
// takes its amax from x · weight in the first pass, beside the squares. Rows too long to hold
// (over 16384 f16/bf16 elements, 8192 f32 ones or 8192 without vectors; with vectors, few rows are
// held up to eight times longer by a cluster) take the streaming kernel, which reads the row again
// each pass. Many bf16 rows of the LayerNorm kind of at least 8192 elements run layer_norm_staged,
// whose rows are staged ahead in shared memory (norm/staged_rows.cuh).
#pragma once

#include <cstdint>

#include <cuda_fp8.h>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/evict_last.cuh"
#include "norm/held_row.cuh"
#include "norm/row_norm.hpp"
#include "norm/staged_rows.cuh"

namespace solops::detail::row_norm {

// QKNorm's k in the launch of its q (row_norm_in_registers' kPair): the launch's rows from `from`
// on are k's rows 0, 1, ..., read from x with weight and written to y.
template <class T>
struct SecondRows {
  int64_t from = INT64_MAX;
  const T* x = nullptr;
  const T* weight = nullptr;
  T* y = nullptr;
};

template <class T>
struct RowPointers {
  const T* x;
  const T* residual;
  const T* weight;
  const T* bias;
  T* y;
  T* residual_out;
  float* mean;  // the training forward's statistics, written when non-null
  float* rstd;
  // The quantizing norms write codes and row_scale instead of y.
  __nv_fp8_storage_t* codes;
  float* row_scale;
  SecondRows<T> second;

  // These pointers with the second tensor's x, weight and y.
  __host__ __device__ RowPointers with_second() const {
    RowPointers other = *this;
    other.x = second.x;
    other.weight = second.weight;
    other.y = second.y;
    return other;
  }
};

// |value|'s bits: as unsigned integers they order like the magnitudes, and every NaN's lie above
// +inf's, so an integer max over them is an amax that a NaN reaches (spec §2.15): a mask and an
// integer max an element, where nan_max over fabsf takes three instructions.
__device__ __forceinline__ unsigned magnitude_bits(float value) { return __float_as_uint(value) & 0x7fffffffu; }

// The row's scale from its amax, stored where `stores` (one thread of the row), and returned as its
// reciprocal: the codes are value · (1 / scale), which spec §2.15 allows (each code within one e4m3
// step of value / scale's, at least 99.9 % identical), one instruction an element where the
// correctly rounded quotient took three (an FMA correction) and a division about ten; the
// quantizing norms are issue-bound, and this and the amax reduced as integers (larger_magnitude)
// took more off them than their share of instructions. An infinite scale's reciprocal is 0: finite
// values' codes 0 and infinite ones' NaN, as the division gives.
__device__ __forceinline__ float quant_inverse(float amax, float* row_scale, int64_t row, bool stores) {
  const float scale = nan_max(amax, kMinAmax) / kE4m3Max;
  if (stores) row_scale[row] = scale;
  return 1.0f / scale;
}

// Round to nearest even, saturating to +-448 (spec §2.15; NaN stays NaN).
__device__ __forceinline__ __nv_fp8_storage_t quantize(float value, float inverse) {
  return __nv_cvt_float_to_fp8(value * inverse, __NV_SATFINITE, __NV_E4M3);
}

// kVec codes, stored as one access. Vectors convert in pairs: one instruction, and a 16-bit lane
// that packs into the store without byte shuffles.
template <int kVec>
struct alignas(kVec) Codes {
  __nv_fp8x2_storage_t pairs[kVec / 2];
};
template <>
struct Codes<1> {
  __nv_fp8_storage_t code;
};

template <int kVec>
__device__ __forceinline__ Codes<kVec> quantize(const float (&values)[kVec], float inverse) {
  Codes<kVec> codes;
  if constexpr (kVec == 1) {
    codes.code = quantize(values[0], inverse);
  } else {
#pragma unroll
    for (int e = 0; e < kVec; e += 2) {
      codes.pairs[e / 2] = __nv_cvt_float2_to_fp8x2(make_float2(values[e] * inverse, values[e + 1] * inverse),
                                                     __NV_SATFINITE, __NV_E4M3);
    }
  }
  return codes;
}

// The output stage of a row kernel (normalize_rows, layer_norm_staged): for_each_output(f) calls
// f(i, values) for each vector i of this thread's share of the row with its output values, and
// output_at(i) is that vector's index among the tensor's vectors. store_outputs writes them to y.
template <class T, int kVec, class ForEachOutput, class OutputAt>
__device__ __forceinline__ void store_outputs(const RowPointers<T>& p, ForEachOutput for_each_output,
                                              OutputAt output_at) {
  for_each_output([&](int i, const float (&values)[kVec]) {
    reinterpret_cast<Pack<T, kVec>*>(p.y)[output_at(i)] = pack<T, kVec>(values);
  });
}

// The codes of the quantizing LayerNorm kind (holds(i): whether this thread holds vector i), whose
// scale is the amax of its outputs: the outputs, computed once, are held as floats through the
// amax's reduction (`reduce`, a RowReduction), then coded. Computed again for the codes, each output
// unpacked x, weight and bias a second time, and the kernels that read weight and bias late loaded
// them again: that second computation was most of these issue-bound kernels' time above LayerNorm's.
template <class T, int kVecs, int kVec, class ForEachOutput, class OutputAt, class Holds, class Reduce>
__device__ __forceinline__ void quantize_held_outputs(const RowPointers<T>& p, ForEachOutput for_each_output,
                                                      OutputAt output_at, Holds holds, Reduce& reduce, int64_t row,
                                                      bool leads) {
  float outputs[kVecs][kVec];
  unsigned amax = 0;
  for_each_output([&](int i, const float (&values)[kVec]) {
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      outputs[i][e] = values[e];
      amax = max(amax, magnitude_bits(values[e]));
    }
  });
  const float inverse = quant_inverse(reduce.magnitude_max(amax), p.row_scale, row, leads);
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    if (holds(i)) reinterpret_cast<Codes<kVec>*>(p.codes)[output_at(i)] = quantize<kVec>(outputs[i], inverse);
  }
}

// x + residual rounded to T (residual_out), written out and returned: the norm reads the rounded sum.
template <class T, int kVec>
__device__ __forceinline__ Pack<T, kVec> add_residual(const Pack<T, kVec>& x, const Pack<T, kVec>& residual,
                                                      Pack<T, kVec>* residual_out) {
  float sum[kVec], other[kVec];
  unpack<T, kVec>(x, sum);
  unpack<T, kVec>(residual, other);
#pragma unroll
  for (int e = 0; e < kVec; ++e) sum[e] += other[e];
  const Pack<T, kVec> rounded = pack<T, kVec>(sum);
  *residual_out = rounded;
  return rounded;
}

template <class T>
__device__ __forceinline__ void write_stats(const RowPointers<T>& p, int64_t row, float mean, float inv_std) {
  if (p.mean) p.mean[row] = mean;
  if (p.rstd) p.rstd[row] = inv_std;
}

template <NormKind kKind>
__device__ __forceinline__ float normalized(float value, float mean, float inv_std, float scale, float shift) {
  if constexpr (kKind == NormKind::layer) return (value - mean) * inv_std * scale + shift;
  else return value * inv_std * scale;
}

// x, residual and the outputs are not __restrict__ and x is not read through the read-only cache:
// the fused add-norms' in-place form aliases them. Each element is read before the same thread
// writes it, and never read again.
// Whether weight and bias are read in the output pass rather than held beside x from the start.
// Held, they cost LayerNorm (with or without quantization) and the fused norms at 4 vectors a thread
// half their blocks an SM (and at 8, before launch_row_kernel's kMostVecs: 150 registers); read late,
// they put a weight round trip after the reduction, which the other kernels pay for (the short rows
// and every decode row measured slower late). AdaLayerNorm's per-row scale and shift, streamed from
// DRAM, are held at its catalogue widths (1 and 2 vectors a thread); GroupRMSNorm's weight rows,
// as large as x, are read late at four vectors, so that x streams alone first (a little faster on
// its long rows), its decode rows holding them in few_rows (late, a decode row waits a round trip
// more); RMSNormQuant holds its weight, whose products with x give its amax in the first pass.
// Kernels bound to one block an SM (normalize_rows' kOneBlockAnSm: few_rows) hold them.
template <NormKind kKind, bool kResidual, bool kGroups, int kVecs>
__host__ __device__ constexpr bool reads_affine_late() {
  return kVecs >= 4 && (kKind == NormKind::layer || kResidual || kGroups);
}

// Blocks an SM the kernel must allow, which bounds its registers. 4-vector kernels: two 512-thread
// blocks, so at most 64 registers, and four 256-thread blocks an SM where many rows take 256 instead
// of three (the more rows in flight, measured faster), but for the fused LayerNorm, which spills at
// 64 and measured slower so. 8-vector kernels (the quantizing norms' long rows, with_eight_vectors):
// two 256-thread blocks, at most 128 registers, as measured. The others hold at most two vectors (or
// eight single elements) a thread.
template <NormKind kKind, bool kResidual, int kVec, int kVecs>
__host__ __device__ constexpr int min_blocks() {
  if (max_threads(kVec, kVecs) == 512) return kKind == NormKind::layer && kResidual ? 1 : 2;
  if (max_threads(kVec, kVecs) == 256) return 2;
  return 1;
}

// Where row `row` (its first element or vector `first`, `row_units` of them a row) finds its weight
// and bias. kGroups (GroupRMSNorm's weight rows) is a template flag, not a runtime one like
// modulation: its 64-bit row offset, live beside x's, would push the quantizing LayerNorm, compiled
// at exactly its 128-register bound, into spills.
// The shape's fields pass by value: a reference to the kernel parameter costs a local copy of it.
template <bool kGroups>
__device__ __forceinline__ int64_t affine_first(int64_t row, int64_t first, int64_t row_units, bool modulation,
                                                int groups) {
  if constexpr (kGroups) return row % groups * row_units;
  else return modulation ? first : 0;
}

// kWhole: every row fills its threads' vectors (launch_whole_rows_or_not). kOneBlockAnSm: the kernel
// is bound to one block an SM, so it holds weight and bias (reads_affine_late).
template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups, bool kPair, int kVec, int kVecs,
          bool kWhole, bool kOneBlockAnSm = false>
__device__ __forceinline__ void normalize_rows(const RowPointers<T> launch_pointers, const RowShape s) {
  using P = Pack<T, kVec>;
  constexpr bool kLateAffine = !kOneBlockAnSm && reads_affine_late<kKind, kResidual, kGroups, kVecs>();
  // Kernels bound to one block an SM (few rows) hold x and the weight's scale as floats (see below).
  constexpr bool kFloatsHeld = kOneBlockAnSm && kWhole;
  // The RMS kind's few rows read their weight once x has arrived: x then enters the SM alone, and
  // its reduction covers the weight's arrival (faster on the 405b decode rows, whose 64 KB of x
  // and weight one SM takes in; the 70b rows level; the LayerNorm kind lost, its weight and bias
  // arriving after its two reductions). They unpack the scale in the output pass: before the
  // reduction it would wait for the weight.
  constexpr bool kWeightAfterX = kFloatsHeld && kKind == NormKind::rms;
  constexpr int kHeldAffine = kLateAffine ? 1 : kVecs;
  // Late affine vectors loaded together in the output pass: all of RMSNormQuant's; two at a time
  // where a bias or the residual's registers leave no room for more without losing a block an SM.
  constexpr int kAffineBatch = !kLateAffine ? 1 : kKind == NormKind::layer || kResidual ? 2 : kVecs;
  [[maybe_unused]] const uint64_t policy = evict_first_policy();
  for_each_held_row<kVec, kVecs>(s, [&](const HeldRow& launch_row, HeldRowReduction<kVecs>& reduce) {
    // kPair: rows from launch_pointers.second.from on are the second tensor's.
    const bool second = kPair && launch_row.row >= launch_pointers.second.from;
    const RowPointers<T> p = second ? launch_pointers.with_second() : launch_pointers;
    const HeldRow r = second ? launch_row.counted_from(launch_pointers.second.from) : launch_row;
    const int64_t first = r.first;
    // The weight and bias vectors at held vector i's columns, read into w and b.
    const auto read_affine = [&](int i, P& w, P& b) {
      const int64_t affine = affine_first<kGroups>(r.row, first, r.vectors, s.modulation, s.groups) + r.vector(i);
      // Read after x (kWeightAfterX), coherently: the fence before them orders coherent loads only.
      const auto load = [](const T* at) {
        if constexpr (kWeightAfterX) return *reinterpret_cast<const P*>(at);
        else return __ldg(reinterpret_cast<const P*>(at));
      };
      if (p.weight) w = load(p.weight + affine * kVec);
      if (kKind == NormKind::layer && p.bias) b = load(p.bias + affine * kVec);
    };
    P held[kVecs], residual[kResidual ? kVecs : 1], weight[kHeldAffine], bias[kHeldAffine];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (!r.holds<kWhole>(i)) continue;
      const int v = r.vector(i);
      // x without a residual is read once and never aliased (validate_row_norm): an evict-first load
      // where that measured faster (at 2 vectors a thread and in the quantizing norms; evict_last
      // there was slower). Elsewhere x loads as torch.compile's kernels load theirs
      // (core/evict_last.cuh; x may be the in-place output, which these coherent loads allow), which
      // measured faster than plain loads; the residual likewise.
      if constexpr (!kResidual && kVec > 1 && (kVecs <= 2 || kQuant)) {
        held[i] = load_evict_first(reinterpret_cast<const P*>(p.x) + first + v, true, policy);
      } else {
        held[i] = load_evict_last(reinterpret_cast<const P*>(p.x) + first + v, evict_last_policy());
      }
      if constexpr (kResidual) {
        residual[i] = load_evict_last(reinterpret_cast<const P*>(p.residual) + first + v, evict_last_policy());
      }
      if constexpr (!kLateAffine && !kWeightAfterX) read_affine(i, weight[i], bias[i]);
    }
    // After every load of the row: the compiler may not move a load above a store that could alias
    // it (the in-place form does alias), and with the add beside the loads it serialized them and
    // read the residual a byte at a time.
    if constexpr (kResidual) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds<kWhole>(i)) continue;
        P* const residual_out = reinterpret_cast<P*>(p.residual_out) + first + r.vector(i);
        held[i] = add_residual<T, kVec>(held[i], residual[i], residual_out);
      }
    }
    // The LayerNorm kind's f16 rows in kWhole form unpack x into floats once, not in each of their
    // three passes (one HADD2.F32 an element a pass): LayerNorm's 2-vector kernel 544 -> 472
    // instructions at the same 56 registers. bf16 unpacks by a shift, which ptxas already keeps;
    // RMSNorm's two passes gain less than the block an SM its 7 more registers cost, and the
    // per-vector tests of the other forms leave no registers for it (the fused LayerNorm spilled).
    // Kernels bound to one block an SM (few rows) hold x and the scale of its columns as floats from
    // the loads on: the unpacking and the weight offset leave the pass after the
    // reductions, whose instructions a decode row waits for (one row of 16384 on one SM: ~440 warp
    // instructions a warp, four warps a scheduler, most of them after the row has arrived).
    constexpr bool kUnpackOnce =
        kFloatsHeld || (kWhole && kKind == NormKind::layer && std::is_same_v<T, __half> && kVecs <= 2);
    [[maybe_unused]] float unpacked[kUnpackOnce ? kVecs : 1][kVec];
    if constexpr (kUnpackOnce) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (r.holds<kWhole>(i)) unpack<T, kVec>(held[i], unpacked[i]);
      }
    }
    const auto held_values = [&](int i, float (&values)[kVec]) {
      if constexpr (kUnpackOnce) {
#pragma unroll
        for (int e = 0; e < kVec; ++e) values[e] = unpacked[i][e];
      } else {
        unpack<T, kVec>(held[i], values);
      }
    };

    // The sum of term(value) over the elements this thread holds, in two chains (even and odd
    // elements): one chain of 16 dependent adds was on a decode row's critical path twice.
    const auto held_sum = [&](auto term) {
      float totals[2] = {0, 0};
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds<kWhole>(i)) continue;
        float values[kVec];
        held_values(i, values);
#pragma unroll
        for (int e = 0; e < kVec; ++e) totals[e % 2] += term(values[e]);
      }
      return totals[0] + totals[1];
    };
    // The scale the weight vector w gives (weight_offset + w, or 1 without a weight).
    const auto weight_scale = [&](const P& w, float (&scale)[kVec]) {
      if (p.weight) {
        unpack<T, kVec>(w, scale);
        // Only Gemma's (an RMS norm's, not a quantizing one) weight is offset.
        if constexpr (kKind == NormKind::rms && !kQuant) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) scale[e] += s.weight_offset;
        }
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) scale[e] = 1;
      }
    };
    // The shift the bias vector b gives (0 without a bias, and for the RMS kind).
    const auto bias_shift = [&](const P& b, float (&shift)[kVec]) {
      if (kKind == NormKind::layer && p.bias) {
        unpack<T, kVec>(b, shift);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) shift[e] = 0;
      }
    };
    // The bias stays packed: with the shift as floats too, 32 elements a thread spilled (120-136 bytes).
    constexpr bool kScaleHeld = kFloatsHeld && !kWeightAfterX;
    [[maybe_unused]] float held_scale[kScaleHeld ? kVecs : 1][kVec];
    if constexpr (kScaleHeld) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) weight_scale(weight[i], held_scale[i]);
    }
    // RMSNormQuant takes its amax in the first pass, as inv_std · max |x · scale| (inv_std >= 0),
    // and reduces it beside the squares: a pass over the row and a round of barriers fewer than
    // taking it from the output values. The products stay as floats for the codes, product ·
    // (inv_std / scale), in the registers x and the weight held: no second unpacking and multiply of
    // x and the weight in this issue-bound kernel.
    constexpr bool kAmaxFromProducts = kQuant && kKind == NormKind::rms;
    [[maybe_unused]] float products[kAmaxFromProducts ? kVecs : 1][kVec];
    float mean = 0, inv_std, product_amax = 0;
    if constexpr (kKind == NormKind::layer) mean = reduce.sum(held_sum([](float v) { return v; })) * s.inv_len;
    if constexpr (kAmaxFromProducts) {
      float squares = 0;
      unsigned amax_bits = 0;
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds<kWhole>(i)) continue;
        float values[kVec], scale[kVec];
        held_values(i, values);
        weight_scale(weight[i], scale);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          squares += values[e] * values[e];
          products[i][e] = values[e] * scale[e];
          amax_bits = max(amax_bits, magnitude_bits(products[i][e]));
        }
      }
      const float2 reduced = reduce.sum_and_magnitude_max(squares, amax_bits);
      inv_std = rsqrtf(reduced.x * s.inv_len + s.eps);
      product_amax = reduced.y;
    } else {
      const float squares = held_sum([mean](float v) { return (v - mean) * (v - mean); });
      if constexpr (kWeightAfterX) {
        // Without the fence ptxas hoists the weight's loads up beside x's.
        __threadfence_block();
#pragma unroll
        for (int i = 0; i < kVecs; ++i) read_affine(i, weight[i], bias[i]);
      }
      inv_std = rsqrtf(reduce.sum(squares) * s.inv_len + s.eps);
    }
    if (r.leads()) write_stats(p, r.row, mean, inv_std);
    // The RMS kind's few rows scale x by inv_std, and take its share of the weight offset (Gemma's
    // 1), while their weight is still on its way, so that once it arrives each element is an unpack
    // and one FMA: one row of 16384 on one SM waits for every instruction after the arrival (four
    // warps a scheduler), and the offset's add and the second multiply were two of them.
    [[maybe_unused]] float offset_share[kWeightAfterX ? kVecs : 1][kVec];
    if constexpr (kWeightAfterX) {
      // Without a weight the scale is 1 (no offset). Both outputs' forms use the share, which keeps
      // the compiler from moving its multiplies after the weight's arrival.
      const float offset = p.weight ? s.weight_offset : 0.0f;
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (!r.holds<kWhole>(i)) continue;
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          unpacked[i][e] *= inv_std;
          offset_share[i][e] = unpacked[i][e] * offset;
        }
      }
    }

    // The output values of the held vector i, given the weight and bias at its columns.
    const auto output_values = [&](int i, const P& w, const P& b, float (&values)[kVec]) {
      held_values(i, values);
      if constexpr (kWeightAfterX) {  // values are x · inv_std already
        float weight_values[kVec];
        if (p.weight) {
          unpack<T, kVec>(w, weight_values);
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) weight_values[e] = 1;
        }
#pragma unroll
        for (int e = 0; e < kVec; ++e) values[e] = fmaf(values[e], weight_values[e], offset_share[i][e]);
      } else {
        float scale[kVec], shift[kVec];
        if constexpr (kScaleHeld) {
#pragma unroll
          for (int e = 0; e < kVec; ++e) scale[e] = held_scale[i][e];
        } else {
          weight_scale(w, scale);
        }
        bias_shift(b, shift);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          values[e] = normalized<kKind>(values[e], mean, inv_std, scale[e], shift[e]);
        }
      }
    };
    // f(i, values) for each held vector i and its output values (store_outputs). Read late, the
    // affine vectors of a batch are all loaded before any is used: one at a time, each vector's
    // output waited on its own L2 round trip (8 in a row a pass at 8 vectors a thread, which left the
    // quantizing norms' two passes well behind torch.compile).
    const auto for_each_output = [&](auto f) {
#pragma unroll
      for (int first_of_batch = 0; first_of_batch < kVecs; first_of_batch += kAffineBatch) {
        [[maybe_unused]] P late_weight[kAffineBatch], late_bias[kAffineBatch];
        if constexpr (kLateAffine) {
#pragma unroll
          for (int k = 0; k < kAffineBatch; ++k) {
            if (r.holds<kWhole>(first_of_batch + k)) read_affine(first_of_batch + k, late_weight[k], late_bias[k]);
          }
        }
#pragma unroll
        for (int k = 0; k < kAffineBatch; ++k) {
          const int i = first_of_batch + k;
          if (!r.holds<kWhole>(i)) continue;
          float values[kVec];
          if constexpr (kLateAffine) output_values(i, late_weight[k], late_bias[k], values);
          else output_values(i, weight[i], bias[i], values);
          f(i, values);
        }
      }
    };
    const auto output_at = [&](int i) { return first + r.vector(i); };
    if constexpr (kAmaxFromProducts) {
      const float factor = inv_std * quant_inverse(inv_std * product_amax, p.row_scale, r.row, r.leads());
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        if (r.holds<kWhole>(i)) {
          reinterpret_cast<Codes<kVec>*>(p.codes)[output_at(i)] = quantize<kVec>(products[i], factor);
        }
      }
    } else if constexpr (kQuant) {
      quantize_held_outputs<T, kVecs, kVec>(p, for_each_output, output_at,
                                            [&](int i) { return r.holds<kWhole>(i); }, reduce, r.row, r.leads());
    } else {
      store_outputs<T, kVec>(p, for_each_output, output_at);
    }
  });
}

template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups, bool kPair, int kVec, int kVecs,
          bool kWhole = false>
__global__ void __launch_bounds__(max_threads(kVec, kVecs), min_blocks<kKind, kResidual, kVec, kVecs>())
    row_norm_in_registers(const RowPointers<T> p, const RowShape s) {
  normalize_rows<T, kKind, kResidual, kQuant, kGroups, kPair, kVec, kVecs, kWhole>(p, s);
}

// Few whole rows (fewer than one an SM: decode rows) of four vectors a thread without a residual,
// the LayerNorm kind's with or without codes and the RMS kind's without (GroupRMSNorm's too), in
// blocks bound to one an SM, so that they hold x, weight and bias from the start, x and the weight's
// scale as floats (normalize_rows' kFloatsHeld). The LayerNorm kind's rows at the two-block bound of
// row_norm_in_registers spilled 40-80 bytes, and, read late, weight and bias took a DRAM round trip
// after the reductions; holding them, one block beat the cluster of eight. The floats took the
// weight's unpacking and offset out of the pass after the reductions (the 405b rows gained, the 70b
// rows level). Two-vector rows lost with them (weight and bias, unpacked before the first
// reduction, made it wait for their loads), and RMSNormQuant gained nothing.
template <class T, NormKind kKind, bool kQuant, bool kGroups>
__global__ void __launch_bounds__(512, 1) few_rows(const RowPointers<T> p, const RowShape s) {
  normalize_rows<T, kKind, false, kQuant, kGroups, false, kVectorBytes / sizeof(T), 4, true, true>(p, s);
}

// RMSNormQuant's two-vector rows where there are many (at least one an SM; rows of 256 to 511
// vectors, as longer ones hold four: kFourVectorSpread): a ceiling of 40 registers puts six 256-thread
// blocks on an SM, where the launch-bounds kernel takes 48 (five) and its kWhole form 55 (four); the
// kWhole form spills at 40. The same ceiling made the RMS-kind decode rows slower, so they keep the
// launch bounds; a ceiling of 48 on the LayerNorm-kind kernels gained nothing over kWhole. A kernel
// of its own, as a ceiling cannot stand beside __launch_bounds__.
constexpr int kQuantManyRowsRegisters = 40;

template <class T, int kVec>
__global__ void __maxnreg__(kQuantManyRowsRegisters)
    rms_norm_quant_many_rows(const RowPointers<T> p, const RowShape s) {
  normalize_rows<T, NormKind::rms, false, true, false, false, kVec, 2, false>(p, s);
}

// Many bf16 LayerNorm rows of at least four vectors a thread (8192 elements), without a residual or
// per-row modulation, whose vectors fill whole blocks, staged ahead (staged_rows.cuh): x rows, the
// weight (ones without one) and the bias (zeros) as column vectors; each pass (the mean, the squared
// deviations, the outputs) reads the staged row back. There the held-row kernels spill (LayerNorm's
// kWhole 40 bytes), and staging measured faster. The same kernel lost on rows where it does not
// replace a spilling kernel, on RMSNormQuant and on the RMS kind: with a row a block at a time, a
// block's rows wait on each other's reductions, where one row a block of the held-row kernels lets
// an SM's resident blocks overlap theirs (docs/perf/norm.md). LayerNormQuant's bf16 rows left it
// once the held-row kernels held their outputs (quantize_held_outputs) at eight vectors a thread,
// which measured faster than staged.
template <class T, int kVecs>
__global__ void __launch_bounds__(kMaxStagedThreads) layer_norm_staged(const RowPointers<T> p, const RowShape s) {
  constexpr int kVec = kVectorBytes / sizeof(T);
  extern __shared__ uint4 staged_shared[];
  __shared__ alignas(16) float partials[2 * kHeldRowPartials];
  unsigned reductions = 0;
  StagedRows<kVecs, 1, 2> staged(staged_shared, s.rows);
  const int threads = blockDim.x;
  float ones[kVec], zeros[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    ones[e] = 1;
    zeros[e] = 0;
  }
#pragma unroll
  for (int i = 0; i < kVecs; ++i) {
    const int v = threadIdx.x + i * threads;
    staged.set_column_vector(0, i,
                             p.weight ? __ldg(reinterpret_cast<const uint4*>(p.weight) + v) : pack<T, kVec>(ones));
    staged.set_column_vector(1, i, p.bias ? __ldg(reinterpret_cast<const uint4*>(p.bias) + v) : pack<T, kVec>(zeros));
  }
  // The sum of term(x) over this thread's elements of the row in `stage`, in two chains (even and
  // odd elements).
  const auto row_sum_of = [&](int stage, auto term) {
    float totals[2] = {0, 0};
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      float xs[kVec];
      unpack<T, kVec>(staged.row_vector(stage, 0, i), xs);
#pragma unroll
      for (int e = 0; e < kVec; ++e) totals[e % 2] += term(xs[e]);
    }
    return totals[0] + totals[1];
  };
  const uint4* const tensors[1] = {reinterpret_cast<const uint4*>(p.x)};
  staged.for_each_row(tensors, [&](int64_t row, int stage) {
    RowReduction<false> reduce(partials, reductions, nullptr);
    const float mean = reduce.sum(row_sum_of(stage, [](float x) { return x; })) * s.inv_len;
    const float squares = row_sum_of(stage, [mean](float x) { return (x - mean) * (x - mean); });
    const float inv_std = rsqrtf(reduce.sum(squares) * s.inv_len + s.eps);
    if (threadIdx.x == 0) write_stats(p, row, mean, inv_std);
    // f(i, values) for each vector i of the row and its output values (store_outputs).
    const auto for_each_output = [&](auto f) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) {
        float values[kVec], scale[kVec], shift[kVec];
        unpack<T, kVec>(staged.row_vector(stage, 0, i), values);
        unpack<T, kVec>(staged.column_vector(0, i), scale);
        unpack<T, kVec>(staged.column_vector(1, i), shift);
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          values[e] = normalized<NormKind::layer>(values[e], mean, inv_std, scale[e], shift[e]);
        }
        f(i, values);
      }
    };
    store_outputs<T, kVec>(p, for_each_output,
                           [&](int i) { return row * kVecs * threads + threadIdx.x + i * threads; });
  });
}

constexpr int kStreamingThreads = 1024;

// Rows too long for registers, one element per access: each pass reads the row again (the fused
// ops read their rounded sum back from residual_out, each thread only the elements it wrote).
template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups>
__global__ void __launch_bounds__(kStreamingThreads) row_norm_streaming(const RowPointers<T> p, const RowShape s) {
  __shared__ alignas(16) float partial[padded_warps(kStreamingThreads / kWarp)];
  for (int64_t row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const int64_t first = row * s.row_len;
    const T* source = (kResidual ? p.residual_out : p.x) + first;
    float sum = 0;
    for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
      float value = to_float(p.x[first + j]);
      if constexpr (kResidual) {
        const T rounded = from_float<T>(value + to_float(p.residual[first + j]));
        p.residual_out[first + j] = rounded;
        value = to_float(rounded);
      }
      sum += kKind == NormKind::layer ? value : value * value;
    }
    float mean = 0;
    float squares = sum;
    if constexpr (kKind == NormKind::layer) {
      mean = row_sum(sum, partial) * s.inv_len;
      squares = 0;
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
        const float centred = to_float(source[j]) - mean;
        squares += centred * centred;
      }
    }
    const float inv_std = rsqrtf(row_sum(squares, partial) * s.inv_len + s.eps);
    if (threadIdx.x == 0) write_stats(p, row, mean, inv_std);
    const int64_t affine = affine_first<kGroups>(row, first, s.row_len, s.modulation, s.groups);
    const auto output_value = [&](int j) {
      const float scale = p.weight ? s.weight_offset + to_float(__ldg(p.weight + affine + j)) : 1.0f;
      const float shift = kKind == NormKind::layer && p.bias ? to_float(__ldg(p.bias + affine + j)) : 0.0f;
      return normalized<kKind>(to_float(source[j]), mean, inv_std, scale, shift);
    };
    if constexpr (kQuant) {
      unsigned amax = 0;
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) amax = max(amax, magnitude_bits(output_value(j)));
      const float row_amax =
          row_reduce(__uint_as_float(amax), partial, 0.0f, [](float a, float b) { return larger_magnitude(a, b); });
      const float inverse = quant_inverse(row_amax, p.row_scale, row, threadIdx.x == 0);
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) {
        p.codes[first + j] = quantize(output_value(j), inverse);
      }
    } else {
      for (int j = threadIdx.x; j < s.row_len; j += blockDim.x) p.y[first + j] = from_float<T>(output_value(j));
    }
  }
}

// Runs layer_norm_staged where it applies (bf16 LayerNorm rows without a residual or per-row
// modulation, many rows of 16-byte vectors that fill its blocks at four vectors a thread). Returns
// whether it ran.
template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups>
bool launch_staged_rows(std::string_view op, const RowPointers<T>& p, const RowShape& s, int multiprocessors,
                        cudaStream_t stream) {
  if constexpr (kKind == NormKind::layer && std::is_same_v<T, __nv_bfloat16> && !kResidual && !kGroups && !kQuant) {
    constexpr int kVec = kVectorBytes / sizeof(T), kVecs = 4;
    const int vectors = s.row_len / kVec;
    if (s.modulation || !has_many_rows(s, multiprocessors) ||
        !rows_of_vectors<T>({p.x, p.weight, p.bias, p.y}, s.row_len) || staged_vecs(vectors) != kVecs) {
      return false;
    }
    return launch_staged(op, layer_norm_staged<T, kVecs>, vectors / kVecs,
                         StagedRows<kVecs, 1, 2>::bytes(vectors), s.rows, s.rows, multiprocessors, stream, p, s) > 0;
  } else {
    return false;
  }
}

template <class T, NormKind kKind, bool kResidual, bool kQuant, bool kGroups = false>
void launch_typed(std::string_view op, const RowPointers<T>& p, const RowShape& s, int multiprocessors,
                  cudaStream_t stream) {
  if (launch_staged_rows<T, kKind, kResidual, kQuant, kGroups>(op, p, s, multiprocessors, stream)) return;
  // The spreads measured for each kind (held_row.cuh): the fused norms' few long rows shared by a
  // cluster, RMSNormQuant's rows and the LayerNorm kind's many f16 rows of 4096 at four vectors, the
  // others' few rows of up to 32 KB in one block; the quantizing norms' many long rows at eight.
  constexpr RowSpread kind_spread = kResidual                   ? kForwardSpread
                                    : kKind == NormKind::rms     ? (kQuant ? kFourVectorSpread : kOneBlockSpread)
                                    : std::is_same_v<T, __half> ? kOneBlockFourVectorSpread
                                                                : kOneBlockSpread;
  constexpr RowSpread spread = kQuant ? with_eight_vectors(kind_spread) : kind_spread;
  constexpr int kMostVecs = kQuant ? 8 : 4;
  const bool many_rows = has_many_rows(s, multiprocessors);
  launch_row_kernel<T, kMostVecs>(
      {p.x, p.residual, p.weight, p.bias, p.y, p.residual_out, p.codes}, s, multiprocessors, spread,
      [&]<int kVec, int kVecs>(dim3 grid, dim3 block, unsigned cluster) {
        if constexpr (kKind == NormKind::rms && kQuant && !kGroups && kVec > 1 && kVecs == 2) {
          if (many_rows) {
            return launch_clustered(rms_norm_quant_many_rows<T, kVec>, grid, block, cluster, 0, stream, p, s);
          }
        }
        launch_whole_rows_or_not<kVec, kVecs, kMostVecs>(s, block, cluster, [&]<bool kWhole>() {
          if constexpr (!kResidual && kVec > 1 && kVecs == 4 && kWhole && (kKind == NormKind::layer || !kQuant)) {
            if (!many_rows) {
              return launch_clustered(few_rows<T, kKind, kQuant, kGroups>, grid, block, cluster, 0, stream, p, s);
            }
          }
          const auto kernel = row_norm_in_registers<T, kKind, kResidual, kQuant, kGroups, false, kVec, kVecs, kWhole>;
          // The LayerNorm kind's many rows of up to 8 KB (no residual, no modulation) in a resident
          // grid, each block's setup paid once for several rows: the LayerNorm kind's short rows
          // (two reductions and two affine vectors a row, the most setup a row) measured faster so;
          // every other kind and length measured slower with it.
          constexpr bool kResidentKind = kKind == NormKind::layer && !kResidual && !kGroups;
          const bool resident = kResidentKind && many_rows && cluster == 1 && !s.modulation &&
                                s.row_len * static_cast<int64_t>(sizeof(T)) <= 8192;
          const dim3 rows_grid = resident ? resident_grid(op, kernel, grid, block, multiprocessors) : grid;
          launch_clustered(kernel, rows_grid, block, cluster, 0, stream, p, s);
        });
      },
      [&](unsigned grid) {
        row_norm_streaming<T, kKind, kResidual, kQuant, kGroups><<<grid, kStreamingThreads, 0, stream>>>(p, s);
      });
}

template <class T>
T* data_of(const TensorRef* tensor) {
  return tensor ? static_cast<T*>(tensor->data) : nullptr;
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
                           data_of<float>(t.row_scale), {}};
    if (quant) launch_typed<T, kKind, false, true>(op, p, s, multiprocessors, stream);
    else if (t.residual) launch_typed<T, kKind, true, false>(op, p, s, multiprocessors, stream);
    else if (kKind == NormKind::rms && t.affine == AffineRows::per_group)
      launch_typed<T, kKind, false, false, kKind == NormKind::rms>(op, p, s, multiprocessors, stream);
    else launch_typed<T, kKind, false, false>(op, p, s, multiprocessors, stream);
  });
  check_launch(op);
}

template <NormKind kKind>
void launch_row_pair(std::string_view op, const RowGeometry& first_g, const RowGeometry& second_g,
                     const NormMath& math, const RowNormTensors& first, const RowNormTensors& second,
                     cudaStream_t stream) {
  using namespace row_norm;
  const int multiprocessors = multiprocessor_count(first.x.device);
  // Many rows take a launch each: choosing a row's pointers costs the 2-vector kernel a block an SM
  // (54 registers against 48), and the second launch is a small share of their time.
  if (first_g.rows + second_g.rows >= multiprocessors) {
    launch_rows<kKind>(op, first_g, math, first, stream);
    launch_rows<kKind>(op, second_g, math, second, stream);
    return;
  }
  if (first_g.rows + second_g.rows == 0) return;
  const RowShape s = row_shape({first_g.rows + second_g.rows, first_g.row_len}, math);
  dispatch_float(first.x.dtype, [&]<class T>() {
    const RowPointers<T> p{data_of<T>(&first.x), nullptr, data_of<T>(first.weight), nullptr, data_of<T>(&first.y),
                           nullptr, nullptr, nullptr, nullptr, nullptr,
                           {first_g.rows, data_of<T>(&second.x), data_of<T>(second.weight), data_of<T>(&second.y)}};
    launch_row_kernel<T>(
        {p.x, p.weight, p.y, p.second.x, p.second.weight, p.second.y}, s, multiprocessors,
        kKind == NormKind::rms ? kOneBlockSpread : kForwardSpread,
        [&]<int kVec, int kVecs>(dim3 grid, dim3 block, unsigned cluster) {
          launch_clustered(row_norm_in_registers<T, kKind, false, false, false, true, kVec, kVecs>, grid, block,
                           cluster, 0, stream, p, s);
        },
        // Rows too long to hold: a streaming launch for each tensor.
        [&](unsigned) {
          const auto stream_rows = [&](const RowGeometry& g, const RowPointers<T>& rows) {
            if (g.rows == 0) return;
            row_norm_streaming<T, kKind, false, false, false>
                <<<static_cast<unsigned>(std::min<int64_t>(g.rows, INT_MAX)), kStreamingThreads, 0, stream>>>(
                    rows, row_shape(g, math));
          };
          stream_rows(first_g, p);
          stream_rows(second_g, p.with_second());
        });
  });
  check_launch(op);
}

}  // namespace solops::detail
