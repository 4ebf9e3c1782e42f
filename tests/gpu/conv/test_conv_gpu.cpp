// The convolution ops on the GPU against the CPU reference (spec §3.0-3.9): every catalogue row of
// the nine ops (one test a row, so that sharded runs spread the large ones), 600 random calls
// (every op and dtype, 1-D to 3-D, unbatched, odd sizes, C_in 1 to 3, 1 to 8 channels a group,
// strides beyond the kernel, string paddings, dilation, channels_last inputs and weights,
// unaligned pointers, NaN and infinities), the depthwise causal kernel's vector and scalar paths,
// many work items, tensors past 2^31 elements, CUDA graph capture and the device-side rules.
// Outputs are poisoned first. Each tensor's allocation ends where the tensor does: compute-sanitizer
// memcheck sees a kernel's read past x (a 16-byte block of x's last elements).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <span>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "expect_error.hpp"
#include "gpu/gpu_support.hpp"
#include "host_tensor.hpp"
#include "manifest_rows.hpp"
#include "solops/conv.hpp"
#include "solops/reference.hpp"

namespace solops::testing::conv {
namespace {

using Shape = std::vector<int64_t>;

// Spec §3.0 (f16 1e-3, bf16 1.6e-2) and §6.12 (full f32: 1e-4 against float64); atol = rtol.
double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-4 : dtype == DType::f16 ? 1e-3 : 1.6e-2; }

enum class Values { normal, special };

// Normal values of deviation 0.25 (spec 3.0's draw: with unit values the sums of the widest rows grow
// so large that float32 accumulation alone misses the f16 tolerance near zero); `special` makes
// about one in 300 NaN and one in 300 infinite.
void fill(HostTensor& t, std::mt19937_64& rng, Values values = Values::normal) {
  std::normal_distribution<double> normal(0.0, 0.25);
  std::uniform_int_distribution<int> pick(0, 299);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = normal(rng);
    if (values == Values::special) {
      const int p = pick(rng);
      if (p == 0) v = std::numeric_limits<double>::quiet_NaN();
      if (p == 1) v = std::numeric_limits<double>::infinity();
    }
    t.set(i, v);
  }
}

// One call: its op and parameters, x, the weight and the bias in logical (contiguous) order, and
// the layouts the device copies of x and the weight take.
struct ConvInputs {
  ConvOp op;
  Conv p;
  HostTensor x, weight;
  std::optional<HostTensor> bias;
  bool x_channels_last = false, weight_channels_last = false;

  std::string describe() const {
    return detail::concat(conv_op_name(op), " x ", detail::shape_text(x.shape), x_channels_last ? " (NHWC)" : "",
                          " w ", detail::shape_text(weight.shape), weight_channels_last ? " (NHWC)" : "",
                          bias ? " bias" : "", " ", dtype_name(x.dtype), " stride (", p.stride[0], ",", p.stride[1],
                          ",", p.stride[2], ") padding (", p.padding[0], ",", p.padding[1], ",", p.padding[2],
                          ") mode ", static_cast<int>(p.padding_mode), " dilation (", p.dilation[0], ",",
                          p.dilation[1], ",", p.dilation[2], ") groups ", p.groups);
  }
  Shape output_shape() const {
    std::optional<std::span<const int64_t>> bias_shape;
    if (bias) bias_shape = bias->shape;
    return conv_output_shape(op, x.shape, weight.shape, bias_shape, p);
  }
};

ConvInputs make_inputs(ConvOp op, const Shape& x_shape, const Shape& weight_shape, bool with_bias, const Conv& p,
                       DType dtype, std::mt19937_64& rng, Values values = Values::normal) {
  ConvInputs in{op, p, HostTensor(x_shape, dtype), HostTensor(weight_shape, dtype), std::nullopt};
  fill(in.x, rng, values);
  fill(in.weight, rng);
  if (with_bias) {
    in.bias.emplace(Shape{weight_shape[0]}, dtype);
    fill(*in.bias, rng);
  }
  return in;
}

TensorRef device_ref(void* data, DType dtype, const Shape& shape, bool channels_last) {
  TensorRef t = make_tensor(data, dtype, shape, 0);
  if (channels_last) {
    const auto strides = channels_last_strides(shape);
    std::copy(strides.begin(), strides.end(), t.strides.begin());
  }
  return t;
}

// A device copy of `bytes`, `offset` bytes into its allocation.
std::unique_ptr<DeviceBuffer> upload(const std::vector<unsigned char>& bytes, size_t offset) {
  auto buffer = std::make_unique<DeviceBuffer>(bytes.size(), offset);
  buffer->upload(bytes.data());
  return buffer;
}

// The op on the device (x and y `offset` elements into their allocations, the weight
// `weight_offset`, y poisoned; replayed from a CUDA graph where `graph`) against the reference: the
// first disagreement, or "".
std::string compare(ConvInputs& in, size_t offset = 0, bool graph = false, size_t weight_offset = 0) {
  const Shape y_shape = in.output_shape();
  const DType dtype = in.x.dtype;
  HostTensor expected(y_shape, dtype), actual(y_shape, dtype);
  std::optional<TensorRef> host_bias;
  if (in.bias) host_bias = in.bias->ref();
  reference::conv(in.op, in.x.ref(), in.weight.ref(), host_bias ? &*host_bias : nullptr, expected.ref(), in.p);

  const size_t shift = offset * dtype_size(dtype);
  const auto x = upload(in.x_channels_last ? to_channels_last(in.x) : in.x.bytes, shift);
  const auto weight = upload(in.weight_channels_last ? to_channels_last(in.weight) : in.weight.bytes,
                             weight_offset * dtype_size(dtype));
  const auto bias = in.bias ? upload(in.bias->bytes, 0) : nullptr;
  DeviceBuffer y(expected.bytes.size(), shift);
  y.poison();
  const TensorRef x_ref = device_ref(x->data(), dtype, in.x.shape, in.x_channels_last);
  const TensorRef weight_ref = device_ref(weight->data(), dtype, in.weight.shape, in.weight_channels_last);
  std::optional<TensorRef> bias_ref;
  if (bias) bias_ref = device_ref(bias->data(), dtype, in.bias->shape, false);
  const bool y_channels_last = conv_output_channels_last(in.op, x_ref);
  const TensorRef y_ref = device_ref(y.data(), dtype, y_shape, y_channels_last);
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        solops::conv(in.op, x_ref, weight_ref, bias_ref ? &*bias_ref : nullptr, y_ref, in.p, stream);
      },
      graph);
  y.download(actual.bytes.data());
  const double tol = tolerance(dtype);
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double want = expected.at(i);
    const double got = actual.at(y_channels_last ? channels_last_index(y_shape, i) : i);
    if (!same_value(want, got) && !(std::abs(got - want) <= tol + tol * std::abs(want))) {
      return detail::concat("output[", i, "] = ", got, ", reference ", want);
    }
  }
  return {};
}

class ConvGpu : public GpuTest {};

// ---- every catalogue row ---------------------------------------------------------------------

struct RowCall {
  std::string name;  // op/workload/dtype, for the test's name
  ConvOp op;
  Shape x, weight;
  bool bias;
  Conv p;
  DType dtype;
};

// The name in gtest's listings, rather than the struct's bytes.
void PrintTo(const RowCall& call, std::ostream* out) { *out << call.name; }

std::array<int64_t, 3> per_axis(const nlohmann::json& value, int axes) {
  std::array<int64_t, 3> out{};
  for (int a = 0; a < axes; ++a) out[a] = value.is_array() ? value[a].get<int64_t>() : value.get<int64_t>();
  return out;
}

// A row's call: its shapes (weights some rows leave out come from their dims: a 1x1 kernel for
// PointwiseConv2d, a depthwise one for DepthwiseConv2d, the kernel its workload's name gives for
// Conv3dFwd) and its parameters.
RowCall row_call(const std::string& op_name, const nlohmann::json& row) {
  static const std::pair<const char*, ConvOp> kOps[] = {
      {"Conv1dFwd", ConvOp::conv1d},           {"Conv2dFwd", ConvOp::conv2d},
      {"Conv3dFwd", ConvOp::conv3d},           {"PointwiseConv2d", ConvOp::pointwise_conv2d},
      {"DepthwiseConv2d", ConvOp::depthwise_conv2d}, {"GroupedConv2d", ConvOp::grouped_conv2d},
      {"DilatedConv2d", ConvOp::dilated_conv2d},     {"Conv2dBiasRelu", ConvOp::conv2d_bias_relu},
      {"Conv1dCausal", ConvOp::conv1d_causal}};
  RowCall call;
  for (const auto& [name, op] : kOps) {
    if (op_name == name) call.op = op;
  }
  const auto& tensors = row["tensors"];
  const auto& params = row["params"];
  const auto& dims = row["dims"];
  call.x = (tensors.contains("input") ? tensors["input"] : tensors["input_shape"]).get<Shape>();
  const int axes = static_cast<int>(call.x.size()) - 2;
  const int64_t groups = params.value("groups", int64_t{1});
  if (tensors.contains("weight") || tensors.contains("weight_shape")) {
    call.weight = (tensors.contains("weight") ? tensors["weight"] : tensors["weight_shape"]).get<Shape>();
  } else {
    const int64_t weight_groups = call.op == ConvOp::depthwise_conv2d ? call.x[1] : groups;
    call.weight = {dims["C_out"].get<int64_t>(), call.x[1] / weight_groups};
    int64_t kernel = 1;
    if (dims.contains("kH")) kernel = dims["kH"].get<int64_t>();
    std::smatch match;
    const std::string workload = row["workload"];
    if (call.op == ConvOp::conv3d && std::regex_search(workload, match, std::regex("k(\\d+)|(\\d+)x\\d+x\\d+"))) {
      kernel = std::stoll(match[1].matched ? match[1].str() : match[2].str());
    }
    for (int a = 0; a < axes; ++a) call.weight.push_back(kernel);
  }
  call.bias = tensors.contains("bias");
  if (params.contains("stride")) call.p.stride = per_axis(params["stride"], axes);
  if (params.contains("padding")) call.p.padding = per_axis(params["padding"], axes);
  if (params.contains("dilation")) call.p.dilation = per_axis(params["dilation"], axes);
  call.p.groups = call.op == ConvOp::depthwise_conv2d ? call.x[1] : groups;
  call.dtype = parse_dtype(row["dtype"]);
  const std::string name = op_name + "_" + row["workload"].get<std::string>() + "_" + row["dtype"].get<std::string>();
  call.name = std::regex_replace(name, std::regex("[^A-Za-z0-9_]"), "_");
  return call;
}

std::vector<RowCall> every_row() {
  std::vector<RowCall> calls;
  for (const char* op : {"Conv1dFwd", "Conv2dFwd", "Conv3dFwd", "PointwiseConv2d", "DepthwiseConv2d", "GroupedConv2d",
                         "DilatedConv2d", "Conv2dBiasRelu", "Conv1dCausal"}) {
    for (const auto& row : catalogue_rows(op)) calls.push_back(row_call(op, row));
  }
  return calls;
}

class ConvCatalogueRow : public GpuTestWithParam<RowCall> {};

TEST_P(ConvCatalogueRow, MatchesTheReference) {
  const RowCall& row = GetParam();
  std::mt19937_64 rng(70);
  ConvInputs in = make_inputs(row.op, row.x, row.weight, row.bias, row.p, row.dtype, rng);
  EXPECT_EQ(compare(in), "") << in.describe();
}

INSTANTIATE_TEST_SUITE_P(EveryRow, ConvCatalogueRow, ::testing::ValuesIn(every_row()),
                         [](const ::testing::TestParamInfo<RowCall>& info) {
                           return info.param.name + "_" + std::to_string(info.index);
                         });

TEST(ConvCatalogue, HasTheNineOpsRows) {
  // 120 rows: 18 + 39 + 18 + 12 + 1 + 1 + 1 + 14 + 16.
  EXPECT_EQ(every_row().size(), 120u);
}

// ---- random calls ----------------------------------------------------------------------------

constexpr int kRandomCases = 600;

// A valid random call: every op, 1-D to 3-D, sizes that keep the CPU reference quick.
ConvInputs draw_call(std::mt19937_64& rng, int c) {
  const auto uniform = [&rng](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  static const ConvOp kOps[] = {ConvOp::conv1d, ConvOp::conv2d, ConvOp::conv2d, ConvOp::conv3d,
                                ConvOp::conv2d_bias_relu, ConvOp::conv1d_causal, ConvOp::conv2d};
  ConvOp op = kOps[uniform(0, std::size(kOps) - 1)];
  const int axes = op == ConvOp::conv1d || op == ConvOp::conv1d_causal ? 1 : op == ConvOp::conv3d ? 3 : 2;
  int64_t groups = std::vector<int64_t>{1, 1, 1, 2, 3, 4}[uniform(0, 5)];
  const int64_t in_choices[] = {1, 2, 3, uniform(1, 8), uniform(8, 40)};
  const int64_t out_choices[] = {1, uniform(1, 8), uniform(8, 40), uniform(16, 96)};
  int64_t in_per_group = in_choices[uniform(0, 4)], out_per_group = out_choices[uniform(0, 3)];
  if (c % 7 == 3) {  // depthwise (a channel multiplier now and then)
    groups = uniform(1, 48);
    in_per_group = 1;
    out_per_group = uniform(0, 3) == 0 ? 2 : 1;
  }
  Conv p;
  p.groups = groups;
  const int mode = op == ConvOp::conv1d_causal ? 0 : static_cast<int>(uniform(0, 3));  // 0, 1: explicit
  p.padding_mode = mode == 2 ? ConvPadding::valid : mode == 3 ? ConvPadding::same : ConvPadding::explicit_sizes;
  const int64_t largest = axes == 1 ? 300 : axes == 2 ? 36 : 10;
  Shape x{}, weight{groups * out_per_group, in_per_group};
  if (uniform(0, 6) > 0) x.push_back(uniform(1, 3));
  x.push_back(groups * in_per_group);
  for (int a = 0; a < axes; ++a) {
    const int64_t kernel = uniform(1, 5), dilation = std::vector<int64_t>{1, 1, 2, 3}[uniform(0, 3)];
    weight.push_back(kernel);
    p.dilation[a] = dilation;
    p.stride[a] = p.padding_mode == ConvPadding::same ? 1 : std::vector<int64_t>{1, 1, 2, 3, 6}[uniform(0, 4)];
    if (p.padding_mode == ConvPadding::explicit_sizes && op != ConvOp::conv1d_causal) p.padding[a] = uniform(0, 3);
    const int64_t reach = dilation * (kernel - 1) + 1;
    const int64_t low = p.padding_mode == ConvPadding::same || op == ConvOp::conv1d_causal
                            ? 1
                            : std::max<int64_t>(1, reach - 2 * p.padding[a]);
    x.push_back(uniform(low, low + largest));
  }
  const DType dtype = std::vector<DType>{DType::f32, DType::f16, DType::bf16}[uniform(0, 2)];
  ConvInputs in = make_inputs(op, x, weight, op == ConvOp::conv2d_bias_relu || uniform(0, 1) == 1, p, dtype, rng,
                              c % 11 == 5 ? Values::special : Values::normal);
  if (axes == 2 && x.size() == 4 && uniform(0, 9) < 3) {
    in.x_channels_last = true;
    in.weight_channels_last = uniform(0, 1) == 1;
  }
  return in;
}

// The multiply-adds of a call: the CPU reference's work.
int64_t multiply_adds(const ConvInputs& in) {
  int64_t outputs = 1, taps = 1;
  for (int64_t size : in.output_shape()) outputs *= size;
  for (size_t d = 1; d < in.weight.shape.size(); ++d) taps *= in.weight.shape[d];
  return outputs * taps;
}

TEST_F(ConvGpu, RandomCalls) {
  // Calls past this many multiply-adds are drawn again, so that the reference stays quick.
  constexpr int64_t kMostMultiplyAdds = 20'000'000;
  std::mt19937_64 rng(71);
  for (int c = 0; c < kRandomCases; ++c) {
    ConvInputs in = draw_call(rng, c);
    while (multiply_adds(in) > kMostMultiplyAdds) in = draw_call(rng, c);
    const size_t offset = c % 9 == 7 ? 1 : 0;  // x and y one element off their allocation's alignment
    EXPECT_EQ(compare(in, offset), "") << "case " << c << " " << in.describe() << " offset " << offset;
  }
}

// ---- specific paths --------------------------------------------------------------------------

TEST_F(ConvGpu, DepthwiseCausalVectorAndScalarPaths) {
  std::mt19937_64 rng(72);
  for (int64_t taps = 1; taps <= 4; ++taps) {
    for (const Shape& x : {Shape{2, 64, 4096}, Shape{1, 5, 3}, Shape{3, 48, 1001}, Shape{17, 9}, Shape{1, 1, 8}}) {
      for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
        const int64_t channels = x[x.size() - 2];
        Conv p;
        p.groups = channels;
        ConvInputs in = make_inputs(ConvOp::conv1d_causal, x, {channels, 1, taps}, taps % 2 == 0, p, dtype, rng);
        EXPECT_EQ(compare(in), "") << in.describe();
        EXPECT_EQ(compare(in, 1), "") << in.describe() << " offset 1";
      }
    }
  }
}

// The implicit GEMM's paths (conv_implicit_gemm.cuh): aligned runs of x (cp.async), runs at every
// 2-byte misalignment (x offset 1..7 elements, K rows shifted by the taps), runs cut by the padding
// on either side at every cut (masked runs: 1..7 elements of 8, 1..14 of a stride-2 run's 15, a
// block of the run wholly in the padding not loaded) or by the end of an output row (W not a multiple of 8), rows wholly in the
// padding, whole-plane runs of 1x1 convs (planes not a multiple of 8: runs across rows), stride-2
// runs (every other element of 15) at every alignment, dilated taps, weight rows that are runs at any alignment or not (K not a
// multiple of 8), K of one partial tile up to many tiles (fewer tiles than stages, and counts the
// stages do not divide), split K over 2, 4 and 8 ranks with K tiles the ranks do not divide evenly (on
// a 132-SM H100 or H200), stores of y's runs at every alignment (y offsets, rows of odd length), both tiles,
// f16 and bf16; plane tiles (marked P: 1x1 calls on planes of whole halves of 4 pixels, as 16-byte
// chunks at offset 0 where the planes are whole chunks of 8, as pairs of 8-byte halves at offset 4
// and on the other planes; the chunk-by-chunk form at offsets 1 and 7).
// One call of the tests below that list their shapes: the op, x's and the weight's shapes, the parameters.
struct ConvCase {
  ConvOp op;
  Shape x, weight;
  Conv p;
};

TEST_F(ConvGpu, ImplicitGemmChunkPaths) {
  std::mt19937_64 rng(77);
  Conv none, pad1, pad2_dilated, strided, pad_d;
  pad1.padding = {1, 1, 0};
  pad2_dilated.padding = {2, 2, 0};
  pad2_dilated.dilation = {2, 2, 1};
  strided.padding = {1, 1, 0};
  strided.stride = {2, 2, 1};
  pad_d.padding = {1, 1, 1};
  Conv pad_1d, strided_1d, strided_5x5;
  pad_1d.padding = {1, 0, 0};
  strided_1d.padding = {1, 0, 0};
  strided_1d.stride = {2, 1, 1};
  strided_5x5.padding = {2, 2, 0};
  strided_5x5.stride = {2, 2, 1};
  Conv wide_dilated, wide_strided;
  wide_dilated.padding = {6, 6, 0};
  wide_dilated.dilation = {6, 6, 1};
  wide_strided.padding = {5, 5, 0};
  wide_strided.stride = {2, 2, 1};
  const ConvCase cases[] = {
      {ConvOp::conv2d, {2, 24, 16, 56}, {32, 24, 3, 3}, pad1},              // W a multiple of 8
      {ConvOp::conv2d, {1, 20, 13, 57}, {48, 20, 3, 3}, pad1},              // W = 57: runs cut by row ends
      {ConvOp::conv2d, {2, 16, 14, 14}, {16, 16, 3, 3}, pad1},              // W = 14
      {ConvOp::conv2d, {1, 8, 21, 40}, {24, 8, 5, 5}, pad2_dilated},        // dilation 2, padding 2
      {ConvOp::conv2d, {1, 32, 30, 34}, {40, 32, 3, 3}, strided},           // stride 2: out_w 17
      {ConvOp::conv2d, {1, 24, 28, 56}, {32, 24, 3, 3}, strided},           // stride 2: out_w 28
      {ConvOp::conv2d, {1, 8, 20, 57}, {16, 8, 5, 5}, strided_5x5},         // stride 2, 5x5, W odd
      {ConvOp::conv2d, {1, 16, 20, 32}, {32, 16, 3, 3}, wide_dilated},      // ASPP-like: dilation 6, padding 6
      {ConvOp::conv2d, {1, 16, 24, 61}, {32, 16, 3, 3}, wide_strided},      // stride 2, padding 5: out_w 35
      {ConvOp::conv1d, {2, 40, 301}, {64, 40, 3}, strided_1d},              // 1-D stride 2
      {ConvOp::conv2d, {1, 3, 33, 48}, {32, 3, 3, 3}, pad1},                // K = 27: weight rows misaligned
      {ConvOp::pointwise_conv2d, {2, 64, 14, 14}, {96, 64, 1, 1}, none},     // P, 1x1, plane 196: halves
      {ConvOp::pointwise_conv2d, {1, 72, 7, 7}, {64, 72, 1, 1}, none},       // 1x1, plane 49
      {ConvOp::pointwise_conv2d, {1, 16, 8, 16}, {16, 16, 1, 1}, none},      // P, 1x1, one K tile of 16
      {ConvOp::conv2d, {2, 40, 8, 24}, {48, 40, 1, 1}, none},                // P, K tiles 32 + 8, C_out 48
      {ConvOp::pointwise_conv2d, {133, 16, 8, 16}, {128, 16, 1, 1}, none},   // P, the 128x128 tile (133 tiles)
      {ConvOp::conv2d, {1, 40, 9, 11}, {32, 40, 1, 1}, pad1},                // 1x1 padded: not a plane run
      {ConvOp::conv1d, {2, 40, 301}, {64, 40, 3}, pad_1d},                   // 1-D, L odd
      {ConvOp::conv1d, {1, 48, 256}, {32, 48, 3}, pad_1d},                   // 1-D, L a multiple of 8
      {ConvOp::conv3d, {1, 8, 5, 9, 24}, {16, 8, 3, 3, 3}, pad_d},           // 3-D, rows padded in z and y
      {ConvOp::conv2d, {4, 32, 64, 72}, {128, 32, 3, 3}, pad1},              // the 128x128 tile (144 tiles)
      {ConvOp::conv2d, {17, 16, 64, 64}, {128, 16, 3, 3}, strided},          // stride 2 on it (136 tiles)
      {ConvOp::conv2d, {2, 96, 28, 28}, {160, 96, 3, 3}, pad1},              // 27 K tiles split 4 ways
      {ConvOp::conv2d, {1, 200, 9, 9}, {64, 200, 3, 3}, pad1},               // 57 K tiles split 8 ways
      {ConvOp::conv2d, {1, 52, 10, 10}, {40, 52, 3, 3}, pad1},               // 15 K tiles of 2 tiles split 4 ways
      {ConvOp::conv2d, {20, 52, 20, 20}, {40, 52, 3, 3}, pad1},              // 15 K tiles split 2 ways, C_out 40
      {ConvOp::pointwise_conv2d, {1, 512, 7, 7}, {256, 512, 1, 1}, none},    // 1x1 of 16 K tiles, split
      {ConvOp::pointwise_conv2d, {1, 256, 16, 16}, {128, 256, 1, 1}, none},  // P, 1x1 of 8 K tiles, split
      {ConvOp::conv2d, {1, 40, 14, 14}, {48, 40, 1, 1}, none},                // P, halves, K tiles 32 + 8
      {ConvOp::pointwise_conv2d, {1, 256, 14, 14}, {128, 256, 1, 1}, none},  // P, halves, split
      {ConvOp::pointwise_conv2d, {133, 16, 12, 11}, {128, 16, 1, 1}, none},  // P, halves, the 128x128 tile
  };
  for (const ConvCase& c : cases) {
    for (DType dtype : {DType::f16, DType::bf16}) {
      ConvInputs in = make_inputs(c.op, c.x, c.weight, true, c.p, dtype, rng);
      for (size_t offset : {0, 1, 4, 7}) {
        EXPECT_EQ(compare(in, offset, false, offset == 7 ? 3 : 0), "") << in.describe() << " offset " << offset;
      }
    }
  }
}

TEST_F(ConvGpu, SplitKIsBitwiseRepeatable) {
  // 57 K tiles over a cluster of 8 (on a 132-SM GPU): the ranks' partial sums are added in rank
  // order, so two calls agree to the bit.
  std::mt19937_64 rng(78);
  Conv p;
  p.padding = {1, 1, 0};
  ConvInputs in = make_inputs(ConvOp::conv2d, {1, 200, 9, 9}, {64, 200, 3, 3}, true, p, DType::bf16, rng);
  const auto x = upload(in.x.bytes, 0), weight = upload(in.weight.bytes, 0), bias = upload(in.bias->bytes, 0);
  const Shape y_shape = in.output_shape();
  const size_t y_bytes = static_cast<size_t>(HostTensor(y_shape, DType::bf16).bytes.size());
  std::vector<unsigned char> first(y_bytes), second(y_bytes);
  for (std::vector<unsigned char>* out : {&first, &second}) {
    DeviceBuffer y(y_bytes);
    y.poison();
    const TensorRef bias_ref = device_ref(bias->data(), DType::bf16, in.bias->shape, false);
    solops::conv(in.op, device_ref(x->data(), DType::bf16, in.x.shape, false),
                 device_ref(weight->data(), DType::bf16, in.weight.shape, false), &bias_ref,
                 device_ref(y.data(), DType::bf16, y_shape, false), in.p);
    cuda_ok(cudaDeviceSynchronize(), "synchronize");
    y.download(out->data());
  }
  EXPECT_TRUE(first == second);
  EXPECT_EQ(compare(in), "") << in.describe();
}

// The direct kernel's classes (conv_direct.cu: 1, 2, 4 or 8 channels a thread; eight or four
// outputs along W where the call fills the SMs, one where it does not): channel counts a group on
// either side of each class (the last chunk of eight masked), rows narrower than one thread's
// outputs and not a multiple of them, padding on both sides, stride 2 and 3 along W (windows that
// skip inputs), dilation, a 3-D call, and taps along W that the unroll by two does not divide; in
// f16 and bf16 the eight-output classes read rows of stride 1 or 2 as runs of x (x_runs.cuh: cut by
// the padding, misaligned, and, with offset 1, on a misaligned base), and the 1x1 call's aligned
// runs store 16 bytes at once. The first five calls have over 132 * 8 warps of several outputs each (register-blocked on an H100 or
// H200), the rest are small (one output a thread).
// A call of the direct kernel's tests: the parameters along W (L for 1-D), groups.
struct DirectCase {
  ConvOp op;
  Shape x, weight;
  int64_t groups, stride_w, dilation_w, pad_w;
};

TEST_F(ConvGpu, DirectKernelClasses) {
  std::mt19937_64 rng(77);
  const DirectCase cases[] = {
      {ConvOp::conv2d, {2, 32, 72, 67}, {32, 1, 3, 3}, 32, 1, 1, 1},   // depthwise, 67 = 8 * 8 + 3
      {ConvOp::conv2d, {2, 32, 72, 131}, {64, 1, 3, 3}, 32, 2, 1, 1},  // 2 a group, stride 2
      {ConvOp::conv2d, {2, 32, 72, 67}, {128, 1, 3, 5}, 32, 1, 2, 3},  // 4 a group, dilation 2
      {ConvOp::conv2d, {2, 64, 24, 67}, {384, 2, 3, 3}, 32, 1, 1, 1},  // 12 a group: chunks of 8 and 4
      {ConvOp::conv2d, {2, 32, 72, 64}, {32, 1, 1, 1}, 32, 1, 1, 0},   // 1x1 depthwise: aligned runs of x and y
      {ConvOp::conv2d, {2, 6, 9, 13}, {6, 1, 3, 3}, 6, 1, 1, 1},      // depthwise, 13 = 8 + 5
      {ConvOp::conv2d, {1, 4, 7, 5}, {4, 1, 3, 5}, 4, 1, 1, 2},       // one segment narrower than 8
      {ConvOp::conv2d, {2, 8, 11, 17}, {16, 2, 3, 3}, 4, 2, 1, 1},    // 4 channels a group, stride 2
      {ConvOp::conv2d, {1, 6, 10, 23}, {9, 2, 3, 3}, 3, 3, 2, 3},     // 3 a group (kCo 4), stride 3, dilation 2
      {ConvOp::conv2d, {1, 10, 9, 19}, {10, 2, 2, 4}, 5, 1, 3, 2},    // 2 a group, dilation 3
      {ConvOp::conv2d, {2, 12, 8, 11}, {36, 4, 3, 3}, 3, 1, 1, 1},    // 12 a group: chunks of 8 and 4
      {ConvOp::conv2d, {1, 3, 12, 9}, {9, 1, 1, 7}, 3, 2, 1, 3},      // 7 taps along W (odd for the unroll)
      {ConvOp::conv1d, {1, 1, 997}, {40, 1, 10}, 1, 5, 1, 0},         // C_in = 1, stride 5 (wav2vec2's)
      {ConvOp::conv1d, {2, 1, 301}, {5, 1, 7}, 1, 1, 1, 3},           // C_in = 1, 5 channels
      {ConvOp::conv3d, {1, 8, 5, 6, 13}, {16, 2, 3, 3, 3}, 4, 1, 1, 1}, // 3-D grouped
  };
  for (const DirectCase& c : cases) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      Conv p;
      p.groups = c.groups;
      const size_t w_axis = c.x.size() - 3;  // W: the op's last spatial axis
      for (size_t a = 0; a + 2 < c.x.size(); ++a) p.padding[a] = 1;
      p.stride[w_axis] = c.stride_w;
      p.dilation[w_axis] = c.dilation_w;
      p.padding[w_axis] = c.pad_w;
      ConvInputs in = make_inputs(c.op, c.x, c.weight, c.groups % 2 == 0, p, dtype, rng);
      EXPECT_EQ(compare(in), "") << in.describe();
      EXPECT_EQ(compare(in, 1), "") << in.describe() << " offset 1";
    }
  }
}

// The direct kernel's signal walk (1-D, one input channel a group, at least 8 output channels a
// group): position blocks of 1024 (several, the last partial), channel chunks of 8 (the last
// masked), strides, dilations, padding on both sides, causal padding, groups, unbatched input, and
// the shared-memory bound (stride 11 fits the segment, stride 12 leaves it for the one-output walk).
TEST_F(ConvGpu, SignalWalk) {
  std::mt19937_64 rng(79);
  // Blocks of 8 positions a thread (1024 a block) where a call gives every SM 8 warps with them (on a
  // 132-SM part: >= 264 blocks), else of 2 (256 a block): the first three cases take 8, the rest 2.
  const DirectCase cases[] = {
      {ConvOp::conv1d, {4, 1, 16000}, {512, 1, 10}, 1, 5, 1, 0},  // wav2vec2's first layer, 1024 blocks
      {ConvOp::conv1d_causal, {3, 1, 9000}, {96, 1, 5}, 1, 1, 1, 0},  // 324 blocks, the last partial
      {ConvOp::conv1d, {64, 1, 30000}, {16, 1, 3}, 1, 11, 1, 1},  // 384 blocks of a 44 KiB segment
      {ConvOp::conv1d, {1, 1, 16000}, {512, 1, 10}, 1, 5, 1, 0},  // one waveform: 256 blocks
      {ConvOp::conv1d, {2, 1, 3001}, {32, 1, 7}, 1, 1, 1, 3},     // 12 position blocks, the last partial
      {ConvOp::conv1d, {1, 1, 2048}, {12, 1, 5}, 1, 2, 3, 4},     // chunks of 8 and 4, dilation 3
      {ConvOp::conv1d, {3, 2, 777}, {16, 1, 4}, 2, 3, 1, 0},      // 2 groups of 8 channels
      {ConvOp::conv1d, {1, 1100}, {8, 1, 3}, 1, 1, 1, 1},         // unbatched
      {ConvOp::conv1d, {1, 1, 5}, {8, 1, 3}, 1, 1, 1, 2},         // one short block, mostly padding
      {ConvOp::conv1d_causal, {2, 1, 1500}, {24, 1, 4}, 1, 1, 2, 0},
      {ConvOp::conv1d, {1, 1, 30000}, {16, 1, 3}, 1, 11, 1, 1},   // the largest stride whose segment fits
      {ConvOp::conv1d, {1, 1, 30000}, {16, 1, 3}, 1, 12, 1, 1},   // past it: the one-output walk
  };
  for (const DirectCase& c : cases) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      Conv p;
      p.groups = c.groups;
      p.stride[0] = c.stride_w;
      p.dilation[0] = c.dilation_w;
      p.padding[0] = c.pad_w;
      ConvInputs in = make_inputs(c.op, c.x, c.weight, dtype != DType::bf16, p, dtype, rng);
      EXPECT_EQ(compare(in), "") << in.describe();
      EXPECT_EQ(compare(in, 1), "") << in.describe() << " offset 1";
    }
  }
}

TEST_F(ConvGpu, ChannelsLastEveryKernelClass) {
  std::mt19937_64 rng(73);
  Conv padded;
  padded.padding = {1, 1, 0};
  Conv depthwise = padded;
  depthwise.groups = 32;
  Conv strided = padded;
  strided.stride = {2, 2, 1};
  const ConvCase cases[] = {
      {ConvOp::conv2d, {2, 64, 28, 28}, {128, 64, 3, 3}, padded},             // implicit GEMM
      {ConvOp::conv2d, {1, 3, 57, 31}, {32, 3, 3, 3}, strided},               // implicit GEMM, K = 27
      {ConvOp::depthwise_conv2d, {2, 32, 14, 15}, {32, 1, 3, 3}, depthwise},  // direct
      {ConvOp::pointwise_conv2d, {1, 256, 7, 7}, {512, 256, 1, 1}, Conv{}},   // implicit GEMM, 1x1
  };
  for (const ConvCase& c : cases) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (bool weight_channels_last : {false, true}) {
        ConvInputs in = make_inputs(c.op, c.x, c.weight, true, c.p, dtype, rng);
        in.x_channels_last = true;
        in.weight_channels_last = weight_channels_last;
        EXPECT_EQ(compare(in), "") << in.describe();
      }
    }
  }
}

// Each case with channels_last x, in each dtype, with both weight layouts, x and y aligned and one
// element off their 16-byte alignment.
void expect_channels_last_calls(std::span<const ConvCase> cases, std::initializer_list<DType> dtypes,
                                std::mt19937_64& rng) {
  for (const ConvCase& c : cases) {
    for (DType dtype : dtypes) {
      for (bool weight_channels_last : {true, false}) {
        for (size_t offset : {size_t{0}, size_t{1}}) {
          ConvInputs in = make_inputs(c.op, c.x, c.weight, true, c.p, dtype, rng);
          in.x_channels_last = true;
          in.weight_channels_last = weight_channels_last;
          EXPECT_EQ(compare(in, offset), "") << in.describe() << " offset " << offset;
        }
      }
    }
  }
}

// channels_last x whose channels come in whole chunks of 8 a group: the implicit GEMM's
// channels-inner form (K ordered (tap, c_in), B chunks 16-byte runs of channels, 8 channels a store),
// as tap tiles where C_in/g is a multiple of 32, the weight is channels_last (or 1x1) and x aligned
// (marked T: their unaligned and OIHW-weight calls take the chunk-by-chunk form).
TEST_F(ConvGpu, ChannelsLastChannelRuns) {
  std::mt19937_64 rng(79);
  Conv none, pad1, strided, dilated, grouped, pad_w;
  pad1.padding = {1, 1, 0};
  strided.padding = {2, 2, 0};
  strided.stride = {2, 2, 1};
  dilated.padding = {6, 6, 0};
  dilated.dilation = {6, 6, 1};
  grouped = pad1;
  grouped.groups = 2;
  pad_w.padding = {0, 1, 0};
  const ConvCase cases[] = {
      {ConvOp::conv2d, {2, 64, 28, 28}, {64, 64, 3, 3}, pad1},              // T, 64x64 tiles, 2 K tiles a tap
      {ConvOp::conv2d, {1, 8, 13, 17}, {24, 8, 3, 3}, pad1},                // K = 72: a K tile's tail
      {ConvOp::conv2d, {1, 32, 30, 33}, {40, 32, 5, 5}, strided},           // T, stride 2, 5x5
      {ConvOp::conv2d, {1, 16, 20, 32}, {32, 16, 3, 3}, dilated},           // ASPP-like: taps in the padding
      {ConvOp::conv2d, {1, 32, 20, 32}, {32, 32, 3, 3}, dilated},           // T, ASPP-like
      {ConvOp::conv2d, {2, 48, 11, 9}, {36, 24, 3, 3}, grouped},            // groups of 24: C_out/g = 18
      {ConvOp::conv2d, {1, 256, 7, 7}, {128, 256, 3, 3}, pad1},             // T, split K: ranks start mid-tap
      {ConvOp::conv2d, {67, 8, 12, 12}, {128, 8, 3, 3}, pad1},              // 128x128 tiles: 134 of them
      {ConvOp::conv2d, {134, 32, 8, 16}, {128, 32, 1, 2}, pad_w},           // T, 128x128 tiles: 268 of them
      {ConvOp::pointwise_conv2d, {2, 64, 14, 14}, {96, 64, 1, 1}, none},    // T (both weights), 1x1
      {ConvOp::conv2d_bias_relu, {1, 16, 9, 10}, {13, 16, 3, 3}, pad1},     // C_out 13: a partial run of 8
  };
  expect_channels_last_calls(cases, {DType::f16, DType::bf16}, rng);
}

// Depthwise calls on channels_last x large enough for the direct kernel's channels-inner walk (8
// channels of 4 pixels of a row a thread: at least 40 K such items, eight warps an SM on a Hopper
// GPU), whole and partial runs of 8 channels and of 4 pixels, aligned and not. Smaller ones take
// the walk through the strides (ChannelsLastEveryKernelClass).
TEST_F(ConvGpu, ChannelsLastDepthwise) {
  std::mt19937_64 rng(83);
  const auto depthwise = [](int64_t channels, int64_t padding, int64_t stride, int64_t dilation) {
    Conv p;
    p.groups = channels;
    p.padding = {padding, padding, 0};
    p.stride = {stride, stride, 1};
    p.dilation = {dilation, dilation, 1};
    return p;
  };
  const ConvCase cases[] = {
      {ConvOp::conv2d, {3, 64, 90, 95}, {64, 1, 1, 1}, depthwise(64, 0, 1, 1)},       // 1x1: a per-channel scale
      {ConvOp::depthwise_conv2d, {2, 32, 140, 150}, {32, 1, 3, 3}, depthwise(32, 1, 1, 1)},
      {ConvOp::conv2d, {1, 20, 501, 446}, {20, 1, 3, 3}, depthwise(20, 1, 2, 1)},     // 20 channels: a run of 4
      {ConvOp::conv2d, {2, 12, 250, 157}, {12, 1, 5, 5}, depthwise(12, 4, 1, 2)},     // dilation 2
      {ConvOp::conv2d_bias_relu, {1, 40, 180, 181}, {40, 1, 3, 3}, depthwise(40, 1, 1, 1)},
  };
  expect_channels_last_calls(cases, {DType::f32, DType::f16, DType::bf16}, rng);
}

TEST_F(ConvGpu, NaNAndInfinityPropagate) {
  std::mt19937_64 rng(74);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (ConvOp op : {ConvOp::conv2d, ConvOp::conv2d_bias_relu}) {
      Conv p;
      p.padding = {1, 1, 0};
      ConvInputs dense = make_inputs(op, {1, 32, 12, 12}, {64, 32, 3, 3}, true, p, dtype, rng, Values::special);
      EXPECT_EQ(compare(dense), "") << dense.describe();
    }
    Conv depthwise;
    depthwise.groups = 16;
    ConvInputs direct =
        make_inputs(ConvOp::conv2d, {2, 16, 11, 13}, {16, 1, 3, 3}, true, depthwise, dtype, rng, Values::special);
    EXPECT_EQ(compare(direct), "") << direct.describe();
  }
}

TEST_F(ConvGpu, ManyWorkItemsAndEmptyBatches) {
  std::mt19937_64 rng(75);
  Conv grouped;
  grouped.groups = 40000;  // 80000 work items of the direct kernel
  ConvInputs many = make_inputs(ConvOp::conv1d, {2, 40000, 5}, {40000, 1, 3}, true, grouped, DType::f16, rng);
  EXPECT_EQ(compare(many), "") << many.describe();
  Conv gemm_groups;
  gemm_groups.groups = 3000;  // tensor-core tiles of 16 channels a group
  ConvInputs tiles = make_inputs(ConvOp::conv1d, {2, 3000 * 16, 9}, {3000 * 16, 16, 2}, false, gemm_groups,
                                 DType::bf16, rng);
  EXPECT_EQ(compare(tiles), "") << tiles.describe();
  ConvInputs empty = make_inputs(ConvOp::conv2d, {0, 8, 9, 9}, {16, 8, 3, 3}, true, Conv{}, DType::f16, rng);
  EXPECT_EQ(compare(empty), "") << empty.describe();
}

TEST_F(ConvGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(76);
  Conv p;
  p.padding = {1, 1, 0};
  ConvInputs gemm = make_inputs(ConvOp::conv2d_bias_relu, {2, 64, 20, 20}, {64, 64, 3, 3}, true, p, DType::f16, rng);
  EXPECT_EQ(compare(gemm, 0, true), "");
  Conv depthwise;
  depthwise.groups = 32;
  ConvInputs causal = make_inputs(ConvOp::conv1d_causal, {2, 32, 300}, {32, 1, 4}, true, depthwise, DType::bf16, rng);
  EXPECT_EQ(compare(causal, 0, true), "");
}

TEST_F(ConvGpu, OffsetsPast32Bits) {
  // y = 2 x over [3, 16, 2^26]: the last image starts 2^31 elements (2^32 bytes) in. The weight is
  // 2 * I for the implicit GEMM (16 channels in and out), 2 for the depthwise direct kernel and the
  // causal one. The same memory as [3 * 2^26, 16, 1] gives the direct kernel 3 * 2^30 work items
  // (an image and channel each), past the 2^31 its 32-bit decode takes.
  const int64_t length = int64_t{1} << 26, channels = 16;
  const Shape shape{3, channels, length};
  const size_t elements = static_cast<size_t>(3 * channels * length);
  std::vector<__half> host(elements);
  for (size_t i = 0; i < elements; ++i) host[i] = __float2half(static_cast<float>(i % 1000) / 8);
  DeviceBuffer x(elements * 2), y(elements * 2);
  x.upload(host.data());
  const TensorRef x_ref = device_ref(x.data(), DType::f16, shape, false);
  const TensorRef y_ref = device_ref(y.data(), DType::f16, shape, false);
  const Shape points{3 * length, channels, 1};
  const TensorRef x_points = device_ref(x.data(), DType::f16, points, false);
  const TensorRef y_points = device_ref(y.data(), DType::f16, points, false);
  std::vector<__half> dense(channels * channels, __float2half(0.0f)), depthwise(channels, __float2half(2.0f));
  for (int64_t c = 0; c < channels; ++c) dense[c * channels + c] = __float2half(2.0f);
  DeviceBuffer dense_weight(dense.size() * 2), depthwise_weight(depthwise.size() * 2);
  dense_weight.upload(dense.data());
  depthwise_weight.upload(depthwise.data());
  Conv one_group, per_channel;
  per_channel.groups = channels;
  const TensorRef depthwise_ref = device_ref(depthwise_weight.data(), DType::f16, {channels, 1, 1}, false);
  const struct {
    ConvOp op;
    TensorRef x, weight, y;
    Conv p;
  } calls[] = {
      {ConvOp::conv1d, x_ref, device_ref(dense_weight.data(), DType::f16, {channels, channels, 1}, false), y_ref,
       one_group},
      {ConvOp::conv1d, x_ref, depthwise_ref, y_ref, per_channel},
      {ConvOp::conv1d_causal, x_ref, depthwise_ref, y_ref, per_channel},
      {ConvOp::conv1d, x_points, depthwise_ref, y_points, per_channel},
  };
  std::vector<__half> out(elements);
  for (const auto& call : calls) {
    y.poison();
    solops::conv(call.op, call.x, call.weight, nullptr, call.y, call.p);
    cuda_ok(cudaDeviceSynchronize(), "synchronize");
    y.download(out.data());
    const auto check = [&](size_t i) {
      ASSERT_EQ(__half2float(out[i]), 2 * __half2float(host[i]))
          << conv_op_name(call.op) << " groups " << call.p.groups << " x " << detail::shape_text(call.x.sizes()) << " element "
          << i;
    };
    for (size_t i = 0; i < elements; i += 4099) check(i);
    check(elements - 1);
  }
}

TEST_F(ConvGpu, DeviceRules) {
  const Shape x_shape{1, 4, 8, 8}, w_shape{8, 4, 3, 3}, y_shape{1, 8, 6, 6};
  DeviceBuffer x(4 * 64 * 2), w(8 * 4 * 9 * 2), y(8 * 36 * 2);
  const TensorRef x_ref = device_ref(x.data(), DType::f16, x_shape, false);
  const TensorRef w_ref = device_ref(w.data(), DType::f16, w_shape, false);
  const TensorRef y_ref = device_ref(y.data(), DType::f16, y_shape, false);
  const TensorRef y_over_x = device_ref(x.data(), DType::f16, y_shape, false);
  expect_error([&] { solops::conv(ConvOp::conv2d, x_ref, w_ref, nullptr, y_over_x, {}); },
               "conv2d: input and output overlap in memory");
  HostTensor host_weight(w_shape, DType::f16);
  TensorRef cpu_weight = host_weight.ref();
  expect_error([&] { solops::conv(ConvOp::conv2d, x_ref, cpu_weight, nullptr, y_ref, {}); },
               "conv2d: weight is on cpu but the input on cuda:0");
  cpu_weight.device = 0;
  expect_error([&] { solops::conv(ConvOp::conv2d, x_ref, cpu_weight, nullptr, y_ref, {}); },
               "weight: data pointer is not device memory");
}

}  // namespace
}  // namespace solops::testing::conv
