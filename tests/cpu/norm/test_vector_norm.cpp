// The vector norms, L1NormFwd and L2NormFwd (spec §2.22, 2.23): the shape rule, the workspace sizes,
// the CPU reference against values computed by hand, the validation and aliasing rules, and the cost
// models.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

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

}  // namespace
}  // namespace solops::testing::norm
