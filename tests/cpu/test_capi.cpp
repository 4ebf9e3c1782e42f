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
  solops_tensor x{};
  x.dtype = SOLOPS_F32;
  x.rank = 3;
  x.shape[0] = 1;
  x.shape[1] = x.shape[2] = 4;
  x.strides[0] = 16;
  x.strides[1] = 4;
  x.strides[2] = 1;
  x.device = SOLOPS_CPU;
  solops_tensor y = x;
  float out[4];
  y.data = out;
  y.shape[1] = y.shape[2] = 2;
  y.strides[0] = 4;
  y.strides[1] = 2;
  EXPECT_EQ(solops_reference_avg_pool2d(&x, &y, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("input: data pointer is null"), std::string::npos) << last_error();
}

TEST(CApi, CpuTensorGivenToTheGpuOpIsRejected) {
  solops_pool2d_params p = params(2, 2);
  float in[16] = {}, out[4] = {};
  solops_tensor x{};
  x.data = in;
  x.dtype = SOLOPS_F32;
  x.rank = 3;
  x.shape[0] = 1;
  x.shape[1] = x.shape[2] = 4;
  x.strides[0] = 16;
  x.strides[1] = 4;
  x.strides[2] = 1;
  x.device = SOLOPS_CPU;
  solops_tensor y = x;
  y.data = out;
  y.shape[1] = y.shape[2] = 2;
  y.strides[0] = 4;
  y.strides[1] = 2;
  EXPECT_EQ(solops_avg_pool2d(&x, &y, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("input must be a CUDA tensor, got a CPU tensor"), std::string::npos)
      << last_error();
}

TEST(CApi, UnknownDtypeAndBadRank) {
  solops_pool2d_params p = params(2, 2);
  float in[16] = {};
  solops_tensor x{};
  x.data = in;
  x.dtype = 42;
  x.rank = 3;
  x.shape[0] = 1;
  x.shape[1] = x.shape[2] = 4;
  x.strides[0] = 16;
  x.strides[1] = 4;
  x.strides[2] = 1;
  x.device = SOLOPS_CPU;
  EXPECT_EQ(solops_reference_avg_pool2d(&x, &x, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("unknown dtype code 42"), std::string::npos) << last_error();
  x.rank = 9;
  EXPECT_EQ(solops_reference_avg_pool2d(&x, &x, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("rank 9"), std::string::npos) << last_error();
}

}  // namespace
