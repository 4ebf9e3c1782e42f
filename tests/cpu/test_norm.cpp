// Row norms (spec §2.1, 2.2, 2.3, 2.4, 2.5, 2.15, 2.16, 2.17): the shape rule, one test per validation
// and aliasing rule, the host e4m3 encoder against PyTorch's, the CPU references against values
// computed by hand, the cost models and the C ABI.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "host_tensor.hpp"
#include "expect_error.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"
#include "solops/solops.h"

namespace solops {
namespace {

using testing::expect_error;
using testing::HostTensor;
using Shape = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

HostTensor filled(Shape shape, const std::vector<double>& values, DType dtype = DType::f32) {
  HostTensor t(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, values[static_cast<size_t>(i) % values.size()]);
  return t;
}

void expect_values(HostTensor& t, const std::vector<double>& want, double tolerance = 1e-6) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(t.at(i))) << "element " << i;
    else EXPECT_NEAR(t.at(i), want[i], tolerance * (1 + std::abs(want[i]))) << "element " << i;
  }
}

// ---- shape rule ----------------------------------------------------------------------------------

TEST(NormShapeRule, OutputHasTheShapeOfX) {
  EXPECT_EQ(rms_norm_output_shape(Shape{2048, 4096}, {{4096}}), (Shape{2048, 4096}));
  EXPECT_EQ(layer_norm_output_shape(Shape{2, 3, 5, 7}, {{5, 7}}), (Shape{2, 3, 5, 7}));
  EXPECT_EQ(gemma_rms_norm_output_shape(Shape{0, 16}, {{16}}), (Shape{0, 16}));
  EXPECT_EQ(fused_add_rms_norm_output_shape(Shape{1, 8192}, {}), (Shape{1, 8192}));
  EXPECT_EQ(fused_add_layer_norm_output_shape(Shape{4, 3, 9}, {}), (Shape{4, 3, 9}));
  EXPECT_EQ(rms_norm_output_shape(Shape{4096}, {{4096}}), (Shape{4096}));  // one row, no lead dims
}

TEST(NormShapeRule, NormalizedShapeMustBeNonEmpty) {
  expect_error([] { rms_norm_output_shape(Shape{2, 4}, {}); }, "rms_norm: normalized_shape must be non-empty");
}

TEST(NormShapeRule, NormalizedShapeMustMatchTheTrailingDims) {
  expect_error([] { layer_norm_output_shape(Shape{2, 4095}, {{4096}}); },
               "layer_norm: normalized_shape [4096] does not match the trailing dims of x [2, 4095]");
  expect_error([] { rms_norm_output_shape(Shape{3, 5, 7}, {{3, 7}}); }, "does not match the trailing dims");
}

TEST(NormShapeRule, NormalizedShapeMayNotHaveMoreDimsThanX) {
  expect_error([] { rms_norm_output_shape(Shape{8}, {{1, 8}}); }, "normalized_shape [1, 8] has more dims than x [8]");
}

TEST(NormShapeRule, RowsMayNotBeEmpty) {
  expect_error([] { layer_norm_output_shape(Shape{4, 0}, {{0}}); }, "has an empty dim");
}

TEST(NormShapeRule, NegativeEpsIsRejected) {
  expect_error([] { layer_norm_output_shape(Shape{2, 4}, {{4}, -1e-5}); }, "layer_norm: eps = -1e-05 must be");
  expect_error([] { rms_norm_output_shape(Shape{2, 4}, {{4}, kNaN}); }, "must be finite and >= 0");
  expect_error([] { fused_add_rms_norm_output_shape(Shape{2, 4}, {-1}); }, "fused_add_rms_norm: eps = -1");
}

TEST(NormShapeRule, FusedAddNormsNeedAtLeastOneDim) {
  expect_error([] { fused_add_layer_norm_output_shape(Shape{}, {}); },
               "fused_add_layer_norm: x must have at least one dim");
}

TEST(NormShapeRule, DefaultEpsFollowsTheSpec) {
  EXPECT_FALSE(RMSNorm{}.eps.has_value());  // F.rms_norm's None: the f32 machine epsilon
  EXPECT_EQ(LayerNorm{}.eps, 1e-5);
  EXPECT_EQ(GemmaRMSNorm{}.eps, 1e-6);
  EXPECT_EQ(FusedAddRMSNorm{}.eps, 1e-6);
  EXPECT_EQ(FusedAddLayerNorm{}.eps, 1e-5);
}

// ---- references against hand-computed values ---------------------------------------------------

TEST(NormReference, RMSNormByHand) {
  // mean(x^2) = (1 + 4 + 9 + 16) / 4 = 7.5.
  HostTensor x = filled({1, 4}, {1, 2, 3, 4}), w = filled({4}, {1, 0.5, 2, -1}), y({1, 4}, DType::f32);
  const TensorRef w_ref = w.ref();
  reference::rms_norm(x.ref(), &w_ref, y.ref(), {{4}, 0.0});
  const double r = 1 / std::sqrt(7.5);
  expect_values(y, {1 * r, 2 * r * 0.5, 3 * r * 2, -4 * r});
}

TEST(NormReference, RMSNormWithoutWeightAndDefaultEps) {
  // A zero row stays zero; eps = FLT_EPSILON when none is given.
  HostTensor x = filled({2, 2}, {0, 0, 3, 4}), y({2, 2}, DType::f32);
  reference::rms_norm(x.ref(), nullptr, y.ref(), {{2}});
  const double r = 1 / std::sqrt(12.5 + FLT_EPSILON);
  expect_values(y, {0, 0, 3 * r, 4 * r});
}

TEST(NormReference, LayerNormByHand) {
  // mean 2.5, biased variance 1.25.
  HostTensor x = filled({2, 4}, {1, 2, 3, 4}), w = filled({4}, {1, 2, 1, 1}), b = filled({4}, {0, 1, 0, -1});
  HostTensor y({2, 4}, DType::f32);
  const TensorRef w_ref = w.ref(), b_ref = b.ref();
  reference::layer_norm(x.ref(), &w_ref, &b_ref, y.ref(), {{4}, 0.0});
  const double s = 1 / std::sqrt(1.25);
  const std::vector<double> row = {-1.5 * s, -0.5 * s * 2 + 1, 0.5 * s, 1.5 * s - 1};
  std::vector<double> want(row);
  want.insert(want.end(), row.begin(), row.end());
  expect_values(y, want);
}

TEST(NormReference, LayerNormOverTwoTrailingDims) {
  HostTensor x = filled({1, 2, 2}, {1, 2, 3, 4}), y({1, 2, 2}, DType::f32);
  reference::layer_norm(x.ref(), nullptr, nullptr, y.ref(), {{2, 2}, 0.0});
  const double s = 1 / std::sqrt(1.25);
  expect_values(y, {-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s});
}

TEST(NormReference, LayerNormIsStableUnderALargeCommonOffset) {
  // 10000 + {-1, 0, 1, 0}: E[x^2] - E[x]^2 in f32 would lose the variance 0.5 entirely.
  HostTensor x = filled({1, 4}, {9999, 10000, 10001, 10000}), y({1, 4}, DType::f32);
  reference::layer_norm(x.ref(), nullptr, nullptr, y.ref(), {{4}, 0.0});
  const double s = 1 / std::sqrt(0.5);
  expect_values(y, {-s, 0, s, 0});
}

TEST(NormReference, GemmaScalesByOnePlusWeight) {
  HostTensor x = filled({1, 2}, {3, 4}), w = filled({2}, {0, -0.5}), y({1, 2}, DType::f32);
  reference::gemma_rms_norm(x.ref(), w.ref(), y.ref(), {{2}, 0.0});
  const double r = 1 / std::sqrt(12.5);
  expect_values(y, {3 * r, 4 * r * 0.5});
}

TEST(NormReference, GemmaFormsOnePlusWeightBeforeRounding) {
  // In bf16, 1 + 2^-10 rounds to 1; formed in f32 (spec §2.17) it survives into an f32 output.
  HostTensor x = filled({1, 1}, {1}), w = filled({1}, {std::ldexp(1.0, -10)}), y({1, 1}, DType::f32);
  reference::gemma_rms_norm(x.ref(), w.ref(), y.ref(), {{1}, 0.0});
  expect_values(y, {1 + std::ldexp(1.0, -10)}, 1e-9);
}

TEST(NormReference, FusedAddRMSNormReturnsTheSumAndItsNorm) {
  HostTensor x = filled({1, 2}, {1, 1}), residual = filled({1, 2}, {2, 3}), w = filled({2}, {1, 2});
  HostTensor y({1, 2}, DType::f32), residual_out({1, 2}, DType::f32);
  const TensorRef w_ref = w.ref();
  reference::fused_add_rms_norm(x.ref(), residual.ref(), &w_ref, y.ref(), residual_out.ref(), {0.0});
  expect_values(residual_out, {3, 4});
  const double r = 1 / std::sqrt(12.5);
  expect_values(y, {3 * r, 8 * r});
}

TEST(NormReference, FusedAddNormNormalizesTheRoundedSum) {
  // bf16: 256 + 1 rounds to 256 (8 significant bits), so the row is [256, 256] and LayerNorm gives 0.
  HostTensor x = filled({1, 2}, {256, 256}, DType::bf16), residual = filled({1, 2}, {1, 0}, DType::bf16);
  HostTensor y({1, 2}, DType::bf16), residual_out({1, 2}, DType::bf16);
  reference::fused_add_layer_norm(x.ref(), residual.ref(), nullptr, nullptr, y.ref(), residual_out.ref(), {1e-5});
  expect_values(residual_out, {256, 256});
  expect_values(y, {0, 0});
}

TEST(NormReference, FusedAddLayerNormInPlace) {
  HostTensor x = filled({2, 4}, {1, 2, 3, 4}), residual = filled({2, 4}, {0, 0, 0, 0, 1, 1, 1, 1});
  HostTensor b = filled({4}, {1});
  const TensorRef b_ref = b.ref();
  reference::fused_add_layer_norm(x.ref(), residual.ref(), nullptr, &b_ref, x.ref(), residual.ref(), {0.0});
  const double s = 1 / std::sqrt(1.25);
  const std::vector<double> row = {1 - 1.5 * s, 1 - 0.5 * s, 1 + 0.5 * s, 1 + 1.5 * s};
  std::vector<double> want(row);
  want.insert(want.end(), row.begin(), row.end());
  expect_values(x, want);
  expect_values(residual, {1, 2, 3, 4, 2, 3, 4, 5});
}

TEST(NormReference, NaNPoisonsOnlyItsRow) {
  HostTensor x = filled({2, 2}, {kNaN, 1, 3, 4}), y({2, 2}, DType::f32);
  reference::rms_norm(x.ref(), nullptr, y.ref(), {{2}, 0.0});
  const double r = 1 / std::sqrt(12.5);
  expect_values(y, {kNaN, kNaN, 3 * r, 4 * r});
}

// ---- AdaLayerNorm ----------------------------------------------------------------------------------

TEST(AdaLayerNormShapeRule, OverTheLastDim) {
  EXPECT_EQ(ada_layer_norm_output_shape(Shape{2, 256, 1152}, {}), (Shape{2, 256, 1152}));
  EXPECT_EQ(AdaLayerNorm{}.eps, 1e-5);
  expect_error([] { ada_layer_norm_output_shape(Shape{}, {}); }, "ada_layer_norm: x must have at least one dim");
  expect_error([] { ada_layer_norm_output_shape(Shape{2, 0}, {}); }, "has an empty dim");
  expect_error([] { ada_layer_norm_output_shape(Shape{2, 4}, {-1}); }, "ada_layer_norm: eps = -1 must be");
}

TEST(AdaLayerNormReference, ModulatesEachElement) {
  // Rows [1, 2, 3, 4] (x-hat = [-1.5, -0.5, 0.5, 1.5] / sqrt(1.25)) and [0, 2, 0, 2] (x-hat =
  // [-1, 1, -1, 1]): every element has its own scale and shift.
  HostTensor x = filled({2, 4}, {1, 2, 3, 4, 0, 2, 0, 2});
  HostTensor scale = filled({2, 4}, {1, 2, -1, 0.5, 3, 3, 3, 3}), shift = filled({2, 4}, {0, 0, 1, 0, 1, 2, 3, 4});
  HostTensor y({2, 4}, DType::f32);
  reference::ada_layer_norm(x.ref(), scale.ref(), shift.ref(), y.ref(), {0.0});
  const double s = 1 / std::sqrt(1.25);
  expect_values(y, {-1.5 * s, -0.5 * s * 2, 1 - 0.5 * s, 1.5 * s * 0.5, -2, 5, 0, 7});
}

TEST(AdaLayerNormReference, ScaleOfOneIsLayerNormPlusShift) {
  // Not DiT's x-hat * (1 + scale) + shift (spec §2.3): a scale of 1 leaves x-hat as it is.
  HostTensor x = filled({1, 2}, {1, 3}), one = filled({1, 2}, {1}), shift = filled({1, 2}, {0.25, -0.25});
  HostTensor y({1, 2}, DType::f32);
  reference::ada_layer_norm(x.ref(), one.ref(), shift.ref(), y.ref(), {0.0});
  expect_values(y, {-0.75, 0.75});
}

TEST(AdaLayerNormValidation, ScaleAndShiftHaveXsShape) {
  HostTensor x({2, 8}, DType::bf16), row({8}, DType::bf16), full({2, 8}, DType::bf16), y({2, 8}, DType::bf16);
  expect_error([&] { reference::ada_layer_norm(x.ref(), row.ref(), full.ref(), y.ref(), {}); },
               "reference::ada_layer_norm: scale: shape [8] must be [2, 8]");
  expect_error([&] { reference::ada_layer_norm(x.ref(), full.ref(), row.ref(), y.ref(), {}); },
               "shift: shape [8] must be [2, 8]");
}

TEST(AdaLayerNormValidation, ScaleAndShiftHaveXsDtype) {
  HostTensor x({2, 8}, DType::f16), f32({2, 8}, DType::f32), f16({2, 8}, DType::f16), y({2, 8}, DType::f16);
  expect_error([&] { reference::ada_layer_norm(x.ref(), f32.ref(), f16.ref(), y.ref(), {}); },
               "scale: dtype f32 must be f16");
}

TEST(AdaLayerNormAliasing, OutputMayNotOverlapAnInput) {
  HostTensor x({2, 8}, DType::f32), scale({2, 8}, DType::f32), shift({2, 8}, DType::f32);
  expect_error([&] { reference::ada_layer_norm(x.ref(), scale.ref(), shift.ref(), shift.ref(), {}); },
               "shift and output overlap in memory");
  expect_error([&] { reference::ada_layer_norm(x.ref(), scale.ref(), shift.ref(), x.ref(), {}); },
               "x and output overlap in memory");
}

TEST(AdaLayerNormCost, SpecFormula) {
  const Cost c = ada_layer_norm_cost(Shape{1024, 1152}, DType::bf16, {});
  EXPECT_DOUBLE_EQ(c.flops, 5.0 * 1024 * 1152);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * 1024 * 1152 * 2);
}

// ---- fp8 e4m3 on the host ---------------------------------------------------------------------------

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

// ---- quantizing norms ------------------------------------------------------------------------------

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

// ---- validation: one test per rule ---------------------------------------------------------------

TEST(NormValidation, WeightShapeMustBeTheNormalizedShape) {
  HostTensor x({2, 8}, DType::f32), w({4}, DType::f32), y({2, 8}, DType::f32);
  const TensorRef w_ref = w.ref();
  expect_error([&] { reference::rms_norm(x.ref(), &w_ref, y.ref(), {{8}}); },
               "reference::rms_norm: weight: shape [4] must be [8]");
}

TEST(NormValidation, WeightDtypeMustBeXs) {
  HostTensor x({2, 8}, DType::bf16), w({8}, DType::f32), y({2, 8}, DType::bf16);
  const TensorRef w_ref = w.ref();
  expect_error([&] { reference::layer_norm(x.ref(), &w_ref, nullptr, y.ref(), {{8}}); },
               "weight: dtype f32 must be bf16");
}

TEST(NormValidation, BiasShapeMustBeTheNormalizedShape) {
  HostTensor x({2, 8}, DType::f32), b({2, 8}, DType::f32), y({2, 8}, DType::f32);
  const TensorRef b_ref = b.ref();
  expect_error([&] { reference::layer_norm(x.ref(), nullptr, &b_ref, y.ref(), {{8}}); },
               "bias: shape [2, 8] must be [8]");
}

TEST(NormValidation, OutputMustHaveXsShapeAndDtype) {
  HostTensor x({2, 8}, DType::f16), y({2, 4}, DType::f16), y32({2, 8}, DType::f32);
  expect_error([&] { reference::rms_norm(x.ref(), nullptr, y.ref(), {{8}}); }, "output: shape [2, 4] must be [2, 8]");
  expect_error([&] { reference::rms_norm(x.ref(), nullptr, y32.ref(), {{8}}); }, "output: dtype f32 must be f16");
}

TEST(NormValidation, ResidualMustHaveXsShape) {
  HostTensor x({2, 8}, DType::f32), residual({1, 8}, DType::f32), y({2, 8}, DType::f32), r_out({2, 8}, DType::f32);
  expect_error([&] { reference::fused_add_rms_norm(x.ref(), residual.ref(), nullptr, y.ref(), r_out.ref(), {}); },
               "residual: shape [1, 8] must be [2, 8]");
}

TEST(NormValidation, IntegerInputIsRejected) {
  HostTensor x({2, 8}, DType::i32), y({2, 8}, DType::i32);
  expect_error([&] { reference::rms_norm(x.ref(), nullptr, y.ref(), {{8}}); }, "x: dtype i32 is not supported");
}

TEST(NormValidation, NonContiguousLastDimIsUnsupported) {
  HostTensor x({2, 16}, DType::f32), y({2, 8}, DType::f32);
  TensorRef strided = make_tensor(x.bytes.data(), DType::f32, Shape{2, 8});
  strided.strides = {16, 2};  // every other element of each row
  expect_error([&] { reference::rms_norm(strided, nullptr, y.ref(), {{8}}); }, "x must be contiguous",
               Status::unsupported);
}

TEST(NormValidation, NegativeEpsIsRejectedByTheOp) {
  HostTensor x({2, 8}, DType::f32), y({2, 8}, DType::f32);
  expect_error([&] { reference::layer_norm(x.ref(), nullptr, nullptr, y.ref(), {{8}, -1}); }, "eps = -1 must be");
}

// ---- aliasing --------------------------------------------------------------------------------------

TEST(NormAliasing, PlainNormsAreNotInPlace) {
  HostTensor x({2, 8}, DType::f32), w({8}, DType::f32);
  expect_error([&] { reference::rms_norm(x.ref(), nullptr, x.ref(), {{8}}); },
               "x and output overlap in memory; this op is not in-place");
  HostTensor y({2, 8}, DType::f32);
  const TensorRef w_in_y = make_tensor(y.bytes.data(), DType::f32, Shape{8});
  expect_error([&] { reference::layer_norm(x.ref(), &w_in_y, nullptr, y.ref(), {{8}}); },
               "weight and output overlap in memory");
}

struct FusedBuffers {
  HostTensor x{{2, 8}, DType::f32}, residual{{2, 8}, DType::f32}, y{{2, 8}, DType::f32};
  HostTensor r_out{{2, 8}, DType::f32}, big{{4, 8}, DType::f32};
  // A [2, 8] view of `big` starting `offset` elements in.
  TensorRef view(int64_t offset) { return make_tensor(big.bytes.data() + offset * 4, DType::f32, Shape{2, 8}); }
};

TEST(NormAliasing, FusedInPlaceFormIsAccepted) {
  FusedBuffers b;
  reference::fused_add_rms_norm(b.x.ref(), b.residual.ref(), nullptr, b.x.ref(), b.residual.ref(), {});
  reference::fused_add_rms_norm(b.x.ref(), b.residual.ref(), nullptr, b.x.ref(), b.r_out.ref(), {});
  reference::fused_add_rms_norm(b.x.ref(), b.residual.ref(), nullptr, b.y.ref(), b.residual.ref(), {});
}

TEST(NormAliasing, FusedPartialOverlapOfAnInPlacePairIsRejected) {
  FusedBuffers b;
  const TensorRef x = b.view(0), y = b.view(4);
  expect_error([&] { reference::fused_add_rms_norm(x, b.residual.ref(), nullptr, y, b.r_out.ref(), {}); },
               "output and x overlap in memory without being the same tensor");
}

TEST(NormAliasing, FusedOutputMayNotBeResidual) {
  FusedBuffers b;
  expect_error(
      [&] { reference::fused_add_rms_norm(b.x.ref(), b.residual.ref(), nullptr, b.residual.ref(), b.r_out.ref(), {}); },
      "output and residual overlap in memory; the only aliasing allowed is output = x and residual_out = residual");
}

TEST(NormAliasing, FusedResidualOutMayNotBeX) {
  FusedBuffers b;
  expect_error(
      [&] { reference::fused_add_layer_norm(b.x.ref(), b.residual.ref(), nullptr, nullptr, b.y.ref(), b.x.ref(), {}); },
      "residual_out and x overlap in memory");
}

TEST(NormAliasing, FusedOutputsMayNotOverlapEachOther) {
  FusedBuffers b;
  expect_error(
      [&] { reference::fused_add_rms_norm(b.x.ref(), b.residual.ref(), nullptr, b.y.ref(), b.y.ref(), {}); },
      "residual_out and output overlap in memory");
}

TEST(NormAliasing, FusedOutputsMayNotOverlapTheWeight) {
  FusedBuffers b;
  const TensorRef w = make_tensor(b.r_out.bytes.data(), DType::f32, Shape{8});
  expect_error(
      [&] { reference::fused_add_rms_norm(b.x.ref(), b.residual.ref(), &w, b.y.ref(), b.r_out.ref(), {}); },
      "residual_out and weight overlap in memory");
}

// ---- cost models ------------------------------------------------------------------------------------

TEST(NormCost, SpecFormulas) {
  const Shape x{2048, 4096};
  const double mn = 2048.0 * 4096, n = 4096;
  Cost c = rms_norm_cost(x, DType::bf16, {{4096}});
  EXPECT_DOUBLE_EQ(c.flops, 4 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (2 * mn + n) * 2);
  c = layer_norm_cost(x, DType::f32, {{4096}});
  EXPECT_DOUBLE_EQ(c.flops, 5 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (2 * mn + 2 * n) * 4);
  c = gemma_rms_norm_cost(x, DType::f16, {{4096}});
  EXPECT_DOUBLE_EQ(c.flops, 5 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (2 * mn + n) * 2);
  c = fused_add_rms_norm_cost(x, DType::bf16, {});
  EXPECT_DOUBLE_EQ(c.flops, 5 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (4 * mn + n) * 2);
  c = fused_add_layer_norm_cost(x, DType::bf16, {});
  EXPECT_DOUBLE_EQ(c.flops, 6 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (4 * mn + 2 * n) * 2);
}

TEST(NormCost, ChecksTheShapeRule) {
  expect_error([] { rms_norm_cost(Shape{2, 8}, DType::f16, {{4}}); }, "rms_norm: normalized_shape [4] does not match");
}

// ---- C ABI ------------------------------------------------------------------------------------------

solops_tensor c_tensor(HostTensor& t) {
  solops_tensor c{};
  const TensorRef ref = t.ref();
  c.data = ref.data;
  c.dtype = static_cast<int32_t>(ref.dtype);
  c.rank = ref.rank;
  for (int i = 0; i < ref.rank; ++i) {
    c.shape[i] = ref.shape[i];
    c.strides[i] = ref.strides[i];
  }
  c.device = SOLOPS_CPU;
  return c;
}

TEST(NormCApi, ReferenceShapeAndCost) {
  HostTensor x = filled({1, 4}, {1, 2, 3, 4}), y({1, 4}, DType::f32);
  solops_norm_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 4;
  p.has_eps = 1;
  p.eps = 0;
  solops_tensor cx = c_tensor(x), cy = c_tensor(y);
  ASSERT_EQ(solops_reference_rms_norm(&cx, nullptr, &cy, &p), SOLOPS_OK) << solops_last_error();
  expect_values(y, {1 / std::sqrt(7.5), 2 / std::sqrt(7.5), 3 / std::sqrt(7.5), 4 / std::sqrt(7.5)});
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_layer_norm_output_shape(2, x.shape.data(), &p, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(shape[1], 4);
  solops_cost cost{};
  const solops_fused_add_norm_params fused{0, 0};
  ASSERT_EQ(solops_fused_add_rms_norm_cost(2, x.shape.data(), SOLOPS_BF16, &fused, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, (4 * 4 + 4) * 2.0);
}

TEST(NormCApi, FusedInPlaceThroughTheReference) {
  HostTensor x = filled({1, 2}, {1, 1}), residual = filled({1, 2}, {2, 3});
  const solops_fused_add_norm_params p{1, 0};
  solops_tensor cx = c_tensor(x), cr = c_tensor(residual);
  ASSERT_EQ(solops_reference_fused_add_rms_norm(&cx, &cr, nullptr, &cx, &cr, &p), SOLOPS_OK) << solops_last_error();
  expect_values(residual, {3, 4});
  expect_values(x, {3 / std::sqrt(12.5), 4 / std::sqrt(12.5)});
}

TEST(NormCApi, QuantReferenceShapeAndCost) {
  HostTensor x = filled({1, 4}, {1, -1, 1, -1}), q({1, 4}, DType::fp8_e4m3), scale({1}, DType::f32);
  solops_norm_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 4;
  solops_tensor cx = c_tensor(x), cq = c_tensor(q), cs = c_tensor(scale);
  ASSERT_EQ(solops_reference_rms_norm_quant(&cx, nullptr, &cq, &cs, &p), SOLOPS_OK) << solops_last_error();
  expect_values(q, {448, -448, 448, -448}, 0);
  ASSERT_EQ(solops_reference_layer_norm_quant(&cx, nullptr, nullptr, &cq, &cs, &p), SOLOPS_OK) << solops_last_error();
  expect_values(q, {448, -448, 448, -448}, 0);
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_layer_norm_quant_output_shape(2, x.shape.data(), &p, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 2);
  solops_cost cost{};
  ASSERT_EQ(solops_rms_norm_quant_cost(2, x.shape.data(), SOLOPS_F16, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, (4 + 4) * 2.0 + 4 + 4);
  EXPECT_EQ(solops_reference_rms_norm_quant(&cx, nullptr, &cq, nullptr, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("scale is a null pointer"), std::string::npos);
}

TEST(AdaLayerNormCApi, ReferenceShapeAndCost) {
  HostTensor x = filled({1, 2}, {1, 3}), scale = filled({1, 2}, {2}), shift = filled({1, 2}, {1});
  HostTensor y({1, 2}, DType::f32);
  const solops_ada_layer_norm_params p{1, 0};
  solops_tensor cx = c_tensor(x), cs = c_tensor(scale), ch = c_tensor(shift), cy = c_tensor(y);
  ASSERT_EQ(solops_reference_ada_layer_norm(&cx, &cs, &ch, &cy, &p), SOLOPS_OK) << solops_last_error();
  expect_values(y, {-1, 3});
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_ada_layer_norm_output_shape(2, x.shape.data(), &p, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 2);
  solops_cost cost{};
  ASSERT_EQ(solops_ada_layer_norm_cost(2, x.shape.data(), SOLOPS_F32, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, 4 * 2 * 4.0);
  EXPECT_EQ(solops_reference_ada_layer_norm(&cx, nullptr, &ch, &cy, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("scale is a null pointer"), std::string::npos);
}

TEST(NormCApi, ErrorsReturnAStatusAndAMessage) {
  HostTensor x({2, 4}, DType::f32), y({2, 4}, DType::f32);
  solops_tensor cx = c_tensor(x), cy = c_tensor(y);
  solops_norm_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 5;
  EXPECT_EQ(solops_reference_layer_norm(&cx, nullptr, nullptr, &cy, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("does not match the trailing dims"), std::string::npos);
  p.normalized_rank = 9;
  EXPECT_EQ(solops_reference_layer_norm(&cx, nullptr, nullptr, &cy, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("normalized_rank 9 is outside [0, 8]"), std::string::npos);
  EXPECT_EQ(solops_reference_rms_norm(&cx, nullptr, &cy, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("params is a null pointer"), std::string::npos);
  EXPECT_EQ(solops_reference_gemma_rms_norm(&cx, nullptr, &cy, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("weight is a null pointer"), std::string::npos);
}

}  // namespace
}  // namespace solops
