// The training forward's statistics and RMSNormBwd and LayerNormBwd (spec §2.13, 2.14): the
// statistics' shape and validation rules, the CPU backward against values computed by hand and
// against central differences of the forward, one test per validation and aliasing rule, the cost
// models and the workspace sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"
#include "solops/solops.h"

namespace solops::testing::norm {
namespace {

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

}  // namespace
}  // namespace solops::testing::norm
