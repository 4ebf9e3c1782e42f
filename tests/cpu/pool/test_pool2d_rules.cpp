// Shape rules, validation rules and cost models of the 2-D pools (spec §4.0–4.3).
#include <gtest/gtest.h>

#include <limits>

#include "pool/pool_geometry.hpp"
#include "solops/error.hpp"
#include "solops/pool.hpp"

namespace solops {
namespace {

using Shape = std::vector<int64_t>;

Pool2d window(int64_t k, std::optional<int64_t> s = std::nullopt, int64_t p = 0, int64_t d = 1,
              bool ceil = false) {
  Pool2d pool;
  pool.kernel_size = {k, k};
  if (s) pool.stride = std::array<int64_t, 2>{*s, *s};
  pool.padding = {p, p};
  pool.dilation = {d, d};
  pool.ceil_mode = ceil;
  return pool;
}

TEST(Pool2dOutputSize, FloorAndCeilMode) {
  // Spec example: I=5, k=2, s=2, p=0 gives 2 outputs, 3 in ceil mode.
  EXPECT_EQ(detail::pooled_size(5, 2, 2, 0, 1, false), 2);
  EXPECT_EQ(detail::pooled_size(5, 2, 2, 0, 1, true), 3);
  // AlexNet: 55, k3 s2 -> 27 both ways (the windows tile exactly).
  EXPECT_EQ(detail::pooled_size(55, 3, 2, 0, 1, false), 27);
  EXPECT_EQ(detail::pooled_size(55, 3, 2, 0, 1, true), 27);
  // ResNet stem: 112, k3 s2 p1 -> 56.
  EXPECT_EQ(detail::pooled_size(112, 3, 2, 1, 1, false), 56);
  // Dilation widens the window: e = 2*(3-1)+1 = 5.
  EXPECT_EQ(detail::pooled_size(10, 3, 1, 0, 2, false), 6);
}

TEST(Pool2dOutputSize, CeilModeDropsAWindowStartingInTheRightPadding) {
  // I=6, k=3, s=2, p=1: ceil((6+2-3)/2)+1 = 4; window 3 starts at 3*2-1 = 5 < I+p = 7: kept.
  EXPECT_EQ(detail::pooled_size(6, 3, 2, 1, 1, true), 4);
  // I=4, k=2, s=2, p=1: ceil((4+2-2)/2)+1 = 3; (3-1)*2 = 4 < I+p = 5: kept.
  EXPECT_EQ(detail::pooled_size(4, 2, 2, 1, 1, true), 3);
  // I=5, k=3, s=3, p=1: ceil((5+2-3)/3)+1 = 3; (3-1)*3 = 6 >= I+p = 6: dropped -> 2.
  EXPECT_EQ(detail::pooled_size(5, 3, 3, 1, 1, true), 2);
  EXPECT_EQ(detail::pooled_size(5, 3, 3, 1, 1, false), 2);
  // A window larger than the input still yields one output in ceil mode (PyTorch's div_rtn).
  EXPECT_EQ(detail::pooled_size(2, 3, 2, 0, 1, true), 1);
  EXPECT_EQ(detail::pooled_size(2, 3, 2, 0, 1, false), 0);
}

TEST(Pool2dOutputShape, BatchedUnbatchedAndDefaultStride) {
  EXPECT_EQ(max_pool2d_output_shape(Shape{32, 64, 112, 112}, window(3, 2, 1)), (Shape{32, 64, 56, 56}));
  EXPECT_EQ(max_pool2d_output_shape(Shape{64, 112, 112}, window(3, 2, 1)), (Shape{64, 56, 56}));
  // stride=None means stride = kernel_size.
  EXPECT_EQ(avg_pool2d_output_shape(Shape{2, 3, 9, 7}, window(3)), (Shape{2, 3, 3, 2}));
  EXPECT_EQ(max_pool2d_output_shape(Shape{0, 3, 9, 7}, window(3)), (Shape{0, 3, 3, 2}));
  Pool2d asymmetric = window(1);
  asymmetric.kernel_size = {3, 5};
  asymmetric.stride = std::array<int64_t, 2>{2, 2};
  asymmetric.padding = {1, 2};
  asymmetric.ceil_mode = true;
  EXPECT_EQ(avg_pool2d_output_shape(Shape{3, 96, 55, 57}, asymmetric), (Shape{3, 96, 28, 29}));
}

// Each validation rule: the call throws solops::Error whose message names the broken rule.
void expect_rejected(const Shape& shape, const Pool2d& p, const std::string& fragment,
                     bool avg = false) {
  try {
    avg ? avg_pool2d_output_shape(shape, p) : max_pool2d_output_shape(shape, p);
    ADD_FAILURE() << "accepted, expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(avg ? "avg_pool2d" : "max_pool2d"), std::string::npos);
  }
}

TEST(Pool2dValidation, WrongRank) {
  expect_rejected({8, 8}, window(2), "3-D [C, H, W] or 4-D");
  expect_rejected({1, 2, 3, 8, 8}, window(2), "3-D [C, H, W] or 4-D");
}

TEST(Pool2dValidation, EmptyNonBatchDim) { expect_rejected({2, 0, 8, 8}, window(2), "empty dim"); }

TEST(Pool2dValidation, KernelMustBePositive) { expect_rejected({1, 1, 8, 8}, window(0), "kernel_size[0] = 0"); }

TEST(Pool2dValidation, StrideMustBePositive) {
  expect_rejected({1, 1, 8, 8}, window(2, 0), "stride[0] = 0 must be >= 1");
  expect_rejected({1, 1, 8, 8}, window(2, -1), "stride[0] = -1 must be >= 1");
}

TEST(Pool2dValidation, DilationMustBePositive) { expect_rejected({1, 1, 8, 8}, window(2, 1, 0, 0), "dilation[0] = 0"); }

TEST(Pool2dValidation, AvgPoolHasNoDilation) {
  expect_rejected({1, 1, 8, 8}, window(2, 1, 0, 2), "avg-pool has no dilation", true);
}

TEST(Pool2dValidation, NegativePadding) {
  expect_rejected({1, 1, 8, 8}, window(3, 1, -1), "padding[0] = -1 must be >= 0");
}

TEST(Pool2dValidation, PaddingOverHalfTheKernel) {
  expect_rejected({1, 1, 8, 8}, window(3, 1, 2), "at most half the kernel size");
  expect_rejected({1, 1, 8, 8}, window(2, 1, 2), "at most half the kernel size", true);
}

TEST(Pool2dValidation, KernelLargerThanPaddedInput) {
  expect_rejected({1, 1, 4, 4}, window(7, 1, 1), "larger than the padded input");
  expect_rejected({1, 1, 2, 2}, window(3, 1, 0), "larger than the padded input", true);
}

TEST(Pool2dValidation, DilatedWindowWithNoRealElement) {
  // I=1, k=2, d=2, p=1: the window fits the padded extent, but its taps -1 and 1 miss [0, 1).
  expect_rejected({1, 1, 1, 1}, window(2, 1, 1, 2), "has no element inside the input");
}

TEST(Pool2dValidation, ZeroDivisorOverride) {
  Pool2d p = window(2);
  p.divisor_override = 0;
  expect_rejected({1, 1, 4, 4}, p, "divisor_override must not be zero", true);
}

TEST(Pool2dValidation, PlaneOverflowsInt32Indexing) {
  expect_rejected({1, 1, 65536, 32768}, window(2), "32-bit in-plane indexing would overflow");
}

TEST(Pool2dCost, MatchesTheRoofline) {
  const Shape x{32, 64, 112, 112};
  const Cost values = max_pool2d_cost(x, DType::f16, window(3, 2, 1));
  const double outputs = 32.0 * 64 * 56 * 56, inputs = 32.0 * 64 * 112 * 112;
  EXPECT_DOUBLE_EQ(values.flops, outputs * 9);
  EXPECT_DOUBLE_EQ(values.bytes, (inputs + outputs) * 2);
  const Cost with_indices = max_pool2d_with_indices_cost(x, DType::f32, window(3, 2, 1));
  EXPECT_DOUBLE_EQ(with_indices.bytes, (inputs + outputs) * 4 + outputs * 8);
  const Cost avg = avg_pool2d_cost(Shape{2, 128, 56, 56}, DType::f16, window(5, 2, 2));
  EXPECT_DOUBLE_EQ(avg.flops, 2.0 * 128 * 28 * 28 * 25);
}

}  // namespace
}  // namespace solops
