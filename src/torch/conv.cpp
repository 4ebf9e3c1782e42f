// The convolution family's PyTorch binding: torch.ops.solops.<op> (and its reference, shape and cost
// targets, binding.hpp) for the nine operators. Schemas follow ATen's conv1d / conv2d / conv3d: an
// int parameter broadcasts over the axes, and each op has a `.padding` overload taking 'valid' or
// 'same' (as aten::conv2d.padding does); conv1d_causal takes no padding.
#include <array>
#include <string>

#include "core/check.hpp"
#include "solops/conv.hpp"
#include "solops/reference.hpp"
#include "torch/binding.hpp"

namespace solops::torch_binding {
namespace {

constexpr int spatial_rank(ConvOp op) {
  return op == ConvOp::conv1d || op == ConvOp::conv1d_causal ? 1 : op == ConvOp::conv3d ? 3 : 2;
}

// A per-axis parameter: one value for every axis, or one per axis; the entries past the op's axes stay.
void set_per_axis(std::string_view op, std::string_view name, const Ints& values, int axes,
                  std::array<int64_t, 3>& target) {
  detail::require(values.size() == 1 || values.size() == static_cast<size_t>(axes), op, name,
                  " must be an int or a list of ", axes, ", got ", values.size(), " values");
  for (int a = 0; a < axes; ++a) target[a] = values[values.size() == 1 ? 0 : a];
}

Conv parameters(ConvOp op, const Ints& stride, const Ints& dilation, int64_t groups) {
  const std::string_view name = conv_op_name(op);
  Conv p;
  set_per_axis(name, "stride", stride, spatial_rank(op), p.stride);
  set_per_axis(name, "dilation", dilation, spatial_rank(op), p.dilation);
  p.groups = groups;
  return p;
}

ConvPadding padding_mode(ConvOp op, const std::string& padding) {
  if (padding == "valid") return ConvPadding::valid;
  if (padding == "same") return ConvPadding::same;
  detail::require(false, conv_op_name(op), "padding = '", padding, "' must be 'valid' or 'same' (or sizes)");
  return ConvPadding::explicit_sizes;
}

// One call of op with resolved parameters, on any target.
template <Target kTarget>
auto run_conv(ConvOp op, const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Conv& p) {
  const std::string_view name = conv_op_name(op);
  const DType x_dtype = dtype(input, name, "input");
  std::optional<std::span<const int64_t>> bias_shape;
  if (bias) bias_shape = sizes(*bias);
  if constexpr (kTarget == Target::cost) {
    return cost_list(conv_cost(op, sizes(input), sizes(weight), bias_shape, x_dtype, p));
  } else {
    const Call<kTarget> call(input);
    const std::vector<int64_t> shape = conv_output_shape(op, sizes(input), sizes(weight), bias_shape, p);
    const TensorRef x_ref = view(input, name, "input"), weight_ref = view(weight, name, "weight");
    const auto bias_ref = view(bias, name, "bias");
    Tensor y = conv_output_channels_last(op, x_ref) ? call.empty_channels_last(shape, x_dtype)
                                                     : call.empty(shape, x_dtype);
    const TensorRef y_ref = view(y, name, "output");
    call.run([&](cudaStream_t stream) { solops::conv(op, x_ref, weight_ref, pointer(bias_ref), y_ref, p, stream); },
             [&] { reference::conv(op, x_ref, weight_ref, pointer(bias_ref), y_ref, p); });
    return y;
  }
}

template <Target kTarget, ConvOp kOp>
auto conv(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Ints& stride,
          const Ints& padding, const Ints& dilation, int64_t groups) {
  Conv p = parameters(kOp, stride, dilation, groups);
  set_per_axis(conv_op_name(kOp), "padding", padding, spatial_rank(kOp), p.padding);
  return run_conv<kTarget>(kOp, input, weight, bias, p);
}

template <Target kTarget, ConvOp kOp>
auto conv_padding(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Ints& stride,
                  const std::string& padding, const Ints& dilation, int64_t groups) {
  Conv p = parameters(kOp, stride, dilation, groups);
  p.padding_mode = padding_mode(kOp, padding);
  return run_conv<kTarget>(kOp, input, weight, bias, p);
}

template <Target kTarget>
auto conv1d_causal(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Ints& stride,
                   const Ints& dilation, int64_t groups) {
  return run_conv<kTarget>(ConvOp::conv1d_causal, input, weight, bias,
                           parameters(ConvOp::conv1d_causal, stride, dilation, groups));
}

// ATen's conv{1,2,3}d schemas and their .padding overloads; conv2d_bias_relu's bias has no default.
// (TORCH_BOX takes one macro argument: the template arguments' comma needs the parentheses.)
constexpr const char* kConv1dArguments =
    "(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] padding=0, int[1] dilation=1, "
    "int groups=1)";
constexpr const char* kConv1dPaddingArguments =
    "(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, str padding=\"valid\", int[1] dilation=1, "
    "int groups=1)";
constexpr const char* kConv2dArguments =
    "(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int[2] padding=0, int[2] dilation=1, "
    "int groups=1)";
constexpr const char* kConv2dPaddingArguments =
    "(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, str padding=\"valid\", int[2] dilation=1, "
    "int groups=1)";
constexpr const char* kConv3dArguments =
    "(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, int[3] padding=0, int[3] dilation=1, "
    "int groups=1)";
constexpr const char* kConv3dPaddingArguments =
    "(Tensor input, Tensor weight, Tensor? bias=None, int[3] stride=1, str padding=\"valid\", int[3] dilation=1, "
    "int groups=1)";
constexpr const char* kBiasReluArguments =
    "(Tensor input, Tensor weight, Tensor? bias, int[2] stride=1, int[2] padding=0, int[2] dilation=1, int groups=1)";
constexpr const char* kBiasReluPaddingArguments =
    "(Tensor input, Tensor weight, Tensor? bias, int[2] stride=1, str padding=\"valid\", int[2] dilation=1, "
    "int groups=1)";

template <Target kTarget>
constexpr Op kConvOps[] = {
    {"conv1d", kConv1dArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::conv1d>))},
    {"conv1d.padding", kConv1dPaddingArguments, "Tensor", TORCH_BOX((&conv_padding<kTarget, ConvOp::conv1d>))},
    {"conv2d", kConv2dArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::conv2d>))},
    {"conv2d.padding", kConv2dPaddingArguments, "Tensor", TORCH_BOX((&conv_padding<kTarget, ConvOp::conv2d>))},
    {"conv3d", kConv3dArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::conv3d>))},
    {"conv3d.padding", kConv3dPaddingArguments, "Tensor", TORCH_BOX((&conv_padding<kTarget, ConvOp::conv3d>))},
    {"pointwise_conv2d", kConv2dArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::pointwise_conv2d>))},
    {"pointwise_conv2d.padding", kConv2dPaddingArguments, "Tensor",
     TORCH_BOX((&conv_padding<kTarget, ConvOp::pointwise_conv2d>))},
    {"depthwise_conv2d", kConv2dArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::depthwise_conv2d>))},
    {"depthwise_conv2d.padding", kConv2dPaddingArguments, "Tensor",
     TORCH_BOX((&conv_padding<kTarget, ConvOp::depthwise_conv2d>))},
    {"grouped_conv2d", kConv2dArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::grouped_conv2d>))},
    {"grouped_conv2d.padding", kConv2dPaddingArguments, "Tensor",
     TORCH_BOX((&conv_padding<kTarget, ConvOp::grouped_conv2d>))},
    {"dilated_conv2d", kConv2dArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::dilated_conv2d>))},
    {"dilated_conv2d.padding", kConv2dPaddingArguments, "Tensor",
     TORCH_BOX((&conv_padding<kTarget, ConvOp::dilated_conv2d>))},
    {"conv2d_bias_relu", kBiasReluArguments, "Tensor", TORCH_BOX((&conv<kTarget, ConvOp::conv2d_bias_relu>))},
    {"conv2d_bias_relu.padding", kBiasReluPaddingArguments, "Tensor",
     TORCH_BOX((&conv_padding<kTarget, ConvOp::conv2d_bias_relu>))},
    {"conv1d_causal",
     "(Tensor input, Tensor weight, Tensor? bias=None, int[1] stride=1, int[1] dilation=1, int groups=1)", "Tensor",
     TORCH_BOX(&conv1d_causal<kTarget>)},
};

}  // namespace
}  // namespace solops::torch_binding

SOLOPS_REGISTER_FAMILY(solops::torch_binding::kConvOps)
