// WeightNorm (spec §2.20, §6.7): the norm's shape rule, the workspace sizes, the CPU reference against
// values computed by hand, one test per validation and aliasing rule, and the cost model.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

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

}  // namespace
}  // namespace solops::testing::norm
