// BatchNormInferenceFwd (spec §2.7): x as planes, shared by the entry points
// (batch_norm_inference_rules.cpp), the CPU reference (batch_norm_inference_ref.cpp) and the kernel
// (batch_norm_inference.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/check.hpp"
#include "solops/norm.hpp"

namespace solops::detail {

// x [B, C, *spatial] as B * C planes of `plane` contiguous elements (the product of the spatial dims,
// 1 for rank 2): plane (b, c) starts at element (b * C + c) * plane, and all of it is channel c.
struct BatchNormPlanes {
  int64_t batch = 0, channels = 0, plane = 1;
};

// The shape rule: x of rank >= 2 (channels in dim 1, as F.batch_norm) without a negative dim, eps
// finite and >= 0.
BatchNormPlanes resolve_batch_norm_planes(std::string_view op, std::span<const int64_t> x_shape, double eps);

// The planes of x [B, C, *spatial] as its memory holds them. Contiguous x: `planes` as the shape gives
// them. channels_last x [B, C, H, W] (torch.channels_last and not also contiguous): B·H·W planes of
// one element, a row of C channels each, i.e. the memory of a rank-2 [B·H·W, C] x: element (b, c, h, w)
// is at ((b·H + h)·W + w)·C + c, the start of plane (b·H + h)·W + w of channel c. Every kernel and
// reference walks these planes, so none of them reads strides.
BatchNormPlanes memory_planes(const BatchNormPlanes& planes, bool channels_last);

// x (the layout check of check_tensor, contiguous or channels_last) and a tensor of x's shape and dtype
// that the kernels walk with x's offsets (y, grad_out, grad_x): it must be in x's memory format.
void check_batch_norm_x(std::string_view op, Placement placement, const TensorRef& x);
void check_like_x(std::string_view op, Placement placement, std::string_view name, const TensorRef& t,
                  const TensorRef& x);

// A [C] tensor of a batch norm (weight, bias, a running statistic), where given: on the placement's
// side, f32 or x's dtype (spec §6.3), of shape `channels`.
void check_batch_norm_channel_tensor(std::string_view op, Placement placement, std::string_view name,
                                     const TensorRef* t, DType x_dtype, std::span<const int64_t> channels);

// The tensors of one call; weight and bias may be null.
struct BatchNormInferenceTensors {
  const TensorRef& x;
  const TensorRef* weight = nullptr;
  const TensorRef* bias = nullptr;
  const TensorRef& running_mean;
  const TensorRef& running_var;
  const TensorRef& y;
};

// Every check of a call: the shape rule; x a float tensor, contiguous or channels_last; weight and bias
// (where given), running_mean and running_var [C] of f32 or x's dtype; y of x's shape, dtype and memory
// format, overlapping no input. The planes returned are x's memory_planes.
BatchNormPlanes validate_batch_norm_inference(std::string_view op, Placement placement,
                                              const BatchNormInferenceTensors& t, const BatchNormInference& p);

void launch_batch_norm_inference(std::string_view op, const BatchNormPlanes& planes, const BatchNormInferenceTensors& t,
                                 float eps, cudaStream_t stream);

}  // namespace solops::detail
