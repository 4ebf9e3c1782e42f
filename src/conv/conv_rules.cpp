// Convolution forward (spec §3.0-3.9): the shape rule, the validation of a call, the cost model and
// the entry point. The kernels are chosen in conv_launch.cpp.
#include <climits>

#include "conv/conv.hpp"

namespace solops {

std::string_view conv_op_name(ConvOp op) {
  switch (op) {
    case ConvOp::conv1d: return "conv1d";
    case ConvOp::conv2d: return "conv2d";
    case ConvOp::conv3d: return "conv3d";
    case ConvOp::pointwise_conv2d: return "pointwise_conv2d";
    case ConvOp::depthwise_conv2d: return "depthwise_conv2d";
    case ConvOp::grouped_conv2d: return "grouped_conv2d";
    case ConvOp::dilated_conv2d: return "dilated_conv2d";
    case ConvOp::conv2d_bias_relu: return "conv2d_bias_relu";
    case ConvOp::conv1d_causal: return "conv1d_causal";
  }
  throw Error(Status::invalid_argument, detail::concat("conv: unknown op code ", static_cast<int>(op)));
}

namespace detail {

int spatial_rank(ConvOp op) {
  switch (op) {
    case ConvOp::conv1d:
    case ConvOp::conv1d_causal: return 1;
    case ConvOp::conv3d: return 3;
    default: return 2;
  }
}

namespace {

// The accepted ranks, as messages name them.
constexpr std::string_view kInputLayouts[] = {"2-D [C, L] or 3-D [N, C, L]", "3-D [C, H, W] or 4-D [N, C, H, W]",
                                              "4-D [C, D, H, W] or 5-D [N, C, D, H, W]"};
constexpr std::string_view kWeightLayouts[] = {"3-D [C_out, C_in / groups, kW]",
                                               "4-D [C_out, C_in / groups, kH, kW]",
                                               "5-D [C_out, C_in / groups, kD, kH, kW]"};
constexpr std::string_view kAxisNames[3][3] = {{"L"}, {"H", "W"}, {"D", "H", "W"}};
// A per-axis parameter's label in messages: "stride = 0" for a 1-D op's scalar, "stride[1] = 0" else.
constexpr std::string_view kLabels[3][3] = {{""}, {"[0]", "[1]"}, {"[0]", "[1]", "[2]"}};

// The restriction each specialized op adds to its general one, on the resolved channel counts and
// the kernel.
void check_op_restriction(ConvOp op, std::string_view name, const ConvGeometry& g,
                          std::span<const int64_t> weight_shape, const Conv& p) {
  switch (op) {
    case ConvOp::pointwise_conv2d:
      require(g.kernel[1] == 1 && g.kernel[2] == 1, name, "the kernel must be 1x1, got ", g.kernel[1], "x",
              g.kernel[2], " (weight ", shape_text(weight_shape), ")");
      break;
    case ConvOp::depthwise_conv2d:
      require(g.groups == g.in_channels, name, "groups = ", g.groups, " must equal the input's ", g.in_channels,
              " channels (one group a channel)");
      break;
    case ConvOp::grouped_conv2d:
      require(g.groups > 1 && g.groups < g.in_channels, name, "groups = ", g.groups,
              " must be > 1 and < the input's ", g.in_channels,
              " channels (1 is conv2d, one a channel is depthwise_conv2d)");
      break;
    case ConvOp::dilated_conv2d:
      require(p.dilation[0] != 1 || p.dilation[1] != 1, name, "dilation (", p.dilation[0], ", ", p.dilation[1],
              ") must differ from 1 on some axis (else this is conv2d)");
      break;
    case ConvOp::conv1d_causal:
      require(p.padding_mode == ConvPadding::explicit_sizes && p.padding[0] == 0, name,
              "takes no padding: it pads dilation * (kW - 1) on the left and nothing on the right");
      break;
    default: break;
  }
}

// One axis's padding on each side: the explicit size twice, none ('valid'), d * (k - 1) split with the
// odd element on the right ('same'), or d * (k - 1) on the left (causal).
std::array<int64_t, 2> axis_padding(const Conv& p, bool causal, int axis, int64_t kernel) {
  if (causal) return {p.dilation[axis] * (kernel - 1), 0};
  switch (p.padding_mode) {
    case ConvPadding::valid: return {0, 0};
    case ConvPadding::same: {
      const int64_t total = p.dilation[axis] * (kernel - 1);
      return {total / 2, total - total / 2};
    }
    default: return {p.padding[axis], p.padding[axis]};
  }
}

}  // namespace

ConvGeometry resolve_conv(ConvOp op, std::span<const int64_t> x_shape, std::span<const int64_t> weight_shape,
                          std::optional<std::span<const int64_t>> bias_shape, const Conv& p) {
  const std::string_view name = conv_op_name(op);
  require(p.padding_mode == ConvPadding::explicit_sizes || p.padding_mode == ConvPadding::valid ||
              p.padding_mode == ConvPadding::same,
          name, "padding mode ", static_cast<int>(p.padding_mode), " is not a ConvPadding");
  const int spatial = spatial_rank(op);
  const auto rank = static_cast<int>(x_shape.size());
  require(rank == spatial + 1 || rank == spatial + 2, name, "input must be ", kInputLayouts[spatial - 1], ", got ",
          rank, "-D ", shape_text(x_shape));
  require(static_cast<int>(weight_shape.size()) == spatial + 2, name, "weight must be ", kWeightLayouts[spatial - 1],
          ", got ", weight_shape.size(), "-D ", shape_text(weight_shape));
  // Every product of either tensor's sizes fits in int64 from here on.
  checked_product(name, "input", x_shape);
  checked_product(name, "weight", weight_shape);
  ConvGeometry g;
  g.spatial_rank = spatial;
  g.batched = rank == spatial + 2;
  g.relu = op == ConvOp::conv2d_bias_relu;
  g.causal = op == ConvOp::conv1d_causal;
  g.batch = g.batched ? x_shape[0] : 1;
  require(g.batch >= 0, name, "input batch size ", g.batch, " is negative");
  for (int d = rank - spatial - 1; d < rank; ++d) {
    require(x_shape[d] > 0, name, "input ", shape_text(x_shape), " has an empty dim ", d,
            " (only the batch dim may be 0)");
  }
  for (size_t d = 0; d < weight_shape.size(); ++d) {
    require(weight_shape[d] > 0, name, "weight ", shape_text(weight_shape), " has an empty dim ", d);
  }
  // The 32-bit limits of the kernels' indexing, before any arithmetic on the sizes they bound.
  int64_t in_plane = 1;
  for (int64_t size : x_shape.last(spatial)) in_plane *= size;
  require(in_plane <= INT_MAX, name, "input ", shape_text(x_shape),
          " has planes of 2^31 or more elements: 32-bit in-plane indexing would overflow");
  int64_t weight_elements = 1;
  for (int64_t size : weight_shape) weight_elements *= size;
  require(weight_elements <= INT_MAX, name, "weight ", shape_text(weight_shape),
          " has 2^31 or more elements: 32-bit weight indexing would overflow");

  const int64_t in_channels = x_shape[rank - spatial - 1];
  const int64_t out_channels = weight_shape[0];
  require(p.groups >= 1, name, "groups = ", p.groups, " must be >= 1");
  require(in_channels % p.groups == 0, name, "groups = ", p.groups, " must divide the input's ", in_channels,
          " channels");
  require(out_channels % p.groups == 0, name, "groups = ", p.groups, " must divide the weight's ", out_channels,
          " output channels");
  require(in_channels / p.groups == weight_shape[1], name, "weight ", shape_text(weight_shape), " takes ",
          weight_shape[1], " input channels a group, but the input's ", in_channels, " channels in ", p.groups,
          " groups are ", in_channels / p.groups, " a group");
  // in_channels <= out_channels * weight_shape[1]: every channel count is below 2^31.
  g.in_channels = static_cast<int>(in_channels);
  g.out_channels = static_cast<int>(out_channels);
  g.groups = static_cast<int>(p.groups);
  g.in_per_group = static_cast<int>(weight_shape[1]);
  g.out_per_group = static_cast<int>(out_channels / p.groups);
  for (int a = 0; a < spatial; ++a) g.kernel[3 - spatial + a] = static_cast<int>(weight_shape[2 + a]);
  check_op_restriction(op, name, g, weight_shape, p);
  if (g.relu) require(bias_shape.has_value(), name, "bias is required (relu(conv2d(input, weight) + bias))");
  if (bias_shape) {
    const int64_t expected[] = {out_channels};
    require(std::equal(bias_shape->begin(), bias_shape->end(), std::begin(expected), std::end(expected)), name,
            "bias: shape ", shape_text(*bias_shape), " must be ", shape_text(expected),
            " (one value an output channel)");
  }

  int64_t out_plane = 1;
  for (int a = 0; a < spatial; ++a) {
    const std::string_view label = kLabels[spatial - 1][a], axis = kAxisNames[spatial - 1][a];
    const int slot = 3 - spatial + a;
    const int64_t in = x_shape[rank - spatial + a], kernel = g.kernel[slot];
    const int64_t stride = p.stride[a], dilation = p.dilation[a];
    require(stride >= 1, name, "stride", label, " = ", stride, " must be >= 1");
    require(dilation >= 1, name, "dilation", label, " = ", dilation, " must be >= 1");
    require(stride <= INT_MAX && dilation <= INT_MAX, name, "stride", label, " and dilation", label,
            " must be below 2^31 (32-bit indexing)");
    if (!g.causal && p.padding_mode == ConvPadding::explicit_sizes) {
      require(p.padding[a] >= 0, name, "padding", label, " = ", p.padding[a], " must be >= 0");
      require(p.padding[a] <= INT_MAX, name, "padding", label, " = ", p.padding[a],
              " must be below 2^31 (32-bit indexing)");
    }
    require(p.padding_mode != ConvPadding::same || stride == 1, name, "padding='same' needs stride 1 on every axis, ",
            "got stride", label, " = ", stride);
    // dilation and kernel are below 2^31: their products fit in int64, and so do the sums below.
    const auto [before, after] = axis_padding(p, g.causal, a, kernel);
    const int64_t extent = in + before + after;
    require(extent <= INT_MAX, name, "input ", axis, " = ", in, " padded by ", before, " + ", after,
            " is 2^31 or more: 32-bit indexing would overflow");
    const int64_t window = dilation * (kernel - 1) + 1;
    require(window <= extent, name, "output size along ", axis, " would be 0: the kernel spans ", window,
            " (dilation ", dilation, " * (", kernel, " - 1) + 1), more than the padded input (", in, " + ", before,
            " + ", after, ")");
    const int64_t out = (extent - window) / stride + 1;
    g.in[slot] = static_cast<int>(in);
    g.out[slot] = static_cast<int>(out);
    g.stride[slot] = static_cast<int>(stride);
    g.dilation[slot] = static_cast<int>(dilation);
    g.pad_before[slot] = static_cast<int>(before);
    out_plane *= out;  // each out is below 2^31, three of them below 2^93: checked below
    require(out_plane <= INT_MAX, name, "output planes would have 2^31 or more elements: 32-bit in-plane ",
            "indexing would overflow");
  }
  checked_product(name, "output", g.output_shape());  // so that outputs() fits in int64
  return g;
}

std::vector<int64_t> ConvGeometry::output_shape() const {
  std::vector<int64_t> shape;
  if (batched) shape.push_back(batch);
  shape.push_back(out_channels);
  for (int slot = 3 - spatial_rank; slot < 3; ++slot) shape.push_back(out[slot]);
  return shape;
}

ConvGeometry validate_conv(ConvOp op, Placement placement, const TensorRef& x, const TensorRef& weight,
                           const TensorRef* bias, const TensorRef& y, const Conv& p) {
  const std::string_view name = conv_op_name(op);
  const Layouts layouts = spatial_rank(op) == 2 ? Layouts::contiguous_or_channels_last : Layouts::contiguous;
  check_tensor(placement, name, "input", x, layouts);
  check_float_dtype(name, "input", x);
  std::optional<std::span<const int64_t>> bias_shape;
  if (bias) bias_shape = bias->sizes();
  const ConvGeometry g = resolve_conv(op, x.sizes(), weight.sizes(), bias_shape, p);
  // Device names as messages write them.
  const auto device = [](const TensorRef& t) { return t.device >= 0 ? concat("cuda:", t.device) : std::string("cpu"); };
  const auto same_device_and_dtype = [&](std::string_view tensor_name, const TensorRef& t) {
    require(t.device == x.device, name, tensor_name, " is on ", device(t), " but the input on ", device(x),
            ": every tensor of the call must be on one device");
    require(t.dtype == x.dtype, name, tensor_name, ": dtype ", dtype_name(t.dtype), " must be the input's, ",
            dtype_name(x.dtype));
  };
  same_device_and_dtype("weight", weight);
  check_tensor(placement, name, "weight", weight, layouts);
  if (bias) {
    same_device_and_dtype("bias", *bias);
    check_tensor(placement, name, "bias", *bias);
  }
  same_device_and_dtype("output", y);
  check_tensor(placement, name, "output", y, layouts);
  check_shape(name, "output", y, g.output_shape());
  const bool channels_last = conv_output_channels_last(op, x);
  require(channels_last ? is_channels_last(y) : y.is_contiguous(), name, "output must be ",
          channels_last ? "channels_last" : "contiguous", ", as the input is");
  const NamedTensor inputs[] = {{"input", &x}, {"weight", &weight}, {"bias", bias}};
  const NamedTensor outputs[] = {{"output", &y}};
  check_outputs_apart(name, outputs, inputs);
  return g;
}

ConvStrides conv_strides(const ConvGeometry& g, const TensorRef& t) {
  ConvStrides s;
  const int rank = t.rank;
  const int spatial = g.spatial_rank;
  // x and y: [N,] C, *spatial; the weight: C_out, C_in / groups, *k (always "batched").
  const int channel_dim = rank - spatial - 1;
  if (channel_dim == 1) s.n = t.strides[0];
  s.c = t.strides[channel_dim];
  int64_t* axes[] = {&s.d, &s.h, &s.w};
  for (int a = 0; a < spatial; ++a) *axes[3 - spatial + a] = t.strides[rank - spatial + a];
  return s;
}

ConvProblem conv_problem(const ConvGeometry& g, const TensorRef& x, const TensorRef& weight, const TensorRef& y) {
  return ConvProblem{
      .batch = g.batch,
      .groups = g.groups,
      .in_per_group = g.in_per_group,
      .out_per_group = g.out_per_group,
      .in_d = g.in[0], .in_h = g.in[1], .in_w = g.in[2],
      .out_d = g.out[0], .out_h = g.out[1], .out_w = g.out[2],
      .kernel_d = g.kernel[0], .kernel_h = g.kernel[1], .kernel_w = g.kernel[2],
      .stride_d = g.stride[0], .stride_h = g.stride[1], .stride_w = g.stride[2],
      .dilation_d = g.dilation[0], .dilation_h = g.dilation[1], .dilation_w = g.dilation[2],
      .pad_d = g.pad_before[0], .pad_h = g.pad_before[1], .pad_w = g.pad_before[2],
      .taps = g.taps(),
      .reduction = g.reduction(),
      .out_plane = g.out_plane(),
      .relu = g.relu,
      .x = conv_strides(g, x),
      .weight = conv_strides(g, weight),
      .y = conv_strides(g, y),
      .x_elements = x.numel(),
  };
}

}  // namespace detail

std::vector<int64_t> conv_output_shape(ConvOp op, std::span<const int64_t> x_shape,
                                       std::span<const int64_t> weight_shape,
                                       std::optional<std::span<const int64_t>> bias_shape, const Conv& p) {
  return detail::resolve_conv(op, x_shape, weight_shape, bias_shape, p).output_shape();
}

bool conv_output_channels_last(ConvOp op, const TensorRef& x) {
  return detail::spatial_rank(op) == 2 && detail::is_strictly_channels_last(x);
}

Cost conv_cost(ConvOp op, std::span<const int64_t> x_shape, std::span<const int64_t> weight_shape,
               std::optional<std::span<const int64_t>> bias_shape, DType dtype, const Conv& p) {
  const detail::ConvGeometry g = detail::resolve_conv(op, x_shape, weight_shape, bias_shape, p);
  const auto outputs = static_cast<double>(g.outputs());
  const double inputs = static_cast<double>(g.batch) * g.in_channels * g.in_plane();
  const double weights = static_cast<double>(g.out_channels) * g.reduction();
  double flops = 2 * outputs * g.reduction();
  double elements = inputs + weights + outputs;
  if (bias_shape) {
    flops += outputs;
    elements += g.out_channels;
  }
  if (g.relu) flops += outputs;
  return {flops, elements * static_cast<double>(dtype_size(dtype))};
}

void conv(ConvOp op, const TensorRef& x, const TensorRef& weight, const TensorRef* bias, const TensorRef& y,
          const Conv& p, cudaStream_t stream) {
  const detail::ConvGeometry g = detail::validate_conv(op, detail::Placement::device, x, weight, bias, y, p);
  detail::launch_conv(conv_op_name(op), g, x, weight, bias, y, stream);
}

}  // namespace solops
