// GroupNorm and InstanceNorm (spec §2.9-2.12, §6.4): x as groups of planes, shared by the entry points
// (group_norm_rules.cpp), the CPU references (group_norm_ref.cpp) and the kernels (group_norm.cu).
// InstanceNorm is GroupNorm with one channel a group; its running statistics are its own.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/check.hpp"
#include "solops/norm.hpp"

namespace solops::detail {

// x [B, C, *spatial] as B * G groups of C / G planes of `plane` (S) elements, channels g * C / G, ...,
// (g + 1) * C / G - 1. Contiguous x: group (b, g) is the K = (C / G) * S contiguous elements from
// (b * G + g) * K on. channels_last x (4-D, strictly: the validation sets it): group (b, g) is S rows
// of C / G contiguous channels, rows C apart. K is below 2^31 (the kernels index within a group in 32
// bits).
struct SpatialGroups {
  int64_t batch = 0, channels = 0, groups = 1, channels_per_group = 1, plane = 1;
  bool channels_last = false;

  int64_t group_len() const { return channels_per_group * plane; }
  int64_t group_count() const { return batch * groups; }
  // Where element s of channel c of sample b lies, in x's layout (the references' walk).
  int64_t offset(int64_t b, int64_t c, int64_t s) const {
    return channels_last ? (b * plane + s) * channels + c : (b * channels + c) * plane + s;
  }
};

// The shape rule: x of rank >= 2 without a negative dim, num_groups > 0 dividing C, each group's C / G
// channels and K elements below 2^31, eps finite and >= 0.
SpatialGroups resolve_group_norm(std::string_view op, std::span<const int64_t> x_shape, int64_t num_groups, double eps);
// InstanceNorm's: G = C (so no rule on it), momentum finite, and with use_input_stats S != 1, since
// F.instance_norm refuses one spatial element ("Expected more than 1 spatial element when training").
SpatialGroups resolve_instance_norm(std::string_view op, std::span<const int64_t> x_shape, const InstanceNorm& p);

// The tensors of a forward call. weight, bias, the statistics and the running statistics may be null.
// workspace: f32, 2 * B * C elements where the running statistics are updated.
struct GroupNormTensors {
  const TensorRef& x;
  const TensorRef* weight = nullptr;
  const TensorRef* bias = nullptr;
  const TensorRef& y;
  const TensorRef* mean = nullptr;
  const TensorRef* rstd = nullptr;
  const TensorRef* running_mean = nullptr;
  const TensorRef* running_var = nullptr;
  const TensorRef* workspace = nullptr;
};

// What a forward computes beyond y: `input_stats` (statistics from x, else from the running statistics),
// whether it updates the running statistics, and with what.
struct GroupNormMath {
  bool input_stats = true;
  bool update_running = false;
  double momentum = 0;
  double eps = 0;
};

// Every check of a forward call (GroupNorm: no running statistics): x a float tensor, contiguous or
// channels_last (4-D), the shape rule, weight and bias of x's dtype [C], mean and rstd f32 [B, G],
// running_mean and running_var f32 [C] and given together (required without use_input_stats), y of
// x's shape, dtype and memory format, the workspace (on the device), no output (the running
// statistics included) overlapping another tensor.
SpatialGroups validate_group_norm(std::string_view op, Placement placement, const GroupNormTensors& t,
                                  const GroupNorm& p);
SpatialGroups validate_instance_norm(std::string_view op, Placement placement, const GroupNormTensors& t,
                                     const InstanceNorm& p);
GroupNormMath instance_norm_math(const GroupNormTensors& t, const InstanceNorm& p);

// The tensors of a backward call; weight, grad_weight, grad_bias and workspace may be null.
struct GroupNormBackwardTensors {
  const TensorRef& grad_out;
  const TensorRef& x;
  const TensorRef* weight = nullptr;
  const TensorRef& mean;
  const TensorRef& rstd;
  const TensorRef& grad_x;
  const TensorRef* grad_weight = nullptr;
  const TensorRef* grad_bias = nullptr;
  const TensorRef* workspace = nullptr;
};

// Every check of a backward call: x a float tensor (contiguous or channels_last) and the forward's
// shape rule (InstanceNorm's without eps and momentum), grad_out and grad_x of x's shape, dtype and
// memory format, weight, grad_weight and
// grad_bias of x's dtype [C], mean and rstd f32 [B, G] (InstanceNorm: [B, C]), the workspace (on the
// device), no output overlapping another tensor.
SpatialGroups validate_group_norm_backward(std::string_view op, Placement placement, const GroupNormBackwardTensors& t,
                                           const GroupNormBackward& p);
SpatialGroups validate_instance_norm_backward(std::string_view op, Placement placement,
                                              const GroupNormBackwardTensors& t, const InstanceNormBackward& p);

// The f32 workspace of a backward call: each (sample, channel)'s two sums where a parameter gradient is
// asked for.
inline int64_t backward_partials_elements(const SpatialGroups& g, bool parameter_gradients) {
  return parameter_gradients ? 2 * g.batch * g.channels : 0;
}

// The kernels (group_norm.cu) on validated tensors.
void launch_group_norm(std::string_view op, const SpatialGroups& g, const GroupNormMath& math,
                       const GroupNormTensors& t, cudaStream_t stream);
// `centred`: the gradient of statistics taken from x (GroupNorm, InstanceNorm with use_input_stats),
// else of fixed ones.
void launch_group_norm_backward(std::string_view op, const SpatialGroups& g, bool centred,
                                const GroupNormBackwardTensors& t, cudaStream_t stream);

}  // namespace solops::detail
