// The implicit-GEMM convolution on tensor cores (f16 and bf16 in, f32 accumulation), included by one
// translation unit per dtype (conv_implicit_gemm_f16.cu, conv_implicit_gemm_bf16.cu).
//
// Per image n and group g the convolution is the GEMM D[C_out/g, pixels] = W[C_out/g, K] *
// B[K, pixels], K = C_in/g * taps, with B the im2col of x, never materialized. The pixel axis is
// the N of the GEMM: it is contiguous in NCHW x and y, so both are read and written in place, with
// no layout change, and the bias is one value per row of D (per output channel), added in the
// epilogue with the ReLU of conv2d_bias_relu before the single rounding.
//
// K is ordered (c_in, tap), the order of a contiguous OIHW weight row. Both tiles are filled in
// chunks of 8 elements (16 bytes of shared memory): an A chunk is 8 consecutive K of one weight row,
// a B chunk 8 consecutive pixels of one K row. A chunk that is one aligned 16-byte run of global
// memory is copied by cp.async. A B chunk whose 8 pixels lie in one output row, with x contiguous
// along W and stride 1 or 2 along W, is a run of x: 8 elements, or every other one of 15; it is
// loaded as the two or three aligned 16-byte blocks that hold it, then shifted down by its
// misalignment, its elements of stride 2 picked, and those in the padding (a run cut by the
// padding's edge) zeroed; a block that holds none of the run's elements inside x is not loaded.
// A chunk wholly in the padding or past K is zero; anything else (strides > 2, channels_last x,
// chunks that cross an output row, K rows not contiguous in the weight, K's tail) is gathered
// element by element, all 8 loads issued before any is used. A 1x1 unit-stride unpadded conv of a
// contiguous plane is a plain GEMM: every B row is a contiguous run of the plane. The K rows of
// each tile are decoded once into shared memory (channel, tap offsets, x and weight offsets),
// kStages tiles ahead.
//
// kStages shared buffers: the copies of tile kt + kStages - 1 are issued while tile kt is
// multiplied (cp.async groups), one barrier a tile. B chunks that go through registers are held as
// loaded while the MMAs of tile kt run and finished (shifted, masked) and stored after them, so
// that their loads' latency hides behind the MMAs; gathered A chunks are stored at once (rare: they
// keep their registers off the MMAs'). The MMAs are mma.sync m16n8k16 fed by ldmatrix (B with
// .trans: it is stored pixel-major). Every tensor is addressed through its strides, so the same
// kernel serves channels_last x, weight and y (through the element gather).
//
// After the main loop the f32 sums go through shared memory (the stage buffers), so that each
// thread finishes runs of 8 pixels of one output channel: bias, ReLU, one rounding, and the widest
// stores the run's alignment allows where it is 8 consecutive elements of y (store_run).
//
// Split K: where the tiles are too few to fill the GPU, a cluster of 2 to 8 CTAs shares each tile,
// each rank summing an equal run of the K tiles; the ranks then finish a band of the tile's rows
// each, adding all ranks' partial sums (read over distributed shared memory) in rank order. No
// workspace, no atomics, one launch, and the same sums in the same order on every call.
//
// Work items are (image, group, C_out tile, pixel tile), walked grid-stride by the clusters, pixel
// tiles fastest (neighbouring clusters share a weight tile).
//
// The channels-inner form (kChannelsInner, chosen where x's channels are contiguous and a group's
// come in whole chunks of 8: channels_last x) orders K (tap, c_in), the order of a channels_last
// (OHWI) weight row, so that a B chunk is 8 consecutive channels of one pixel at one tap: one
// 16-byte run of x, copied by cp.async (zero where the tap lies in the padding). B is then stored
// pixel by pixel, K-contiguous, and read by ldmatrix without .trans; the epilogue finishes runs of
// 8 output channels of one pixel, one run of channels_last y.
//
// Two stepped forms need no K-row decode: every chunk of x and of the weight is an aligned run, and
// a thread's chunks move by a fixed step from one K tile to the next. Each thread keeps its chunks'
// addresses and whether each lies inside x and W, and issues every chunk as cp.async copies that
// zero-fill the chunks outside (past the plane, C_out or K, or in the padding): no registers held
// through the MMAs, no gathers.
//   - Tap tiles (channels-inner; C_in/g a multiple of the K tile, the weight K-contiguous): a K tile
//     is K channels of one tap, and the chunks' addresses change taps every C_in/g / K tiles.
//   - Plane tiles (NCHW form of a 1x1 unit-stride unpadded call on contiguous planes): B row k is
//     input channel k's plane, a chunk one C_in stride further a K row. Where the planes are not
//     whole chunks of 8 pixels but whole halves of 4 (14x14), each chunk is two 8-byte copies.
#pragma once

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "conv/conv.hpp"
#include "conv/work_items.hpp"
#include "conv/x_runs.cuh"
#include "core/cluster_launch.cuh"
#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"

namespace solops::detail::conv_gemm {

namespace cg = cooperative_groups;

template <int kTileM, int kTileN, int kWarpsM, int kWarpsN, int kStageCount, int kMinBlocks>
struct Tile {
  static constexpr int M = kTileM, N = kTileN, K = 32, kStages = kStageCount;
  static constexpr int kBlocksPerSm = kMinBlocks;  // the register budget: 64K / (threads * blocks) a thread
  static constexpr int kWarpsAlongN = kWarpsN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kWarpTileM = M / kWarpsM, kWarpTileN = N / kWarpsN;
  static constexpr int kMmaM = kWarpTileM / 16, kMmaN = kWarpTileN / 8;  // m16n8 MMAs of a warp
  // Shared rows padded by 8 elements (16 bytes): the eight rows an ldmatrix reads fall in distinct
  // banks, and every row stays 16-byte aligned.
  static constexpr int kPitchA = K + 8, kPitchB = N + 8;
  // The f32 tile of sums after the main loop, in the stage buffers: rows padded by 8 floats, so that
  // the accumulators' 8-byte stores of a half warp (4 rows of 8 columns) fall in distinct banks.
  static constexpr int kPitchC = N + 8;
  // An unsplit channels-inner call's f32 tile is pixel-major (a pixel's M sums contiguous): the
  // epilogue's 8 channels of a pixel are two 16-byte loads, and a warp's stores run along y's
  // channels. Pixels padded by 4 floats, so that the accumulators' 4-byte stores of a warp (8 rows of
  // 4 column pairs) fall in distinct banks. (A split call keeps the row-major tile: its ranks' reads
  // of each other's pixel-major runs made it slower.)
  static constexpr int kPitchPixelC = M + 4;
  static_assert(N * kPitchPixelC <= M * kPitchC, "the pixel-major tile fits where the row-major one does");
  // Chunks of 8 elements a thread fills per tile. A B thread keeps one chunk column (8 pixels) and
  // steps down the K rows by kChunkRowStep.
  static constexpr int kChunkColumns = N / 8, kChunkRowStep = kThreads / kChunkColumns;
  static constexpr int kChunksA = M * K / 8 / kThreads, kChunksB = K / kChunkRowStep;
  // The channels-inner form's B: a shared row of K a pixel (padded as A's), chunks of 8 K.
  static constexpr int kPitchPixelB = K + 8, kChunksPixelB = N * K / 8 / kThreads;
  static_assert(kMmaM >= 1 && kMmaN % 2 == 0, "a warp tile is whole m16 rows and pairs of n8 columns");
  static_assert(kThreads % kChunkColumns == 0 && K % kChunkRowStep == 0, "each thread fills one chunk column of B");
  static_assert(M * K / 8 % kThreads == 0 && N * K / 8 % kThreads == 0, "whole A and B chunks a thread");
  static_assert(kStages >= 2 && kThreads >= kStages * K, "the first kStages tiles' K rows decode in one step");
};

// How a call's B tile is ordered and loaded (the launcher picks one a call).
enum class Form {
  pixel_rows,    // K (c_in, tap), a B chunk 8 pixels of one K row: NCHW x
  plane_tiles,   // pixel_rows of a 1x1 unit-stride unpadded call, every chunk an aligned run
  channel_runs,  // K (tap, c_in), a B chunk 8 channels of one pixel at one tap: channels-inner x
  tap_tiles,     // channel_runs whose K tiles each lie in one tap, every chunk an aligned run
};
// The forms whose K is ordered (tap, c_in) (B stored pixel by pixel), and those with no K-row decode.
__host__ __device__ constexpr bool channels_inner(Form form) {
  return form == Form::channel_runs || form == Form::tap_tiles;
}
__host__ __device__ constexpr bool stepped(Form form) { return form == Form::plane_tiles || form == Form::tap_tiles; }

// The decoded K rows of one tile: where row k reads x (relative to the pixel's window origin) and
// the weight, or w_offset -1 past K.
template <int kK>
struct KRows {
  int64_t x_offset[kK];
  int w_offset[kK];
  int dz[kK], dy[kK], dx[kK];
};

template <class Shape, bool kChannelsInner>
struct StageBuffers {
  alignas(16) uint16_t a[Shape::kStages][Shape::M * Shape::kPitchA];
  alignas(16) uint16_t b[Shape::kStages][kChannelsInner ? Shape::N * Shape::kPitchPixelB : Shape::K * Shape::kPitchB];
};

template <class Shape, bool kChannelsInner>
struct SharedTiles {
  union {
    StageBuffers<Shape, kChannelsInner> stages;  // the main loop's
    alignas(16) float c[Shape::M * Shape::kPitchC];  // the epilogue's sums (a split's partial sums)
  };
  KRows<Shape::K> k_rows[Shape::kStages];  // the t-th tile's rows in slot t % kStages, as its buffers
  // Each pixel of the item's tile: its offset in y (relative to the channel plane) and the origin
  // of its window in x (before the taps' offsets).
  int64_t y_offset[Shape::N], origin_offset[Shape::N];
  int origin_z[Shape::N], origin_y[Shape::N], origin_x[Shape::N];
};

// Which chunks of a call can be whole runs of memory (decided once a call, on the host).
struct Layout {
  bool weight_k_contiguous;  // weight row element k at offset k: A chunks are runs of the weight
  int run_stride;            // x contiguous along W and stride 1 or 2 along W (else 0): a B chunk of one
                             // output row is a run of x, every element (1) or every other (2)
  bool plane_contiguous;     // 1x1, unit stride, no padding, x planes contiguous: every B chunk is a run
  bool y_unit_w;             // y contiguous along W: 8 pixels of one output row are a run of y
  bool channel_runs;         // channels-inner form: x's channels contiguous, in_per_group a multiple of
                             // 8: a B chunk is a run of x
  bool plane_halves;         // plane tiles whose B chunks are 8-byte aligned, not 16: two copies a chunk
};

template <bool kChannelsInner, int kK>
__device__ __forceinline__ void decode_k_row(const ConvProblem& p, int k, KRows<kK>& rows, int r) {
  if (k >= p.reduction) {
    rows.w_offset[r] = -1;
    return;
  }
  const int outer = k / (kChannelsInner ? p.in_per_group : p.taps);
  const int inner = k - outer * (kChannelsInner ? p.in_per_group : p.taps);
  const int ci = kChannelsInner ? inner : outer, tap = kChannelsInner ? outer : inner;
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

// The 8 floats of an epilogue run at `from`, kStep floats apart (kStep 1: two 16-byte loads), into
// v or added to it.
template <int kStep, bool kAdd>
__device__ __forceinline__ void read_run(const float* from, float (&v)[8]) {
  float r[8];
  if constexpr (kStep == 1) {
    const float4 low = *reinterpret_cast<const float4*>(from), high = *reinterpret_cast<const float4*>(from + 4);
    r[0] = low.x, r[1] = low.y, r[2] = low.z, r[3] = low.w, r[4] = high.x, r[5] = high.y, r[6] = high.z, r[7] = high.w;
  } else {
#pragma unroll
    for (int e = 0; e < 8; ++e) r[e] = from[e * kStep];
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = kAdd ? v[e] + r[e] : r[e];
}

// A run's 8 sums at `own` in the f32 tile: the block's own where K is not split (read from shared
// memory as such), else every rank's partial sums added in rank order over distributed shared
// memory.
template <int kStep>
__device__ __forceinline__ void run_sums(const float* own, int splits, float (&v)[8]) {
  if (splits == 1) {
    read_run<kStep, false>(own, v);
    return;
  }
#pragma unroll
  for (int e = 0; e < 8; ++e) v[e] = 0.0f;
  for (int q = 0; q < splits; ++q) read_run<kStep, true>(cg::this_cluster().map_shared_rank(own, q), v);
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

__device__ __forceinline__ void cp_async_16(void* shared, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)), "l"(global) : "memory");
}

// kBytes (16 or 8) from `global` where `copy`, else kBytes zero bytes (the copy reads none: `global`
// need only be a valid address aligned to kBytes).
template <int kBytes>
__device__ __forceinline__ void cp_async_or_zero(void* shared, const void* global, bool copy) {
  static_assert(kBytes == 16 || kBytes == 8, "cp.async copies 16 bytes bypassing L1, or 8 through it");
  if constexpr (kBytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                 "r"(copy ? 16 : 0)
                 : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                 "r"(copy ? 8 : 0)
                 : "memory");
  }
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

template <class T, class Shape, Form kForm>
__global__ void __launch_bounds__(Shape::kThreads, Shape::kBlocksPerSm)
    implicit_gemm(const uint16_t* __restrict__ x, const uint16_t* __restrict__ weight,
                  const uint16_t* __restrict__ bias, uint16_t* __restrict__ y, const ConvProblem p,
                  const Layout layout, const WorkItems items) {
  constexpr bool kChannelsInner = channels_inner(kForm);
  constexpr bool kStepped = stepped(kForm);
  static_assert(sizeof(float) * Shape::M * Shape::kPitchC <= sizeof(StageBuffers<Shape, kChannelsInner>),
                "the f32 tile fits in the stage buffers");
  constexpr int M = Shape::M, N = Shape::N, K = Shape::K, kStages = Shape::kStages;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  SharedTiles<Shape, kChannelsInner>& s = *reinterpret_cast<SharedTiles<Shape, kChannelsInner>*>(shared_bytes);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int warp_m = warp / Shape::kWarpsAlongN, warp_n = warp % Shape::kWarpsAlongN;
  // This thread's B chunk column (8 pixels of the tile) and its first K row.
  const int chunk_column = tid % Shape::kChunkColumns * 8, first_row = tid / Shape::kChunkColumns;
  const int plane_hw = p.out_h * p.out_w;
  const uint16_t* const x_end = x + p.x_elements;
  // The CTAs of a cluster (launch's split count, 1 unsplit) share each item: rank r sums the r-th of
  // `splits` equal runs of its K tiles, then finishes the r-th of `splits` bands of its rows, adding
  // the ranks' partial sums in rank order (over distributed shared memory): deterministic.
  const int splits = static_cast<int>(cg::cluster_group::num_blocks());
  const int rank = static_cast<int>(cg::cluster_group::block_rank());
  const int all_k_tiles = (p.reduction + K - 1) / K;
  const int k_begin = static_cast<int>(int64_t{all_k_tiles} * rank / splits);
  const int k_tiles = static_cast<int>(int64_t{all_k_tiles} * (rank + 1) / splits) - k_begin;

  for (int64_t item = blockIdx.x / splits; item < items.count; item += gridDim.x / splits) {
    const auto [n, co_tile, pixel_tile, group] = decode(items, p.groups, item);
    // pixel0 + N may pass 2^31 for planes near the limit: pixel indices stay 64-bit until checked.
    const int64_t pixel0 = pixel_tile * N;
    const int co0 = static_cast<int>(co_tile * M);
    const uint16_t* x_group = x + n * p.x.n + int64_t{group} * p.in_per_group * p.x.c;
    const uint16_t* w_group = weight + int64_t{group} * p.out_per_group * p.weight.n;

    // Every warp is past the previous item's MMAs and epilogue, which read the buffers and
    // y_offset, before they are rewritten.
    __syncthreads();
    if (tid < N) {
      int64_t y_offset = 0;
      if (pixel0 + tid < p.out_plane) {
        const int q = static_cast<int>(pixel0 + tid);
        const int od = q / plane_hw, in_plane = q - od * plane_hw;
        const int oh = in_plane / p.out_w, ow = in_plane - oh * p.out_w;
        y_offset = od * p.y.d + oh * p.y.h + ow * p.y.w;
        const int z = od * p.stride_d - p.pad_d, yy = oh * p.stride_h - p.pad_h, xx = ow * p.stride_w - p.pad_w;
        s.origin_z[tid] = z;
        s.origin_y[tid] = yy;
        s.origin_x[tid] = xx;
        s.origin_offset[tid] = z * p.x.d + yy * p.x.h + xx * p.x.w;
      }
      s.y_offset[tid] = y_offset;
    }
    if (!kStepped && tid < kStages * K) {
      const int t = tid / K, row = tid % K;
      if (t < k_tiles) decode_k_row<kChannelsInner>(p, (k_begin + t) * K + row, s.k_rows[t], row);
    }
    __syncthreads();

    // Stepped forms: this thread's A chunks at K tile 0 and whether each is a row of W. Plane
    // tiles: its B chunk column's pixels in input channel 0 and whether they lie in the plane.
    // Tap tiles: the K tile issued next is channels [channel0, channel0 + K) of tap (kd, kh, kw);
    // this thread's B chunks' addresses at that tap (before channel0) and whether each is inside x.
    const uint16_t* step_a_chunk[Shape::kChunksA];
    bool step_a_inside[Shape::kChunksA];
    const uint16_t* const plane_chunk = x_group + pixel0 + chunk_column;
    const bool plane_inside = pixel0 + chunk_column < p.out_plane;
    const bool plane_high_inside = pixel0 + chunk_column + 4 < p.out_plane;  // its last 4 pixels
    int channel0 = 0, kd = 0, kh = 0, kw = 0;
    const uint16_t* tap_chunk[Shape::kChunksPixelB];
    bool tap_inside[Shape::kChunksPixelB];
    const auto point_at_tap = [&] {
      const int dz = kd * p.dilation_d, dy = kh * p.dilation_h, dx = kw * p.dilation_w;
      const int64_t tap_offset = dz * p.x.d + dy * p.x.h + dx * p.x.w;
#pragma unroll
      for (int i = 0; i < Shape::kChunksPixelB; ++i) {
        const int chunk = tid + i * Shape::kThreads;
        const int column = chunk / (K / 8), kc = chunk % (K / 8) * 8;
        // A pixel past the plane has no origin: its chunk is zero.
        tap_inside[i] = pixel0 + column < p.out_plane &&
                        static_cast<unsigned>(s.origin_z[column] + dz) < static_cast<unsigned>(p.in_d) &&
                        static_cast<unsigned>(s.origin_y[column] + dy) < static_cast<unsigned>(p.in_h) &&
                        static_cast<unsigned>(s.origin_x[column] + dx) < static_cast<unsigned>(p.in_w);
        tap_chunk[i] = tap_inside[i] ? x_group + s.origin_offset[column] + tap_offset + kc : x;
      }
    };
    if constexpr (kStepped) {
#pragma unroll
      for (int i = 0; i < Shape::kChunksA; ++i) {
        const int chunk = tid + i * Shape::kThreads;
        const int m = chunk / (K / 8), kc = chunk % (K / 8) * 8;
        step_a_inside[i] = co0 + m < p.out_per_group;
        step_a_chunk[i] = step_a_inside[i] ? w_group + int64_t{co0 + m} * p.weight.n + kc : weight;
      }
    }
    if constexpr (kForm == Form::tap_tiles) {
      const int tiles_per_tap = p.in_per_group / K, plane_taps = p.kernel_h * p.kernel_w;
      const int tap = k_begin / tiles_per_tap, in_plane = tap % plane_taps;
      channel0 = (k_begin - tap * tiles_per_tap) * K;
      kd = tap / plane_taps;
      kh = in_plane / p.kernel_w;
      kw = in_plane - kh * p.kernel_w;
      point_at_tap();
    }

    // This thread's B chunk is a run of x along W for the rows whose taps keep it inside x: its 8
    // pixels exist and lie in one output row (or the plane is one run).
    const int64_t chunk_pixel = pixel0 + chunk_column;
    const bool chunk_run =
        chunk_pixel + 8 <= p.out_plane &&
        (layout.plane_contiguous || (layout.run_stride && static_cast<int>(chunk_pixel % p.out_w) + 8 <= p.out_w));

    int run_z = 0, run_y = 0, run_x = 0;
    int64_t run_offset = 0;
    if (chunk_run) {
      run_z = s.origin_z[chunk_column];
      run_y = s.origin_y[chunk_column];
      run_x = s.origin_x[chunk_column];
      run_offset = s.origin_offset[chunk_column];
    }

    // Chunks that go through registers (elements, shifted runs, zeros): stored after the MMAs.
    HeldRun b_held[kChannelsInner ? Shape::kChunksPixelB : Shape::kChunksB];

    // B row r at the tile's pixel `column` (0 outside x and for pixels past the plane).
    const auto b_element = [&](const KRows<K>& rows, int r, int column) -> uint32_t {
      if (pixel0 + column >= p.out_plane) return 0;
      const int z = s.origin_z[column] + rows.dz[r], yy = s.origin_y[column] + rows.dy[r],
                xx = s.origin_x[column] + rows.dx[r];
      // One unsigned compare an axis: negative positions wrap past the size.
      if (static_cast<unsigned>(z) < static_cast<unsigned>(p.in_d) &&
          static_cast<unsigned>(yy) < static_cast<unsigned>(p.in_h) &&
          static_cast<unsigned>(xx) < static_cast<unsigned>(p.in_w)) {
        return x_group[s.origin_offset[column] + rows.x_offset[r]];
      }
      return 0;
    };

    // Issues a stepped form's K tile kt of A into buffer `stage`.
    const auto issue_stepped_a = [&](int kt, int stage) {
#pragma unroll
      for (int i = 0; i < Shape::kChunksA; ++i) {
        const int chunk = tid + i * Shape::kThreads;
        const int m = chunk / (K / 8), kc = chunk % (K / 8) * 8;
        const bool inside = step_a_inside[i] && kt * K + kc < p.reduction;
        cp_async_or_zero<16>(&s.stages.a[stage][m * Shape::kPitchA + kc], inside ? step_a_chunk[i] + kt * K : weight,
                             inside);
      }
    };
    // Issues plane tile kt's copies into buffer `stage`.
    const auto issue_plane_tile = [&](int kt, int stage) {
      issue_stepped_a(kt, stage);
#pragma unroll
      for (int i = 0; i < Shape::kChunksB; ++i) {
        const int r = first_row + i * Shape::kChunkRowStep, k = kt * K + r;
        const bool inside = plane_inside && k < p.reduction;
        uint16_t* const to = &s.stages.b[stage][r * Shape::kPitchB + chunk_column];
        const uint16_t* const from = plane_chunk + int64_t{k} * p.x.c;
        if (layout.plane_halves) {
          const bool high_inside = plane_high_inside && k < p.reduction;
          cp_async_or_zero<8>(to, inside ? from : x, inside);
          cp_async_or_zero<8>(to + 4, high_inside ? from + 4 : x, high_inside);
        } else {
          cp_async_or_zero<16>(to, inside ? from : x, inside);
        }
      }
    };
    // Issues tap tile kt's copies into buffer `stage`. Tap tiles are issued in order, kt = k_begin,
    // k_begin + 1, ...: each call moves the tap state on to the next tile.
    const auto issue_tap_tile = [&](int kt, int stage) {
      issue_stepped_a(kt, stage);
#pragma unroll
      for (int i = 0; i < Shape::kChunksPixelB; ++i) {
        const int chunk = tid + i * Shape::kThreads;
        const int column = chunk / (K / 8), kc = chunk % (K / 8) * 8;
        cp_async_or_zero<16>(&s.stages.b[stage][column * Shape::kPitchPixelB + kc],
                             tap_inside[i] ? tap_chunk[i] + channel0 : x, tap_inside[i]);
      }
      channel0 += K;
      if (channel0 == p.in_per_group) {
        channel0 = 0;
        if (++kw == p.kernel_w) {
          kw = 0;
          if (++kh == p.kernel_h) {
            kh = 0;
            ++kd;
          }
        }
        point_at_tap();
      }
    };
    // Issues K tile kt's copies into buffer `stage` (the slot of its K rows).
    const auto issue_chunk_tile = [&](int kt, int stage) {
      const KRows<K>& rows = s.k_rows[stage];
#pragma unroll
      for (int i = 0; i < Shape::kChunksA; ++i) {
        const int chunk = tid + i * Shape::kThreads;
        const int m = chunk / (K / 8), kc = chunk % (K / 8) * 8;
        const int co = co0 + m, k0 = kt * K + kc;
        uint16_t* to = &s.stages.a[stage][m * Shape::kPitchA + kc];
        const uint16_t* w_row = w_group + int64_t{co} * p.weight.n;
        if (co < p.out_per_group && layout.weight_k_contiguous && k0 + 8 <= p.reduction && aligned_16(w_row + k0)) {
          cp_async_16(to, w_row + k0);
        } else {
          // The element gather (weight rows not K-contiguous, K's tail, unaligned rows): all 8
          // loads issued before any is used, stored at once (the buffer is free: it does not wait
          // for the MMAs as B's held runs do, which keeps its registers off the MMAs').
          uint32_t values[8];
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            const int w_offset = co < p.out_per_group ? rows.w_offset[kc + e] : -1;
            values[e] = w_offset >= 0 ? w_row[w_offset] : 0;
          }
          *reinterpret_cast<uint4*>(to) = make_uint4(values[0] | values[1] << 16, values[2] | values[3] << 16,
                                                     values[4] | values[5] << 16, values[6] | values[7] << 16);
        }
      }
      if constexpr (kChannelsInner) {
        // Chunk i: 8 K rows (channels of one tap) of pixel `column`.
#pragma unroll
        for (int i = 0; i < Shape::kChunksPixelB; ++i) {
          const int chunk = tid + i * Shape::kThreads;
          const int column = chunk / (K / 8), kc = chunk % (K / 8) * 8;
          hold_zero(b_held[i]);
          if (pixel0 + column >= p.out_plane || rows.w_offset[kc] < 0) continue;  // past the plane or K
          if (layout.channel_runs) {
            const int z = s.origin_z[column] + rows.dz[kc], yy = s.origin_y[column] + rows.dy[kc],
                      xx = s.origin_x[column] + rows.dx[kc];
            if (static_cast<unsigned>(z) >= static_cast<unsigned>(p.in_d) ||
                static_cast<unsigned>(yy) >= static_cast<unsigned>(p.in_h) ||
                static_cast<unsigned>(xx) >= static_cast<unsigned>(p.in_w)) {
              continue;  // the tap lies in the padding
            }
            const uint16_t* src = x_group + s.origin_offset[column] + rows.x_offset[kc];
            if (aligned_16(src)) {
              cp_async_16(&s.stages.b[stage][column * Shape::kPitchPixelB + kc], src);
              b_held[i].shape = kCopied;
              continue;
            }
          }
#pragma unroll
          for (int e = 0; e < 8; ++e) b_held[i].w[e] = rows.w_offset[kc + e] >= 0 ? b_element(rows, kc + e, column) : 0;
        }
      } else {
#pragma unroll
        for (int i = 0; i < Shape::kChunksB; ++i) {
          const int r = first_row + i * Shape::kChunkRowStep;
          uint16_t* to = &s.stages.b[stage][r * Shape::kPitchB + chunk_column];
          hold_zero(b_held[i]);
          if (rows.w_offset[r] < 0) continue;  // past K
          if (chunk_run) {
            const int z = run_z + rows.dz[r], yy = run_y + rows.dy[r], xx = run_x + rows.dx[r];
            if (static_cast<unsigned>(z) >= static_cast<unsigned>(p.in_d) ||
                static_cast<unsigned>(yy) >= static_cast<unsigned>(p.in_h)) {
              continue;  // the whole run's row is padding
            }
            const uint16_t* src = x_group + run_offset + rows.x_offset[r];
            // The run's elements [lo, hi) lie inside x's row (a contiguous plane: all 8, along the
            // plane), the others in the padding.
            const int span = layout.plane_contiguous ? 8 : 7 * layout.run_stride + 1;
            const int lo = layout.plane_contiguous ? 0 : max(0, -xx);
            const int hi = layout.plane_contiguous ? 8 : min(span, p.in_w - xx);
            if (lo >= hi) continue;  // the whole run is padding
            if (layout.run_stride == 2) {
              if (run_blocks_inside<2>(src, x, x_end)) {
                fetch_run<2>(src, lo, hi, b_held[i]);
                continue;
              }
            } else if (lo == 0 && hi == span && aligned_16(src)) {
              cp_async_16(to, src);
              b_held[i].shape = kCopied;
              continue;
            } else if (run_blocks_inside<1>(src, x, x_end)) {
              fetch_run<1>(src, lo, hi, b_held[i]);
              continue;
            }
            // A run at x's first or last elements: the gather.
          }
          // The element gather: all 8 loads issued, none used before the MMAs.
#pragma unroll
          for (int e = 0; e < 8; ++e) b_held[i].w[e] = b_element(rows, r, chunk_column + e);
        }
      }
    };
    const auto issue_tile = [&](int kt, int stage) {
      if constexpr (kForm == Form::tap_tiles) issue_tap_tile(kt, stage);
      else if constexpr (kForm == Form::plane_tiles) issue_plane_tile(kt, stage);
      else issue_chunk_tile(kt, stage);
    };
    const auto store_tile = [&](int stage) {
      if constexpr (!kStepped) {  // the stepped forms hold nothing: every chunk went by cp.async
#pragma unroll
        for (int i = 0; i < (kChannelsInner ? Shape::kChunksPixelB : Shape::kChunksB); ++i) {
          if (b_held[i].shape == kCopied) continue;
          int offset;
          if constexpr (kChannelsInner) {
            const int chunk = tid + i * Shape::kThreads;
            offset = chunk / (K / 8) * Shape::kPitchPixelB + chunk % (K / 8) * 8;
          } else {
            offset = (first_row + i * Shape::kChunkRowStep) * Shape::kPitchB + chunk_column;
          }
          uint32_t words[4];
          finish_run(b_held[i], words);
          *reinterpret_cast<uint4*>(&s.stages.b[stage][offset]) = make_uint4(words[0], words[1], words[2], words[3]);
        }
      }
    };

    float acc[Shape::kMmaM][Shape::kMmaN][4] = {};
    // The t-th of this rank's K tiles is tile k_begin + t in buffer t % kStages. The first
    // kStages - 1 tiles; one cp.async group a tile, empty ones past the last tile, so that
    // wait_group counts tiles. A loop, not unrolled: each copy of issue_tile and store_tile is some
    // 900 instructions, and short calls stall on fetching the kernel's code (ncu: no_instruction the
    // first stall of the 64x64 rows).
#pragma unroll 1
    for (int t = 0; t < kStages - 1; ++t) {
      if (t < k_tiles) {
        issue_tile(k_begin + t, t);
        store_tile(t);
      }
      cp_async_commit();
    }
    for (int t = 0; t < k_tiles; ++t) {
      const int stage = t % kStages;
      // Tile t's copies have landed (this thread's), and after the barrier every thread's have,
      // and every warp is past tile t - 1's MMAs, whose buffer the next copies refill.
      cp_async_wait<kStages - 2>();
      __syncthreads();
      const int next = t + kStages - 1, next_stage = next % kStages;
      if (next < k_tiles) issue_tile(k_begin + next, next_stage);
      cp_async_commit();
#pragma unroll
      for (int kk = 0; kk < K; kk += 16) {
        uint32_t a_frag[Shape::kMmaM][4];
        uint32_t b_frag[Shape::kMmaN][2];
#pragma unroll
        for (int i = 0; i < Shape::kMmaM; ++i) {
          const int row = warp_m * Shape::kWarpTileM + i * 16 + (lane & 15);
          ldmatrix_x4(a_frag[i], &s.stages.a[stage][row * Shape::kPitchA + kk + (lane >> 4) * 8]);
        }
#pragma unroll
        for (int j = 0; j < Shape::kMmaN; j += 2) {
          // Matrices: K rows 0-7 and 8-15 of pixel columns j, then of j + 1.
          uint32_t r[4];
          if constexpr (kChannelsInner) {
            const int pixel = warp_n * Shape::kWarpTileN + j * 8 + (lane & 7) + (lane >> 4) * 8;
            ldmatrix_x4(r, &s.stages.b[stage][pixel * Shape::kPitchPixelB + kk + ((lane >> 3) & 1) * 8]);
          } else {
            const int k_row = kk + (lane & 7) + ((lane >> 3) & 1) * 8;
            const int col = warp_n * Shape::kWarpTileN + j * 8 + (lane >> 4) * 8;
            ldmatrix_x4_trans(r, &s.stages.b[stage][k_row * Shape::kPitchB + col]);
          }
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
      // The held B chunks of tile `next` (its buffer was freed by the barrier above); tile
      // t + kStages's K rows into tile t's slot, which only tile t's copies read.
      if (next < k_tiles) store_tile(next_stage);
      if (!kStepped && t + kStages < k_tiles && tid < K) {
        decode_k_row<kChannelsInner>(p, (k_begin + t + kStages) * K + tid, s.k_rows[stage], tid);
      }
    }
    cp_async_wait<0>();  // only empty groups are left; none may outlive the item's buffers
    __syncthreads();     // every warp is past its MMAs: the stage buffers become the f32 tile

    // The accumulators (this rank's partial sums) into the f32 tile.
#pragma unroll
    for (int i = 0; i < Shape::kMmaM; ++i) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp_m * Shape::kWarpTileM + i * 16 + lane / 4 + half * 8;
#pragma unroll
        for (int j = 0; j < Shape::kMmaN; ++j) {
          const int column = warp_n * Shape::kWarpTileN + j * 8 + (lane % 4) * 2;
          if (kChannelsInner && splits == 1) {
            s.c[column * Shape::kPitchPixelC + row] = acc[i][j][half * 2];
            s.c[(column + 1) * Shape::kPitchPixelC + row] = acc[i][j][half * 2 + 1];
          } else {
            *reinterpret_cast<float2*>(&s.c[row * Shape::kPitchC + column]) =
                make_float2(acc[i][j][half * 2], acc[i][j][half * 2 + 1]);
          }
        }
      }
    }
    // Every rank's partial tile is written (unsplit: this block's).
    if (splits > 1) cg::cluster_group::sync();
    else __syncthreads();

    // Epilogue: this rank's band of rows in runs of 8 (pixels of one channel; in the channels-inner
    // form channels of one pixel); the ranks' sums added in rank order, bias, ReLU, one rounding; one
    // run of stores (store_run) where the run is 8 consecutive elements of y, else through y's strides.
    uint16_t* y_group = y + n * p.y.n + int64_t{group} * p.out_per_group * p.y.c;
    const int band = M / splits;  // splits divides M / 8 (launch)
    const auto finish = [&](const float (&v)[8], const float (&shift)[8], uint32_t (&packed)[4]) {
#pragma unroll
      for (int e = 0; e < 8; e += 2) {
        float v0 = v[e] + shift[e], v1 = v[e + 1] + shift[e + 1];
        // relu(NaN) is NaN: the comparison is false for it.
        if (p.relu && v0 < 0.0f) v0 = 0.0f;
        if (p.relu && v1 < 0.0f) v1 = 0.0f;
        packed[e / 2] = float_to_bits<T>(v0) | uint32_t{float_to_bits<T>(v1)} << 16;
      }
    };
    const auto bias_of = [&](int co) {
      return bias && co < p.out_per_group ? bits_to_float<T>(bias[int64_t{group} * p.out_per_group + co]) : 0.0f;
    };
    if constexpr (kChannelsInner) {
      // Unsplit (the pixel-major tile): consecutive threads take consecutive runs of one pixel, two
      // 16-byte reads a run, and a warp's stores run along y's channels. Split (the row-major tile):
      // consecutive threads take consecutive pixels, whose reads of the tile are conflict-free.
      constexpr int kPixelRuns = M / 8;
      for (int index = tid; index < band / 8 * N; index += Shape::kThreads) {
        const int row = splits == 1 ? index % kPixelRuns * 8 : rank * band + index / N * 8;
        const int column = splits == 1 ? index / kPixelRuns : index % N;
        const int co = co0 + row;
        if (co >= p.out_per_group || pixel0 + column >= p.out_plane) continue;
        float v[8], shift[8];
        if (splits == 1) read_run<1, false>(&s.c[column * Shape::kPitchPixelC + row], v);
        else run_sums<Shape::kPitchC>(&s.c[row * Shape::kPitchC + column], splits, v);
        const uint16_t* const bias_run = bias ? bias + int64_t{group} * p.out_per_group + co : nullptr;
        if (bias_run && co + 8 <= p.out_per_group && aligned_16(bias_run)) {
          const uint4 words = *reinterpret_cast<const uint4*>(bias_run);
          const uint32_t word[4] = {words.x, words.y, words.z, words.w};
#pragma unroll
          for (int e = 0; e < 8; ++e) shift[e] = bits_to_float<T>(run_element(word, e));
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) shift[e] = bias_of(co + e);
        }
        uint32_t packed[4];
        finish(v, shift, packed);
        uint16_t* run = y_group + s.y_offset[column] + int64_t{co} * p.y.c;
        if (p.y.c == 1 && co + 8 <= p.out_per_group) {
          store_run(run, packed);
        } else {
#pragma unroll
          for (int e = 0; e < 8; ++e) {
            if (co + e < p.out_per_group) run[e * p.y.c] = run_element(packed, e);
          }
        }
      }
    } else {
      constexpr int kRuns = N / 8;
      for (int index = tid; index < band * kRuns; index += Shape::kThreads) {
        const int row = rank * band + index / kRuns, column = index % kRuns * 8;
        const int co = co0 + row;
        if (co >= p.out_per_group || pixel0 + column >= p.out_plane) continue;
        float v[8];
        run_sums<1>(&s.c[row * Shape::kPitchC + column], splits, v);
        const float bias_value = bias_of(co);
        const float shift[8] = {bias_value, bias_value, bias_value, bias_value,
                                bias_value, bias_value, bias_value, bias_value};
        uint32_t packed[4];
        finish(v, shift, packed);
        uint16_t* y_channel = y_group + int64_t{co} * p.y.c;
        // With unit W stride, offsets 7 apart over 8 pixels are one run: y's validated layouts
        // (contiguous, channels_last) never step back between its rows or planes.
        uint16_t* run = y_channel + s.y_offset[column];
        if (layout.y_unit_w && pixel0 + column + 8 <= p.out_plane && s.y_offset[column + 7] - s.y_offset[column] == 7) {
          store_run(run, packed);
        } else {
          for (int e = 0; e < 8 && pixel0 + column + e < p.out_plane; ++e) {
            y_channel[s.y_offset[column + e]] = run_element(packed, e);
          }
        }
      }
    }
    // No rank's tile is rewritten (next item) while another reads it.
    if (splits > 1) cg::cluster_group::sync();
  }
}

// The channels-inner form where x's channels are contiguous and come in whole chunks of 8 a group.
inline bool channels_inner(const ConvProblem& p) { return p.x.c == 1 && p.in_per_group % 8 == 0; }

// Whether a call's K rows are runs of the weight and its B chunks runs of x (Layout).
template <bool kChannelsInner>
Layout layout_of(const ConvProblem& p) {
  const ConvStrides& w = p.weight;
  const int plane_taps = p.kernel_h * p.kernel_w;
  Layout layout{};
  // An axis of extent 1 adds no offset, whatever its stride. K is (c_in, tap) or (tap, c_in).
  const int64_t tap_step = kChannelsInner ? p.in_per_group : 1, channel_step = kChannelsInner ? 1 : p.taps;
  layout.weight_k_contiguous = (p.kernel_w == 1 || w.w == tap_step) &&
                               (p.kernel_h == 1 || w.h == p.kernel_w * tap_step) &&
                               (p.kernel_d == 1 || w.d == plane_taps * tap_step) &&
                               (p.in_per_group == 1 || w.c == channel_step);
  layout.channel_runs = kChannelsInner && channels_inner(p);
  layout.run_stride = p.x.w == 1 && (p.stride_w == 1 || p.stride_w == 2) ? p.stride_w : 0;
  layout.y_unit_w = p.y.w == 1;
  layout.plane_contiguous = p.taps == 1 && p.stride_d == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_d == 0 &&
                            p.pad_h == 0 && p.pad_w == 0 && p.x.w == 1 && (p.in_h == 1 || p.x.h == p.in_w) &&
                            (p.in_d == 1 || p.x.d == int64_t{p.in_h} * p.in_w);
  return layout;
}

// Whether every B chunk of a plane-tile call is made of aligned runs of `pixels` elements of x: 8
// (one 16-byte copy a chunk), else 4 (two 8-byte copies, Layout::plane_halves).
inline bool plane_runs_aligned(const ConvProblem& p, const void* x, int pixels) {
  return aligned_to(x, 2 * pixels) && p.x.n % pixels == 0 && p.x.c % pixels == 0 && p.out_plane % pixels == 0;
}

// K is split over a cluster of 2 or 4 CTAs while the tiles alone would leave at least half of the
// resident blocks idle and each rank keeps at least kMinSplitKTiles K tiles (enough to fill the
// pipeline): the rows of few tiles and long K (stage-down, classifier, late-stage, encodec-deep,
// ASPP). The chunk forms, whose K tiles are slow (K-row decode, held runs), go further: up to eight
// ranks, which halve the chain of K tiles a block walks where four leave half the resident blocks
// idle (stage-down: 52 tiles, 36-100 K tiles), and where the tiles fill at most an eighth of the
// resident blocks (the cube rows), down to one K tile a rank: a call's time is then the chain of K
// tiles one block walks, each waiting on its loads. The stepped forms' quick K tiles pay for
// neither's larger exchange of partial tiles (at eight ranks the NCHW plane-tile rows late-stage
// and bottleneck-reduce ran 1.5-1.8x slower, the channels_last tap-tile rows stage-down, classifier
// and ASPP 1.2-1.6x; channels_last late-stage at four ranks of two K tiles 1.4x).
constexpr int kMostSplits = 8, kMostSteppedSplits = 4, kMinSplitKTiles = 4;

template <class Shape, Form kForm>
int split_count(const ConvProblem& p, int64_t tiles, int multiprocessors) {
  constexpr int kMost = stepped(kForm) ? kMostSteppedSplits : kMostSplits;
  const int64_t resident = int64_t{multiprocessors} * Shape::kBlocksPerSm;
  const int k_tiles = (p.reduction + Shape::K - 1) / Shape::K;
  const int least_tiles_a_rank = !stepped(kForm) && tiles * 8 <= resident ? 1 : kMinSplitKTiles;
  int splits = 1;
  while (splits < kMost && tiles * splits * 2 <= resident && k_tiles >= least_tiles_a_rank * splits * 2) {
    splits *= 2;
  }
  return splits;
}

template <class T, class Shape, Form kForm>
void launch(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y, int multiprocessors,
            cudaStream_t stream) {
  constexpr bool kChannelsInner = channels_inner(kForm);
  static_assert(Shape::M / 8 % kMostSplits == 0, "a split's ranks finish equal bands of rows, in runs of 8");
  const WorkItems items = work_items(p.batch, p.groups, static_cast<int>(ceil_div(p.out_per_group, Shape::M)),
                                     static_cast<int>(ceil_div(p.out_plane, Shape::N)));
  const int splits = split_count<Shape, kForm>(p, items.count, multiprocessors);
  constexpr size_t kSharedBytes = sizeof(SharedTiles<Shape, kChannelsInner>);
  const auto kernel = implicit_gemm<T, Shape, kForm>;
  Layout layout = layout_of<kChannelsInner>(p);
  layout.plane_halves = kForm == Form::plane_tiles && !plane_runs_aligned(p, x, 8);
  // Past the default 48 KiB a block's dynamic shared memory needs the opt-in (not a stream
  // operation: fine under graph capture).
  if constexpr (kSharedBytes > 48 * 1024) {
    set_dynamic_shared_bytes("conv", reinterpret_cast<const void*>(kernel), kSharedBytes);
  }
  // Unsplit calls launch without clusters (each CTA its own implicit cluster of one).
  launch_clustered(kernel, dim3(static_cast<unsigned>(std::min<int64_t>(items.count, INT_MAX / kMostSplits) * splits)),
                   dim3(Shape::kThreads), static_cast<unsigned>(splits), kSharedBytes, stream,
                   static_cast<const uint16_t*>(x), static_cast<const uint16_t*>(weight),
                   static_cast<const uint16_t*>(bias), static_cast<uint16_t*>(y), p, layout, items);
}

// 64x64 tiles of four warps, four blocks an SM (at most 128 registers a thread), for every shape;
// 128x128 tiles of eight warps, one block an SM (its 64x32 warp tiles need more than 128
// registers), where the channels fill them and the tiles still make a full wave. Four stages each.
using SmallTile = Tile<64, 64, 2, 2, 4, 4>;
using LargeTile = Tile<128, 128, 2, 4, 4, 1>;
static_assert(SmallTile::K == LargeTile::K, "one K tile: the tap-tile rule holds for both tiles");

// The form of a call: channels-inner where x's channels are contiguous and come in whole chunks of
// 8 a group, else NCHW. Either is stepped where every chunk of x and of the weight is an aligned run
// (the pointers, and every stride that moves a chunk, multiples of the copy) and the weight rows are
// K-contiguous: channels-inner as tap tiles where a group's channels fill whole K tiles (16-byte
// chunks); NCHW as plane tiles for a 1x1 unit-stride unpadded call on contiguous planes, with a
// group's channels in whole chunks of 8 (A's chunks never straddle K's end), B's chunks 16-byte
// runs or pairs of 8-byte ones (planes of whole halves of 4 pixels: 14x14).
inline Form form_of(const ConvProblem& p, const void* x, const void* weight) {
  const bool weight_aligned = aligned_16(weight) && p.weight.n % 8 == 0;
  if (channels_inner(p)) {
    const bool tap_tiles = weight_aligned && aligned_16(x) && p.x.n % 8 == 0 && p.x.d % 8 == 0 &&
                           p.x.h % 8 == 0 && p.x.w % 8 == 0 && p.in_per_group % SmallTile::K == 0 &&
                           layout_of<true>(p).weight_k_contiguous;
    return tap_tiles ? Form::tap_tiles : Form::channel_runs;
  }
  const Layout layout = layout_of<false>(p);
  const bool plane_tiles = weight_aligned && plane_runs_aligned(p, x, 4) && layout.plane_contiguous &&
                           layout.weight_k_contiguous && p.in_per_group % 8 == 0;
  return plane_tiles ? Form::plane_tiles : Form::pixel_rows;
}

template <class T, class Shape>
void launch_form(Form form, const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y,
                 int multiprocessors, cudaStream_t stream) {
  switch (form) {
    case Form::pixel_rows: return launch<T, Shape, Form::pixel_rows>(p, x, weight, bias, y, multiprocessors, stream);
    case Form::plane_tiles:
      return launch<T, Shape, Form::plane_tiles>(p, x, weight, bias, y, multiprocessors, stream);
    case Form::channel_runs:
      return launch<T, Shape, Form::channel_runs>(p, x, weight, bias, y, multiprocessors, stream);
    case Form::tap_tiles: return launch<T, Shape, Form::tap_tiles>(p, x, weight, bias, y, multiprocessors, stream);
  }
}

template <class T>
void launch_for_shape(const ConvProblem& p, const void* x, const void* weight, const void* bias, void* y,
                      cudaStream_t stream) {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "conv", "cudaGetDevice");
  const int multiprocessors = multiprocessor_count(device);
  const int64_t large_tiles =
      p.batch * p.groups * ceil_div(p.out_per_group, LargeTile::M) * ceil_div(p.out_plane, LargeTile::N);
  const bool large = p.out_per_group >= LargeTile::M && p.out_plane >= LargeTile::N && large_tiles >= multiprocessors;
  const Form form = form_of(p, x, weight);
  if (large) launch_form<T, LargeTile>(form, p, x, weight, bias, y, multiprocessors, stream);
  else launch_form<T, SmallTile>(form, p, x, weight, bias, y, multiprocessors, stream);
}

}  // namespace solops::detail::conv_gemm
