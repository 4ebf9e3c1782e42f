// FusedAddRMSNorm and FusedAddLayerNorm (spec §2.4, 2.5): the shape rule, the CPU references
// against values computed by hand (the sum rounded before its norm, the in-place form), the residual's
// validation rule and the aliasing rules of the in-place pair.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cpu/norm/norm_cases.hpp"
#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

TEST(NormShapeRule, FusedAddNormsNeedAtLeastOneDim) {
  expect_error([] { fused_add_layer_norm_output_shape(Shape{}, {}); },
               "fused_add_layer_norm: x must have at least one dim");
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

TEST(NormValidation, ResidualMustHaveXsShape) {
  HostTensor x({2, 8}, DType::f32), residual({1, 8}, DType::f32), y({2, 8}, DType::f32), r_out({2, 8}, DType::f32);
  expect_error([&] { reference::fused_add_rms_norm(x.ref(), residual.ref(), nullptr, y.ref(), r_out.ref(), {}); },
               "residual: shape [1, 8] must be [2, 8]");
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

}  // namespace
}  // namespace solops::testing::norm
