// SpectralNormPowerIter (spec §2.21): the shape rules and workspace sizes, the CPU reference against
// values computed by hand (convergence, eps, NaN, empty dims), one test per validation and aliasing
// rule, the workspace rules and the cost model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "norm/spectral_norm.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

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

}  // namespace
}  // namespace solops::testing::norm
