// Runs of x along W (8 consecutive elements, or every other one of 15) loaded as the aligned 16-byte
// blocks that hold them, shared by the implicit GEMM's B chunks and the direct kernel's inputs: two
// or three vector loads in place of eight element loads. The loads and the assembly are apart
// (fetch_run, finish_run) so that the GEMM can hold the loaded blocks while its MMAs run.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/integer.hpp"

namespace solops::detail {

__host__ __device__ __forceinline__ bool aligned_16(const void* pointer) { return aligned_to(pointer, 16); }

// A 16-bit element's bits (T: __half or __nv_bfloat16) to float and back (rounded to nearest).
template <class T>
__device__ __forceinline__ float bits_to_float(uint16_t bits) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(bits));
  else return __bfloat162float(__ushort_as_bfloat16(bits));
}

template <class T>
__device__ __forceinline__ uint16_t float_to_bits(float v) {
  if constexpr (std::is_same_v<T, __half>) return __half_as_ushort(__float2half_rn(v));
  else return __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

// Element e of 8 consecutive 16-bit values held two a word, the lower first.
__device__ __forceinline__ uint16_t run_element(const uint32_t (&words)[4], int e) {
  return static_cast<uint16_t>(words[e / 2] >> (e % 2 * 16));
}

// 8 consecutive 16-bit values (two a word, the lower first) stored at `to` in the widest stores its
// alignment allows: one of 16 bytes, two of 8, four of 4 or eight of 2. Rows of y whose length is
// not a multiple of 8 leave most runs unaligned, where 2-byte stores would each touch the sectors of
// a whole warp's runs.
__device__ __forceinline__ void store_run(uint16_t* to, const uint32_t (&words)[4]) {
  const auto address = reinterpret_cast<uintptr_t>(to);
  if (address % 16 == 0) {
    *reinterpret_cast<uint4*>(to) = make_uint4(words[0], words[1], words[2], words[3]);
  } else if (address % 8 == 0) {
    reinterpret_cast<uint2*>(to)[0] = make_uint2(words[0], words[1]);
    reinterpret_cast<uint2*>(to)[1] = make_uint2(words[2], words[3]);
  } else if (address % 4 == 0) {
#pragma unroll
    for (int i = 0; i < 4; ++i) reinterpret_cast<uint32_t*>(to)[i] = words[i];
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) to[e] = run_element(words, e);
  }
}

// 8 floats rounded to the 16-bit T and stored as one run at `to` (store_run).
template <class T>
__device__ __forceinline__ void store_run_of_8(void* to, const float (&v)[8]) {
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) words[i] = float_to_bits<T>(v[2 * i]) | uint32_t{float_to_bits<T>(v[2 * i + 1])} << 16;
  store_run(static_cast<uint16_t*>(to), words);
}

// Elements [shift, shift + 2 kOut) of the words w (element j in half j % 2 of word j / 2), shift
// 0..7, as kOut words: whole words dropped first (by 2, then by 1: constant indices keep w in
// registers), then half a word.
template <int kOut, int kWords>
__device__ __forceinline__ void shift_down(uint32_t (&w)[kWords], int shift, uint32_t (&out)[kOut]) {
  static_assert(kWords >= kOut + 4, "the words hold every shift's elements");
  if (shift & 4) {
#pragma unroll
    for (int i = 0; i < kWords - 2; ++i) w[i] = w[i + 2];
  }
  if (shift & 2) {
#pragma unroll
    for (int i = 0; i < kWords - 1; ++i) w[i] = w[i + 1];
  }
#pragma unroll
  for (int i = 0; i < kOut; ++i) out[i] = shift & 1 ? __funnelshift_r(w[i], w[i + 1], 16) : w[i];
}

// A chunk of 8 elements held in registers: the 16-byte blocks of x that hold its elements as loaded
// (finish_run makes the chunk of them; the GEMM calls it after the MMAs that hide the loads'
// latency), or its 8 elements one a word (gathered, or zero).
struct HeldRun {
  uint32_t w[12];
  int shape;  // bits 0-3: src's misalignment in elements; 4-7, 8-11: the kept elements [first, last)
              // of the chunk; bit 12: stride 2 (every other element of the blocks); or kGathered,
              // or kCopied
};
constexpr int kGathered = 1 << 13;  // w[e] holds element e
constexpr int kCopied = -1;         // the chunk went by cp.async: nothing held

// A zero chunk (the gather overwrites its elements).
__device__ __forceinline__ void hold_zero(HeldRun& run) {
#pragma unroll
  for (int e = 0; e < 8; ++e) run.w[e] = 0;
  run.shape = kGathered;
}

// Whether the aligned 16-byte blocks that hold src[0, 7 s + 1) (s = kStride) lie inside x's memory
// [x_begin, x_end). Only a run at x's first or last elements, where x does not start or end on 16
// bytes, fails: it goes element by element (the blocks' other bytes may lie past x's allocation).
template <int kStride>
__device__ __forceinline__ bool run_blocks_inside(const uint16_t* src, const uint16_t* x_begin,
                                                  const uint16_t* x_end) {
  const uintptr_t first_block = reinterpret_cast<uintptr_t>(src) & ~uintptr_t{15};
  const uintptr_t last_block_end = (reinterpret_cast<uintptr_t>(src + 7 * kStride) & ~uintptr_t{15}) + 16;
  return first_block >= reinterpret_cast<uintptr_t>(x_begin) && last_block_end <= reinterpret_cast<uintptr_t>(x_end);
}

// Loads the run src[0], src[s], ..., src[7 s] (s = kStride, 1 or 2; src 2-byte aligned, its blocks
// inside x: run_blocks_inside) keeping only its elements [lo, hi) of src[0, 7 s + 1) (0 <= lo < hi <=
// 7 s + 1: the part inside one row of x), the others zero (the padding): the aligned 16-byte blocks
// that hold src[0, 7 s + 1), each only where it holds a kept element.
template <int kStride>
__device__ __forceinline__ void fetch_run(const uint16_t* src, int lo, int hi, HeldRun& run) {
  constexpr int kBlocks = kStride == 1 ? 2 : 3;  // the blocks 8 (15) elements at any misalignment touch
  const int shift = static_cast<int>(reinterpret_cast<uintptr_t>(src) % 16 / 2);  // 0..7 elements
  const uint4* block = reinterpret_cast<const uint4*>(src - shift);
#pragma unroll
  for (int j = 0; j < 3; ++j) {
    // Block j holds the run's elements [8 j - shift, 8 j + 8 - shift).
    const bool needed = j < kBlocks && 8 * j - shift < hi && 8 * j + 8 - shift > lo;
    const uint4 b = needed ? __ldg(block + j) : make_uint4(0, 0, 0, 0);
    run.w[4 * j] = b.x, run.w[4 * j + 1] = b.y, run.w[4 * j + 2] = b.z, run.w[4 * j + 3] = b.w;
  }
  // Chunk element e is the run's element e s: kept for e in [first, last).
  const int first = (lo + kStride - 1) / kStride, last = (hi + kStride - 1) / kStride;
  run.shape = shift | first << 4 | last << 8 | (kStride == 2) << 12;
}

// The chunk of a held run, as four words: its gathered elements packed, or its blocks shifted down
// by src's misalignment, the elements of the stride picked, those outside [first, last) zeroed.
__device__ __forceinline__ void finish_run(HeldRun& run, uint32_t (&out)[4]) {
  if (run.shape == kGathered) {
#pragma unroll
    for (int i = 0; i < 4; ++i) out[i] = run.w[2 * i] | run.w[2 * i + 1] << 16;
    return;
  }
  const int shift = run.shape & 15, first = run.shape >> 4 & 15, last = run.shape >> 8 & 15;
  uint32_t picked[4];
  if (run.shape >> 12 & 1) {
    // Word i of `pairs` holds elements 2i and 2i + 1; picked word i elements 4i and 4i + 2.
    uint32_t pairs[8];
    shift_down(run.w, shift, pairs);
#pragma unroll
    for (int i = 0; i < 4; ++i) picked[i] = __byte_perm(pairs[2 * i], pairs[2 * i + 1], 0x5410);
  } else {
    shift_down(run.w, shift, picked);
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t keep = (2 * i >= first && 2 * i < last ? 0x0000ffffu : 0u) |
                          (2 * i + 1 >= first && 2 * i + 1 < last ? 0xffff0000u : 0u);
    out[i] = picked[i] & keep;
  }
}

}  // namespace solops::detail
