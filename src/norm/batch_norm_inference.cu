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
// (128 vectors a plane) runs two channels a block, and a rank-2 x such as [32, 64] (S = 1: one
// element of each channel in a row) one element a thread, four whole rows a block, eight blocks.
// Every plane starts on a 16-byte boundary where S is a multiple of the vector width (and x and y
// are aligned), and the threads then move 16-byte vectors; otherwise one element each, which a
// warp's lanes still read contiguously.
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
      if constexpr (kVec == 1) {
        if (v < s.plane_vectors) bits[k] = __ldg(in + v);
      } else {
        bits[k] = row_norm::load_vector_if(in + v, v < s.plane_vectors);
      }
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

template <class T, int kVec>
void launch(const BatchNormPlanes& planes, const BatchNormInferenceTensors& t, float eps, cudaStream_t stream) {
  const int64_t plane_vectors = planes.plane / kVec;
  const auto lanes = static_cast<int>(std::bit_ceil(static_cast<uint64_t>(std::min<int64_t>(plane_vectors, kThreads))));
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
    const bool vectors =
        planes.plane % kVec == 0 && row_norm::aligned_to_vector(t.x.data) && row_norm::aligned_to_vector(t.y.data);
    if (vectors) batch_norm_kernels::launch<T, kVec>(planes, t, eps, stream);
    else batch_norm_kernels::launch<T, 1>(planes, t, eps, stream);
  });
  check_launch(op);
}

}  // namespace solops::detail
