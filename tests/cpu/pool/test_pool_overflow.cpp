// The pools' shape rules, cost models and references given sizes whose products or sums pass int64:
// each refuses them with an error naming the op and the argument, where a wrapped-around product
// once passed the 2^31 plane limit ([1, 1, 2^32, 2^32] pooled to [1, 1, 0, 0]). And the references'
// aliasing rule, their device ops': no output overlaps the input.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/pool.hpp"
#include "solops/reference.hpp"

namespace solops {
namespace {

using testing::expect_error;
using testing::HostTensor;
using testing::unholdable_tensor;
using Shape = std::vector<int64_t>;

constexpr int64_t k2To32 = int64_t{1} << 32;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// Windows of `kernel` taps along every axis, the stride the kernel, no padding.
Pool1d window1d(int64_t kernel) {
  Pool1d p;
  p.kernel_size = kernel;
  return p;
}
Pool2d window2d(int64_t kernel) {
  Pool2d p;
  p.kernel_size = {kernel, kernel};
  return p;
}
Pool3d window3d(int64_t kernel) {
  Pool3d p;
  p.kernel_size = {kernel, kernel, kernel};
  return p;
}

// ---- sizes past int64 ----------------------------------------------------------------------------

TEST(PoolOverflow, PlaneOf2To64ElementsIsRefusedNotWrappedToAnEmptyOutput) {
  const Shape x{1, 1, k2To32, k2To32};
  expect_error([&] { max_pool2d_output_shape(x, window2d(1)); },
               "max_pool2d: input [1, 1, 4294967296, 4294967296]: its sizes multiply past the int64 range");
  expect_error([&] { avg_pool2d_cost(x, DType::f32, window2d(1)); }, "avg_pool2d: input [1, 1, 4294967296");
}

TEST(PoolOverflow, BatchTimesChannelsPastInt64) {
  expect_error([&] { max_pool2d_output_shape(Shape{k2To32, k2To32, 1, 1}, window2d(1)); },
               "max_pool2d: input [4294967296, 4294967296, 1, 1]: its sizes multiply past the int64 range");
}

TEST(PoolOverflow, ThreeDPlanePastInt64) {
  constexpr int64_t k2To21 = int64_t{1} << 21;
  expect_error([&] { max_pool3d_output_shape(Shape{1, 1, k2To21, k2To21, k2To21}, window3d(1)); },
               "max_pool3d: input [1, 1, 2097152, 2097152, 2097152]: its sizes multiply past the int64 range");
}

TEST(PoolOverflow, InputSizeNearInt64MaxMeetsThePlaneLimitBeforeThePaddingIsAdded) {
  Pool1d p = window1d(2);
  p.padding = 1;
  expect_error([&] { max_pool1d_output_shape(Shape{1, 1, kInt64Max}, p); },
               "max_pool1d: input [1, 1, 9223372036854775807] has planes of 2^31 or more elements");
}

TEST(PoolOverflow, OutputPastInt64FromAnInputWithin) {
  // Padding makes two outputs of a one-element row: 2^62 planes of 2 outputs.
  const Shape x{int64_t{1} << 62, 1, 1, 1};
  Pool2d p;
  p.kernel_size = {1, 2};
  p.stride = {1, 1};
  p.padding = {0, 1};
  const char* message = "max_pool2d: output [4611686018427387904, 1, 1, 2]: its sizes multiply past the int64 range";
  expect_error([&] { max_pool2d_output_shape(x, p); }, message);
  expect_error([&] { max_pool2d_with_indices_cost(x, DType::f32, p); }, message);
}

TEST(PoolOverflow, AdaptivePlaneAndPlanesPastInt64) {
  expect_error([&] { adaptive_pool2d_output_shape(Shape{1, k2To32, k2To32}, {}); },
               "adaptive_pool2d: input [1, 4294967296, 4294967296]: its sizes multiply past the int64 range");
  expect_error([&] { adaptive_avg_pool2d_cost(Shape{k2To32, k2To32, 1, 1}, DType::f32, {}); },
               "adaptive_avg_pool2d: input [4294967296, 4294967296, 1, 1]: its sizes multiply past");
}

TEST(PoolOverflow, AdaptiveOutputPastInt64FromAnInputWithin) {
  const AdaptivePool2d p{.output_size = {4096, 4096}};
  expect_error([&] { adaptive_max_pool2d_cost(Shape{int64_t{1} << 40, 1, 1, 1}, DType::f32, p); },
               "adaptive_max_pool2d: output [1099511627776, 1, 4096, 4096]: its sizes multiply past the int64 range");
}

TEST(PoolOverflow, MeanPoolingTokenPastInt64) {
  expect_error([&] { mean_pooling_output_shape(Shape{1, 1, k2To32, k2To32}, {32}); },
               "mean_pooling: x [1, 1, 4294967296, 4294967296]: its sizes multiply past the int64 range");
}

TEST(PoolOverflow, MeanPoolingSequenceOfInt64MaxTokens) {
  // ceil(S / 32) without S + 31, and the cost's S + chunks in floating point.
  const Shape x{1, kInt64Max, 1, 1};
  EXPECT_EQ(mean_pooling_output_shape(x, {32}), (Shape{1, int64_t{1} << 58, 1, 1}));
  EXPECT_EQ(mean_pooling_cost(x, DType::f32, {32}).flops, 0x1p63 + 0x1p58);
}

TEST(PoolOverflow, MeanPoolingRaggedSequenceCountsPastInt64) {
  expect_error([&] { mean_pooling_output_shape(Shape{1, 64, 1, 1}, {32}, RaggedSizes{kInt64Max, 2}); },
               "mean_pooling: offsets' NS + 1 values: 9223372036854775807 + 1 passes the int64 range");
  // At most ceil(96 / 32) + NS - 1 chunks.
  expect_error([&] { mean_pooling_output_shape(Shape{1, 96, 1, 1}, {32}, RaggedSizes{kInt64Max - 1, 3}); },
               "mean_pooling: offsets' NS sequences make at most ceil(S / chunk_size) + NS - 1 chunks: 3 + "
               "9223372036854775805 passes the int64 range");
}

TEST(PoolOverflow, ReferencesRefuseInputsOfMoreThanInt64Elements) {
  const TensorRef x = unholdable_tensor({1, 1, k2To32, k2To32});
  HostTensor y({1, 1, 1, 1}, DType::f32);
  expect_error([&] { reference::max_pool2d(x, y.ref(), nullptr, window2d(1)); },
               "reference::max_pool2d: input [1, 1, 4294967296, 4294967296]: its sizes multiply past the int64 range");
  expect_error([&] { reference::adaptive_avg_pool2d(x, y.ref(), {}); }, "reference::adaptive_avg_pool2d: input [1");
  expect_error([&] { reference::mean_pooling(x, y.ref(), nullptr, nullptr, {32}); },
               "reference::mean_pooling: x [1, 1, 4294967296, 4294967296]: its sizes multiply past");
}

// ---- the references' aliasing rule ---------------------------------------------------------------

// The output of every pool reference placed over the input's bytes, from their start or over later
// elements only: refused before anything is written, as its device op refuses it.
TEST(PoolReferenceAliasing, OutputOverTheInputIsRefused) {
  HostTensor x({1, 1, 4, 4, 4}, DType::f32);  // 256 bytes, seen as 1-D, 2-D and 3-D input
  unsigned char* in = x.bytes.data();
  // An f32 output of `shape` at byte `offset` of x: over its first elements, or over later ones only.
  const auto over_x = [&](Shape shape, size_t offset = 0) { return make_tensor(in + offset, DType::f32, shape); };
  const Shape x1{1, 4, 16}, x2{1, 4, 4, 4}, y1{1, 4, 8}, y2{1, 4, 2, 2};
  const TensorRef x1d = make_tensor(in, DType::f32, x1), x2d = make_tensor(in, DType::f32, x2);
  expect_error([&] { reference::max_pool1d(x1d, over_x(y1), nullptr, window1d(2)); },
               "reference::max_pool1d: input and output overlap in memory; this op is not in-place");
  expect_error([&] { reference::avg_pool1d(x1d, over_x(y1, 128), window1d(2)); },
               "reference::avg_pool1d: input and output overlap in memory");
  expect_error([&] { reference::max_pool2d(x2d, over_x(y2, 128), nullptr, window2d(2)); },
               "reference::max_pool2d: input and output overlap in memory");
  expect_error([&] { reference::avg_pool2d(x2d, over_x(y2), window2d(2)); },
               "reference::avg_pool2d: input and output overlap in memory");
  expect_error([&] { reference::max_pool3d(x.ref(), over_x({1, 1, 2, 2, 2}), nullptr, window3d(2)); },
               "reference::max_pool3d: input and output overlap in memory");
  expect_error([&] { reference::avg_pool3d(x.ref(), over_x({1, 1, 2, 2, 2}, 64), window3d(2)); },
               "reference::avg_pool3d: input and output overlap in memory");
  const AdaptivePool2d bins{.output_size = {2, 2}};
  expect_error([&] { reference::adaptive_max_pool2d(x2d, over_x(y2), nullptr, bins); },
               "reference::adaptive_max_pool2d: input and output overlap in memory");
  expect_error([&] { reference::adaptive_avg_pool2d(x2d, over_x(y2, 192), bins); },
               "reference::adaptive_avg_pool2d: input and output overlap in memory");
  const TensorRef tokens = make_tensor(in, DType::f32, Shape{1, 64, 1, 1});
  expect_error([&] { reference::mean_pooling(tokens, over_x({1, 2, 1, 1}), nullptr, nullptr, {32}); },
               "reference::mean_pooling: x and output overlap in memory");
}

TEST(PoolReferenceAliasing, IndicesOverTheInputOrTheOutputAreRefused) {
  HostTensor x({1, 1, 4, 4}, DType::f32);
  HostTensor y_bytes({8}, DType::f32);  // the bytes of int64 indices of the output's shape
  HostTensor indices({1, 1, 2, 2}, DType::i64);
  const Shape out{1, 1, 2, 2};
  const TensorRef y = make_tensor(y_bytes.bytes.data(), DType::f32, out);
  const TensorRef indices_over_x = make_tensor(x.bytes.data(), DType::i64, out);
  const TensorRef indices_over_y = make_tensor(y_bytes.bytes.data(), DType::i64, out);
  expect_error([&] { reference::max_pool2d(x.ref(), y, &indices_over_x, window2d(2)); },
               "reference::max_pool2d: input and indices overlap in memory");
  expect_error([&] { reference::max_pool2d(x.ref(), y, &indices_over_y, window2d(2)); },
               "reference::max_pool2d: output and indices overlap in memory");
  expect_error([&] { reference::adaptive_max_pool2d(x.ref(), y, &indices_over_y, {.output_size = {2, 2}}); },
               "reference::adaptive_max_pool2d: output and indices overlap in memory");
  // Apart, the same call runs.
  const TensorRef apart = indices.ref();
  reference::max_pool2d(x.ref(), y, &apart, window2d(2));
}

}  // namespace
}  // namespace solops
