// The C ABI: status codes, the last-error message, null pointers, and agreement with C++.
#include <gtest/gtest.h>

#include <string>

#include "solops/solops.h"

namespace {

solops_pool2d_params params(int64_t k, int64_t s) {
  solops_pool2d_params p{};
  p.kernel_size[0] = p.kernel_size[1] = k;
  p.has_stride = 1;
  p.stride[0] = p.stride[1] = s;
  p.dilation[0] = p.dilation[1] = 1;
  p.count_include_pad = 1;
  return p;
}

std::string last_error() { return solops_last_error(); }

// A contiguous [1, side, side] f32 tensor on the host.
solops_tensor plane(void* data, int64_t side, int32_t dtype = SOLOPS_F32) {
  solops_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = 3;
  t.shape[0] = 1;
  t.shape[1] = t.shape[2] = side;
  t.strides[0] = side * side;
  t.strides[1] = side;
  t.strides[2] = 1;
  t.device = SOLOPS_CPU;
  return t;
}

TEST(CApi, OutputShape) {
  const int64_t x[4] = {32, 64, 112, 112};
  solops_pool2d_params p = params(3, 2);
  p.padding[0] = p.padding[1] = 1;
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_max_pool2d_output_shape(4, x, &p, &rank, shape), SOLOPS_OK) << last_error();
  EXPECT_EQ(rank, 4);
  EXPECT_EQ(shape[2], 56);
  EXPECT_EQ(shape[3], 56);
}

TEST(CApi, InvalidParametersReturnAStatusAndAMessage) {
  const int64_t x[4] = {1, 1, 8, 8};
  solops_pool2d_params p = params(2, 0);
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  EXPECT_EQ(solops_avg_pool2d_output_shape(4, x, &p, &rank, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("avg_pool2d: stride[0] = 0 must be >= 1"), std::string::npos) << last_error();
}

TEST(CApi, NullPointersAreRejected) {
  const int64_t x[4] = {1, 1, 8, 8};
  solops_pool2d_params p = params(2, 2);
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  EXPECT_EQ(solops_max_pool2d_output_shape(4, nullptr, &p, &rank, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("x_shape is a null pointer"), std::string::npos);
  EXPECT_EQ(solops_max_pool2d_output_shape(4, x, nullptr, &rank, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("params is a null pointer"), std::string::npos);
  EXPECT_EQ(solops_max_pool2d_output_shape(4, x, &p, nullptr, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(solops_max_pool2d(nullptr, nullptr, nullptr, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("solops_max_pool2d: x is a null pointer"), std::string::npos) << last_error();
  EXPECT_EQ(solops_avg_pool2d(nullptr, nullptr, nullptr, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(solops_reference_avg_pool2d(nullptr, nullptr, &p), SOLOPS_INVALID_ARGUMENT);
  solops_cost cost{};
  EXPECT_EQ(solops_max_pool2d_cost(4, x, SOLOPS_F16, &p, 0, nullptr), SOLOPS_INVALID_ARGUMENT);
  ASSERT_EQ(solops_max_pool2d_cost(4, x, SOLOPS_F16, &p, 1, &cost), SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.bytes, (64 + 16) * 2.0 + 16 * 8.0);
}

TEST(CApi, NullDataPointerInATensor) {
  solops_pool2d_params p = params(2, 2);
  float out[4];
  const solops_tensor x = plane(nullptr, 4), y = plane(out, 2);
  EXPECT_EQ(solops_reference_avg_pool2d(&x, &y, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("input: data pointer is null"), std::string::npos) << last_error();
}

TEST(CApi, CpuTensorGivenToTheGpuOpIsRejected) {
  solops_pool2d_params p = params(2, 2);
  float in[16] = {}, out[4] = {};
  const solops_tensor x = plane(in, 4), y = plane(out, 2);
  EXPECT_EQ(solops_avg_pool2d(&x, &y, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("input must be a CUDA tensor, got a CPU tensor"), std::string::npos)
      << last_error();
}

TEST(CApi, UnknownDtypeAndBadRank) {
  solops_pool2d_params p = params(2, 2);
  float in[16] = {};
  solops_tensor x = plane(in, 4, 42);
  EXPECT_EQ(solops_reference_avg_pool2d(&x, &x, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("unknown dtype code 42"), std::string::npos) << last_error();
  x.rank = 9;
  EXPECT_EQ(solops_reference_avg_pool2d(&x, &x, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("rank 9"), std::string::npos) << last_error();
}

}  // namespace
