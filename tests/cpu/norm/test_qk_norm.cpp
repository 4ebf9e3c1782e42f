// QKNorm (spec §2.18): the shape rule, the CPU reference against values computed by hand, one test
// per validation and aliasing rule, and the cost model.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

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

TEST(NormCost, QKNormIsTwoRMSNorms) {
  // Spec §2.18: FLOPs 4 (numel(q) + numel(k)), bytes (2 numel(q) + 2 numel(k) + 2 N) eb.
  const Cost c = qk_norm_cost(Shape{2048, 32, 128}, Shape{2048, 8, 128}, DType::bf16, {{128}});
  const double q = 2048.0 * 32 * 128, k = 2048.0 * 8 * 128;
  EXPECT_DOUBLE_EQ(c.flops, 4 * (q + k));
  EXPECT_DOUBLE_EQ(c.bytes, (2 * q + 2 * k + 2 * 128) * 2);
  expect_error([] { qk_norm_cost(Shape{2, 128}, Shape{2, 64}, DType::f16, {{128}}); }, "qk_norm: normalized_shape");
}

}  // namespace
}  // namespace solops::testing::norm
