// Row norms (spec §2.1, 2.2, 2.3, 2.4, 2.5, 2.13, 2.14, 2.15, 2.16, 2.17, 2.18, 2.19), the vector
// norms (2.22, 2.23), WeightNorm (2.20) and SpectralNormPowerIter (2.21): the shape rule,
// one test per validation and aliasing rule, the host e4m3 encoder against PyTorch's, the CPU
// references against values computed by hand (and the backward against central differences of the
// forward), the cost models and the C ABI.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "host_tensor.hpp"
#include "expect_error.hpp"
#include "norm/spectral_norm.hpp"
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
  EXPECT_EQ(QKNorm{}.eps, 1e-6);
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

// ---- GroupRMSNorm -----------------------------------------------------------------------------------

TEST(GroupRMSNormShapeRule, OutputHasXsShapeAndRstdItsLeadingDims) {
  EXPECT_EQ(group_rms_norm_output_shape(Shape{2, 3, 8}, {{8}}), (Shape{2, 3, 8}));
  EXPECT_EQ(norm_stats_shape(Shape{2, 3, 8}, Shape{8}), (Shape{2, 3}));
  EXPECT_EQ(GroupRMSNorm{}.eps, 1e-6);
}

TEST(GroupRMSNormShapeRule, XMustHaveRankTwo) {
  expect_error([] { group_rms_norm_output_shape(Shape{8}, {{8}}); },
               "group_rms_norm: x [8] must have rank >= 2: it is viewed as [..., G, D]");
}

TEST(GroupRMSNormShapeRule, NormalizedShapeMustBeTheLastDimAlone) {
  expect_error([] { group_rms_norm_output_shape(Shape{2, 3, 8}, {{3, 8}}); },
               "group_rms_norm: normalized_shape [3, 8] must be (D,)");
  expect_error([] { group_rms_norm_output_shape(Shape{2, 3, 8}, {{4}}); }, "does not match the trailing dims");
}

TEST(GroupRMSNormShapeRule, NegativeEpsIsRejected) {
  expect_error([] { group_rms_norm_output_shape(Shape{3, 8}, {{8}, -1}); }, "group_rms_norm: eps = -1 must be");
}

TEST(GroupRMSNormReference, EachVectorTakesItsGroupsWeightRow) {
  // x [2, 2, 2] = two leading rows of G = 2 vectors; vector (b, g) is scaled by weight row g.
  HostTensor x = filled({2, 2, 2}, {3, 4, 1, 1, 6, 8, 0, 2}), weight = filled({2, 2}, {1, 2, -1, 3});
  HostTensor y({2, 2, 2}, DType::f32), rstd({2, 2}, DType::f32);
  const TensorRef w = weight.ref();
  reference::group_rms_norm(x.ref(), &w, y.ref(), rstd.ref(), {{2}, 0.0});
  const double r0 = 1 / std::sqrt(12.5), r1 = 1.0, r2 = 1 / std::sqrt(50.0), r3 = 1 / std::sqrt(2.0);
  expect_values(y, {3 * r0, 8 * r0, -r1, 3 * r1, 6 * r2, 16 * r2, 0, 6 * r3});
  expect_values(rstd, {r0, r1, r2, r3});
}

TEST(GroupRMSNormReference, WithoutWeightIsRMSNormOverTheLastDim) {
  HostTensor x = filled({3, 4}, {1, -2, 3, 0.5, 2}), y({3, 4}, DType::f32), rstd({3}, DType::f32);
  HostTensor want({3, 4}, DType::f32);
  reference::group_rms_norm(x.ref(), nullptr, y.ref(), rstd.ref(), {{4}, 1e-6});
  reference::rms_norm(x.ref(), nullptr, want.ref(), {{4}, 1e-6});
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_DOUBLE_EQ(y.at(i), want.at(i)) << i;
}

TEST(GroupRMSNormReference, NaNPoisonsOnlyItsVector) {
  HostTensor x = filled({2, 2, 2}, {1, kNaN, 1, 1, 1, 1, 1, 1}), y({2, 2, 2}, DType::f32), rstd({2, 2}, DType::f32);
  reference::group_rms_norm(x.ref(), nullptr, y.ref(), rstd.ref(), {{2}, 0.0});
  expect_values(y, {kNaN, kNaN, 1, 1, 1, 1, 1, 1});
  expect_values(rstd, {kNaN, 1, 1, 1});
}

TEST(GroupRMSNormValidation, WeightMustBeXsLastTwoDims) {
  HostTensor x({2, 3, 8}, DType::bf16), row({8}, DType::bf16), y({2, 3, 8}, DType::bf16), rstd({2, 3}, DType::f32);
  const TensorRef w = row.ref();
  expect_error([&] { reference::group_rms_norm(x.ref(), &w, y.ref(), rstd.ref(), {{8}}); },
               "reference::group_rms_norm: weight: shape [8] must be [3, 8]");
}

TEST(GroupRMSNormValidation, WeightMustHaveXsDtype) {
  HostTensor x({3, 8}, DType::f16), weight({3, 8}, DType::f32), y({3, 8}, DType::f16), rstd({3}, DType::f32);
  const TensorRef w = weight.ref();
  expect_error([&] { reference::group_rms_norm(x.ref(), &w, y.ref(), rstd.ref(), {{8}}); },
               "weight: dtype f32 must be f16");
}

TEST(GroupRMSNormValidation, RstdMustBeF32OfXsLeadingDims) {
  HostTensor x({3, 8}, DType::f16), y({3, 8}, DType::f16), rstd16({3}, DType::f16), rstd8({8}, DType::f32);
  expect_error([&] { reference::group_rms_norm(x.ref(), nullptr, y.ref(), rstd16.ref(), {{8}}); },
               "rstd: dtype f16 must be f32");
  expect_error([&] { reference::group_rms_norm(x.ref(), nullptr, y.ref(), rstd8.ref(), {{8}}); },
               "rstd: shape [8] must be [3]");
}

TEST(GroupRMSNormValidation, OutputMustHaveXsShapeAndDtype) {
  HostTensor x({3, 8}, DType::f16), y({3, 8}, DType::f32), rstd({3}, DType::f32);
  expect_error([&] { reference::group_rms_norm(x.ref(), nullptr, y.ref(), rstd.ref(), {{8}}); },
               "output: dtype f32 must be f16");
}

TEST(GroupRMSNormAliasing, NoOutputMayOverlapAnotherTensor) {
  HostTensor x({4, 8}, DType::f32), weight({4, 8}, DType::f32), y({4, 8}, DType::f32), rstd({4}, DType::f32);
  const TensorRef w = weight.ref();
  expect_error([&] { reference::group_rms_norm(x.ref(), &w, x.ref(), rstd.ref(), {{8}}); },
               "x and output overlap in memory");
  TensorRef rstd_in_y = rstd.ref();
  rstd_in_y.data = y.ref().data;
  expect_error([&] { reference::group_rms_norm(x.ref(), &w, y.ref(), rstd_in_y, {{8}}); },
               "overlap in memory");
}

TEST(GroupRMSNormCost, SpecFormula) {
  // (2 numel + G D) eb + 4 numel / D, with x [2048, 16384]: G = 2048, D = 16384.
  const Cost c = group_rms_norm_cost(Shape{2048, 16384}, DType::bf16, {{16384}});
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * 2048 * 16384);
  EXPECT_DOUBLE_EQ(c.bytes, 3.0 * 2048 * 16384 * 2 + 4.0 * 2048);
}

// ---- L1NormFwd / L2NormFwd (vector norms) ------------------------------------------------------------

TEST(VectorNormShapeRule, FullReductionIsZeroD) {
  EXPECT_EQ(vector_norm_output_shape(Shape{2048, 4096}, {}), Shape{});
  EXPECT_EQ(vector_norm_output_shape(Shape{2048, 4096}, {.keepdim = true}), (Shape{1, 1}));
  EXPECT_EQ(vector_norm_output_shape(Shape{}, {}), Shape{});
}

TEST(VectorNormShapeRule, ListedDimsAreRemovedOrKept) {
  EXPECT_EQ(vector_norm_output_shape(Shape{4, 128, 4096}, {.dim = {0, 2}}), Shape{128});
  EXPECT_EQ(vector_norm_output_shape(Shape{4, 128, 4096}, {.dim = {-1, 0}, .keepdim = true}), (Shape{1, 128, 1}));
  EXPECT_EQ(vector_norm_output_shape(Shape{4, 5}, {.ord = 1, .dim = {1}}), Shape{4});
}

TEST(VectorNormShapeRule, OrdMustBeOneOrTwo) {
  expect_error([] { vector_norm_output_shape(Shape{4}, {.ord = 3}); }, "vector_norm: ord = 3 is not supported");
}

TEST(VectorNormShapeRule, DimMustBeInRange) {
  expect_error([] { vector_norm_output_shape(Shape{4, 5}, {.dim = {2}}); },
               "vector_norm: dim 2 is out of range for x [4, 5] (rank 2)");
  expect_error([] { vector_norm_output_shape(Shape{4, 5}, {.dim = {-3}}); }, "dim -3 is out of range");
}

TEST(VectorNormShapeRule, DuplicateDimsAreRejected) {
  expect_error([] { vector_norm_output_shape(Shape{4, 5}, {.dim = {1, -1}}); },
               "vector_norm: dim [1, -1] names dim 1 twice");
}

TEST(VectorNormShapeRule, NegativeSizesAreRejected) {
  expect_error([] { vector_norm_output_shape(Shape{4, -1}, {}); }, "has a negative dim");
}

TEST(VectorNormWorkspace, OnlySplitReductionsNeedOne) {
  // Outputs of one contiguous run (full reductions, trailing dims) split over at most 1024 blocks
  // of >= 8192 elements: [5, 40000] over dim 1 splits each row in five chunks of 8000 (whole
  // multiples of 64). Other layouts split over at most 528 blocks of >= 16384 elements:
  // [4, 128, 4096] over dims 0 and 2 gives each of the 128 outputs 16384 elements, one block;
  // [3, 5, 40000] over dims 0 and 2 splits each output's 120000 in eight chunks of 15040.
  EXPECT_EQ(vector_norm_workspace_elements(Shape{2048, 4096}, {}), 1024);
  EXPECT_EQ(vector_norm_workspace_elements(Shape{64, 32768}, {}), 256);
  EXPECT_EQ(vector_norm_workspace_elements(Shape{4, 128, 4096}, {.dim = {0, 2}}), 0);
  EXPECT_EQ(vector_norm_workspace_elements(Shape{3, 5, 40000}, {.dim = {0, 2}}), 40);
  EXPECT_EQ(vector_norm_workspace_elements(Shape{5, 40000}, {.dim = {1}}), 25);
  EXPECT_EQ(vector_norm_workspace_elements(Shape{2048, 4096}, {.dim = {1}}), 0);
  EXPECT_EQ(vector_norm_workspace_elements(Shape{0, 5}, {}), 0);
}

TEST(VectorNormReference, L1AndL2ByHand) {
  HostTensor x = filled({2, 3}, {3, -4, 0, 1, 2, -2});
  HostTensor all({}, DType::f32), rows({2}, DType::f32), columns({1, 3}, DType::f32);
  reference::vector_norm(x.ref(), all.ref(), {.ord = 1});
  expect_values(all, {12});
  reference::vector_norm(x.ref(), rows.ref(), {.ord = 2, .dim = {-1}});
  expect_values(rows, {5, 3});
  reference::vector_norm(x.ref(), columns.ref(), {.ord = 2, .dim = {0}, .keepdim = true});
  expect_values(columns, {std::sqrt(10.0), std::sqrt(20.0), 2});
}

TEST(VectorNormReference, DimsZeroAndTwoOfThree) {
  HostTensor x = filled({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), y({2}, DType::f32);
  reference::vector_norm(x.ref(), y.ref(), {.ord = 1, .dim = {0, 2}});
  expect_values(y, {1 + 2 + 5 + 6, 3 + 4 + 7 + 8});
}

TEST(VectorNormReference, NaNPropagatesAndF16OverflowIsInf) {
  HostTensor x = filled({2, 2}, {1, kNaN, 1, 1}), y({2}, DType::f32);
  reference::vector_norm(x.ref(), y.ref(), {.dim = {1}});
  expect_values(y, {kNaN, std::sqrt(2.0)});
  HostTensor big = filled({2, 4096}, {60000}, DType::f16), total({}, DType::f16);
  reference::vector_norm(big.ref(), total.ref(), {.ord = 1});
  EXPECT_TRUE(std::isinf(total.at(0)) && total.at(0) > 0);
}

TEST(VectorNormReference, EmptyReductionIsZero) {
  HostTensor x({3, 0}, DType::f32), y({3}, DType::f32);
  reference::vector_norm(x.ref(), y.ref(), {.dim = {1}});
  expect_values(y, {0, 0, 0});
  // Any strides, as PyTorch's empty tensors have ([3, 0] is strided (1, 1) there): an empty tensor is contiguous.
  TensorRef torch_strides = x.ref();
  torch_strides.strides = {1, 1};
  y.poison();
  reference::vector_norm(torch_strides, y.ref(), {.dim = {1}});
  expect_values(y, {0, 0, 0});
}

TEST(VectorNormValidation, OutputMustHaveTheOutputShapeAndXsDtype) {
  HostTensor x({4, 8}, DType::f16), wrong_shape({8}, DType::f16), wrong_dtype({4}, DType::f32);
  expect_error([&] { reference::vector_norm(x.ref(), wrong_shape.ref(), {.dim = {1}}); },
               "reference::vector_norm: output: shape [8] must be [4]");
  expect_error([&] { reference::vector_norm(x.ref(), wrong_dtype.ref(), {.dim = {1}}); },
               "output: dtype f32 must be f16");
}

TEST(VectorNormValidation, IntegerInputIsRejected) {
  HostTensor x({4}, DType::i32), y({}, DType::i32);
  expect_error([&] { reference::vector_norm(x.ref(), y.ref(), {}); }, "x: dtype i32 is not supported");
}

TEST(VectorNormAliasing, OutputMayNotOverlapX) {
  HostTensor x({4, 4}, DType::f32);
  TensorRef y = x.ref();  // the first row of x
  y.rank = 1;
  y.strides[0] = 1;
  expect_error([&] { reference::vector_norm(x.ref(), y, {.dim = {1}}); }, "x and output overlap in memory");
}

TEST(VectorNormCost, SpecFormulas) {
  const Cost l1 = vector_norm_cost(Shape{4, 128, 4096}, DType::f16, {.ord = 1, .dim = {0, 2}});
  EXPECT_DOUBLE_EQ(l1.flops, 2.0 * 128 * 16384);
  EXPECT_DOUBLE_EQ(l1.bytes, (128.0 * 16384 + 128) * 2);
  const Cost l2 = vector_norm_cost(Shape{2048, 4096}, DType::bf16, {});
  EXPECT_DOUBLE_EQ(l2.flops, 2.0 * 2048 * 4096 + 1);
  EXPECT_DOUBLE_EQ(l2.bytes, (2048.0 * 4096 + 1) * 2);
}

// ---- WeightNormFwd -----------------------------------------------------------------------------------

TEST(WeightNormShapeRule, OneNormPerIndexAlongDim) {
  EXPECT_EQ(weight_norm_norm_shape(Shape{2048, 4096}, {}), Shape{2048});
  EXPECT_EQ(weight_norm_norm_shape(Shape{3, 5, 7}, {.dim = 1}), Shape{5});
  EXPECT_EQ(weight_norm_norm_shape(Shape{7}, {}), Shape{7});
}

TEST(WeightNormShapeRule, MinusOneIsTheWholeTensor) {
  // Spec §6.7 (PyTorch), not §2.20's last axis.
  EXPECT_EQ(weight_norm_norm_shape(Shape{3, 5, 7}, {.dim = -1}), Shape{1});
  EXPECT_EQ(weight_norm_norm_shape(Shape{}, {.dim = -1}), Shape{1});
}

TEST(WeightNormShapeRule, DimMustBeInRangeOrMinusOne) {
  expect_error([] { weight_norm_norm_shape(Shape{4, 5}, {.dim = 2}); },
               "weight_norm: dim 2 is out of range for v [4, 5]: it must be in [0, 2) or -1");
  expect_error([] { weight_norm_norm_shape(Shape{4, 5}, {.dim = -2}); }, "dim -2 is out of range");
}

TEST(WeightNormWorkspace, OnlySplitNormsNeedOne) {
  EXPECT_EQ(weight_norm_workspace_elements(Shape{2048, 16384}, {}), 0);
  EXPECT_EQ(weight_norm_workspace_elements(Shape{1, 16384}, {}), 2);
  EXPECT_EQ(weight_norm_workspace_elements(Shape{1, 40000}, {}), 5);
  EXPECT_EQ(weight_norm_workspace_elements(Shape{2048, 4096}, {.dim = -1}), 1024);
  EXPECT_EQ(weight_norm_workspace_elements(Shape{5}, {}), 0);
}

TEST(WeightNormReference, RowsColumnsAndWholeByHand) {
  HostTensor v = filled({2, 2}, {3, 4, 0, 2}), y({2, 2}, DType::f32), norm({2}, DType::f32);
  HostTensor g = filled({2}, {10, 1});
  reference::weight_norm(v.ref(), g.ref(), y.ref(), norm.ref(), {});
  expect_values(norm, {5, 2});
  expect_values(y, {6, 8, 0, 1});
  HostTensor g_column = filled({1, 2}, {3, 1});  // PyTorch's [1, n] for dim 1
  reference::weight_norm(v.ref(), g_column.ref(), y.ref(), norm.ref(), {.dim = 1});
  expect_values(norm, {3, std::sqrt(20.0)});
  expect_values(y, {3, 4 / std::sqrt(20.0), 0, 2 / std::sqrt(20.0)});
  HostTensor g_one = filled({1, 1}, {29}), whole({1}, DType::f32);
  reference::weight_norm(v.ref(), g_one.ref(), y.ref(), whole.ref(), {.dim = -1});
  expect_values(whole, {std::sqrt(29.0)});
  expect_values(y, {3 * std::sqrt(29.0), 4 * std::sqrt(29.0), 0, 2 * std::sqrt(29.0)});
}

TEST(WeightNormReference, RankOneNormsAreMagnitudes) {
  HostTensor v = filled({3}, {-2, 0.5, 4}), g = filled({3}, {1, 2, 3}), y({3}, DType::f32), norm({3}, DType::f32);
  reference::weight_norm(v.ref(), g.ref(), y.ref(), norm.ref(), {});
  expect_values(norm, {2, 0.5, 4});
  expect_values(y, {-1, 2, 3});
}

TEST(WeightNormReference, ZeroSliceGivesNaNAsPyTorch) {
  HostTensor v = filled({2, 2}, {0, 0, 1, 1}), g = filled({2}, {1, 1}), y({2, 2}, DType::f32),
             norm({2}, DType::f32);
  reference::weight_norm(v.ref(), g.ref(), y.ref(), norm.ref(), {});
  expect_values(norm, {0, std::sqrt(2.0)});
  EXPECT_TRUE(std::isnan(y.at(0)) && std::isnan(y.at(1)));
}

TEST(WeightNormValidation, GMustHoldOneValuePerSlice) {
  HostTensor v({4, 8}, DType::f32), y({4, 8}, DType::f32), norm({4}, DType::f32);
  HostTensor short_g({3}, DType::f32), square_g({2, 2}, DType::f32);
  expect_error([&] { reference::weight_norm(v.ref(), short_g.ref(), y.ref(), norm.ref(), {}); },
               "reference::weight_norm: g [3] must hold 4 values along one dim");
  expect_error([&] { reference::weight_norm(v.ref(), square_g.ref(), y.ref(), norm.ref(), {}); },
               "g [2, 2] must hold 4 values");
}

TEST(WeightNormValidation, GMustHaveVsDtype) {
  HostTensor v({4, 8}, DType::f16), g({4}, DType::f32), y({4, 8}, DType::f16), norm({4}, DType::f32);
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), y.ref(), norm.ref(), {}); },
               "g: dtype f32 must be f16");
}

TEST(WeightNormValidation, OutputMustHaveVsShapeAndDtype) {
  HostTensor v({4, 8}, DType::f16), g({4}, DType::f16), norm({4}, DType::f32);
  HostTensor wrong_shape({8, 4}, DType::f16), wrong_dtype({4, 8}, DType::f32);
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), wrong_shape.ref(), norm.ref(), {}); },
               "output: shape [8, 4] must be [4, 8]");
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), wrong_dtype.ref(), norm.ref(), {}); },
               "output: dtype f32 must be f16");
}

TEST(WeightNormValidation, NormMustBeF32OfTheSlices) {
  HostTensor v({4, 8}, DType::f16), g({4}, DType::f16), y({4, 8}, DType::f16);
  HostTensor half_norm({4}, DType::f16), kept_norm({4, 1}, DType::f32);
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), y.ref(), half_norm.ref(), {}); },
               "norm: dtype f16 must be f32");
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), y.ref(), kept_norm.ref(), {}); },
               "norm: shape [4, 1] must be [4]");
}

TEST(WeightNormValidation, IntegerInputIsRejected) {
  HostTensor v({4}, DType::i32), g({4}, DType::i32), y({4}, DType::i32), norm({4}, DType::f32);
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), y.ref(), norm.ref(), {}); },
               "v: dtype i32 is not supported");
}

TEST(WeightNormAliasing, OutputsMayNotOverlapInputsOrEachOther) {
  HostTensor v({4, 4}, DType::f32), g({4}, DType::f32), y({4, 4}, DType::f32), norm({4}, DType::f32);
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), v.ref(), norm.ref(), {}); },
               "v and output overlap in memory");
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), y.ref(), g.ref(), {}); }, "g and norm overlap");
  TensorRef first_row = y.ref();
  first_row.rank = 1;
  first_row.strides[0] = 1;
  first_row.dtype = DType::f32;
  expect_error([&] { reference::weight_norm(v.ref(), g.ref(), y.ref(), first_row, {}); },
               "output and norm overlap in memory");
}

TEST(WeightNormCost, SpecFormula) {
  const Cost c = weight_norm_cost(Shape{2048, 16384}, DType::bf16, {});
  EXPECT_DOUBLE_EQ(c.flops, 4.0 * 2048 * 16384);
  EXPECT_DOUBLE_EQ(c.bytes, (2.0 * 2048 * 16384 + 2048) * 2 + 4.0 * 2048);
  EXPECT_DOUBLE_EQ(weight_norm_cost(Shape{3, 5}, DType::f32, {.dim = -1}).bytes, (2.0 * 15 + 1) * 4 + 4);
}

// ---- SpectralNormPowerIterFwd ---------------------------------------------------------------------------

// One reference call's host tensors: W [O, I] of `dtype` cycling through `w`, u and v through their
// values, the outputs poisoned.
struct SpectralCall {
  HostTensor x, u, v, sigma, u_out, v_out;

  SpectralCall(const Shape& shape, const std::vector<double>& w, const std::vector<double>& u_values,
               const std::vector<double>& v_values, DType dtype = DType::f32)
      : x(filled(shape, w, dtype)),
        u(filled({shape[0]}, u_values)),
        v(filled({shape[1]}, v_values)),
        sigma({}, DType::f32),
        u_out({shape[0]}, DType::f32),
        v_out({shape[1]}, DType::f32) {
    sigma.poison();
    u_out.poison();
    v_out.poison();
  }
  SpectralNormPowerIter params(int64_t n_iter, double eps = 1e-12) const { return {{x.shape[1]}, n_iter, eps}; }
  void run(int64_t n_iter, double eps = 1e-12) {
    reference::spectral_norm_power_iter(x.ref(), u.ref(), v.ref(), sigma.ref(), u_out.ref(), v_out.ref(),
                                        params(n_iter, eps));
  }
};

TEST(SpectralNormShapeRule, OnlySplitColumnSumsNeedAWorkspace) {
  const SpectralNormPowerIter one{{4096}};
  // [rows, I] of W^T u in chunks of ceil(O / chunks) rows: 33, 16 and 8 chunks for the prefill rows.
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{2048, 4096}, one), 33 * 4096);
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{2048, 8192}, {{8192}}), 16 * 8192);
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{2048, 16384}, {{16384}}), 8 * 16384);
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{1, 16384}, {{16384}}), 0);
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{31, 5000}, {{5000}}), 0);
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{2048, 4096}, {{4096}, 0}), 0);  // no W^T u
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{0, 8}, {{8}}), 0);
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{8, 0}, {{0}}), 0);
}

TEST(SpectralNormShapeRule, XMustHaveRankTwo) {
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{8}, {{8}}); },
               "spectral_norm_power_iter: x [8] must have rank 2: the matrix W [O, I]");
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{2, 3, 4}, {{4}}); },
               "x [2, 3, 4] must have rank 2");
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{}, {{}}); }, "x [] must have rank 2");
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{-1, 4}, {{4}}); },
               "x [-1, 4] has a negative dim");
}

TEST(SpectralNormShapeRule, NormalizedShapeMustBeXsLastDim) {
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {{4}}); },
               "spectral_norm_power_iter: normalized_shape [4] must be [8]: (I,), x's last dim");
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {{4, 8}}); }, "normalized_shape [4, 8]");
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {}); }, "normalized_shape [] must be [8]");
}

TEST(SpectralNormShapeRule, NIterMustNotBeNegative) {
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {{8}, -1}); },
               "spectral_norm_power_iter: n_iter = -1 must be >= 0");
}

TEST(SpectralNormShapeRule, EpsMustBeNonNegativeAndNotNaN) {
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {{8}, 1, -1e-12}); },
               "spectral_norm_power_iter: eps = -1e-12 must be >= 0 and not NaN");
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {{8}, 1, kNaN}); },
               "must be >= 0 and not NaN");
  // 0 and +inf are PyTorch's to give: 0 / 0 = NaN for a zero vector, every vector divided to 0.
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {{8}, 1, 0.0}), 0);
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{4, 8}, {{8}, 1, HUGE_VAL}), 0);
}

TEST(SpectralNormShapeRule, RowsOf2To31ElementsAreRejected) {
  constexpr int64_t kBig = int64_t{1} << 31;
  expect_error([] { spectral_norm_power_iter_workspace_elements(Shape{1, kBig}, {{kBig}}); },
               "x [1, 2147483648] has rows of 2^31 or more elements: columns are indexed in 32 bits");
  // Rows are indexed in 64 bits: 528 chunks of one column.
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{kBig, 1}, {{1}}), 528);
}

TEST(SpectralNormReference, DiagonalMatrixByHand) {
  // W = diag(3, 1), u = v = (1, 1): W^T u = (3, 1), W v = (9, 1) / sqrt(10), sigma = ||W v||.
  SpectralCall call({2, 2}, {3, 0, 0, 1}, {1, 1}, {1, 1});
  call.run(1);
  expect_values(call.v_out, {3 / std::sqrt(10.0), 1 / std::sqrt(10.0)});
  expect_values(call.u_out, {9 / std::sqrt(82.0), 1 / std::sqrt(82.0)});
  expect_values(call.sigma, {std::sqrt(8.2)});
}

TEST(SpectralNormReference, ConvergesToTheLargestSingularValue) {
  SpectralCall call({2, 2}, {3, 0, 0, 1}, {1, 1}, {1, 1});
  call.run(30);  // the error shrinks by (1/3)^2 a step
  expect_values(call.sigma, {3});
  expect_values(call.u_out, {1, 0});
  expect_values(call.v_out, {1, 0});
}

TEST(SpectralNormReference, RankOneMatrixInOneStepAndInBf16) {
  // W = a b^T with a = (1, 2, 2), b = (3, 4): sigma = |a| |b| = 15, u = a / 3, v = b / 5 from any u with
  // a^T u > 0. Every value is exact in bf16, so W widened from bf16 gives the same.
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    SpectralCall call({3, 2}, {3, 4, 6, 8, 6, 8}, {1, 0, 0}, {-7, 2}, dtype);
    call.run(1);
    expect_values(call.sigma, {15});
    expect_values(call.u_out, {1.0 / 3, 2.0 / 3, 2.0 / 3});
    expect_values(call.v_out, {0.6, 0.8});
  }
}

TEST(SpectralNormReference, NIterZeroTakesSigmaFromTheGivenVectors) {
  // Neither normalized nor changed: sigma = u^T W v = (1, -1) . (4, 10).
  SpectralCall call({2, 2}, {1, 2, 3, 4}, {1, -1}, {2, 1});
  call.run(0);
  expect_values(call.sigma, {-6});
  expect_values(call.u_out, {1, -1}, 0);
  expect_values(call.v_out, {2, 1}, 0);
}

TEST(SpectralNormReference, ZeroMatrixGivesZerosThanksToEps) {
  SpectralCall call({2, 3}, {0}, {1, 2}, {1, 1, 1});
  call.run(1);
  expect_values(call.v_out, {0, 0, 0}, 0);
  expect_values(call.u_out, {0, 0}, 0);
  expect_values(call.sigma, {0}, 0);
  call.run(1, 0.0);  // 0 / max(0, 0), as F.normalize(eps=0)
  expect_values(call.v_out, {kNaN, kNaN, kNaN});
  expect_values(call.u_out, {kNaN, kNaN});
  expect_values(call.sigma, {kNaN});
}

TEST(SpectralNormReference, EpsBoundsTheDivisorOfTinyVectors) {
  SpectralCall call({1, 1}, {1e-13}, {1}, {1});
  call.run(1);
  const double w = call.x.at(0);  // 1e-13 as f32
  const double v = w / 1e-12, u = w * v / 1e-12;
  EXPECT_NEAR(call.v_out.at(0), v, 1e-7 * v);
  EXPECT_NEAR(call.u_out.at(0), u, 1e-7 * u);
  EXPECT_NEAR(call.sigma.at(0), u * w * v, 1e-7 * u * w * v);
}

TEST(SpectralNormReference, NaNInWSpreadsToEveryOutput) {
  SpectralCall call({2, 2}, {1, kNaN, 3, 4}, {1, 1}, {1, 1});
  call.run(1);
  expect_values(call.v_out, {kNaN, kNaN});
  expect_values(call.u_out, {kNaN, kNaN});
  expect_values(call.sigma, {kNaN});
  call.run(0);  // only sigma reads W
  expect_values(call.sigma, {kNaN});
  expect_values(call.u_out, {1, 1}, 0);
}

TEST(SpectralNormReference, EmptyDimsFollowPyTorch) {
  // O = 0: W^T u is I zeros, normalized to zeros (eps); sigma is the empty sum.
  SpectralCall no_rows({0, 3}, {0}, {0}, {1, 2, 3});
  no_rows.run(1);
  expect_values(no_rows.v_out, {0, 0, 0}, 0);
  expect_values(no_rows.sigma, {0}, 0);
  no_rows.run(0);
  expect_values(no_rows.v_out, {1, 2, 3}, 0);
  expect_values(no_rows.sigma, {0}, 0);
  // I = 0: W v is O zeros.
  SpectralCall no_columns({2, 0}, {0}, {5, 6}, {0});
  no_columns.run(2);
  expect_values(no_columns.u_out, {0, 0}, 0);
  expect_values(no_columns.sigma, {0}, 0);
}

TEST(SpectralNormValidation, XMustBeAFloatTensor) {
  SpectralCall call({2, 2}, {1}, {1}, {1});
  HostTensor x({2, 2}, DType::i32);
  expect_error([&] { reference::spectral_norm_power_iter(x.ref(), call.u.ref(), call.v.ref(), call.sigma.ref(),
                                                         call.u_out.ref(), call.v_out.ref(), call.params(1)); },
               "reference::spectral_norm_power_iter: x: dtype i32 is not supported (f32, f16 or bf16)");
}

TEST(SpectralNormValidation, UAndVMustBeF32OfOAndI) {
  SpectralCall call({2, 3}, {1}, {1}, {1});
  HostTensor half_u({2}, DType::f16), long_u({3}, DType::f32), short_v({2}, DType::f32), bf16_v({3}, DType::bf16);
  const auto run = [&](HostTensor& u, HostTensor& v) {
    reference::spectral_norm_power_iter(call.x.ref(), u.ref(), v.ref(), call.sigma.ref(), call.u_out.ref(),
                                        call.v_out.ref(), call.params(1));
  };
  expect_error([&] { run(half_u, call.v); }, "u: dtype f16 must be f32");
  expect_error([&] { run(long_u, call.v); }, "u: shape [3] must be [2]");
  expect_error([&] { run(call.u, short_v); }, "v: shape [2] must be [3]");
  expect_error([&] { run(call.u, bf16_v); }, "v: dtype bf16 must be f32");
}

TEST(SpectralNormValidation, OutputsMustBeF32OfTheirShapes) {
  SpectralCall call({2, 3}, {1}, {1}, {1});
  HostTensor kept_sigma({1}, DType::f32), half_sigma({}, DType::f16), long_u_out({3}, DType::f32);
  HostTensor bf16_v_out({3}, DType::bf16);
  const auto run = [&](HostTensor& sigma, HostTensor& u_out, HostTensor& v_out) {
    reference::spectral_norm_power_iter(call.x.ref(), call.u.ref(), call.v.ref(), sigma.ref(), u_out.ref(),
                                        v_out.ref(), call.params(1));
  };
  expect_error([&] { run(kept_sigma, call.u_out, call.v_out); }, "sigma: shape [1] must be []");
  expect_error([&] { run(half_sigma, call.u_out, call.v_out); }, "sigma: dtype f16 must be f32");
  expect_error([&] { run(call.sigma, long_u_out, call.v_out); }, "u_out: shape [3] must be [2]");
  expect_error([&] { run(call.sigma, call.u_out, bf16_v_out); }, "v_out: dtype bf16 must be f32");
}

TEST(SpectralNormValidation, TensorsMustBeContiguous) {
  SpectralCall call({2, 4}, {1}, {1}, {1});
  TensorRef columns = make_tensor(call.x.bytes.data(), DType::f32, Shape{2, 2});
  columns.strides = {4, 2};
  expect_error([&] { reference::spectral_norm_power_iter(columns, call.u.ref(), call.v.ref(), call.sigma.ref(),
                                                         call.u_out.ref(), call.v_out.ref(), {{2}}); },
               "x must be contiguous", Status::unsupported);
  HostTensor wide_u({4}, DType::f32);
  TensorRef every_other = make_tensor(wide_u.bytes.data(), DType::f32, Shape{2});
  every_other.strides = {2};
  expect_error([&] { reference::spectral_norm_power_iter(call.x.ref(), every_other, call.v.ref(), call.sigma.ref(),
                                                         call.u_out.ref(), call.v_out.ref(), call.params(1)); },
               "u must be contiguous", Status::unsupported);
}

TEST(SpectralNormValidation, TensorsMustBeWhereTheCallRuns) {
  SpectralCall call({2, 2}, {1}, {1}, {1});
  expect_error([&] { spectral_norm_power_iter(call.x.ref(), call.u.ref(), call.v.ref(), call.sigma.ref(),
                                              call.u_out.ref(), call.v_out.ref(), nullptr, call.params(1)); },
               "spectral_norm_power_iter: x must be a CUDA tensor, got a CPU tensor");
  TensorRef on_device = call.v_out.ref();
  on_device.device = 0;
  expect_error([&] { reference::spectral_norm_power_iter(call.x.ref(), call.u.ref(), call.v.ref(), call.sigma.ref(),
                                                         call.u_out.ref(), on_device, call.params(1)); },
               "v_out must be a CPU tensor for the reference");
}

TEST(SpectralNormAliasing, OutputsMayNotOverlapInputsOrEachOther) {
  SpectralCall call({2, 2}, {1}, {1}, {1});
  const auto run = [&](const TensorRef& sigma, const TensorRef& u_out, const TensorRef& v_out) {
    reference::spectral_norm_power_iter(call.x.ref(), call.u.ref(), call.v.ref(), sigma, u_out, v_out,
                                        call.params(1));
  };
  expect_error([&] { run(call.sigma.ref(), call.u.ref(), call.v_out.ref()); },
               "u and u_out overlap in memory; this op is not in-place");
  const TensorRef x_row = make_tensor(call.x.bytes.data(), DType::f32, Shape{2});
  expect_error([&] { run(call.sigma.ref(), call.u_out.ref(), x_row); }, "x and v_out overlap in memory");
  const TensorRef in_u_out = make_tensor(call.u_out.bytes.data(), DType::f32, Shape{});
  expect_error([&] { run(in_u_out, call.u_out.ref(), call.v_out.ref()); }, "u_out and sigma overlap in memory");
  expect_error([&] { run(call.sigma.ref(), call.u_out.ref(), call.u_out.ref()); }, "v_out and u_out overlap");
}

TEST(SpectralNormWorkspace, SizeDtypeAndOverlapRules) {
  // The op checks the workspace wherever the tensors live; on the host (the references need none) it
  // may be absent whatever the plan says. [64, 4096] splits W^T u in two chunks: 8192 elements.
  SpectralCall call({64, 4096}, {1}, {1}, {1});
  const SpectralNormPowerIter p = call.params(1);
  ASSERT_EQ(spectral_norm_power_iter_workspace_elements(call.x.shape, p), 8192);
  const auto validate = [&](const TensorRef* workspace) {
    detail::validate_spectral_norm("spectral_norm_power_iter", detail::Placement::host,
                                   {call.x.ref(), call.u.ref(), call.v.ref(), call.sigma.ref(), call.u_out.ref(),
                                    call.v_out.ref(), workspace},
                                   p);
  };
  validate(nullptr);
  HostTensor enough({8192}, DType::f32), small({16}, DType::f32), half({8192}, DType::f16);
  const TensorRef enough_ref = enough.ref(), small_ref = small.ref(), half_ref = half.ref();
  validate(&enough_ref);
  expect_error([&] { validate(&small_ref); },
               "spectral_norm_power_iter: workspace has 16 elements, fewer than the 8192 this call needs "
               "(spectral_norm_power_iter_workspace_elements)");
  expect_error([&] { validate(&half_ref); }, "workspace: dtype f16 must be f32");
  const TensorRef over_x = make_tensor(call.x.bytes.data(), DType::f32, Shape{8192});
  expect_error([&] { validate(&over_x); }, "x and workspace overlap in memory");
}

TEST(SpectralNormCost, SpecFormula) {
  const double o = 2048, i = 4096;
  const Cost one = spectral_norm_power_iter_cost(Shape{2048, 4096}, DType::bf16, {{4096}});
  EXPECT_DOUBLE_EQ(one.flops, 6 * o * i + 6 * (o + i));
  EXPECT_DOUBLE_EQ(one.bytes, o * i * 2 + 8 * (o + i) + 4);
  const Cost none = spectral_norm_power_iter_cost(Shape{2048, 4096}, DType::f32, {{4096}, 0});
  EXPECT_DOUBLE_EQ(none.flops, 2 * o * i + 2 * (o + i));
  EXPECT_DOUBLE_EQ(none.bytes, o * i * 4 + 8 * (o + i) + 4);
  EXPECT_DOUBLE_EQ(spectral_norm_power_iter_cost(Shape{3, 5}, DType::f16, {{5}, 3}).flops, 14.0 * 15 + 14.0 * 8);
  expect_error([] { spectral_norm_power_iter_cost(Shape{3, 5}, DType::f16, {{3}}); },
               "spectral_norm_power_iter_cost: normalized_shape [3] must be [5]");
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

// ---- QKNorm ---------------------------------------------------------------------------------------

// q [2, 2, 2] and k [1, 2, 2] (GQA: fewer key heads), normalized over the head dim 2.
struct QKBuffers {
  HostTensor q = filled({2, 2, 2}, {3, 4, 0, 1, 1, 1, -2, 0}), k = filled({1, 2, 2}, {6, 8, 1, -1});
  HostTensor q_weight = filled({2}, {1, 2}), k_weight = filled({2}, {-1, 0.5});
  HostTensor q_out{{2, 2, 2}, DType::f32}, k_out{{1, 2, 2}, DType::f32};
  TensorRef qw = q_weight.ref(), kw = k_weight.ref();

  void run(const QKNorm& p) { reference::qk_norm(q.ref(), k.ref(), &qw, &kw, q_out.ref(), k_out.ref(), p); }
};

TEST(QKNormShapeRule, EachOutputHasItsInputsShape) {
  EXPECT_EQ(qk_norm_output_shape(Shape{2048, 32, 128}, {{128}}), (Shape{2048, 32, 128}));
  EXPECT_EQ(qk_norm_output_shape(Shape{1, 16384}, {{16384}}), (Shape{1, 16384}));
  expect_error([] { qk_norm_output_shape(Shape{4, 127}, {{128}}); },
               "qk_norm: normalized_shape [128] does not match the trailing dims of x [4, 127]");
  expect_error([] { qk_norm_output_shape(Shape{4, 128}, {{128}, -1e-6}); }, "qk_norm: eps = -1e-06 must be");
}

TEST(QKNormReference, TwoIndependentRMSNormsWithTheirOwnWeights) {
  QKBuffers b;
  b.run({{2}, 0.0});
  // Rows of q: [3, 4] (mean square 12.5), [0, 1] (0.5), [1, 1] (1), [-2, 0] (2); of k: [6, 8] (50), [1, -1] (1).
  const double a = 1 / std::sqrt(12.5), c = 1 / std::sqrt(0.5), d = 1 / std::sqrt(2.0);
  expect_values(b.q_out, {3 * a, 8 * a, 0, 2 * c, 1, 2, -2 * d, 0});
  expect_values(b.k_out, {-6 / std::sqrt(50.0), 4 / std::sqrt(50.0), -1, -0.5});
}

TEST(QKNormReference, WeightsMayBeAbsent) {
  QKBuffers b;
  reference::qk_norm(b.q.ref(), b.k.ref(), nullptr, nullptr, b.q_out.ref(), b.k_out.ref(), {{2, 2}, 0.0});
  // Over both trailing dims q's rows are [3, 4, 0, 1] (mean square 6.5) and [1, 1, -2, 0] (1.5).
  const double r = 1 / std::sqrt(6.5), s = 1 / std::sqrt(1.5);
  expect_values(b.q_out, {3 * r, 4 * r, 0, r, s, s, -2 * s, 0});
}

TEST(QKNormValidation, KMustMatchTheNormalizedShape) {
  QKBuffers b;
  HostTensor k({2, 3}, DType::f32), k_out({2, 3}, DType::f32);
  expect_error([&] { reference::qk_norm(b.q.ref(), k.ref(), &b.qw, &b.kw, b.q_out.ref(), k_out.ref(), {{2}}); },
               "reference::qk_norm (k): normalized_shape [2] does not match the trailing dims of x [2, 3]");
}

TEST(QKNormValidation, OutputsMustHaveTheirInputsShapes) {
  QKBuffers b;
  expect_error([&] { reference::qk_norm(b.q.ref(), b.k.ref(), &b.qw, &b.kw, b.q_out.ref(), b.q_out.ref(), {{2}}); },
               "reference::qk_norm (k): output: shape [2, 2, 2] must be [1, 2, 2]");
}

TEST(QKNormValidation, WeightShapeMustBeTheNormalizedShape) {
  QKBuffers b;
  HostTensor w({4}, DType::f32);
  const TensorRef w_ref = w.ref();
  expect_error([&] { reference::qk_norm(b.q.ref(), b.k.ref(), &b.qw, &w_ref, b.q_out.ref(), b.k_out.ref(), {{2}}); },
               "reference::qk_norm (k): weight: shape [4] must be [2]");
}

TEST(QKNormValidation, DtypesMustBeQs) {
  QKBuffers b;
  HostTensor w({2}, DType::bf16), k({1, 2, 2}, DType::f16), k_out({1, 2, 2}, DType::f16);
  const TensorRef w_ref = w.ref();
  expect_error([&] { reference::qk_norm(b.q.ref(), b.k.ref(), &w_ref, &b.kw, b.q_out.ref(), b.k_out.ref(), {{2}}); },
               "reference::qk_norm (q): weight: dtype bf16 must be f32");
  expect_error([&] { reference::qk_norm(b.q.ref(), k.ref(), &b.qw, nullptr, b.q_out.ref(), k_out.ref(), {{2}}); },
               "reference::qk_norm: k: dtype f16 must be f32");
}

TEST(QKNormValidation, NegativeEpsIsRejected) {
  QKBuffers b;
  expect_error([&] { b.run({{2}, -1}); }, "reference::qk_norm (q): eps = -1 must be");
}

TEST(QKNormValidation, NonContiguousLastDimIsUnsupported) {
  QKBuffers b;
  HostTensor wide({1, 2, 4}, DType::f32);
  TensorRef strided = make_tensor(wide.bytes.data(), DType::f32, Shape{1, 2, 2});
  strided.strides = {8, 4, 2};
  expect_error([&] { reference::qk_norm(b.q.ref(), strided, &b.qw, &b.kw, b.q_out.ref(), b.k_out.ref(), {{2}}); },
               "x must be contiguous", Status::unsupported);
}

TEST(QKNormAliasing, NoOutputMayOverlapAnInputOrTheOtherOutput) {
  QKBuffers b;
  expect_error([&] { reference::qk_norm(b.q.ref(), b.k.ref(), &b.qw, &b.kw, b.q.ref(), b.k_out.ref(), {{2}}); },
               "reference::qk_norm (q): x and output overlap in memory");
  const TensorRef q_out_as_k = make_tensor(b.q_out.bytes.data(), DType::f32, Shape{1, 2, 2});
  expect_error([&] { reference::qk_norm(b.q.ref(), q_out_as_k, &b.qw, &b.kw, b.q_out.ref(), b.k_out.ref(), {{2}}); },
               "reference::qk_norm: q_out and k overlap in memory");
  const TensorRef k_out_in_q_out = make_tensor(b.q_out.bytes.data() + 16, DType::f32, Shape{1, 2, 2});
  expect_error([&] { reference::qk_norm(b.q.ref(), b.k.ref(), &b.qw, &b.kw, b.q_out.ref(), k_out_in_q_out, {{2}}); },
               "reference::qk_norm: q_out and k_out overlap in memory");
  const TensorRef q_weight_in_k_out = make_tensor(b.k_out.bytes.data(), DType::f32, Shape{2});
  expect_error(
      [&] { reference::qk_norm(b.q.ref(), b.k.ref(), &q_weight_in_k_out, &b.kw, b.q_out.ref(), b.k_out.ref(), {{2}}); },
      "reference::qk_norm: k_out and q_weight overlap in memory");
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

TEST(NormCost, QKNormIsTwoRMSNorms) {
  // Spec §2.18: FLOPs 4 (numel(q) + numel(k)), bytes (2 numel(q) + 2 numel(k) + 2 N) eb.
  const Cost c = qk_norm_cost(Shape{2048, 32, 128}, Shape{2048, 8, 128}, DType::bf16, {{128}});
  const double q = 2048.0 * 32 * 128, k = 2048.0 * 8 * 128;
  EXPECT_DOUBLE_EQ(c.flops, 4 * (q + k));
  EXPECT_DOUBLE_EQ(c.bytes, (2 * q + 2 * k + 2 * 128) * 2);
  expect_error([] { qk_norm_cost(Shape{2, 128}, Shape{2, 64}, DType::f16, {{128}}); }, "qk_norm: normalized_shape");
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

TEST(NormCApi, QKNormThroughTheReference) {
  QKBuffers b;
  solops_norm_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 2;
  p.has_eps = 1;
  solops_tensor cq = c_tensor(b.q), ck = c_tensor(b.k), cqw = c_tensor(b.q_weight), cq_out = c_tensor(b.q_out);
  solops_tensor ck_out = c_tensor(b.k_out);
  ASSERT_EQ(solops_reference_qk_norm(&cq, &ck, &cqw, nullptr, &cq_out, &ck_out, &p), SOLOPS_OK) << solops_last_error();
  expect_values(b.k_out, {6 / std::sqrt(50.0), 8 / std::sqrt(50.0), 1, -1});
  solops_cost cost{};
  ASSERT_EQ(solops_qk_norm_cost(3, b.q.shape.data(), 3, b.k.shape.data(), SOLOPS_F16, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, (2 * 8 + 2 * 4 + 2 * 2) * 2.0);
  EXPECT_EQ(solops_reference_qk_norm(&cq, &ck, &cqw, nullptr, &cq_out, &cq_out, &p), SOLOPS_INVALID_ARGUMENT);
}

TEST(GroupRMSNormCApi, ReferenceShapeAndCost) {
  HostTensor x = filled({2, 2}, {3, 4, 1, 1}), weight = filled({2, 2}, {1, 2, -1, 3});
  HostTensor y({2, 2}, DType::f32), rstd({2}, DType::f32);
  solops_norm_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 2;
  p.has_eps = 1;
  solops_tensor cx = c_tensor(x), cw = c_tensor(weight), cy = c_tensor(y), cr = c_tensor(rstd);
  ASSERT_EQ(solops_reference_group_rms_norm(&cx, &cw, &cy, &cr, &p), SOLOPS_OK) << solops_last_error();
  expect_values(y, {3 / std::sqrt(12.5), 8 / std::sqrt(12.5), -1, 3});
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_group_rms_norm_output_shape(2, x.shape.data(), &p, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 2);
  solops_cost cost{};
  ASSERT_EQ(solops_group_rms_norm_cost(2, x.shape.data(), SOLOPS_F16, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, 3 * 4 * 2.0 + 4 * 2);
  EXPECT_EQ(solops_reference_group_rms_norm(&cx, &cw, &cy, nullptr, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(solops_group_rms_norm_output_shape(1, x.shape.data(), &p, &rank, shape), SOLOPS_INVALID_ARGUMENT);
}

TEST(VectorNormCApi, ReferenceShapeWorkspaceAndCost) {
  HostTensor x = filled({2, 2}, {3, 4, 0, 0}), y({}, DType::f32);
  solops_vector_norm_params p{};
  p.ord = 2;
  solops_tensor cx = c_tensor(x), cy = c_tensor(y);
  ASSERT_EQ(solops_reference_vector_norm(&cx, &cy, &p), SOLOPS_OK) << solops_last_error();
  expect_values(y, {5});
  int32_t rank = -1;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  p.dim_count = 1;
  p.dim[0] = 0;
  p.keepdim = 1;
  ASSERT_EQ(solops_vector_norm_output_shape(2, x.shape.data(), &p, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(shape[0], 1);
  int64_t elements = -1;
  const int64_t big[] = {2048, 4096};
  p.dim_count = 0;
  ASSERT_EQ(solops_vector_norm_workspace_elements(2, big, &p, &elements), SOLOPS_OK);
  EXPECT_EQ(elements, 1024);
  solops_cost cost{};
  ASSERT_EQ(solops_vector_norm_cost(2, x.shape.data(), SOLOPS_F16, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, 5 * 2.0);
  p.ord = 3;
  EXPECT_EQ(solops_reference_vector_norm(&cx, &cy, &p), SOLOPS_INVALID_ARGUMENT);
  p.ord = 1;
  p.dim_count = 9;
  EXPECT_EQ(solops_reference_vector_norm(&cx, &cy, &p), SOLOPS_INVALID_ARGUMENT);
}

TEST(WeightNormCApi, ReferenceWorkspaceAndCost) {
  HostTensor v = filled({2, 2}, {3, 4, 0, 2}), g = filled({2, 1}, {10, 1}), y({2, 2}, DType::f32),
             norm({2}, DType::f32);
  solops_weight_norm_params p{};
  solops_tensor cv = c_tensor(v), cg = c_tensor(g), cy = c_tensor(y), cn = c_tensor(norm);
  ASSERT_EQ(solops_reference_weight_norm(&cv, &cg, &cy, &cn, &p), SOLOPS_OK) << solops_last_error();
  expect_values(y, {6, 8, 0, 1});
  int64_t elements = -1;
  const int64_t decode[] = {1, 40000};
  ASSERT_EQ(solops_weight_norm_workspace_elements(2, decode, &p, &elements), SOLOPS_OK);
  EXPECT_EQ(elements, 5);
  solops_cost cost{};
  ASSERT_EQ(solops_weight_norm_cost(2, v.shape.data(), SOLOPS_F32, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.flops, 16);
  p.dim = 2;
  EXPECT_EQ(solops_reference_weight_norm(&cv, &cg, &cy, &cn, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(solops_weight_norm(&cv, &cg, &cy, &cn, nullptr, nullptr, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("solops_weight_norm: params is a null pointer"), std::string::npos)
      << solops_last_error();
}

TEST(SpectralNormCApi, ReferenceWorkspaceCostAndErrors) {
  SpectralCall call({3, 2}, {3, 4, 6, 8, 6, 8}, {1, 0, 0}, {-7, 2});
  solops_spectral_norm_power_iter_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 2;
  p.n_iter = 1;
  p.eps = 1e-12;
  solops_tensor cx = c_tensor(call.x), cu = c_tensor(call.u), cv = c_tensor(call.v), cs = c_tensor(call.sigma);
  solops_tensor cu_out = c_tensor(call.u_out), cv_out = c_tensor(call.v_out);
  ASSERT_EQ(solops_reference_spectral_norm_power_iter(&cx, &cu, &cv, &cs, &cu_out, &cv_out, &p), SOLOPS_OK)
      << solops_last_error();
  expect_values(call.sigma, {15});
  expect_values(call.v_out, {0.6, 0.8});
  int64_t elements = -1;
  const int64_t prefill[] = {2048, 4096};
  p.normalized_shape[0] = 4096;
  ASSERT_EQ(solops_spectral_norm_power_iter_workspace_elements(2, prefill, &p, &elements), SOLOPS_OK);
  EXPECT_EQ(elements, 33 * 4096);
  solops_cost cost{};
  ASSERT_EQ(solops_spectral_norm_power_iter_cost(2, prefill, SOLOPS_BF16, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, 2048.0 * 4096 * 2 + 8 * (2048.0 + 4096) + 4);
  const auto expect_failure = [](solops_status status, const std::string& fragment) {
    EXPECT_EQ(status, SOLOPS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(solops_last_error()).find(fragment), std::string::npos) << solops_last_error();
  };
  expect_failure(solops_reference_spectral_norm_power_iter(&cx, &cu, &cv, &cs, &cu_out, &cv_out, &p),
                 "normalized_shape [4096] must be [2]");
  p.normalized_shape[0] = 2;
  expect_failure(solops_reference_spectral_norm_power_iter(&cx, nullptr, &cv, &cs, &cu_out, &cv_out, &p),
                 "solops_reference_spectral_norm_power_iter: u is a null pointer");
  expect_failure(solops_reference_spectral_norm_power_iter(&cx, &cu, &cv, &cs, &cu_out, &cv_out, nullptr),
                 "params is a null pointer");
  expect_failure(solops_spectral_norm_power_iter_workspace_elements(2, prefill, &p, nullptr),
                 "elements is a null pointer");
  p.normalized_rank = 9;
  expect_failure(solops_spectral_norm_power_iter_cost(2, prefill, SOLOPS_F16, &p, &cost),
                 "normalized_rank 9 is outside [0, 8]");
  p.normalized_rank = 1;
  expect_failure(solops_spectral_norm_power_iter(&cx, &cu, &cv, &cs, &cu_out, &cv_out, nullptr, &p, nullptr),
                 "spectral_norm_power_iter: x must be a CUDA tensor");
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

// ---- training forward and backward (spec §2.13, 2.14) ---------------------------------------------

TEST(NormStats, ShapeIsTheLeadingDims) {
  EXPECT_EQ(norm_stats_shape(Shape{2, 3, 5, 7}, std::vector<int64_t>{5, 7}), (Shape{2, 3}));
  EXPECT_EQ(norm_stats_shape(Shape{4096}, std::vector<int64_t>{4096}), (Shape{}));  // one row, a 0-d tensor
  expect_error([] { norm_stats_shape(Shape{2, 8}, std::vector<int64_t>{4}); }, "does not match the trailing dims");
}

TEST(NormStats, ReferenceWritesMeanAndRstd) {
  HostTensor x = filled({2, 4}, {1, 2, 3, 4, 0, 0, 3, 4}), y({2, 4}, DType::f32), mean({2}, DType::f32),
             rstd({2}, DType::f32);
  reference::layer_norm_with_stats(x.ref(), nullptr, nullptr, y.ref(), mean.ref(), rstd.ref(), {{4}, 0.0});
  expect_values(mean, {2.5, 1.75});
  expect_values(rstd, {1 / std::sqrt(1.25), 1 / std::sqrt((1.75 * 1.75 * 2 + 1.25 * 1.25 + 2.25 * 2.25) / 4)});
  reference::rms_norm_with_stats(x.ref(), nullptr, y.ref(), rstd.ref(), {{4}, 0.0});
  expect_values(rstd, {1 / std::sqrt(7.5), 1 / std::sqrt(25.0 / 4)});
}

TEST(NormStats, StatsMustBeF32OfTheLeadingDims) {
  HostTensor x({2, 8}, DType::bf16), y({2, 8}, DType::bf16), rstd16({2}, DType::bf16), rstd3({3}, DType::f32);
  expect_error([&] { reference::rms_norm_with_stats(x.ref(), nullptr, y.ref(), rstd16.ref(), {{8}}); },
               "reference::rms_norm_with_stats: rstd: dtype bf16 must be f32");
  HostTensor mean({2}, DType::f32);
  expect_error(
      [&] { reference::layer_norm_with_stats(x.ref(), nullptr, nullptr, y.ref(), mean.ref(), rstd3.ref(), {{8}}); },
      "rstd: shape [3] must be [2]");
}

TEST(NormStats, StatsMayNotOverlapAnotherTensor) {
  HostTensor x({2, 8}, DType::f32), y({2, 8}, DType::f32), rstd({2}, DType::f32);
  const TensorRef rstd_in_y = make_tensor(y.bytes.data(), DType::f32, Shape{2});
  expect_error([&] { reference::rms_norm_with_stats(x.ref(), nullptr, y.ref(), rstd_in_y, {{8}}); },
               "overlap in memory");
  expect_error(
      [&] { reference::layer_norm_with_stats(x.ref(), nullptr, nullptr, y.ref(), rstd.ref(), rstd.ref(), {{8}}); },
      "rstd and mean overlap in memory");
}

TEST(NormBackwardReference, RMSNormByHand) {
  // x = [3, 4]: rstd = 1/sqrt(12.5), r^2 = 0.08; dy = [1, 0] gives mean(h * x_hat) = 1.5 r, so
  // grad_x = r * ([1, 0] - [3r, 4r] * 1.5r) = r * [0.64, -0.48] and grad_weight = dy * x_hat = [3r, 0].
  const double r = 1 / std::sqrt(12.5);
  HostTensor dy = filled({1, 2}, {1, 0}), x = filled({1, 2}, {3, 4}), rstd = filled({1}, {r});
  HostTensor grad_x({1, 2}, DType::f32), grad_w({2}, DType::f32);
  const TensorRef grad_w_ref = grad_w.ref();
  reference::rms_norm_backward(dy.ref(), x.ref(), nullptr, rstd.ref(), grad_x.ref(), &grad_w_ref, {{2}});
  expect_values(grad_x, {0.64 * r, -0.48 * r});
  expect_values(grad_w, {3 * r, 0});
}

// The loss sum(dy * forward(x, weight, bias)) and its central differences, which the backward's
// gradients must match: the backward is the derivative of the forward reference.
struct GradientCheck {
  std::function<void(HostTensor& x, HostTensor& w, HostTensor& b, HostTensor& y)> forward;
  HostTensor x, w, b, dy;

  double loss() {
    HostTensor y(x.shape, DType::f32);
    forward(x, w, b, y);
    double total = 0;
    for (int64_t i = 0; i < y.numel(); ++i) total += dy.at(i) * y.at(i);
    return total;
  }

  std::vector<double> numeric_gradient(HostTensor& wrt) {
    constexpr double kStep = 1e-2;
    std::vector<double> gradient;
    for (int64_t i = 0; i < wrt.numel(); ++i) {
      const double value = wrt.at(i);
      wrt.set(i, value + kStep);
      const double up = loss();
      wrt.set(i, value - kStep);
      const double down = loss();
      wrt.set(i, value);
      gradient.push_back((up - down) / (2 * kStep));
    }
    return gradient;
  }
};

std::vector<double> values_of(const std::vector<double>& pattern, int64_t count, double scale) {
  std::vector<double> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(scale * pattern[static_cast<size_t>(i) % pattern.size()]);
  return out;
}

TEST(NormBackwardReference, RMSNormMatchesCentralDifferences) {
  const Shape shape{2, 3, 5};
  GradientCheck check{[](HostTensor& x, HostTensor& w, HostTensor&, HostTensor& y) {
                        const TensorRef w_ref = w.ref();
                        reference::rms_norm(x.ref(), &w_ref, y.ref(), {{3, 5}, 1e-5});
                      },
                      filled(shape, values_of({0.3, -1.2, 2.1, 0.7, -0.4, 1.5, -2.2}, 30, 1)),
                      filled({3, 5}, {0.9, -0.5, 1.3, 0.2}), HostTensor({3, 5}, DType::f32),
                      filled(shape, {0.5, -1.1, 0.8, 1.7, -0.3})};
  HostTensor y(shape, DType::f32), rstd({2}, DType::f32), grad_x(shape, DType::f32), grad_w({3, 5}, DType::f32);
  const TensorRef w_ref = check.w.ref(), grad_w_ref = grad_w.ref();
  reference::rms_norm_with_stats(check.x.ref(), &w_ref, y.ref(), rstd.ref(), {{3, 5}, 1e-5});
  reference::rms_norm_backward(check.dy.ref(), check.x.ref(), &w_ref, rstd.ref(), grad_x.ref(), &grad_w_ref,
                               {{3, 5}});
  expect_values(grad_x, check.numeric_gradient(check.x), 2e-3);
  expect_values(grad_w, check.numeric_gradient(check.w), 2e-3);
}

TEST(NormBackwardReference, LayerNormMatchesCentralDifferences) {
  const Shape shape{3, 7};
  GradientCheck check{[](HostTensor& x, HostTensor& w, HostTensor& b, HostTensor& y) {
                        const TensorRef w_ref = w.ref(), b_ref = b.ref();
                        reference::layer_norm(x.ref(), &w_ref, &b_ref, y.ref(), {{7}, 1e-5});
                      },
                      filled(shape, values_of({0.3, -1.2, 2.1, 0.7, -0.4, 1.5, -2.2, 0.1}, 21, 1)),
                      filled({7}, {0.9, -0.5, 1.3, 0.2}), filled({7}, {0.1, -0.2}),
                      filled(shape, {0.5, -1.1, 0.8, 1.7, -0.3})};
  HostTensor y(shape, DType::f32), mean({3}, DType::f32), rstd({3}, DType::f32), grad_x(shape, DType::f32);
  HostTensor grad_w({7}, DType::f32), grad_b({7}, DType::f32);
  const TensorRef w_ref = check.w.ref(), b_ref = check.b.ref(), grad_w_ref = grad_w.ref(), grad_b_ref = grad_b.ref();
  reference::layer_norm_with_stats(check.x.ref(), &w_ref, &b_ref, y.ref(), mean.ref(), rstd.ref(), {{7}, 1e-5});
  reference::layer_norm_backward(check.dy.ref(), check.x.ref(), &w_ref, mean.ref(), rstd.ref(), grad_x.ref(),
                                 &grad_w_ref, &grad_b_ref, {{7}});
  expect_values(grad_x, check.numeric_gradient(check.x), 2e-3);
  expect_values(grad_w, check.numeric_gradient(check.w), 2e-3);
  expect_values(grad_b, check.numeric_gradient(check.b), 2e-3);
}

TEST(NormBackwardReference, WithoutWeightAndWithoutGradWeight) {
  // weight null is scale 1; grad_weight and grad_bias may be left out.
  const double r = 1 / std::sqrt(12.5);
  HostTensor dy = filled({1, 2}, {1, 0}), x = filled({1, 2}, {3, 4}), rstd = filled({1}, {r}), mean = filled({1}, {0});
  HostTensor grad_x({1, 2}, DType::f32);
  reference::layer_norm_backward(dy.ref(), x.ref(), nullptr, mean.ref(), rstd.ref(), grad_x.ref(), nullptr, nullptr,
                                 {{2}});
  // With mean 0 LayerNorm's gradient is RMSNorm's less rstd * mean(h) = 0.5 r.
  expect_values(grad_x, {0.64 * r - 0.5 * r, -0.48 * r - 0.5 * r});
}

TEST(NormBackwardReference, ZeroRowsGiveZeroParameterGradients) {
  HostTensor dy({0, 4}, DType::f32), x({0, 4}, DType::f32), rstd({0}, DType::f32), grad_x({0, 4}, DType::f32);
  HostTensor grad_w = filled({4}, {kNaN});
  const TensorRef grad_w_ref = grad_w.ref();
  reference::rms_norm_backward(dy.ref(), x.ref(), nullptr, rstd.ref(), grad_x.ref(), &grad_w_ref, {{4}});
  expect_values(grad_w, {0, 0, 0, 0});
}

TEST(NormBackwardReference, NaNPoisonsItsRowAndItsColumn) {
  HostTensor dy = filled({2, 2}, {1, 1}), x = filled({2, 2}, {kNaN, 1, 3, 4}), rstd = filled({2}, {1, 0.2});
  HostTensor grad_x({2, 2}, DType::f32), grad_w({2}, DType::f32);
  const TensorRef grad_w_ref = grad_w.ref();
  reference::rms_norm_backward(dy.ref(), x.ref(), nullptr, rstd.ref(), grad_x.ref(), &grad_w_ref, {{2}});
  EXPECT_TRUE(std::isnan(grad_x.at(0)) && std::isnan(grad_x.at(1)));
  EXPECT_FALSE(std::isnan(grad_x.at(2)) || std::isnan(grad_x.at(3)));
  EXPECT_TRUE(std::isnan(grad_w.at(0)));
  EXPECT_NEAR(grad_w.at(1), 1 + 4 * 0.2, 1e-6);
}

// The tensors of a valid rms_norm_backward call on [2, 8] f32 rows, each replaceable by a test.
struct BackwardCall {
  HostTensor dy{{2, 8}, DType::f32}, x{{2, 8}, DType::f32}, w{{8}, DType::f32}, mean{{2}, DType::f32};
  HostTensor rstd{{2}, DType::f32}, grad_x{{2, 8}, DType::f32}, grad_w{{8}, DType::f32}, grad_b{{8}, DType::f32};

  void rms(const TensorRef& dy_ref, const TensorRef& rstd_ref, const TensorRef& grad_x_ref,
           const TensorRef* grad_w_ref) {
    const TensorRef w_ref = w.ref();
    reference::rms_norm_backward(dy_ref, x.ref(), &w_ref, rstd_ref, grad_x_ref, grad_w_ref, {{8}});
  }
  void layer(const TensorRef& mean_ref, const TensorRef* grad_w_ref, const TensorRef* grad_b_ref) {
    reference::layer_norm_backward(dy.ref(), x.ref(), nullptr, mean_ref, rstd.ref(), grad_x.ref(), grad_w_ref,
                                   grad_b_ref, {{8}});
  }
};

TEST(NormBackwardValidation, GradOutMustHaveXsShapeAndDtype) {
  BackwardCall c;
  HostTensor dy_short({2, 4}, DType::f32), dy16({2, 8}, DType::f16);
  expect_error([&] { c.rms(dy_short.ref(), c.rstd.ref(), c.grad_x.ref(), nullptr); },
               "reference::rms_norm_backward: grad_out: shape [2, 4] must be [2, 8]");
  expect_error([&] { c.rms(dy16.ref(), c.rstd.ref(), c.grad_x.ref(), nullptr); }, "grad_out: dtype f16 must be f32");
}

TEST(NormBackwardValidation, RstdMustBeF32OfTheLeadingDims) {
  BackwardCall c;
  HostTensor rstd_2d({2, 1}, DType::f32), rstd16({2}, DType::f16);
  expect_error([&] { c.rms(c.dy.ref(), rstd_2d.ref(), c.grad_x.ref(), nullptr); }, "rstd: shape [2, 1] must be [2]");
  expect_error([&] { c.rms(c.dy.ref(), rstd16.ref(), c.grad_x.ref(), nullptr); }, "rstd: dtype f16 must be f32");
}

TEST(NormBackwardValidation, MeanMustBeF32OfTheLeadingDims) {
  BackwardCall c;
  HostTensor mean3({3}, DType::f32);
  expect_error([&] { c.layer(mean3.ref(), nullptr, nullptr); },
               "reference::layer_norm_backward: mean: shape [3] must be [2]");
}

TEST(NormBackwardValidation, GradXMustHaveXsShape) {
  BackwardCall c;
  HostTensor grad_x({16}, DType::f32);
  expect_error([&] { c.rms(c.dy.ref(), c.rstd.ref(), grad_x.ref(), nullptr); }, "grad_x: shape [16] must be [2, 8]");
}

TEST(NormBackwardValidation, ParameterGradientsMustHaveTheNormalizedShape) {
  BackwardCall c;
  HostTensor grad_w({2, 8}, DType::f32), grad_b({4}, DType::f32);
  const TensorRef grad_w_ref = grad_w.ref(), grad_b_ref = grad_b.ref();
  expect_error([&] { c.rms(c.dy.ref(), c.rstd.ref(), c.grad_x.ref(), &grad_w_ref); },
               "grad_weight: shape [2, 8] must be [8]");
  expect_error([&] { c.layer(c.mean.ref(), nullptr, &grad_b_ref); }, "grad_bias: shape [4] must be [8]");
}

TEST(NormBackwardValidation, NormalizedShapeMustMatchX) {
  BackwardCall c;
  expect_error([&] {
    reference::rms_norm_backward(c.dy.ref(), c.x.ref(), nullptr, c.rstd.ref(), c.grad_x.ref(), nullptr, {{4}});
  }, "normalized_shape [4] does not match the trailing dims of x [2, 8]");
}

TEST(NormBackwardAliasing, GradXMayNotOverlapAnInput) {
  BackwardCall c;
  expect_error([&] { c.rms(c.dy.ref(), c.rstd.ref(), c.dy.ref(), nullptr); },
               "grad_out and grad_x overlap in memory");
}

TEST(NormBackwardAliasing, ParameterGradientsMayNotOverlapEachOther) {
  BackwardCall c;
  const TensorRef grad_w_ref = c.grad_w.ref();
  expect_error([&] { c.layer(c.mean.ref(), &grad_w_ref, &grad_w_ref); }, "grad_bias and grad_weight overlap");
}

TEST(NormBackwardCost, SpecFormulas) {
  const Shape x{2048, 4096};
  const double mn = 2048.0 * 4096, n = 4096, m = 2048;
  Cost c = rms_norm_backward_cost(x, DType::bf16, {{4096}});
  EXPECT_DOUBLE_EQ(c.flops, 9 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (3 * mn + 2 * n) * 2 + 4 * m);
  c = layer_norm_backward_cost(x, DType::f16, {{4096}});
  EXPECT_DOUBLE_EQ(c.flops, 12 * mn);
  EXPECT_DOUBLE_EQ(c.bytes, (3 * mn + 3 * n) * 2 + 8 * m);
  expect_error([] { layer_norm_backward_cost(Shape{2, 8}, DType::f16, {{4}}); }, "does not match");
}

// The backward's f32 workspace: the partials of each parameter gradient, one row of N a block of
// rows, about 4.3 MB a gradient within 264 and 528 blocks (264 at N = 4096 to 16384, 528 at
// N <= 2048), at most one block a row, none for a single row.
TEST(NormBackwardWorkspace, SizedByTheShape) {
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{2048, 16384}, {{16384}}), 264 * 16384);
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{2048, 8192}, {{8192}}), 264 * 8192);
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{2048, 4096}, {{4096}}), 264 * 4096);
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{2048, 64}, {{64}}), 528 * 64);
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{4, 32768}, {{32768}}), 4 * 32768);
  EXPECT_EQ(layer_norm_backward_workspace_elements(Shape{2048, 8192}, {{8192}}), 2 * 264 * 8192);
  EXPECT_EQ(layer_norm_backward_workspace_elements(Shape{3, 5, 64}, {{5, 64}}), 2 * 3 * 320);
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{1, 4096}, {{4096}}), 0);
  EXPECT_EQ(layer_norm_backward_workspace_elements(Shape{0, 4096}, {{4096}}), 0);
  expect_error([] { rms_norm_backward_workspace_elements(Shape{2, 8}, {{4}}); }, "does not match");
  solops_norm_backward_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 4096;
  const int64_t shape[] = {2048, 4096};
  int64_t elements = -1;
  ASSERT_EQ(solops_layer_norm_backward_workspace_elements(2, shape, &p, &elements), SOLOPS_OK) << solops_last_error();
  EXPECT_EQ(elements, 2 * 264 * 4096);
  ASSERT_EQ(solops_rms_norm_backward_workspace_elements(2, shape, &p, &elements), SOLOPS_OK) << solops_last_error();
  EXPECT_EQ(elements, 264 * 4096);
  EXPECT_EQ(solops_rms_norm_backward_workspace_elements(2, shape, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
}

TEST(NormBackwardCApi, ReferenceStatsShapeAndCost) {
  const double r = 1 / std::sqrt(12.5);
  HostTensor dy = filled({1, 2}, {1, 0}), x = filled({1, 2}, {3, 4}), rstd = filled({1}, {r});
  HostTensor grad_x({1, 2}, DType::f32), grad_w({2}, DType::f32);
  solops_norm_backward_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 2;
  solops_tensor c_dy = c_tensor(dy), c_x = c_tensor(x), c_rstd = c_tensor(rstd), c_gx = c_tensor(grad_x),
                c_gw = c_tensor(grad_w);
  ASSERT_EQ(solops_reference_rms_norm_backward(&c_dy, &c_x, nullptr, &c_rstd, &c_gx, &c_gw, &p), SOLOPS_OK)
      << solops_last_error();
  expect_values(grad_x, {0.64 * r, -0.48 * r});
  expect_values(grad_w, {3 * r, 0});
  int32_t rank = -1;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_norm_stats_shape(2, x.shape.data(), &p, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 1);
  EXPECT_EQ(shape[0], 1);
  solops_cost cost{};
  ASSERT_EQ(solops_layer_norm_backward_cost(2, x.shape.data(), SOLOPS_F32, &p, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, (3 * 2 + 3 * 2) * 4.0 + 8);
  EXPECT_EQ(solops_reference_layer_norm_backward(&c_dy, &c_x, nullptr, nullptr, &c_rstd, &c_gx, nullptr, nullptr, &p),
            SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("mean is a null pointer"), std::string::npos);
}

TEST(NormBackwardCApi, TrainingForwardThroughTheReference) {
  HostTensor x = filled({1, 4}, {1, 2, 3, 4}), y({1, 4}, DType::f32), mean({1}, DType::f32), rstd({1}, DType::f32);
  solops_norm_params p{};
  p.normalized_rank = 1;
  p.normalized_shape[0] = 4;
  p.has_eps = 1;
  solops_tensor cx = c_tensor(x), cy = c_tensor(y), cm = c_tensor(mean), cr = c_tensor(rstd);
  ASSERT_EQ(solops_reference_layer_norm_with_stats(&cx, nullptr, nullptr, &cy, &cm, &cr, &p), SOLOPS_OK)
      << solops_last_error();
  expect_values(mean, {2.5});
  expect_values(rstd, {1 / std::sqrt(1.25)});
  ASSERT_EQ(solops_reference_rms_norm_with_stats(&cx, nullptr, &cy, &cr, &p), SOLOPS_OK) << solops_last_error();
  expect_values(rstd, {1 / std::sqrt(7.5)});
}

}  // namespace
}  // namespace solops
