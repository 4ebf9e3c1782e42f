// The implicit-GEMM convolution on tensor cores (f16 and bf16 in, f32 accumulation), included by one
// translation unit per dtype (conv_implicit_gemm_f16.cu, conv_implicit_gemm_bf16.cu).
//
// Per image n and group g the convolution is the GEMM D[C_out/g, pixels] = W[C_out/g, K] *
// B[K, pixels], K = C_in/g * taps, with B the im2col of x, never materialized. The pixel axis is
// the N of the GEMM: it is contiguous in NCHW x and y, so both are read and written in place, with
// no layout change, and the bias is one value per row of D (per output channel), added in the
// epilogue with the ReLU of conv2d_bias_relu before the single rounding.
//
// K is ordered (c_in, tap), the order of a contiguous OIHW weight row, so the A tile (weights) is a
// contiguous copy of the weight; the B tile (activations) is gathered element by element, each
// thread holding one pixel column of the tile and reading K rows of it, with zero where a tap falls
// in the padding or past K. The K rows of each tile are decoded once per tile into shared memory
// (channel, tap offsets, x and weight offsets). Loads go global -> registers -> shared memory, one
// tile ahead of the MMAs (two shared buffers, one barrier a tile); the MMAs are mma.sync m16n8k16
// fed by ldmatrix (B with .trans: it is stored pixel-major). Every tensor is addressed through its
// strides, so the same kernel serves channels_last x, weight and y.
//
// Work items are (image, group, C_out tile, pixel tile), walked grid-stride by the blocks, pixel
// tiles fastest (neighbouring blocks share a weight tile).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "conv/conv.hpp"
#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"

namespace solops::detail::conv_gemm {

template <int kTileM, int kTileN, int kWarpsM, int kWarpsN>
struct Tile {
  static constexpr int M = kTileM, N = kTileN, K = 32;
  static constexpr int kWarpsAlongN = kWarpsN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWarpTileM = M / kWarpsM, kWarpTileN = N / kWarpsN;
  static constexpr int kMmaM = kWarpTileM / 16, kMmaN = kWarpTileN / 8;  // m16n8 MMAs of a warp
  // Shared rows padded by 8 elements (16 bytes): the eight rows an ldmatrix reads fall in distinct
  // banks, and every row stays 16-byte aligned.
  static constexpr int kPitchA = K + 8, kPitchB = N + 8;
  static constexpr int kLoadsA = M * K / kThreads, kLoadsB = K * N / kThreads;
  static_assert(kMmaM >= 1 && kMmaN % 2 == 0, "a warp tile is whole m16 rows and pairs of n8 columns");
  static_assert(kThreads % N == 0 && kThreads >= K, "each thread gathers one fixed pixel column of B");
  static_assert(M * K % kThreads == 0 && K * N % kThreads == 0, "whole loads a thread");
};

// The decoded K rows of one tile: where row k reads x (relative to the pixel's window origin) and
// the weight, or w_offset -1 past K.
template <int kK>
struct KRows {
  int64_t x_offset[kK];
  int w_offset[kK];
  int dz[kK], dy[kK], dx[kK];
};

template <class Shape>
struct SharedTiles {
  uint16_t a[2][Shape::M * Shape::kPitchA];
  uint16_t b[2][Shape::K * Shape::kPitchB];
  KRows<Shape::K> k_rows[2];
  int64_t y_offset[Shape::N];  // each pixel of the item's tile in y, relative to the channel plane
};

template <int kK>
__device__ __forceinline__ void decode_k_row(const ConvProblem& p, int k, KRows<kK>& rows, int r) {
  if (k >= p.reduction) {
    rows.w_offset[r] = -1;
    return;
  }
  const int ci = k / p.taps, tap = k - ci * p.taps;
  const int plane_taps = p.kernel_h * p.kernel_w;
  const int kd = tap / plane_taps, in_plane = tap - kd * plane_taps;
  const int kh = in_plane / p.kernel_w, kw = in_plane - kh * p.kernel_w;
  const int dz = kd * p.dilation_d, dy = kh * p.dilation_h, dx = kw * p.dilation_w;
  rows.dz[r] = dz;
  rows.dy[r] = dy;
  rows.dx[r] = dx;
  rows.x_offset[r] = ci * p.x.c + dz * p.x.d + dy * p.x.h + dx * p.x.w;
  rows.w_offset[r] = static_cast<int>(ci * p.weight.c + kd * p.weight.d + kh * p.weight.h + kw * p.weight.w);
}

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}

template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

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

template <class T, class Shape>
__global__ void __launch_bounds__(Shape::kThreads)
    implicit_gemm(const uint16_t* __restrict__ x, const uint16_t* __restrict__ weight,
                  const uint16_t* __restrict__ bias, uint16_t* __restrict__ y, const ConvProblem p,
                  const int64_t co_tiles, const int64_t pixel_tiles, const int64_t items) {
  constexpr int M = Shape::M, N = Shape::N, K = Shape::K;
  __shared__ __align__(16) SharedTiles<Shape> s;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / Shape::kWarpsAlongN, warp_n = warp % Shape::kWarpsAlongN;
  // This thread's B column and its first K row; its rows step by kRowStep.
  const int column = tid % N, first_row = tid / N;
  constexpr int kRowStep = Shape::kThreads / N;
  const int k_tiles = (p.reduction + K - 1) / K;
  const int plane_hw = p.out_h * p.out_w;

  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t pixel_tile = item % pixel_tiles;
    const int64_t rest = item / pixel_tiles;
    const int64_t co_tile = rest % co_tiles;
    const int64_t image_group = rest / co_tiles;
    const int64_t n = image_group / p.groups;
    const int group = static_cast<int>(image_group - n * p.groups);
    // pixel0 + N may pass 2^31 for planes near the limit: pixel indices stay 64-bit until checked.
    const int64_t pixel0 = pixel_tile * N;
    const int co0 = static_cast<int>(co_tile * M);
    const uint16_t* x_group = x + n * p.x.n + int64_t{group} * p.in_per_group * p.x.c;
    const uint16_t* w_group = weight + int64_t{group} * p.out_per_group * p.weight.n;

    // This thread's pixel: the origin of its window in x (before the taps' offsets).
    const bool pixel_valid = pixel0 + column < p.out_plane;
    int origin_z = 0, origin_y = 0, origin_x = 0;
    int64_t origin_offset = 0;
    if (pixel_valid) {
      const int pixel = static_cast<int>(pixel0 + column);
      const int od = pixel / plane_hw, in_plane = pixel - od * plane_hw;
      const int oh = in_plane / p.out_w, ow = in_plane - oh * p.out_w;
      origin_z = od * p.stride_d - p.pad_d;
      origin_y = oh * p.stride_h - p.pad_h;
      origin_x = ow * p.stride_w - p.pad_w;
      origin_offset = origin_z * p.x.d + origin_y * p.x.h + origin_x * p.x.w;
    }

    uint16_t a_regs[Shape::kLoadsA], b_regs[Shape::kLoadsB];
    // Reads tile kt's elements into registers, zero outside the weight, K and the input.
    const auto load_tile = [&](int kt) {
      const KRows<K>& rows = s.k_rows[kt & 1];
#pragma unroll
      for (int i = 0; i < Shape::kLoadsA; ++i) {
        const int e = tid + i * Shape::kThreads;
        const int m = e / K, r = e % K;
        const int co = co0 + m;
        const int w_offset = rows.w_offset[r];
        a_regs[i] = co < p.out_per_group && w_offset >= 0 ? w_group[int64_t{co} * p.weight.n + w_offset] : 0;
      }
#pragma unroll
      for (int i = 0; i < Shape::kLoadsB; ++i) {
        const int r = first_row + i * kRowStep;
        uint16_t value = 0;
        if (pixel_valid && rows.w_offset[r] >= 0) {
          const int z = origin_z + rows.dz[r], yy = origin_y + rows.dy[r], xx = origin_x + rows.dx[r];
          // One unsigned compare an axis: negative positions wrap past the size.
          if (static_cast<unsigned>(z) < static_cast<unsigned>(p.in_d) &&
              static_cast<unsigned>(yy) < static_cast<unsigned>(p.in_h) &&
              static_cast<unsigned>(xx) < static_cast<unsigned>(p.in_w)) {
            value = x_group[origin_offset + rows.x_offset[r]];
          }
        }
        b_regs[i] = value;
      }
    };
    const auto store_tile = [&](int buffer) {
#pragma unroll
      for (int i = 0; i < Shape::kLoadsA; ++i) {
        const int e = tid + i * Shape::kThreads;
        s.a[buffer][(e / K) * Shape::kPitchA + e % K] = a_regs[i];
      }
#pragma unroll
      for (int i = 0; i < Shape::kLoadsB; ++i) {
        s.b[buffer][(first_row + i * kRowStep) * Shape::kPitchB + column] = b_regs[i];
      }
    };
    const auto decode_rows = [&](int kt) {
      if (tid < K) decode_k_row(p, kt * K + tid, s.k_rows[kt & 1], tid);
    };

    float acc[Shape::kMmaM][Shape::kMmaN][4] = {};
    // Every warp is past the previous item's epilogue, which read y_offset, before it is rewritten.
    __syncthreads();
    if (tid < N) {
      int64_t offset = 0;
      if (pixel0 + tid < p.out_plane) {
        const int q = static_cast<int>(pixel0 + tid);
        const int od = q / plane_hw, in_plane = q - od * plane_hw;
        const int oh = in_plane / p.out_w, ow = in_plane - oh * p.out_w;
        offset = od * p.y.d + oh * p.y.h + ow * p.y.w;
      }
      s.y_offset[tid] = offset;
    }
    decode_rows(0);
    __syncthreads();
    load_tile(0);
    store_tile(0);
    if (k_tiles > 1) decode_rows(1);
    __syncthreads();
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int buffer = kt & 1;
      if (kt + 1 < k_tiles) load_tile(kt + 1);
#pragma unroll
      for (int kk = 0; kk < K; kk += 16) {
        uint32_t a_frag[Shape::kMmaM][4];
        uint32_t b_frag[Shape::kMmaN][2];
#pragma unroll
        for (int i = 0; i < Shape::kMmaM; ++i) {
          const int row = warp_m * Shape::kWarpTileM + i * 16 + (lane & 15);
          ldmatrix_x4(a_frag[i], &s.a[buffer][row * Shape::kPitchA + kk + (lane >> 4) * 8]);
        }
#pragma unroll
        for (int j = 0; j < Shape::kMmaN; j += 2) {
          const int k_row = kk + (lane & 7) + ((lane >> 3) & 1) * 8;
          const int col = warp_n * Shape::kWarpTileN + j * 8 + (lane >> 4) * 8;
          uint32_t r[4];
          ldmatrix_x4_trans(r, &s.b[buffer][k_row * Shape::kPitchB + col]);
          b_frag[j][0] = r[0];
          b_frag[j][1] = r[1];
          b_frag[j + 1][0] = r[2];
          b_frag[j + 1][1] = r[3];
        }
#pragma unroll
        for (int i = 0; i < Shape::kMmaM; ++i) {
#pragma unroll
          for (int j = 0; j < Shape::kMmaN; ++j) mma_m16n8k16<T>(acc[i][j], a_frag[i], b_frag[j][0], b_frag[j][1]);
        }
      }
      // The other buffer was last read by tile kt - 1's MMAs, which every warp finished before the
      // barrier that ended that tile; likewise tile kt's decoded rows, read by the load above.
      if (kt + 1 < k_tiles) store_tile(buffer ^ 1);
      if (kt + 2 < k_tiles) decode_rows(kt + 2);
      __syncthreads();
    }

    // Epilogue: bias, ReLU, one rounding, y through its strides.
    uint16_t* y_group = y + n * p.y.n + int64_t{group} * p.out_per_group * p.y.c;
#pragma unroll
    for (int i = 0; i < Shape::kMmaM; ++i) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int co = co0 + warp_m * Shape::kWarpTileM + i * 16 + lane / 4 + half * 8;
        if (co >= p.out_per_group) continue;
        const float shift = bias ? bits_to_float<T>(bias[int64_t{group} * p.out_per_group + co]) : 0.0f;
        uint16_t* y_channel = y_group + int64_t{co} * p.y.c;
#pragma unroll
        for (int j = 0; j < Shape::kMmaN; ++j) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int local = warp_n * Shape::kWarpTileN + j * 8 + (lane % 4) * 2 + e;
            if (pixel0 + local >= p.out_plane) continue;
            float v = acc[i][j][half * 2 + e] + shift;
            // relu(NaN) is NaN: the comparison is false for it.
            if (p.relu && v < 0.0f) v = 0.0f;
            y_channel[s.y_offset[local]] = float_to_bits<T>(v);
          }
        }
      }
    }
  }
}

template <class T, class Shape>
void launch(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y, cudaStream_t stream) {
  const int64_t co_tiles = ceil_div(p.out_per_group, Shape::M);
  const int64_t pixel_tiles = ceil_div(p.out_plane, Shape::N);
  const int64_t items = p.batch * p.groups * co_tiles * pixel_tiles;
  implicit_gemm<T, Shape><<<grid_for(items), Shape::kThreads, 0, stream>>>(
      static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(weight), static_cast<const uint16_t*>(bias),
      static_cast<uint16_t*>(y), p, co_tiles, pixel_tiles, items);
}

// 64x64 tiles of four warps, for every shape; 128x128 tiles of eight warps where the channels fill
// them and the tiles still make a full wave.
using SmallTile = Tile<64, 64, 2, 2>;
using LargeTile = Tile<128, 128, 2, 4>;

template <class T>
void launch_for_shape(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y,
                      cudaStream_t stream) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "conv", "cudaGetDevice");
  const int64_t large_tiles =
      p.batch * p.groups * ceil_div(p.out_per_group, LargeTile::M) * ceil_div(p.out_plane, LargeTile::N);
  const bool large = p.out_per_group >= LargeTile::M && p.out_plane >= LargeTile::N &&
                     large_tiles >= multiprocessor_count(device);
  if (large) launch<T, LargeTile>(p, x, weight, bias, y, stream);
  else launch<T, SmallTile>(p, x, weight, bias, y, stream);
}

}  // namespace solops::detail::conv_gemm
