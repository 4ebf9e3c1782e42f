// Convolution forward (spec §3.0-3.9): the shape rule of every op and each of its errors, the CPU
// reference against values computed by hand (padding, stride, dilation, groups, 'same' with an even
// kernel, causal, bias and ReLU, unbatched, 3-D, channels_last), the validation of a call and the
// cost model.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <limits>

#include "cpu/conv/conv_cases.hpp"
#include "expect_error.hpp"

namespace solops::testing::conv {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Shape shape_of(ConvOp op, const Shape& x, const Shape& w, const Conv& p = {},
               std::optional<Shape> bias = std::nullopt) {
  std::optional<std::span<const int64_t>> bias_shape;
  if (bias) bias_shape = *bias;
  return conv_output_shape(op, x, w, bias_shape, p);
}

Conv with(std::array<int64_t, 3> stride, std::array<int64_t, 3> padding, std::array<int64_t, 3> dilation = {1, 1, 1},
          int64_t groups = 1) {
  Conv p;
  p.stride = stride;
  p.padding = padding;
  p.dilation = dilation;
  p.groups = groups;
  return p;
}

Conv padded(ConvPadding mode, std::array<int64_t, 3> dilation = {1, 1, 1}) {
  Conv p;
  p.padding_mode = mode;
  p.dilation = dilation;
  return p;
}

// ---- the shape rule ----------------------------------------------------------------------------

TEST(ConvShapeRule, OutputSizesFollowPyTorch) {
  EXPECT_EQ(shape_of(ConvOp::conv2d, {2, 64, 56, 56}, {64, 64, 3, 3}, with({1, 1}, {1, 1})), (Shape{2, 64, 56, 56}));
  EXPECT_EQ(shape_of(ConvOp::conv2d, {1, 3, 112, 112}, {64, 3, 3, 3}, with({2, 2}, {1, 1})), (Shape{1, 64, 56, 56}));
  EXPECT_EQ(shape_of(ConvOp::conv1d, {1, 1, 16000}, {512, 1, 10}, with({5}, {0})), (Shape{1, 512, 3199}));
  EXPECT_EQ(shape_of(ConvOp::conv3d, {1, 64, 8, 56, 56}, {128, 64, 3, 3, 3}, with({2, 2, 2}, {1, 1, 1})),
            (Shape{1, 128, 4, 28, 28}));
  EXPECT_EQ(shape_of(ConvOp::dilated_conv2d, {1, 2048, 32, 32}, {256, 2048, 3, 3}, with({1, 1}, {12, 12}, {12, 12})),
            (Shape{1, 256, 32, 32}));
  // A stride larger than the kernel, and one that leaves inputs unread.
  EXPECT_EQ(shape_of(ConvOp::conv2d, {1, 1, 10, 11}, {1, 1, 2, 3}, with({5, 4}, {0, 1})), (Shape{1, 1, 2, 3}));
  // Unbatched input gives an unbatched output; an empty batch an empty one.
  EXPECT_EQ(shape_of(ConvOp::conv2d, {3, 9, 9}, {15, 1, 3, 3}, with({1, 1}, {0, 0}, {1, 1}, 3)), (Shape{15, 7, 7}));
  EXPECT_EQ(shape_of(ConvOp::conv1d, {0, 4, 9}, {8, 4, 3}), (Shape{0, 8, 7}));
}

TEST(ConvShapeRule, StringPaddingsAndCausal) {
  // 'same': the input's size whatever the kernel and dilation (stride 1); 'valid': no padding.
  EXPECT_EQ(shape_of(ConvOp::conv2d, {1, 1, 9, 10}, {1, 1, 4, 3}, padded(ConvPadding::same, {2, 3})),
            (Shape{1, 1, 9, 10}));
  EXPECT_EQ(shape_of(ConvOp::conv2d, {1, 1, 9, 10}, {1, 1, 4, 3}, padded(ConvPadding::valid)), (Shape{1, 1, 6, 8}));
  // Causal: L_out = (L_in - 1) // stride + 1.
  EXPECT_EQ(shape_of(ConvOp::conv1d_causal, {1, 128, 600}, {256, 128, 10}), (Shape{1, 256, 600}));
  EXPECT_EQ(shape_of(ConvOp::conv1d_causal, {1, 4, 19}, {4, 2, 3}, with({3}, {0}, {2}, 2)), (Shape{1, 4, 7}));
}

TEST(ConvShapeRule, RanksAndEmptyDims) {
  expect_error([] { shape_of(ConvOp::conv2d, {8, 8}, {8, 4, 3, 3}); },
               "conv2d: input must be 3-D [C, H, W] or 4-D [N, C, H, W], got 2-D [8, 8]");
  expect_error([] { shape_of(ConvOp::conv1d, {1, 4, 8}, {8, 4, 3, 3}); },
               "conv1d: weight must be 3-D [C_out, C_in / groups, kW], got 4-D [8, 4, 3, 3]");
  expect_error([] { shape_of(ConvOp::conv3d, {1, 4, 0, 8, 8}, {8, 4, 3, 3, 3}); },
               "conv3d: input [1, 4, 0, 8, 8] has an empty dim 2 (only the batch dim may be 0)");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {0, 4, 3, 3}); }, "weight [0, 4, 3, 3] has an empty dim 0");
  expect_error([] { shape_of(ConvOp::conv2d, {-1, 4, 8, 8}, {8, 4, 3, 3}); }, "input batch size -1 is negative");
}

TEST(ConvShapeRule, Groups) {
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, with({1, 1}, {0, 0}, {1, 1}, 0)); },
               "conv2d: groups = 0 must be >= 1");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 6, 8, 8}, {4, 3, 3, 3}, with({1, 1}, {0, 0}, {1, 1}, 4)); },
               "groups = 4 must divide the input's 6 channels");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {6, 2, 3, 3}, with({1, 1}, {0, 0}, {1, 1}, 4)); },
               "groups = 4 must divide the weight's 6 output channels");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 3, 3, 3}); },
               "weight [8, 3, 3, 3] takes 3 input channels a group, but the input's 4 channels in 1 groups are 4 a "
               "group");
}

TEST(ConvShapeRule, EachOpsRestriction) {
  expect_error([] { shape_of(ConvOp::pointwise_conv2d, {1, 4, 8, 8}, {8, 4, 3, 1}); },
               "pointwise_conv2d: the kernel must be 1x1, got 3x1");
  expect_error([] { shape_of(ConvOp::depthwise_conv2d, {1, 4, 8, 8}, {8, 2, 3, 3}, with({1, 1}, {0, 0}, {1, 1}, 2)); },
               "depthwise_conv2d: groups = 2 must equal the input's 4 channels");
  expect_error([] { shape_of(ConvOp::grouped_conv2d, {1, 4, 8, 8}, {8, 1, 3, 3}, with({1, 1}, {0, 0}, {1, 1}, 4)); },
               "grouped_conv2d: groups = 4 must be > 1 and < the input's 4 channels");
  expect_error([] { shape_of(ConvOp::dilated_conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}); },
               "dilated_conv2d: dilation (1, 1) must differ from 1 on some axis");
  expect_error([] { shape_of(ConvOp::conv2d_bias_relu, {1, 4, 8, 8}, {8, 4, 3, 3}); },
               "conv2d_bias_relu: bias is required");
  expect_error([] { shape_of(ConvOp::conv1d_causal, {1, 4, 8}, {8, 4, 3}, with({1}, {1})); },
               "conv1d_causal: takes no padding");
  expect_error([] { shape_of(ConvOp::conv1d_causal, {1, 4, 8}, {8, 4, 3}, padded(ConvPadding::same)); },
               "conv1d_causal: takes no padding");
  // Each passes its own case.
  EXPECT_EQ(shape_of(ConvOp::pointwise_conv2d, {1, 4, 8, 8}, {8, 4, 1, 1}), (Shape{1, 8, 8, 8}));
  EXPECT_EQ(shape_of(ConvOp::depthwise_conv2d, {1, 4, 8, 8}, {8, 1, 3, 3}, with({1, 1}, {0, 0}, {1, 1}, 4)),
            (Shape{1, 8, 6, 6}));
  EXPECT_EQ(shape_of(ConvOp::conv2d_bias_relu, {1, 4, 8, 8}, {8, 4, 3, 3}, {}, Shape{8}), (Shape{1, 8, 6, 6}));
}

TEST(ConvShapeRule, BiasLength) {
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, {}, Shape{7}); },
               "conv2d: bias: shape [7] must be [8] (one value an output channel)");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, {}, Shape{1, 8}); },
               "bias: shape [1, 8] must be [8]");
}

TEST(ConvShapeRule, PerAxisParameters) {
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, with({1, 0}, {0, 0})); },
               "conv2d: stride[1] = 0 must be >= 1");
  expect_error([] { shape_of(ConvOp::conv1d, {1, 4, 8}, {8, 4, 3}, with({1}, {0}, {-2})); },
               "conv1d: dilation = -2 must be >= 1");
  expect_error([] { shape_of(ConvOp::conv3d, {1, 4, 8, 8, 8}, {8, 4, 3, 3, 3}, with({1, 1, 1}, {0, -1, 0})); },
               "conv3d: padding[1] = -1 must be >= 0");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, with({1, int64_t{1} << 31}, {0, 0})); },
               "stride[1] and dilation[1] must be below 2^31");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, with({1, 1}, {int64_t{1} << 31, 0})); },
               "padding[0] = 2147483648 must be below 2^31");
  Conv same = padded(ConvPadding::same);
  same.stride = {1, 2, 1};
  expect_error([&] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, same); },
               "padding='same' needs stride 1 on every axis, got stride[1] = 2");
  Conv unknown;
  unknown.padding_mode = static_cast<ConvPadding>(7);
  expect_error([&] { shape_of(ConvOp::conv2d, {1, 4, 8, 8}, {8, 4, 3, 3}, unknown); },
               "padding mode 7 is not a ConvPadding");
  expect_error([] { shape_of(static_cast<ConvOp>(42), {1, 4, 8, 8}, {8, 4, 3, 3}); }, "unknown op code 42");
}

TEST(ConvShapeRule, OutputTooSmall) {
  expect_error([] { shape_of(ConvOp::conv2d, {1, 4, 2, 9}, {8, 4, 3, 3}); },
               "conv2d: output size along H would be 0: the kernel spans 3 (dilation 1 * (3 - 1) + 1), more than the "
               "padded input (2 + 0 + 0)");
  expect_error([] { shape_of(ConvOp::conv1d, {1, 1, 9}, {1, 1, 3}, with({1}, {0}, {5})); },
               "output size along L would be 0: the kernel spans 11");
}

TEST(ConvShapeRule, ThirtyTwoBitIndexLimits) {
  constexpr int64_t k2To31 = int64_t{1} << 31;
  expect_error([] { shape_of(ConvOp::conv1d, {1, 1, k2To31}, {1, 1, 3}); },
               "conv1d: input [1, 1, 2147483648] has planes of 2^31 or more elements");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 1, 65536, 32768}, {1, 1, 1, 1}); },
               "has planes of 2^31 or more elements");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 1, 4, 4}, {65536, 32768, 1, 1}); },
               "weight [65536, 32768, 1, 1] has 2^31 or more elements");
  expect_error([] { shape_of(ConvOp::conv1d, {1, 1, INT_MAX}, {1, 1, 1}, with({1}, {1})); },
               "input L = 2147483647 padded by 1 + 1 is 2^31 or more");
  // Padding can grow an output plane past the input's.
  expect_error([] { shape_of(ConvOp::conv2d, {1, 1, 1, 1}, {1, 1, 1, 1}, with({1, 1}, {30000, 30000})); },
               "output planes would have 2^31 or more elements");
  // Fine at the limit, and beyond it in the batch (64-bit offsets).
  EXPECT_EQ(shape_of(ConvOp::conv1d, {4096, 1, INT_MAX}, {1, 1, 1}), (Shape{4096, 1, INT_MAX}));
}

TEST(ConvShapeRule, Int64Overflow) {
  constexpr int64_t kHuge = int64_t{1} << 40;
  expect_error([] { shape_of(ConvOp::conv2d, {kHuge, kHuge, 1, 1}, {1, 1, 1, 1}); },
               "conv2d: input [1099511627776, 1099511627776, 1, 1]: its sizes multiply past the int64 range");
  expect_error([] { shape_of(ConvOp::conv2d, {1, 1, 1, 1}, {kHuge, kHuge, 1, 1}); }, "weight");
  // The output's product: the batch times the output channels.
  expect_error([] { shape_of(ConvOp::conv1d, {kHuge, 1, 1}, {int64_t{1} << 23, 1, 1}); }, "output");
}

// ---- the reference ---------------------------------------------------------------------------

TEST(ConvReference, Conv1dPaddingStrideDilationBias) {
  const std::vector<double> x{1, 2, 3, 4, 5}, w{1, 0, -1};
  ConvCall padded_call(ConvOp::conv1d, {1, 1, 5}, x, {1, 1, 3}, w, std::nullopt, with({1}, {1}));
  padded_call.run();
  expect_values(padded_call.y, {-2, -2, -2, -2, 4});
  ConvCall strided(ConvOp::conv1d, {1, 1, 5}, x, {1, 1, 3}, w, std::vector<double>{10}, with({2}, {1}));
  strided.run();
  expect_values(strided.y, {8, 8, 14});
  ConvCall dilated(ConvOp::conv1d, {1, 1, 5}, x, {1, 1, 3}, w, std::nullopt, with({1}, {2}, {2}));
  dilated.run();
  expect_values(dilated.y, {-3, -4, -4, 2, 3});
}

TEST(ConvReference, CausalPadsOnTheLeftOnly) {
  // y[t] = x[t - 2] + 2 x[t - 1] + 3 x[t].
  ConvCall call(ConvOp::conv1d_causal, {1, 1, 5}, {1, 2, 3, 4, 5}, {1, 1, 3}, {1, 2, 3}, std::nullopt, {});
  call.run();
  expect_values(call.y, {3, 8, 14, 20, 26});
  ConvCall strided(ConvOp::conv1d_causal, {1, 1, 5}, {1, 2, 3, 4, 5}, {1, 1, 3}, {1, 2, 3}, std::nullopt,
                   with({2}, {0}));
  strided.run();
  expect_values(strided.y, {3, 14, 26});
}

TEST(ConvReference, GroupsReadTheirOwnChannels) {
  ConvCall call(ConvOp::conv2d, {1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, {2, 1, 1, 1}, {2, -1}, std::nullopt,
                with({1, 1}, {0, 0}, {1, 1}, 2));
  call.run();
  expect_values(call.y, {2, 4, 6, 8, -5, -6, -7, -8});
}

TEST(ConvReference, SameWithAnEvenKernelPadsTheRightAndBottom) {
  ConvCall call(ConvOp::conv2d, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 2, 2}, {1}, std::nullopt,
                padded(ConvPadding::same));
  call.run();
  expect_values(call.y, {12, 16, 9, 24, 28, 15, 15, 17, 9});
}

TEST(ConvReference, BiasReluKeepsNaN) {
  ConvCall call(ConvOp::conv2d_bias_relu, {1, 1, 1, 3}, {1, -2, kNaN}, {2, 1, 1, 1}, {1, -1},
                std::vector<double>{0.5, 0}, {});
  call.run();
  expect_values(call.y, {1.5, 0, kNaN, 0, 2, kNaN});
}

TEST(ConvReference, ThreeDimensionsAndUnbatched) {
  ConvCall cube(ConvOp::conv3d, {1, 1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 2, 2}, {1}, std::nullopt, {});
  cube.run();
  expect_values(cube.y, {36});
  ConvCall plane(ConvOp::conv2d, {1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}, {1}, std::nullopt,
                 with({1, 1}, {1, 1}));
  plane.run();
  expect_values(plane.y, {12, 21, 16, 27, 45, 33, 24, 39, 28});
}

TEST(ConvReference, RoundsOnceToHalfPrecision) {
  // 1 + 2^-11 + 2^-11 = 1 + 2^-10 exactly in f16, where rounding each partial sum would give 1.
  ConvCall call(ConvOp::conv1d, {1, 3, 1}, {1, 0x1p-11, 0x1p-11}, {1, 3, 1}, {1}, std::nullopt, {}, DType::f16);
  call.run();
  expect_values(call.y, {1 + 0x1p-10}, 0);
}

// x [N, C, H, W] in channels_last storage: element (n, c, h, w) at ((n * H + h) * W + w) * C + c.
TensorRef channels_last(HostTensor& storage, const Shape& shape) {
  TensorRef t = storage.ref();
  t.rank = 4;
  for (int d = 0; d < 4; ++d) t.shape[d] = shape[d];
  t.strides[1] = 1;
  t.strides[3] = shape[1];
  t.strides[2] = shape[3] * shape[1];
  t.strides[0] = shape[2] * shape[3] * shape[1];
  return t;
}

TEST(ConvReference, ChannelsLastIsTheSameConvolution) {
  const Shape x_shape{2, 3, 4, 5}, w_shape{4, 3, 3, 2}, y_shape{2, 4, 2, 4};
  ConvCall call(ConvOp::conv2d, x_shape, {1, -2, 3, 0.5, -1, 2, 4}, w_shape, {2, -1, 0.25, 1, 3}, std::nullopt,
                with({2, 1}, {1, 0}));
  call.run();
  ASSERT_EQ(call.y.shape, y_shape);
  // The same values in channels_last storage, for x, the weight and y.
  HostTensor x_storage(x_shape, DType::f32), w_storage(w_shape, DType::f32), y_storage(y_shape, DType::f32);
  y_storage.poison();
  const TensorRef x_cl = channels_last(x_storage, x_shape), w_cl = channels_last(w_storage, w_shape),
                  y_cl = channels_last(y_storage, y_shape);
  const auto copy_in = [](HostTensor& from, HostTensor& storage, const TensorRef& view) {
    int64_t i = 0;
    for (int64_t n = 0; n < view.shape[0]; ++n)
      for (int64_t c = 0; c < view.shape[1]; ++c)
        for (int64_t h = 0; h < view.shape[2]; ++h)
          for (int64_t w = 0; w < view.shape[3]; ++w, ++i)
            storage.set(n * view.strides[0] + c * view.strides[1] + h * view.strides[2] + w * view.strides[3],
                        from.at(i));
  };
  copy_in(call.x, x_storage, x_cl);
  copy_in(call.weight, w_storage, w_cl);
  reference::conv(ConvOp::conv2d, x_cl, w_cl, nullptr, y_cl, call.p);
  int64_t i = 0;
  for (int64_t n = 0; n < y_shape[0]; ++n)
    for (int64_t c = 0; c < y_shape[1]; ++c)
      for (int64_t h = 0; h < y_shape[2]; ++h)
        for (int64_t w = 0; w < y_shape[3]; ++w, ++i)
          EXPECT_EQ(y_storage.at(n * y_cl.strides[0] + c + h * y_cl.strides[2] + w * y_cl.strides[3]), call.y.at(i));
  EXPECT_TRUE(conv_output_channels_last(ConvOp::conv2d, x_cl));
  EXPECT_FALSE(conv_output_channels_last(ConvOp::conv2d, call.x.ref()));
}

// ---- validation ------------------------------------------------------------------------------

TEST(ConvValidation, WeightAndBiasShareTheInputsDtypeAndDevice) {
  ConvCall call(ConvOp::conv2d, {1, 2, 4, 4}, {1}, {3, 2, 3, 3}, {1}, std::vector<double>{0}, {});
  HostTensor half_weight({3, 2, 3, 3}, DType::f16), half_bias({3}, DType::f16);
  const TensorRef bias = call.bias->ref();
  expect_error([&] { reference::conv(ConvOp::conv2d, call.x.ref(), half_weight.ref(), &bias, call.y.ref(), {}); },
               "conv2d: weight: dtype f16 must be the input's, f32");
  const TensorRef half_bias_ref = half_bias.ref();
  expect_error(
      [&] { reference::conv(ConvOp::conv2d, call.x.ref(), call.weight.ref(), &half_bias_ref, call.y.ref(), {}); },
      "bias: dtype f16 must be the input's, f32");
  TensorRef on_device = call.weight.ref();
  on_device.device = 0;
  expect_error([&] { reference::conv(ConvOp::conv2d, call.x.ref(), on_device, &bias, call.y.ref(), {}); },
               "weight is on cuda:0 but the input on cpu: every tensor of the call must be on one device");
  HostTensor ints({1, 2, 4, 4}, DType::i32);
  expect_error([&] { reference::conv(ConvOp::conv2d, ints.ref(), call.weight.ref(), &bias, call.y.ref(), {}); },
               "input: dtype i32 is not supported");
}

TEST(ConvValidation, OutputShapeDtypeAndLayout) {
  ConvCall call(ConvOp::conv2d, {1, 2, 4, 4}, {1}, {3, 2, 3, 3}, {1}, std::nullopt, {});
  HostTensor wrong_shape({1, 3, 3, 3}, DType::f32), wrong_dtype({1, 3, 2, 2}, DType::bf16);
  const auto run = [&](const TensorRef& y) {
    reference::conv(ConvOp::conv2d, call.x.ref(), call.weight.ref(), nullptr, y, {});
  };
  expect_error([&] { run(wrong_shape.ref()); }, "output: shape [1, 3, 3, 3] must be [1, 3, 2, 2]");
  expect_error([&] { run(wrong_dtype.ref()); }, "output: dtype bf16 must be the input's, f32");
  HostTensor y_storage({1, 3, 2, 2}, DType::f32);
  expect_error(
      [&] {
        reference::conv(ConvOp::conv2d, call.x.ref(), call.weight.ref(), nullptr,
                        channels_last(y_storage, {1, 3, 2, 2}), {});
      },
      "output must be contiguous, as the input is");
  HostTensor x_storage({1, 2, 4, 4}, DType::f32);
  expect_error(
      [&] {
        reference::conv(ConvOp::conv2d, channels_last(x_storage, {1, 2, 4, 4}), call.weight.ref(), nullptr,
                        call.y.ref(), {});
      },
      "output must be channels_last, as the input is");
}

TEST(ConvValidation, LayoutsOtherThanContiguousAndChannelsLast) {
  ConvCall call(ConvOp::conv2d, {1, 2, 4, 4}, {1}, {3, 2, 3, 3}, {1}, std::nullopt, {});
  TensorRef transposed = call.x.ref();
  std::swap(transposed.strides[2], transposed.strides[3]);
  expect_error([&] { reference::conv(ConvOp::conv2d, transposed, call.weight.ref(), nullptr, call.y.ref(), {}); },
               "conv2d: input must be contiguous (row-major, e.g. NCHW) or channels_last", Status::unsupported);
  // The 1-D and 3-D ops take contiguous tensors only.
  ConvCall line(ConvOp::conv1d, {1, 2, 6}, {1}, {3, 2, 3}, {1}, std::nullopt, {});
  TensorRef strided = line.x.ref();
  strided.strides[1] = 12;
  expect_error([&] { reference::conv(ConvOp::conv1d, strided, line.weight.ref(), nullptr, line.y.ref(), {}); },
               "input must be contiguous (row-major, e.g. NCHW); strided and channels-last", Status::unsupported);
}

TEST(ConvValidation, OutputMayNotOverlapAnInput) {
  ConvCall call(ConvOp::conv2d, {1, 1, 3, 3}, {1}, {1, 1, 1, 1}, {1}, std::nullopt, {});
  expect_error([&] { reference::conv(ConvOp::conv2d, call.x.ref(), call.weight.ref(), nullptr, call.x.ref(), {}); },
               "input and output overlap in memory");
}

// ---- cost --------------------------------------------------------------------------------------

TEST(ConvCost, SpecFormula) {
  const Shape x{1, 256, 112, 112}, w{512, 256, 3, 3}, bias{512};
  const Conv p = with({1, 1}, {1, 1});
  const double outputs = 512.0 * 112 * 112, macs = outputs * 256 * 9;
  const Cost plain = conv_cost(ConvOp::conv2d, x, w, std::nullopt, DType::f16, p);
  EXPECT_DOUBLE_EQ(plain.flops, 2 * macs);
  EXPECT_DOUBLE_EQ(plain.bytes, (256.0 * 112 * 112 + 512.0 * 256 * 9 + outputs) * 2);
  const Cost biased = conv_cost(ConvOp::conv2d, x, w, std::span<const int64_t>(bias), DType::f16, p);
  EXPECT_DOUBLE_EQ(biased.flops, 2 * macs + outputs);
  EXPECT_DOUBLE_EQ(biased.bytes, plain.bytes + 512 * 2);
  const Cost relu = conv_cost(ConvOp::conv2d_bias_relu, x, w, std::span<const int64_t>(bias), DType::f32, p);
  EXPECT_DOUBLE_EQ(relu.flops, 2 * macs + 2 * outputs);
  EXPECT_DOUBLE_EQ(relu.bytes, biased.bytes * 2);
  // Groups divide the reduction: resnext grouped 3x3, 8 output channels a group of 4 inputs.
  const Cost grouped = conv_cost(ConvOp::grouped_conv2d, Shape{1, 128, 28, 28}, Shape{256, 4, 3, 3}, std::nullopt,
                                 DType::f16, with({1, 1}, {1, 1}, {1, 1}, 32));
  EXPECT_DOUBLE_EQ(grouped.flops, 2.0 * 256 * 28 * 28 * 4 * 9);
}

}  // namespace
}  // namespace solops::testing::conv
