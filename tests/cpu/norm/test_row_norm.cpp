// RMSNorm, LayerNorm and GemmaRMSNorm (spec §2.1, 2.2, 2.17): the shape rule (with the rules every
// row norm shares), the CPU references against values computed by hand, one test per validation and
// aliasing rule, and the cost models.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

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

TEST(NormShapeRule, DefaultEpsFollowsTheSpec) {
  EXPECT_FALSE(RMSNorm{}.eps.has_value());  // F.rms_norm's None: the f32 machine epsilon
  EXPECT_EQ(LayerNorm{}.eps, 1e-5);
  EXPECT_EQ(GemmaRMSNorm{}.eps, 1e-6);
  EXPECT_EQ(FusedAddRMSNorm{}.eps, 1e-6);
  EXPECT_EQ(FusedAddLayerNorm{}.eps, 1e-5);
  EXPECT_EQ(QKNorm{}.eps, 1e-6);
}

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

TEST(NormReference, NaNPoisonsOnlyItsRow) {
  HostTensor x = filled({2, 2}, {kNaN, 1, 3, 4}), y({2, 2}, DType::f32);
  reference::rms_norm(x.ref(), nullptr, y.ref(), {{2}, 0.0});
  const double r = 1 / std::sqrt(12.5);
  expect_values(y, {kNaN, kNaN, 3 * r, 4 * r});
}

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

TEST(NormAliasing, PlainNormsAreNotInPlace) {
  HostTensor x({2, 8}, DType::f32), w({8}, DType::f32);
  expect_error([&] { reference::rms_norm(x.ref(), nullptr, x.ref(), {{8}}); },
               "x and output overlap in memory; this op is not in-place");
  HostTensor y({2, 8}, DType::f32);
  const TensorRef w_in_y = make_tensor(y.bytes.data(), DType::f32, Shape{8});
  expect_error([&] { reference::layer_norm(x.ref(), &w_in_y, nullptr, y.ref(), {{8}}); },
               "weight and output overlap in memory");
}

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

}  // namespace
}  // namespace solops::testing::norm
