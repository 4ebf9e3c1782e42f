// The 3-D pools (spec §4.0–4.3): shape rules, validation messages that name the axis, the CPU
// references against cases computed by hand (3-D positions, divisors), the cost model, the C ABI.
#include <gtest/gtest.h>

#include <limits>

#include "host_tensor.hpp"
#include "solops/error.hpp"
#include "solops/reference.hpp"
#include "solops/solops.h"

namespace solops {
namespace {

using testing::HostTensor;
using Shape = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Pool3d window(std::array<int64_t, 3> k, std::optional<std::array<int64_t, 3>> s = std::nullopt,
              std::array<int64_t, 3> p = {0, 0, 0}, bool ceil = false) {
  Pool3d pool;
  pool.kernel_size = k;
  pool.stride = s;
  pool.padding = p;
  pool.ceil_mode = ceil;
  return pool;
}

TEST(Pool3dOutputShape, CatalogueRowsAndUnbatched) {
  EXPECT_EQ(max_pool3d_output_shape(Shape{8, 64, 16, 112, 112}, window({1, 2, 2})), (Shape{8, 64, 16, 56, 56}));
  EXPECT_EQ(max_pool3d_output_shape(Shape{4, 128, 16, 56, 56}, window({2, 2, 2})), (Shape{4, 128, 8, 28, 28}));
  // 3x3x3 s2 p1 ceil: D = ceil((32 + 2 - 3) / 2) + 1 = 17, H = W = ceil(111 / 2) + 1 = 57.
  EXPECT_EQ(max_pool3d_output_shape(Shape{2, 64, 32, 112, 112}, window({3, 3, 3}, {{2, 2, 2}}, {1, 1, 1}, true)),
            (Shape{2, 64, 17, 57, 57}));
  EXPECT_EQ(avg_pool3d_output_shape(Shape{32, 16, 56, 56}, window({2, 2, 2})), (Shape{32, 8, 28, 28}));
}

void expect_rejected(const Shape& shape, const Pool3d& p, const std::string& fragment, bool avg = false) {
  try {
    avg ? avg_pool3d_output_shape(shape, p) : max_pool3d_output_shape(shape, p);
    ADD_FAILURE() << "accepted, expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(avg ? "avg_pool3d" : "max_pool3d"), std::string::npos) << e.what();
  }
}

TEST(Pool3dValidation, EachRuleNamesTheAxis) {
  expect_rejected({8, 8, 8}, window({2, 2, 2}), "4-D [C, D, H, W] or 5-D [N, C, D, H, W]");
  expect_rejected({1, 1, 0, 8, 8}, window({2, 2, 2}), "empty dim");
  expect_rejected({1, 1, 8, 8, 8}, window({2, 2, 0}), "kernel_size[2] = 0 must be >= 1");
  expect_rejected({1, 1, 8, 8, 8}, window({2, 2, 2}, {{0, 1, 1}}), "stride[0] = 0 must be >= 1");
  expect_rejected({1, 1, 8, 8, 8}, window({3, 3, 3}, std::nullopt, {0, 2, 0}), "padding[1] = 2 must be at most half");
  expect_rejected({1, 1, 2, 8, 8}, window({3, 3, 3}), "output size along D would be");
  Pool3d dilated = window({2, 2, 2});
  dilated.dilation = {1, 1, 2};
  expect_rejected({1, 1, 8, 8, 8}, dilated, "avg-pool has no dilation", true);
  // 3 + 2 * 1 padding would give outputs, but PyTorch's avg_pool3d needs the input >= the kernel.
  expect_rejected({1, 1, 2, 8, 8}, window({3, 3, 3}, {{1, 1, 1}}, {1, 1, 1}), "smaller than the kernel", true);
  EXPECT_EQ(max_pool3d_output_shape(Shape{1, 1, 2, 8, 8}, window({3, 3, 3}, {{1, 1, 1}}, {1, 1, 1})),
            (Shape{1, 1, 2, 8, 8}));
  Pool3d zero_divisor = window({2, 2, 2});
  zero_divisor.divisor_override = 0;
  expect_rejected({1, 1, 8, 8, 8}, zero_divisor, "divisor_override must not be zero", true);
}

HostTensor volume(Shape shape, const std::vector<double>& values) {
  HostTensor t(std::move(shape), DType::f32);
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

TEST(MaxPool3dReference, PositionsAreFlatInTheVolume) {
  // One 2x2x2 window over 0..7: the max is 7 at (1, 1, 1) -> (1*2 + 1)*2 + 1 = 7; with NaNs at
  // positions 2 and 5 the last NaN, 5, wins.
  HostTensor x = volume({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  HostTensor y({1, 1, 1, 1, 1}, DType::f32), indices({1, 1, 1, 1, 1}, DType::i64);
  const TensorRef indices_ref = indices.ref();
  reference::max_pool3d(x.ref(), y.ref(), &indices_ref, window({2, 2, 2}));
  EXPECT_EQ(y.at(0), 7.0);
  EXPECT_EQ(indices.index_at(0), 7);
  x.set(2, kNaN);
  x.set(5, kNaN);
  reference::max_pool3d(x.ref(), y.ref(), &indices_ref, window({2, 2, 2}));
  EXPECT_TRUE(std::isnan(y.at(0)));
  EXPECT_EQ(indices.index_at(0), 5);
  // Depth-only windows: (2, 1, 1) over a 2x1x2 volume picks per (h, w) column.
  HostTensor column = volume({1, 2, 1, 2}, {1, 9, 4, 2});
  HostTensor y2({1, 1, 1, 2}, DType::f32), indices2({1, 1, 1, 2}, DType::i64);
  const TensorRef indices2_ref = indices2.ref();
  reference::max_pool3d(column.ref(), y2.ref(), &indices2_ref, window({2, 1, 1}));
  EXPECT_EQ(indices2.index_at(0), 2);  // d=1, w=0
  EXPECT_EQ(indices2.index_at(1), 1);  // d=0, w=1
}

TEST(AvgPool3dReference, DivisorsMultiplyAcrossAxes) {
  HostTensor x = volume({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  HostTensor y({1, 1, 1, 1, 1}, DType::f32);
  reference::avg_pool3d(x.ref(), y.ref(), window({2, 2, 2}));
  EXPECT_EQ(y.at(0), 3.5);
  Pool3d seven = window({2, 2, 2});
  seven.divisor_override = 7;
  reference::avg_pool3d(x.ref(), y.ref(), seven);
  EXPECT_EQ(y.at(0), 4.0);
  // Padding 1 on W with kernel 2, stride 2 over W=2: windows [-1, 1) and [1, 3) -> each holds one
  // real column; counted with padding the divisor is 2*2*2 = 8, without it 2*2*1 = 4.
  Pool3d padded = window({2, 2, 2}, {{2, 2, 2}}, {0, 0, 1});
  HostTensor y2({1, 1, 1, 1, 2}, DType::f32);
  reference::avg_pool3d(x.ref(), y2.ref(), padded);
  EXPECT_EQ(y2.at(0), (0 + 2 + 4 + 6) / 8.0);
  EXPECT_EQ(y2.at(1), (1 + 3 + 5 + 7) / 8.0);
  padded.count_include_pad = false;
  reference::avg_pool3d(x.ref(), y2.ref(), padded);
  EXPECT_EQ(y2.at(0), (0 + 2 + 4 + 6) / 4.0);
}

TEST(Pool3dCost, MatchesTheRoofline) {
  const Cost c = max_pool3d_with_indices_cost(Shape{4, 128, 16, 56, 56}, DType::f16, window({2, 2, 2}));
  const double outputs = 4.0 * 128 * 8 * 28 * 28, inputs = 4.0 * 128 * 16 * 56 * 56;
  EXPECT_DOUBLE_EQ(c.flops, outputs * 8);
  EXPECT_DOUBLE_EQ(c.bytes, (inputs + outputs) * 2 + outputs * 8);
}

TEST(Pool3dCApi, ShapeAndNullPointers) {
  solops_pool3d_params p{};
  for (int a = 0; a < 3; ++a) {
    p.kernel_size[a] = 2;
    p.dilation[a] = 1;
  }
  p.count_include_pad = 1;
  const int64_t x_shape[5] = {4, 128, 16, 56, 56};
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_max_pool3d_output_shape(5, x_shape, &p, &rank, shape), SOLOPS_OK) << solops_last_error();
  EXPECT_EQ(rank, 5);
  EXPECT_EQ(shape[2], 8);
  EXPECT_EQ(shape[4], 28);
  EXPECT_EQ(solops_avg_pool3d(nullptr, nullptr, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_EQ(solops_max_pool3d_output_shape(5, x_shape, nullptr, &rank, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("solops_max_pool3d_output_shape: params is a null pointer"),
            std::string::npos);
}

}  // namespace
}  // namespace solops
