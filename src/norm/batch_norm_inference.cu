// BatchNormInferenceFwd's kernel. Memory-bound: x is read once and y written once, one FMA an
// element: y = x * scale + shift with each channel's scale = weight / sqrt(running_var + eps) and
// shift = bias - running_mean * scale (spec §2.7), in f32, rounded once to x's dtype. The [C] tensors
// are f32 or x's dtype (spec §6.3), each widened exactly.
//
// The launch shape. x is B * C planes, each one channel's S contiguous elements
// (batch_norm_inference.hpp). A block is lanes x channels x images threads: threadIdx.x walks a
// plane, threadIdx.y picks one of a group of consecutive channels and threadIdx.z one of a group of
// images, so that each thread computes its channel's scale and shift from four loads, issued with
// x's, and no element needs an index division. grid.x covers the groups of channels times the chunks of a plane,
// a chunk being one round of the block's loads (kUnroll vectors a thread, all issued before any
// result is stored); grid.y covers the groups of images, walked grid-stride beyond a grid's 65535.
// Long planes take a block a chunk: each plane of [4, 128, 1024, 1024] f16 is 128 chunks of 256
// lanes. Short planes share a block instead of leaving most of its threads idle: lanes is the
// plane's vectors rounded up to a power of two, channels fill the rest of the 256 threads (as many
// as x has) and images what is left (at most 64, a block's limit along z). So [8, 64, 32, 32] f16
// (128 vectors a plane) runs two channels a block.
// Every plane starts on a 16-byte boundary where S is a multiple of the vector width (and x and y
// are aligned), and the threads then move 16-byte vectors; otherwise one element each, which a
// warp's lanes still read contiguously.
//
// Planes of one element (rank-2 x, and channels_last x: rows of C channels, batch_norm_inference.hpp)
// take a kernel of their own, normalize_rows: as planes, every element would be a thread that computes
// its channel's scale and shift for one 2-byte load. There a thread takes one vector of kVec adjacent
// channels (16 bytes where C is a multiple of the vector width, else one element) in kUnroll rows, and
// a warp reads whole runs of rows; each of the block's channels has its scale and shift computed once,
// by one thread, into shared memory, for all the block's rows.
#include <algorithm>
#include <bit>
#include <cstdint>

#include "core/device.hpp"
#include "core/dispatch.cuh"
#include "core/integer.hpp"
#include "norm/batch_norm_channel.cuh"
#include "norm/batch_norm_inference.hpp"
#include "norm/held_row.cuh"

namespace solops::detail::batch_norm_kernels {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;
constexpr int64_t kMaxGridY = 65535;
constexpr int kMaxBlockZ = 64;

// The launch's view of x: B * C planes of plane_vectors vectors, `chunks` of a plane, each
// kUnroll * blockDim.x vectors.
struct PlaneShape {
  int64_t batch, channels, plane_vectors;
  int chunks;
  float eps;
};

// The four [C] tensors, each f32 or x's dtype.
struct Channels {
  ChannelTensor weight, bias, running_mean, running_var;
};

template <class T, int kVec>
__global__ void __launch_bounds__(kThreads)
    normalize_planes(const T* __restrict__ x, T* __restrict__ y, const Channels channels, const PlaneShape s) {
  using P = row_norm::Pack<T, kVec>;
  const unsigned group = blockIdx.x / s.chunks;
  const unsigned chunk = blockIdx.x - group * s.chunks;
  const int64_t c = int64_t{group} * blockDim.y + threadIdx.y;
  if (c >= s.channels) return;
  float weight = load_channel<T>(channels.weight, c, 1.0f), bias = load_channel<T>(channels.bias, c, 0.0f);
  float running_mean = load_channel<T>(channels.running_mean, c, 0.0f);
  float running_var = load_channel<T>(channels.running_var, c, 0.0f);
  const int64_t first = int64_t{chunk} * kUnroll * blockDim.x + threadIdx.x;
  const int64_t images = int64_t{gridDim.y} * blockDim.z;
  for (int64_t b = int64_t{blockIdx.y} * blockDim.z + threadIdx.z; b < s.batch; b += images) {
    const int64_t plane = (b * s.channels + c) * s.plane_vectors;
    const P* const in = reinterpret_cast<const P*>(x) + plane;
    P* const out = reinterpret_cast<P*>(y) + plane;
    P bits[kUnroll] = {};
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t v = first + k * int64_t{blockDim.x};
      bits[k] = row_norm::load_pack_if<T, kVec>(in + v, v < s.plane_vectors);
    }
    // The [C] values pass through a volatile asm after the loads' own: the square root and division
    // that use them (and their slow-path branches) cannot then be scheduled ahead of x's loads, which
    // nvcc did, issuing one vector's load, normalizing and storing it before the next load.
    asm volatile("" : "+f"(weight), "+f"(bias), "+f"(running_mean), "+f"(running_var));
    // scale and shift after x's loads are issued: computed before them (the square root and division
    // wait for their four loads), they would put a DRAM round trip ahead of x's. A correctly rounded
    // square root and division: an error in scale (rsqrtf's is up to two ulps) grows, relative to y,
    // where x * scale and shift nearly cancel.
    const float scale = weight / sqrtf(running_var + s.eps);
    const float shift = bias - running_mean * scale;
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t v = first + k * int64_t{blockDim.x};
      if (v >= s.plane_vectors) break;
      float values[kVec];
      row_norm::unpack<T, kVec>(bits[k], values);
#pragma unroll
      for (int e = 0; e < kVec; ++e) values[e] = fmaf(values[e], scale, shift);
      out[v] = row_norm::pack<T, kVec>(values);
    }
  }
}

// The rows' view of x: `rows` rows of row_vectors vectors; a block covers vector_groups * blockDim.x
// vectors of a row (grid.x is row groups times vector groups).
struct RowsShape {
  int64_t rows, row_vectors;
  unsigned vector_groups;
  float eps;
};

template <class T, int kVec>
__global__ void __launch_bounds__(kThreads)
    normalize_rows(const T* __restrict__ x, T* __restrict__ y, const Channels channels, const RowsShape s) {
  using P = row_norm::Pack<T, kVec>;
  // The scale and shift of the block's channels, each computed by one thread: the block's rows share
  // them (threadIdx.y), and where a row has few vectors (C = 64: 8 lanes, 32 rows) a thread would
  // otherwise compute kVec channels' that 31 others compute too.
  __shared__ alignas(16) float scale_of[kThreads * kVec], shift_of[kThreads * kVec];
  const unsigned row_group = blockIdx.x / s.vector_groups;
  const int64_t first_vector = int64_t{blockIdx.x - row_group * s.vector_groups} * blockDim.x;
  const int64_t v = first_vector + threadIdx.x;
  const bool in_row = v < s.row_vectors;
  const int64_t first_row = int64_t{row_group} * blockDim.y * kUnroll + threadIdx.y;
  const P* const in = reinterpret_cast<const P*>(x) + v;
  P* const out = reinterpret_cast<P*>(y) + v;
  // x's loads first: the [C] loads below and their square roots then wait out the same DRAM round trip.
  P bits[kUnroll] = {};
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const int64_t r = first_row + k * int64_t{blockDim.y};
    bits[k] = row_norm::load_pack_if<T, kVec>(in + r * s.row_vectors, in_row && r < s.rows);
  }
  const int64_t first_channel = first_vector * kVec;
  const int64_t row_channels_left = s.row_vectors * kVec - first_channel;
  const int block_channels = static_cast<int>(row_channels_left < blockDim.x * kVec ? row_channels_left : blockDim.x * kVec);
  // At most blockDim.x * kVec channels, so at most kVec a thread: every load issued before the first
  // square root (whose slow path is a call that the loads after it would wait behind).
  const int thread = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
  uint32_t weight[kVec], bias[kVec], mean[kVec], var[kVec];
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int64_t c = first_channel + j * kThreads + thread;
    if (j * kThreads + thread >= block_channels) break;
    weight[j] = load_channel_bits<T>(channels.weight, c);
    bias[j] = load_channel_bits<T>(channels.bias, c);
    mean[j] = load_channel_bits<T>(channels.running_mean, c);
    var[j] = load_channel_bits<T>(channels.running_var, c);
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    const int i = j * kThreads + thread;
    if (i >= block_channels) break;
    // Correctly rounded, as normalize_planes' (why there).
    const float scale = channel_value<T>(channels.weight, weight[j], 1.0f) /
                        sqrtf(channel_value<T>(channels.running_var, var[j], 0.0f) + s.eps);
    scale_of[i] = scale;
    shift_of[i] = channel_value<T>(channels.bias, bias[j], 0.0f) -
                  channel_value<T>(channels.running_mean, mean[j], 0.0f) * scale;
  }
  __syncthreads();
  if (!in_row) return;
  float scale[kVec], shift[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) {
    scale[e] = scale_of[threadIdx.x * kVec + e];
    shift[e] = shift_of[threadIdx.x * kVec + e];
  }
#pragma unroll
  for (int k = 0; k < kUnroll; ++k) {
    const int64_t r = first_row + k * int64_t{blockDim.y};
    if (r >= s.rows) break;
    float values[kVec];
    row_norm::unpack<T, kVec>(bits[k], values);
#pragma unroll
    for (int e = 0; e < kVec; ++e) values[e] = fmaf(values[e], scale[e], shift[e]);
    out[r * s.row_vectors] = row_norm::pack<T, kVec>(values);
  }
}

template <class T, int kVec>
void launch_rows(const BatchNormPlanes& planes, const BatchNormInferenceTensors& t, float eps, cudaStream_t stream) {
  const int64_t row_vectors = planes.channels / kVec;
  const int lanes = row_norm::row_lanes(row_vectors, kThreads);
  const int rows_a_block = kThreads / lanes;  // blockDim.y
  const int64_t vector_groups = ceil_div(row_vectors, int64_t{lanes});
  const int64_t row_groups = ceil_div(planes.batch, int64_t{rows_a_block} * kUnroll);
  // A block moves at least kUnroll vectors a thread of its 256 (but where lanes exceed a row's
  // vectors, at most twice as many lanes as vectors): the grid is below numel / 512 + 1, so below 2^31
  // for any x a GPU can hold.
  const RowsShape s{planes.batch, row_vectors, static_cast<unsigned>(vector_groups), eps};
  const Channels tensors{channel_tensor(t.weight), channel_tensor(t.bias), channel_tensor(&t.running_mean),
                         channel_tensor(&t.running_var)};
  normalize_rows<T, kVec><<<static_cast<unsigned>(row_groups * vector_groups), dim3(lanes, rows_a_block), 0, stream>>>(
      static_cast<const T*>(t.x.data), static_cast<T*>(t.y.data), tensors, s);
}

template <class T, int kVec>
void launch(const BatchNormPlanes& planes, const BatchNormInferenceTensors& t, float eps, cudaStream_t stream) {
  const int64_t plane_vectors = planes.plane / kVec;
  const int lanes = row_norm::row_lanes(plane_vectors, kThreads);
  const auto channels =
      static_cast<int>(std::min<uint64_t>(kThreads / lanes, std::bit_ceil(static_cast<uint64_t>(planes.channels))));
  const int images = std::min(kThreads / (lanes * channels), kMaxBlockZ);
  const int64_t chunks = ceil_div(plane_vectors, int64_t{kUnroll} * lanes);
  // groups * chunks is below numel / 128 + 1, so below 2^31 for any x a GPU can hold.
  const int64_t groups = ceil_div(planes.channels, channels);
  const dim3 grid(static_cast<unsigned>(groups * chunks),
                  static_cast<unsigned>(std::min(ceil_div(planes.batch, images), kMaxGridY)));
  const PlaneShape s{planes.batch, planes.channels, plane_vectors, static_cast<int>(chunks), eps};
  const Channels tensors{channel_tensor(t.weight), channel_tensor(t.bias), channel_tensor(&t.running_mean),
                         channel_tensor(&t.running_var)};
  normalize_planes<T, kVec><<<grid, dim3(lanes, channels, images), 0, stream>>>(
      static_cast<const T*>(t.x.data), static_cast<T*>(t.y.data), tensors, s);
}

}  // namespace solops::detail::batch_norm_kernels

namespace solops::detail {

void launch_batch_norm_inference(std::string_view op, const BatchNormPlanes& planes, const BatchNormInferenceTensors& t,
                                 float eps, cudaStream_t stream) {
  if (planes.batch == 0 || planes.channels == 0 || planes.plane == 0) return;
  dispatch_float(t.x.dtype, [&]<class T>() {
    constexpr int kVec = row_norm::kVectorBytes / sizeof(T);
    const bool aligned = row_norm::aligned_to_vector(t.x.data) && row_norm::aligned_to_vector(t.y.data);
    if (planes.plane == 1) {
      if (planes.channels % kVec == 0 && aligned) batch_norm_kernels::launch_rows<T, kVec>(planes, t, eps, stream);
      else batch_norm_kernels::launch_rows<T, 1>(planes, t, eps, stream);
    } else if (planes.plane % kVec == 0 && aligned) {
      batch_norm_kernels::launch<T, kVec>(planes, t, eps, stream);
    } else {
      batch_norm_kernels::launch<T, 1>(planes, t, eps, stream);
    }
  });
  check_launch(op);
}

}  // namespace solops::detail
