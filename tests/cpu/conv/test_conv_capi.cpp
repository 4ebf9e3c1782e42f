// The convolution family's C ABI: the reference, the shape rule and the cost model through their C
// functions, and the status code and last-error message of bad arguments.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cpu/conv/conv_cases.hpp"
#include "solops/solops.h"

namespace solops::testing::conv {
namespace {

solops_conv_params params(int64_t stride, int64_t padding, int64_t groups = 1) {
  solops_conv_params p{};
  for (int a = 0; a < 3; ++a) {
    p.stride[a] = stride;
    p.padding[a] = padding;
    p.dilation[a] = 1;
  }
  p.padding_mode = SOLOPS_CONV_PADDING_EXPLICIT;
  p.groups = groups;
  return p;
}

TEST(ConvCApi, ReferenceShapeAndCost) {
  HostTensor x = filled({1, 1, 5}, {1, 2, 3, 4, 5}), w = filled({1, 1, 3}, {1, 0, -1}), b = filled({1}, {10});
  HostTensor y({1, 1, 3}, DType::f32);
  const solops_conv_params p = params(2, 1);
  solops_tensor cx = c_tensor(x), cw = c_tensor(w), cb = c_tensor(b), cy = c_tensor(y);
  ASSERT_EQ(solops_reference_conv(SOLOPS_CONV1D, &cx, &cw, &cb, &cy, &p), SOLOPS_OK) << solops_last_error();
  expect_values(y, {8, 8, 14});
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  const int64_t bias_shape[] = {1};
  ASSERT_EQ(solops_conv_output_shape(SOLOPS_CONV1D, 3, x.shape.data(), 3, w.shape.data(), 1, bias_shape, &p, &rank,
                                     shape),
            SOLOPS_OK);
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(shape[2], 3);
  solops_conv_params same = params(1, 0);
  same.padding_mode = SOLOPS_CONV_PADDING_SAME;
  ASSERT_EQ(solops_conv_output_shape(SOLOPS_CONV1D, 3, x.shape.data(), 3, w.shape.data(), 0, nullptr, &same, &rank,
                                     shape),
            SOLOPS_OK);
  EXPECT_EQ(shape[2], 5);
  solops_cost cost{};
  ASSERT_EQ(solops_conv_cost(SOLOPS_CONV1D, 3, x.shape.data(), 3, w.shape.data(), 1, bias_shape, SOLOPS_F16, &p, &cost),
            SOLOPS_OK);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 3 * 3 + 3);
  EXPECT_DOUBLE_EQ(cost.bytes, (5.0 + 3 + 3 + 1) * 2);
}

TEST(ConvCApi, BadArgumentsReturnAStatusAndAMessage) {
  HostTensor x = filled({1, 4, 8}, {1}), w = filled({8, 4, 3}, {1}), y({1, 8, 6}, DType::f32);
  solops_tensor cx = c_tensor(x), cw = c_tensor(w), cy = c_tensor(y);
  const solops_conv_params grouped = params(1, 0, 3);
  EXPECT_EQ(solops_reference_conv(SOLOPS_CONV1D, &cx, &cw, nullptr, &cy, &grouped), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(solops_last_error()), "conv1d: groups = 3 must divide the input's 4 channels");
  const solops_conv_params p = params(1, 0);
  EXPECT_EQ(solops_reference_conv(SOLOPS_CONV1D, &cx, nullptr, nullptr, &cy, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(solops_last_error()), "solops_reference_conv: weight is a null pointer");
  EXPECT_EQ(solops_reference_conv(99, &cx, &cw, nullptr, &cy, &p), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(solops_last_error()), "conv: unknown op code 99");
  EXPECT_EQ(solops_reference_conv(SOLOPS_CONV1D, &cx, &cw, nullptr, &cy, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(solops_last_error()), "solops_reference_conv: params is a null pointer");
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  EXPECT_EQ(solops_conv_output_shape(SOLOPS_CONV1D, 3, x.shape.data(), 3, nullptr, 0, nullptr, &p, &rank, shape),
            SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(solops_last_error()), "solops_conv_output_shape: weight_shape is a null pointer");
  // The device op refuses host tensors by name.
  EXPECT_EQ(solops_conv(SOLOPS_CONV1D, &cx, &cw, nullptr, &cy, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(solops_last_error()), "conv1d: input must be a CUDA tensor, got a CPU tensor");
}

}  // namespace
}  // namespace solops::testing::conv
