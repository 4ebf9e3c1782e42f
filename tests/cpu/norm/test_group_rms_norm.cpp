// GroupRMSNorm (spec §2.19): the shape rule, the CPU reference against values computed by hand (and
// against RMSNorm without a weight), one test per validation and aliasing rule, and the cost model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

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

}  // namespace
}  // namespace solops::testing::norm
