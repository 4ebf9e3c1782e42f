// The norms' shape rules, cost models, workspace sizes and references given sizes whose products
// pass int64: each refuses them with an error naming the op and the argument, where a wrapped-around
// product once passed the row limits (an RMSNorm of 2^64 elements was accepted at cost 0).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops {
namespace {

using testing::expect_error;
using testing::HostTensor;
using testing::unholdable_tensor;
using Shape = std::vector<int64_t>;

constexpr int64_t k2To32 = int64_t{1} << 32;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
const Shape k2To64Rows{k2To32, k2To32, 1};

TEST(NormOverflow, RmsNormOf2To64ElementsIsRefusedNotCostedAtZero) {
  const RMSNorm p{.normalized_shape = {1}};
  const char* message = "rms_norm: x [4294967296, 4294967296, 1]: its sizes multiply past the int64 range";
  expect_error([&] { rms_norm_cost(k2To64Rows, DType::f32, p); }, message);
  expect_error([&] { rms_norm_output_shape(k2To64Rows, p); }, message);
}

TEST(NormOverflow, BatchNormInferenceOf2To64ElementsIsRefused) {
  const char* message = "batch_norm_inference: x [4294967296, 4294967296, 1]: its sizes multiply past the int64 range";
  expect_error([&] { batch_norm_inference_output_shape(k2To64Rows, {}); }, message);
  expect_error([&] { batch_norm_inference_cost(k2To64Rows, DType::f16, {}); },
               "batch_norm_inference_cost: x [4294967296, 4294967296, 1]: its sizes multiply past the int64 range");
}

TEST(NormOverflow, RowOfMoreThanInt64Elements) {
  // Two dims of the normalized shape whose product passes int64.
  const Shape x{2, int64_t{1} << 62};
  expect_error([&] { layer_norm_output_shape(x, {.normalized_shape = x}); },
               "layer_norm: x [2, 4611686018427387904]: its sizes multiply past the int64 range");
}

TEST(NormOverflow, StatsShapeAndBackwardSizesNameTheirOp) {
  expect_error([&] { norm_stats_shape(k2To64Rows, Shape{1}); }, "norm_stats_shape: x [4294967296, 4294967296, 1]");
  expect_error([&] { rms_norm_backward_workspace_elements(k2To64Rows, {.normalized_shape = {1}}); },
               "rms_norm_backward: x [4294967296, 4294967296, 1]: its sizes multiply past the int64 range");
  expect_error([&] { layer_norm_backward_cost(k2To64Rows, DType::f32, {.normalized_shape = {1}}); },
               "layer_norm_backward: x [4294967296, 4294967296, 1]: its sizes multiply past the int64 range");
}

TEST(NormOverflow, VectorNormReducedAndKeptSizesPastInt64) {
  const Shape x{k2To32, k2To32};
  expect_error([&] { vector_norm_output_shape(x, {}); },
               "vector_norm: x [4294967296, 4294967296]: its sizes multiply past the int64 range");
  expect_error([&] { vector_norm_workspace_elements(x, {.dim = {1}}); }, "vector_norm: x [4294967296, 4294967296]");
  // Empty, yet its strides would pass int64.
  expect_error([&] { vector_norm_cost(Shape{0, int64_t{1} << 40, int64_t{1} << 40}, DType::f32, {}); },
               "vector_norm_cost: x [0, 1099511627776, 1099511627776]: its sizes multiply past the int64 range (zeros "
               "aside)");
}

TEST(NormOverflow, VectorNormOfInt64MaxElementsSplitsWithoutOverflow) {
  // 1024 splits of 2^53 elements, the last one short: ceil_div without a + b - 1.
  EXPECT_EQ(vector_norm_workspace_elements(Shape{kInt64Max}, {}), 1024);
}

TEST(NormOverflow, WeightNormSliceSizePastInt64) {
  expect_error([&] { weight_norm_norm_shape(Shape{1, k2To32, k2To32}, {.dim = 0}); },
               "weight_norm: v [1, 4294967296, 4294967296]: its sizes multiply past the int64 range");
}

TEST(NormOverflow, SpectralNormMatrixPastInt64) {
  const SpectralNormPowerIter p{.normalized_shape = {k2To32}};
  expect_error([&] { spectral_norm_power_iter_cost(Shape{k2To32, k2To32}, DType::f32, p); },
               "spectral_norm_power_iter_cost: x [4294967296, 4294967296]: its sizes multiply past the int64 range");
}

TEST(NormOverflow, SpectralNormOfInt64MaxRowsSplitsWithoutOverflow) {
  // The most chunks of W^T u (528), one column each.
  EXPECT_EQ(spectral_norm_power_iter_workspace_elements(Shape{kInt64Max, 1}, {.normalized_shape = {1}}), 528);
}

TEST(NormOverflow, ReferencesRefuseTensorsOfMoreThanInt64ElementsOrBytes) {
  HostTensor y({1}, DType::f32), norm({}, DType::f32);
  expect_error([&] { reference::rms_norm(unholdable_tensor(k2To64Rows), nullptr, y.ref(), {.normalized_shape = {1}}); },
               "reference::rms_norm: x [4294967296, 4294967296, 1]: its sizes multiply past the int64 range");
  // 2^62 f32 elements: 2^64 bytes.
  expect_error([&] { reference::vector_norm(unholdable_tensor({int64_t{1} << 62}), norm.ref(), {}); },
               "reference::vector_norm: x's size in bytes: 4611686018427387904 * 4 passes the int64 range");
}

}  // namespace
}  // namespace solops
