// BatchNormFwd in training mode (spec §2.6) and BatchNormBwd (spec §2.8): the tensors of a call, its
// validation and the plan of its kernels, shared by the entry points (batch_norm_rules.cpp), the CPU
// references (batch_norm_ref.cpp) and the kernels (batch_norm_forward.cu, batch_norm_backward.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/check.hpp"
#include "norm/batch_norm_inference.hpp"
#include "solops/norm.hpp"

namespace solops::detail {

// The tensors of a training forward; the running statistics, weight and bias may be null.
struct BatchNormTrainingTensors {
  const TensorRef& x;
  const TensorRef* running_mean = nullptr;
  const TensorRef* running_var = nullptr;
  const TensorRef* weight = nullptr;
  const TensorRef* bias = nullptr;
  const TensorRef& y;
  const TensorRef& save_mean;
  const TensorRef& save_invstd;
  const TensorRef* workspace = nullptr;
};

// The tensors of a backward; weight, grad_weight and grad_bias may be null.
struct BatchNormBackwardTensors {
  const TensorRef& grad_out;
  const TensorRef& x;
  const TensorRef* weight = nullptr;
  const TensorRef& save_mean;
  const TensorRef& save_invstd;
  const TensorRef& grad_x;
  const TensorRef* grad_weight = nullptr;
  const TensorRef* grad_bias = nullptr;
  const TensorRef* workspace = nullptr;
};

// The shape rules: resolve_batch_norm_planes (x of rank >= 2, eps finite and >= 0), fewer than 2^31
// values a channel (the kernels index a channel's values in 32 bits), and, for the training
// forward, momentum finite and L = B * plane > 1 unless x is empty.
BatchNormPlanes resolve_batch_norm_training(std::string_view op, std::span<const int64_t> x_shape,
                                            const BatchNormTraining& p);
BatchNormPlanes resolve_batch_norm_backward(std::string_view op, std::span<const int64_t> x_shape);
// The workspace functions' channels_last flag describes a 4-D x only.
void check_channels_last_rank(std::string_view op, std::span<const int64_t> x_shape, bool channels_last);

// Every check of a call, in this order: the shape rule, x a float tensor (contiguous or channels_last),
// the [C] tensors (f32 or x's dtype; the saved statistics f32), the outputs' shapes, dtypes and memory
// format (x's; grad_out's too), no overlap, the workspace (on the device). Nothing is written before
// all have passed. The planes returned are x's memory_planes: the kernels and references walk those.
BatchNormPlanes validate_batch_norm_training(std::string_view op, Placement placement,
                                             const BatchNormTrainingTensors& t, const BatchNormTraining& p);
BatchNormPlanes validate_batch_norm_backward(std::string_view op, Placement placement,
                                             const BatchNormBackwardTensors& t);

// How the kernels walk a channel's L = B * plane values: as N = L / vec vectors (16 bytes, or single
// elements where the planes or pointers do not allow vectors), vector j of channel c at plane b = j /
// plane_vectors, offset j % plane_vectors. A block of kBatchNormThreads threads serves
// 2^channel_bits consecutive channels (several only for planes of fewer than 32 vectors, so that a
// warp reads whole lines across channels) with a team of the others each; each team holds a chunk of
// its channel's vectors, `held` vectors a thread. A channel's `chunks` chunks are either the blocks of
// one cluster (clustered: each channel's values read once, in one kernel) or blocks of a grid whose
// partial statistics meet in the workspace (two passes, for channels a cluster cannot hold).
struct BatchNormPlan {
  BatchNormPlanes planes;
  int vec = 1;              // elements a vector
  int plane_vectors = 0;    // vectors a plane
  int channel_vectors = 0;  // N
  int lane_bits = 0;        // log2 of the threads of a team that walk one plane side by side in a warp
  int channel_bits = 0;     // log2 of the channels a block serves
  int held = 0;             // vectors a thread holds: 2, 4 or 8
  int chunks = 0;           // chunks (blocks) a channel
  bool clustered = false;

  int team() const;            // threads a channel has in a block
  int chunk_vectors() const;   // team() * held
  int64_t groups() const;      // blocks of channels: ceil(C / 2^channel_bits)
};

constexpr int kBatchNormThreads = 256;

// The plan of a call whose values move in vectors of `vec` elements: a channel in the fewest blocks
// that hold it. With vec = 1 it is the plan that needs the most workspace, which the
// *_workspace_elements functions report.
BatchNormPlan plan_batch_norm(const BatchNormPlanes& planes, int vec);

// The f32 workspace elements a plan needs: the forward's per-chunk (count, mean, M2) partials, the
// backward's per-chunk sums and per-channel totals. 0 for a clustered plan.
int64_t batch_norm_training_workspace(const BatchNormPlan& plan);
int64_t batch_norm_backward_workspace(const BatchNormPlan& plan);

void launch_batch_norm_training(std::string_view op, const BatchNormPlanes& planes, const BatchNormTrainingTensors& t,
                                const BatchNormTraining& p, cudaStream_t stream);
void launch_batch_norm_backward(std::string_view op, const BatchNormPlanes& planes, const BatchNormBackwardTensors& t,
                                cudaStream_t stream);

}  // namespace solops::detail
