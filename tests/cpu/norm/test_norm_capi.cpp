// The normalization family's C ABI: every op through its reference entry point, shape rule, cost
// model and workspace sizing, and the status code and last-error message of bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "cpu/norm/norm_cases.hpp"
#include "host_tensor.hpp"
#include "solops/solops.h"

namespace solops::testing::norm {
namespace {

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

TEST(BatchNormInferenceCApi, ReferenceShapeCostAndErrors) {
  HostTensor x = filled({2, 2}, {3, 1, -1, 2}), mean = filled({2}, {1, 0}), var = filled({2}, {4, 1});
  HostTensor weight = filled({2}, {2, 3}), y({2, 2}, DType::f32);
  solops_batch_norm_inference_params p{1, 0};
  solops_tensor cx = c_tensor(x), cm = c_tensor(mean), cv = c_tensor(var), cw = c_tensor(weight), cy = c_tensor(y);
  ASSERT_EQ(solops_reference_batch_norm_inference(&cx, &cw, nullptr, &cm, &cv, &cy, &p), SOLOPS_OK)
      << solops_last_error();
  expect_values(y, {2, 3, -2, 6});
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  const int64_t image[] = {4, 128, 32, 32};
  const solops_batch_norm_inference_params defaults{};  // has_eps = 0: F.batch_norm's 1e-5
  ASSERT_EQ(solops_batch_norm_inference_output_shape(4, image, &defaults, &rank, shape), SOLOPS_OK);
  EXPECT_EQ(rank, 4);
  EXPECT_EQ(shape[3], 32);
  solops_cost cost{};
  ASSERT_EQ(solops_batch_norm_inference_cost(4, image, SOLOPS_F16, &defaults, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, 2.0 * 4 * 128 * 32 * 32 * 2 + 16 * 128);
  ASSERT_EQ(solops_reference_batch_norm_inference(&cx, nullptr, nullptr, &cm, &cv, &cy, &defaults), SOLOPS_OK);
  const double r0 = 1 / std::sqrt(4 + 1e-5), r1 = 1 / std::sqrt(1 + 1e-5);
  expect_values(y, {2 * r0, r1, -2 * r0, 2 * r1});
  const auto expect_failure = [](solops_status status, const std::string& fragment) {
    EXPECT_EQ(status, SOLOPS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(solops_last_error()).find(fragment), std::string::npos) << solops_last_error();
  };
  p.eps = -1;
  expect_failure(solops_batch_norm_inference_cost(4, image, SOLOPS_F16, &p, &cost),
                 "batch_norm_inference_cost: eps = -1 must be finite and >= 0");
  expect_failure(solops_reference_batch_norm_inference(&cx, nullptr, nullptr, nullptr, &cv, &cy, &defaults),
                 "solops_reference_batch_norm_inference: running_mean is a null pointer");
  expect_failure(solops_batch_norm_inference_output_shape(1, image, nullptr, &rank, shape), "params is a null pointer");
  expect_failure(solops_batch_norm_inference(&cx, nullptr, nullptr, &cm, &cv, &cy, &defaults, nullptr),
                 "batch_norm_inference: x must be a CUDA tensor");
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
}  // namespace solops::testing::norm
