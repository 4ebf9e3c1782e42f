// Convolution forward (spec §3.0-3.9): the nine operators of the family, one parameter struct for
// all of them. Semantics follow torch.nn.functional.conv1d / conv2d / conv3d (cross-correlation,
// zero padding, groups); see docs/api.md.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "solops/cost.hpp"
#include "solops/tensor.hpp"

namespace solops {

// The operators. Each fixes the spatial rank (from its name) and adds its rule to the shared ones:
//   conv1d, conv2d, conv3d   F.conv1d / conv2d / conv3d
//   pointwise_conv2d         conv2d with a 1x1 kernel
//   depthwise_conv2d         conv2d with groups == C_in
//   grouped_conv2d           conv2d with 1 < groups < C_in
//   dilated_conv2d           conv2d with a dilation other than 1 on some axis
//   conv2d_bias_relu         relu(conv2d(...)): bias required, the ReLU in f32 after the bias
//   conv1d_causal            conv1d padded d * (kW - 1) on the left and nothing on the right (no
//                            padding parameter): output t sees inputs up to t * stride only
enum class ConvOp : int32_t {
  conv1d = 0,
  conv2d = 1,
  conv3d = 2,
  pointwise_conv2d = 3,
  depthwise_conv2d = 4,
  grouped_conv2d = 5,
  dilated_conv2d = 6,
  conv2d_bias_relu = 7,
  conv1d_causal = 8,
};

// How the padding is given: explicit sizes (Conv::padding, both sides of each axis), PyTorch's
// 'valid' (none) or 'same' (stride 1 only; per axis d * (k - 1) in all, half on the left and the
// odd one on the right).
enum class ConvPadding : int32_t { explicit_sizes = 0, valid = 1, same = 2 };

// The parameters of every convolution operator. Per-axis values are in the input's order, (D, H, W)
// for 3-D, (H, W) for 2-D, (L) for 1-D; entries past the op's spatial rank are ignored.
struct Conv {
  std::array<int64_t, 3> stride{1, 1, 1};
  std::array<int64_t, 3> padding{0, 0, 0};  // with ConvPadding::explicit_sizes only
  std::array<int64_t, 3> dilation{1, 1, 1};
  ConvPadding padding_mode = ConvPadding::explicit_sizes;
  int64_t groups = 1;
};

// The op's name as messages and the bindings spell it ("conv2d_bias_relu").
std::string_view conv_op_name(ConvOp op);

// Output shape of x [N, C_in, *I] (or unbatched [C_in, *I]) convolved with weight
// [C_out, C_in / groups, *k]: [N, C_out, *O] (or [C_out, *O]), O = floor((I + padding - d * (k - 1)
// - 1) / stride) + 1 per axis. bias_shape: the bias's shape, nullopt for none. Checks every rule of
// the op that shapes and parameters decide and throws solops::Error naming the op, the argument and
// the rule.
std::vector<int64_t> conv_output_shape(ConvOp op, std::span<const int64_t> x_shape,
                                       std::span<const int64_t> weight_shape,
                                       std::optional<std::span<const int64_t>> bias_shape, const Conv& p);

// Whether conv() writes y channels_last: where a 2-D op's x is channels_last and not contiguous (a
// tensor that is both reads as contiguous). Otherwise y is contiguous.
bool conv_output_channels_last(ConvOp op, const TensorRef& x);

// Roofline (spec §3.0): FLOPs 2 * N * C_out * prod(O) * C_in / groups * prod(k), plus one add an
// output with a bias and one compare-select an output for conv2d_bias_relu's ReLU; bytes: x, the
// weight, the bias and y once each, in the input's dtype.
Cost conv_cost(ConvOp op, std::span<const int64_t> x_shape, std::span<const int64_t> weight_shape,
               std::optional<std::span<const int64_t>> bias_shape, DType dtype, const Conv& p);

// y = op(x, weight, bias). x, weight, bias (null: none) and y on the current CUDA device, one float
// dtype (f32, f16 or bf16; f16/bf16 multiply with f32 accumulation, f32 in full f32), bias [C_out].
// x, weight and y are contiguous, or, for the 2-D ops, x and weight may also be channels_last
// (torch.channels_last strides); y's layout is x's. No allocation, no synchronization: capturable
// in a CUDA graph.
void conv(ConvOp op, const TensorRef& x, const TensorRef& weight, const TensorRef* bias, const TensorRef& y,
          const Conv& p, cudaStream_t stream = nullptr);

namespace reference {

// The CPU reference (solops/reference.hpp): host tensors, the same rules and layouts as conv(),
// float64 accumulation, one rounding to y's dtype.
void conv(ConvOp op, const TensorRef& x, const TensorRef& weight, const TensorRef* bias, const TensorRef& y,
          const Conv& p);

}  // namespace reference

}  // namespace solops
