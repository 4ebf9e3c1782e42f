// The resolved geometry of one convolution call, shared by the shape rule and the validation
// (conv_rules.cpp), the CPU reference (conv_ref.cpp) and the launchers (conv_launch.cpp and the
// kernels' .cu files). Built only by resolve_conv, which enforces every shape rule of spec §3.0-3.9.
// Missing leading spatial axes are one element with a one-tap window: a 1-D convolution is a 3-D
// one of depth and height 1, so one reference and one set of kernels serve every rank.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/check.hpp"
#include "solops/conv.hpp"

namespace solops::detail {

struct ConvGeometry {
  int spatial_rank = 2;  // the op's: 1 ([N, C, L]), 2 ([N, C, H, W]) or 3 ([N, C, D, H, W])
  bool batched = true;   // false for unbatched input (no N dim)
  bool relu = false;     // conv2d_bias_relu's epilogue
  bool causal = false;   // conv1d_causal: padded dilation * (kW - 1) on the left only
  int64_t batch = 1;
  // Channel counts fit in int32: the weight, [C_out, C_in / groups, *k], is below 2^31 elements
  // and groups <= C_out.
  int in_channels = 0, out_channels = 0, groups = 1;
  int in_per_group = 0, out_per_group = 0;
  // (D, H, W). Every padded input extent is below 2^31 (so is every position a window reads, and
  // every input and output size), and so are the weight's taps.
  std::array<int, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1};
  std::array<int, 3> pad_before{0, 0, 0};  // the right side's padding only shapes `out`

  std::vector<int64_t> output_shape() const;
  int taps() const { return kernel[0] * kernel[1] * kernel[2]; }
  // Planes of one channel: below 2^31 elements (the shape rule's limit).
  int in_plane() const { return in[0] * in[1] * in[2]; }
  int out_plane() const { return out[0] * out[1] * out[2]; }
  // The GEMM's K of one group: C_in / groups * taps, below 2^31 as the weight is.
  int reduction() const { return in_per_group * taps(); }
  int64_t outputs() const { return batch * out_channels * int64_t{out_plane()}; }
};

// The op's spatial rank: 1, 2 or 3.
int spatial_rank(ConvOp op);

// The shape rule: every rule of the op that shapes and parameters decide (ranks, empty dims,
// groups, the op's own restriction, the bias's length, the per-axis parameters, output sizes >= 1,
// the 32-bit limits of the kernels' in-plane indexing).
ConvGeometry resolve_conv(ConvOp op, std::span<const int64_t> x_shape, std::span<const int64_t> weight_shape,
                          std::optional<std::span<const int64_t>> bias_shape, const Conv& p);

// Every check of a call: the shape rule, then x, weight, bias (if any) and y on the placement's
// memory, of one float dtype and device, in the op's layouts (contiguous; channels_last too for a
// 2-D op's x and weight, y's layout x's), y of the output shape, apart from every input.
ConvGeometry validate_conv(ConvOp op, Placement placement, const TensorRef& x, const TensorRef& weight,
                           const TensorRef* bias, const TensorRef& y, const Conv& p);

// A tensor's strides in elements along (N, C, D, H, W) for x and y, (C_out, C_in / groups, kD, kH,
// kW) for the weight: the geometry's missing axes (and an unbatched tensor's N) get stride 0.
struct ConvStrides {
  int64_t n = 0, c = 0, d = 0, h = 0, w = 0;
};
ConvStrides conv_strides(const ConvGeometry& g, const TensorRef& t);

// What every kernel of the family reads: the geometry in 32-bit fields (in_plane and out_plane are
// below 2^31) and each tensor's strides.
struct ConvProblem {
  int64_t batch;
  int groups, in_per_group, out_per_group;
  int in_d, in_h, in_w, out_d, out_h, out_w;
  int kernel_d, kernel_h, kernel_w, stride_d, stride_h, stride_w;
  int dilation_d, dilation_h, dilation_w, pad_d, pad_h, pad_w;
  int taps, reduction, out_plane;
  bool relu;
  ConvStrides x, weight, y;
  int64_t x_elements;  // x's memory (contiguous or channels_last): its first x_elements elements
};
ConvProblem conv_problem(const ConvGeometry& g, const TensorRef& x, const TensorRef& weight, const TensorRef& y);

// The kernel classes (docs/perf/conv.md). launch_conv picks one from the shape; each launcher
// runs its class on any problem of its dtypes.
void launch_conv(std::string_view op, const ConvGeometry& g, const TensorRef& x, const TensorRef& weight,
                 const TensorRef* bias, const TensorRef& y, cudaStream_t stream);
// Direct, on CUDA cores: f32, f16, bf16.
void launch_conv_direct(const ConvProblem& problem, DType dtype, const void* x, const void* weight,
                        const void* bias, void* y, cudaStream_t stream);
// Implicit GEMM on tensor cores, one translation unit a dtype.
void launch_conv_implicit_gemm_f16(const ConvProblem& problem, const void* x, const void* weight, const void* bias,
                                   void* y, cudaStream_t stream);
void launch_conv_implicit_gemm_bf16(const ConvProblem& problem, const void* x, const void* weight, const void* bias,
                                    void* y, cudaStream_t stream);
// Depthwise causal 1-D convolution with kW <= 4, stride 1, dilation 1, one output channel a group,
// contiguous tensors: f32, f16, bf16.
bool fits_causal_depthwise(const ConvGeometry& g, const TensorRef& x, const TensorRef& y);
void launch_conv_causal_depthwise(const ConvGeometry& g, DType dtype, const void* x, const void* weight,
                                  const void* bias, void* y, cudaStream_t stream);

}  // namespace solops::detail
