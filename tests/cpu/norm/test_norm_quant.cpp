// The quantizing norms, LayerNormQuant and RMSNormQuant (spec §2.15, 2.16): the host e4m3 encoder
// against PyTorch's, the shape rule, the CPU references against values computed by hand, one test
// per validation and aliasing rule, and the cost models.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/host_values.hpp"
#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

TEST(E4m3Encoding, MatchesPyTorchOnKnownValues) {
  // Codes from CPU PyTorch 2.11's .to(torch.float8_e4m3fn): ties to even (17, 19, 2^-10), subnormals,
  // the carry from the subnormal range into the first binade (2^-6 * 31/32), signed zero.
  const std::pair<double, int> known[] = {
      {1.0, 0x38},      {-1.0, 0xb8},     {448.0, 0x7e},     {0.0137, 0x07},         {0x1p-9, 0x01},
      {0x1p-10, 0x00},  {0x3p-11, 0x01},  {17.0, 0x58},      {19.0, 0x5a},           {0.1, 0x1d},
      {1e-4, 0x00},     {-0.0, 0x80},     {0x1p-6 * 31 / 32, 0x08}, {240.0, 0x77},    {232.0, 0x76},
      {-3.5072, 0xc6},  {-281.6, 0xf9},   {0.3, 0x2a}};
  for (const auto& [value, code] : known) EXPECT_EQ(detail::encode_e4m3(value), code) << value;
}

TEST(E4m3Encoding, SaturatesAndKeepsNaN) {
  // PyTorch's cast turns these into NaN; the spec's satfinite rounding clamps them.
  EXPECT_EQ(detail::encode_e4m3(465.0), 0x7e);
  EXPECT_EQ(detail::encode_e4m3(-1e9), 0xfe);
  EXPECT_EQ(detail::encode_e4m3(-std::numeric_limits<double>::infinity()), 0xfe);
  EXPECT_EQ(detail::encode_e4m3(kNaN), 0x7f);
}

TEST(E4m3Encoding, EveryCodeDecodesAndEncodesBack) {
  for (int code = 0; code < 256; ++code) {
    const double value = detail::decode_e4m3(static_cast<uint8_t>(code));
    if ((code & 0x7f) == 0x7f) EXPECT_TRUE(std::isnan(value)) << code;
    else EXPECT_EQ(detail::encode_e4m3(value), code) << code;
  }
  EXPECT_EQ(detail::decode_e4m3(0x7e), 448.0);
  EXPECT_EQ(detail::decode_e4m3(0x01), 0x1p-9);
}

TEST(NormQuantShapeRule, CodesHaveXsShapeAndScalesItsLeadingDims) {
  EXPECT_EQ(rms_norm_quant_output_shape(Shape{2, 3, 8}, {{8}}), (Shape{2, 3, 8}));
  EXPECT_EQ(rms_norm_quant_scale_shape(Shape{2, 3, 8}, {{8}}), (Shape{2, 3}));
  EXPECT_EQ(layer_norm_quant_scale_shape(Shape{2, 3, 8}, {{3, 8}}), (Shape{2}));
  EXPECT_EQ(layer_norm_quant_scale_shape(Shape{4096}, {{4096}}), Shape{});
  expect_error([] { layer_norm_quant_output_shape(Shape{2, 8}, {{4}}); },
               "layer_norm_quant: normalized_shape [4] does not match");
  expect_error([] { rms_norm_quant_scale_shape(Shape{2, 8}, {{8}, -1}); }, "rms_norm_quant: eps = -1 must be");
  EXPECT_EQ(RMSNormQuant{}.eps, 1e-6);
  EXPECT_EQ(LayerNormQuant{}.eps, 1e-5);
}

TEST(NormQuantReference, LayerNormQuantByHand) {
  // mean 2, variance 1: x-hat = [-1, 1, -1, 1]; y = x-hat * w has amax 1.75, so scale = 1.75 / 448 =
  // 2^-8 exactly and q = y * 256 = [-128, 448, -3.5072, -281.6], rounded to [-128, 448, -3.5, -288].
  HostTensor x = filled({2, 4}, {1, 3, 1, 3}), w = filled({4}, {0.5, 1.75, 0.0137, -1.1});
  HostTensor q({2, 4}, DType::fp8_e4m3), scale({2}, DType::f32);
  const TensorRef w_ref = w.ref();
  reference::layer_norm_quant(x.ref(), &w_ref, nullptr, q.ref(), scale.ref(), {{4}, 0.0});
  expect_values(scale, {0x1p-8, 0x1p-8}, 0);
  expect_values(q, {-128, 448, -3.5, -288, -128, 448, -3.5, -288}, 0);
}

TEST(NormQuantReference, LayerNormQuantAddsTheBiasBeforeTheAmax) {
  HostTensor x = filled({1, 2}, {1, 3}), b = filled({2}, {0, 2.5}), q({1, 2}, DType::fp8_e4m3), scale({1}, DType::f32);
  const TensorRef b_ref = b.ref();
  reference::layer_norm_quant(x.ref(), nullptr, &b_ref, q.ref(), scale.ref(), {{2}, 0.0});
  // y = [-1, 3.5]: scale 3.5 / 448 = 2^-7, q = [-128, 448].
  expect_values(scale, {0x1p-7}, 0);
  expect_values(q, {-128, 448}, 0);
}

TEST(NormQuantReference, RMSNormQuantByHand) {
  // rms 1: y = [1, -2, 0.5, 0.25], amax 2, q = y * 224 (scale 2 / 448 rounded to f32).
  HostTensor x = filled({1, 4}, {1, -1, 1, -1}), w = filled({4}, {1, 2, 0.5, -0.25});
  HostTensor q({1, 4}, DType::fp8_e4m3), scale({1}, DType::f32);
  const TensorRef w_ref = w.ref();
  reference::rms_norm_quant(x.ref(), &w_ref, q.ref(), scale.ref(), {{4}, 0.0});
  expect_values(scale, {static_cast<double>(2.0f / 448.0f)}, 0);
  expect_values(q, {224, -448, 112, 56}, 0);
}

TEST(NormQuantReference, ZeroRowUsesTheAmaxFloor) {
  HostTensor x({1, 4}, DType::bf16), q({1, 4}, DType::fp8_e4m3), scale({1}, DType::f32);
  reference::rms_norm_quant(x.ref(), nullptr, q.ref(), scale.ref(), {{4}, 1e-6});
  expect_values(scale, {static_cast<double>(1e-12f / 448.0f)}, 0);
  expect_values(q, {0, 0, 0, 0}, 0);
}

TEST(NormQuantReference, NaNPoisonsItsRowsScaleAndCodes) {
  HostTensor x = filled({2, 2}, {1, kNaN, 3, 4}), q({2, 2}, DType::fp8_e4m3), scale({2}, DType::f32);
  reference::layer_norm_quant(x.ref(), nullptr, nullptr, q.ref(), scale.ref(), {{2}, 0.0});
  EXPECT_TRUE(std::isnan(scale.at(0)));
  expect_values(q, {kNaN, kNaN, -448, 448}, 0);
}

TEST(NormQuantValidation, CodesMustBeFp8) {
  HostTensor x({2, 8}, DType::f16), q({2, 8}, DType::f16), scale({2}, DType::f32);
  expect_error([&] { reference::rms_norm_quant(x.ref(), nullptr, q.ref(), scale.ref(), {{8}}); },
               "reference::rms_norm_quant: output: dtype f16 must be fp8_e4m3");
}

TEST(NormQuantValidation, CodesMustHaveXsShape) {
  HostTensor x({2, 8}, DType::f16), q({2, 4}, DType::fp8_e4m3), scale({2}, DType::f32);
  expect_error([&] { reference::rms_norm_quant(x.ref(), nullptr, q.ref(), scale.ref(), {{8}}); },
               "output: shape [2, 4] must be [2, 8]");
}

TEST(NormQuantValidation, ScaleMustBeF32) {
  HostTensor x({2, 8}, DType::bf16), q({2, 8}, DType::fp8_e4m3), scale({2}, DType::bf16);
  expect_error([&] { reference::layer_norm_quant(x.ref(), nullptr, nullptr, q.ref(), scale.ref(), {{8}}); },
               "scale: dtype bf16 must be f32");
}

TEST(NormQuantValidation, ScaleMustHaveXsLeadingDims) {
  HostTensor x({2, 3, 8}, DType::f32), q({2, 3, 8}, DType::fp8_e4m3), scale({6}, DType::f32);
  expect_error([&] { reference::layer_norm_quant(x.ref(), nullptr, nullptr, q.ref(), scale.ref(), {{8}}); },
               "scale: shape [6] must be [2, 3]");
}

TEST(NormQuantValidation, WeightAndBiasKeepXsDtype) {
  HostTensor x({2, 8}, DType::f16), w({8}, DType::f32), q({2, 8}, DType::fp8_e4m3), scale({2}, DType::f32);
  const TensorRef w_ref = w.ref();
  expect_error([&] { reference::layer_norm_quant(x.ref(), nullptr, &w_ref, q.ref(), scale.ref(), {{8}}); },
               "bias: dtype f32 must be f16");
}

TEST(NormQuantValidation, Fp8InputIsRejected) {
  HostTensor x({2, 8}, DType::fp8_e4m3), q({2, 8}, DType::fp8_e4m3), scale({2}, DType::f32);
  expect_error([&] { reference::rms_norm_quant(x.ref(), nullptr, q.ref(), scale.ref(), {{8}}); },
               "x: dtype fp8_e4m3 is not supported");
}

TEST(NormQuantAliasing, ScaleMayNotOverlapAnyTensor) {
  HostTensor x({2, 8}, DType::f32), q({2, 8}, DType::fp8_e4m3), w({8}, DType::f32);
  const TensorRef in_x = make_tensor(x.bytes.data(), DType::f32, Shape{2});
  const TensorRef in_q = make_tensor(q.bytes.data(), DType::f32, Shape{2});
  const TensorRef in_w = make_tensor(w.bytes.data(), DType::f32, Shape{2});
  const TensorRef w_ref = w.ref();
  expect_error([&] { reference::rms_norm_quant(x.ref(), nullptr, q.ref(), in_x, {{8}}); },
               "x and scale overlap in memory");
  expect_error([&] { reference::rms_norm_quant(x.ref(), nullptr, q.ref(), in_q, {{8}}); },
               "output and scale overlap in memory");
  expect_error([&] { reference::rms_norm_quant(x.ref(), &w_ref, q.ref(), in_w, {{8}}); },
               "weight and scale overlap in memory");
}

TEST(NormQuantAliasing, CodesMayNotOverlapX) {
  HostTensor x({2, 8}, DType::f32), scale({2}, DType::f32);
  const TensorRef q_in_x = make_tensor(x.bytes.data(), DType::fp8_e4m3, Shape{2, 8});
  expect_error([&] { reference::layer_norm_quant(x.ref(), nullptr, nullptr, q_in_x, scale.ref(), {{8}}); },
               "x and output overlap in memory");
}

TEST(NormQuantCost, SpecFormulas) {
  const Shape x{2048, 4096};
  const double m = 2048, n = 4096, mn = m * n;
  Cost c = rms_norm_quant_cost(x, DType::bf16, {{4096}});
  EXPECT_DOUBLE_EQ(c.flops, 7 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (mn + n) * 2 + mn + 4 * m);
  c = layer_norm_quant_cost(x, DType::f32, {{4096}});
  EXPECT_DOUBLE_EQ(c.flops, 8 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (mn + n) * 4 + mn + 4 * m + n * 4);
  expect_error([] { rms_norm_quant_cost(Shape{2, 8}, DType::f16, {{4}}); }, "rms_norm_quant: normalized_shape [4]");
}

}  // namespace
}  // namespace solops::testing::norm
