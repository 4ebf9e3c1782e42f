// Adaptive 2-D pools (spec §4.4–4.5): bins, shape rule, one test per validation rule, the CPU
// references against cases computed by hand, the cost model and the C ABI.
#include <gtest/gtest.h>

#include <limits>

#include "host_tensor.hpp"
#include "pool/adaptive_pool2d.hpp"
#include "solops/error.hpp"
#include "solops/reference.hpp"
#include "solops/solops.h"

namespace solops {
namespace {

using testing::HostTensor;
using Shape = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

AdaptivePool2d grid(std::optional<int64_t> h, std::optional<int64_t> w) { return {{h, w}}; }

TEST(AdaptiveBins, OverlapWhereTheOutputDoesNotDivideAndRepeatWhenLarger) {
  using detail::adaptive_bin;
  // Spec: I=5, O=3 -> [0,2), [1,4), [3,5).
  EXPECT_EQ(adaptive_bin(0, 5, 3).start, 0);
  EXPECT_EQ(adaptive_bin(0, 5, 3).end, 2);
  EXPECT_EQ(adaptive_bin(1, 5, 3).start, 1);
  EXPECT_EQ(adaptive_bin(1, 5, 3).end, 4);
  EXPECT_EQ(adaptive_bin(2, 5, 3).start, 3);
  EXPECT_EQ(adaptive_bin(2, 5, 3).end, 5);
  // O > I: I=2, O=3 -> [0,1), [0,2), [1,2).
  EXPECT_EQ(adaptive_bin(1, 2, 3).start, 0);
  EXPECT_EQ(adaptive_bin(1, 2, 3).end, 2);
  EXPECT_EQ(adaptive_bin(2, 2, 3).start, 1);
  // Global: one bin over everything.
  EXPECT_EQ(adaptive_bin(0, 7, 1).end, 7);
}

TEST(AdaptivePool2dOutputShape, SizesNoneAndUnbatched) {
  EXPECT_EQ(adaptive_pool2d_output_shape(Shape{8, 2048, 7, 7}, grid(1, 1)), (Shape{8, 2048, 1, 1}));
  EXPECT_EQ(adaptive_pool2d_output_shape(Shape{2048, 7, 7}, grid(1, 1)), (Shape{2048, 1, 1}));
  EXPECT_EQ(adaptive_pool2d_output_shape(Shape{2, 64, 55, 57}, grid(7, std::nullopt)), (Shape{2, 64, 7, 57}));
  EXPECT_EQ(adaptive_pool2d_output_shape(Shape{1, 1, 3, 3}, grid(5, 4)), (Shape{1, 1, 5, 4}));
}

void expect_rejected(const Shape& shape, const AdaptivePool2d& p, const std::string& fragment) {
  try {
    adaptive_pool2d_output_shape(shape, p);
    ADD_FAILURE() << "accepted, expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(AdaptivePool2dValidation, EachRule) {
  expect_rejected({7, 7}, grid(1, 1), "3-D [C, H, W] or 4-D [N, C, H, W]");
  expect_rejected({2, 0, 7, 7}, grid(1, 1), "empty dim");
  expect_rejected({2, 3, 7, 7}, grid(0, 1), "output_size[0] = 0 must be >= 1");
  expect_rejected({2, 3, 7, 7}, grid(1, -2), "output_size[1] = -2 must be >= 1");
  expect_rejected({1, 1, 65536, 32768}, grid(1, 1), "32-bit in-plane indexing would overflow");
}

HostTensor plane(int64_t h, int64_t w, const std::vector<double>& values) {
  HostTensor t({1, h, w}, DType::f32);
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

TEST(AdaptiveAvgPool2dReference, OverlappingBinsAverageTheirOwnElements) {
  // 1 x 5 row 0..4 into 3 bins: [0,2) -> 0.5, [1,4) -> 2, [3,5) -> 3.5.
  HostTensor x = plane(1, 5, {0, 1, 2, 3, 4});
  HostTensor y({1, 1, 3}, DType::f32);
  y.poison();
  reference::adaptive_avg_pool2d(x.ref(), y.ref(), grid(1, 3));
  EXPECT_EQ(y.at(0), 0.5);
  EXPECT_EQ(y.at(1), 2.0);
  EXPECT_EQ(y.at(2), 3.5);
}

TEST(AdaptiveMaxPool2dReference, LastNaNTiesAndMinusInf) {
  // Spec §4.5: NaNs at (1,1) and (3,3) of a 5x5 plane, output 1x1 -> index 3*5+3 = 18.
  std::vector<double> values(25, 1.0);
  values[6] = kNaN;
  values[18] = kNaN;
  HostTensor x = plane(5, 5, values);
  HostTensor y({1, 1, 1}, DType::f32), indices({1, 1, 1}, DType::i64);
  const TensorRef indices_ref = indices.ref();
  reference::adaptive_max_pool2d(x.ref(), y.ref(), &indices_ref, grid(1, 1));
  EXPECT_TRUE(std::isnan(y.at(0)));
  EXPECT_EQ(indices.index_at(0), 18);
  // Ties keep the first; an all -inf bin reports its first element.
  HostTensor ties = plane(2, 2, {3, 3, 1, 3}), minus_inf = plane(2, 2, {-kInf, -kInf, -kInf, -kInf});
  reference::adaptive_max_pool2d(ties.ref(), y.ref(), &indices_ref, grid(1, 1));
  EXPECT_EQ(indices.index_at(0), 0);
  HostTensor y2({1, 2, 1}, DType::f32), indices2({1, 2, 1}, DType::i64);
  const TensorRef indices2_ref = indices2.ref();
  reference::adaptive_max_pool2d(minus_inf.ref(), y2.ref(), &indices2_ref, grid(2, 1));
  EXPECT_EQ(indices2.index_at(0), 0);
  EXPECT_EQ(indices2.index_at(1), 2);
  EXPECT_EQ(y2.at(1), -kInf);
}

TEST(AdaptivePool2dCost, ScansEveryBin) {
  // 55 rows into 7 bins: 55 + 6 overlaps (7 does not divide o*55 for o = 1..6) = 61 rows scanned.
  const Cost c = adaptive_avg_pool2d_cost(Shape{2, 64, 55, 57}, DType::bf16, grid(7, 7));
  const double scan_w = 57 + 6;  // 7 does not divide o*57 for o = 1..6 either
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 64 * 61 * scan_w);
  EXPECT_DOUBLE_EQ(c.bytes, (2.0 * 64 * 55 * 57 + 2.0 * 64 * 49) * 2);
  EXPECT_DOUBLE_EQ(adaptive_max_pool2d_with_indices_cost(Shape{8, 2048, 7, 7}, DType::f16, grid(1, 1)).bytes,
                   (8.0 * 2048 * 49 + 8.0 * 2048) * 2 + 8.0 * 2048 * 8);
}

TEST(AdaptivePool2dCApi, ShapeAndNullPointers) {
  solops_adaptive_pool2d_params p{};
  p.has_output_size[0] = 1;
  p.output_size[0] = 6;
  const int64_t x_shape[4] = {2, 128, 56, 56};
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_adaptive_pool2d_output_shape(4, x_shape, &p, &rank, shape), SOLOPS_OK) << solops_last_error();
  EXPECT_EQ(rank, 4);
  EXPECT_EQ(shape[2], 6);
  EXPECT_EQ(shape[3], 56);  // None keeps the input's width
  EXPECT_EQ(solops_adaptive_max_pool2d(nullptr, nullptr, nullptr, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(solops_adaptive_avg_pool2d_cost(4, x_shape, SOLOPS_F16, nullptr, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("params is a null pointer"), std::string::npos);
}

}  // namespace
}  // namespace solops
