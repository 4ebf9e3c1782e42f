// AdaLayerNorm (spec §2.3): the shape rule, the CPU reference against values computed by hand, the
// validation and aliasing rules, and the cost model.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

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

}  // namespace
}  // namespace solops::testing::norm
