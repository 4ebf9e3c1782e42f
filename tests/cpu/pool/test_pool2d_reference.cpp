// The CPU references against cases computed by hand (spec §4.1–4.3 examples).
#include <gtest/gtest.h>

#include <limits>

#include "host_tensor.hpp"
#include "solops/error.hpp"
#include "solops/reference.hpp"

namespace solops {
namespace {

using testing::HostTensor;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

HostTensor filled(std::vector<int64_t> shape, const std::vector<double>& values, DType dtype = DType::f32) {
  HostTensor t(std::move(shape), dtype);
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

// A 1-D case as a [1, 1, 1, L] plane with a (1, k) window.
Pool2d row_window(int64_t k, int64_t s, int64_t p, bool ceil = false, bool count_include_pad = true) {
  Pool2d pool;
  pool.kernel_size = {1, k};
  pool.stride = std::array<int64_t, 2>{1, s};
  pool.padding = {0, p};
  pool.ceil_mode = ceil;
  pool.count_include_pad = count_include_pad;
  return pool;
}

std::vector<double> avg_row(const std::vector<double>& x, const Pool2d& p) {
  HostTensor in = filled({1, 1, 1, static_cast<int64_t>(x.size())}, x);
  HostTensor out(avg_pool2d_output_shape(in.shape, p), DType::f32);
  out.poison();
  reference::avg_pool2d(in.ref(), out.ref(), p);
  std::vector<double> values;
  for (int64_t i = 0; i < out.numel(); ++i) values.push_back(out.at(i));
  return values;
}

TEST(AvgPool2dReference, CeilModeDivisorWithAndWithoutPadding) {
  // Spec §4.1: I=6, k=3, s=2, p=1, ceil, all ones -> [2/3, 1, 1, 1/2] / [1, 1, 1, 1].
  const std::vector<double> ones(6, 1.0);
  const auto included = avg_row(ones, row_window(3, 2, 1, true, true));
  ASSERT_EQ(included.size(), 4u);
  EXPECT_NEAR(included[0], 2.0 / 3, 1e-7);
  EXPECT_NEAR(included[1], 1.0, 1e-7);
  EXPECT_NEAR(included[2], 1.0, 1e-7);
  EXPECT_NEAR(included[3], 0.5, 1e-7);
  EXPECT_EQ(avg_row(ones, row_window(3, 2, 1, true, false)), std::vector<double>(4, 1.0));
  // I=5, k=2, s=2, ceil on 0..4 -> [0.5, 2.5, 4.0]: the last window's divisor is 1.
  EXPECT_EQ(avg_row({0, 1, 2, 3, 4}, row_window(2, 2, 0, true)), (std::vector<double>{0.5, 2.5, 4.0}));
}

TEST(AvgPool2dReference, DivisorOverrideReplacesTheCount) {
  Pool2d p;
  p.kernel_size = {2, 2};
  p.divisor_override = -4;
  HostTensor x = filled({1, 2, 2}, {1, 2, 3, 4});
  HostTensor y({1, 1, 1}, DType::f32);
  reference::avg_pool2d(x.ref(), y.ref(), p);
  EXPECT_EQ(y.at(0), -2.5);
}

struct MaxResult {
  std::vector<double> values;
  std::vector<int64_t> indices;
};

MaxResult max_row(const std::vector<double>& x, const Pool2d& p, DType dtype = DType::f32) {
  HostTensor in = filled({1, 1, static_cast<int64_t>(x.size())}, x, dtype);
  const auto shape = max_pool2d_output_shape(in.shape, p);
  HostTensor out(shape, dtype), indices(shape, DType::i64);
  out.poison();
  indices.poison();
  const TensorRef indices_ref = indices.ref();
  reference::max_pool2d(in.ref(), out.ref(), &indices_ref, p);
  MaxResult r;
  for (int64_t i = 0; i < out.numel(); ++i) {
    r.values.push_back(out.at(i));
    r.indices.push_back(indices.index_at(i));
  }
  return r;
}

TEST(MaxPool2dReference, TiesKeepTheFirstTap) {
  const auto r = max_row({3, 3, 1, 5, 5, 5}, row_window(3, 3, 0));
  EXPECT_EQ(r.values, (std::vector<double>{3, 5}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{0, 3}));
}

TEST(MaxPool2dReference, AnyNaNWinsAndTheLastNaNIsReported) {
  const auto r = max_row({1, kNaN, 7, kNaN, 2, 9}, row_window(6, 1, 0), DType::bf16);
  ASSERT_EQ(r.values.size(), 1u);
  EXPECT_TRUE(std::isnan(r.values[0]));
  EXPECT_EQ(r.indices[0], 3);
}

TEST(MaxPool2dReference, AllMinusInfReportsTheFirstRealTap) {
  // Spec §4.3: k=3, s=1, p=1 over [-inf]*4 -> indices [0, 0, 1, 2].
  const auto r = max_row({-kInf, -kInf, -kInf, -kInf}, row_window(3, 1, 1), DType::f16);
  EXPECT_EQ(r.values, std::vector<double>(4, -kInf));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{0, 0, 1, 2}));
}

TEST(MaxPool2dReference, PaddingNeverWins) {
  const auto r = max_row({-3, -2, -5}, row_window(3, 2, 1));
  EXPECT_EQ(r.values, (std::vector<double>{-2, -2}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{1, 1}));
}

TEST(MaxPool2dReference, DilatedWindowIndexIsInPlanePosition) {
  // 2 planes of 3x4; kernel 2x2, dilation 2: taps (0,0),(0,2),(2,0),(2,2) of each plane.
  Pool2d p;
  p.kernel_size = {2, 2};
  p.stride = std::array<int64_t, 2>{1, 1};
  p.dilation = {2, 2};
  std::vector<double> values(24);
  for (int i = 0; i < 24; ++i) values[i] = (i * 7) % 11;
  HostTensor x = filled({2, 3, 4}, values);
  const auto shape = max_pool2d_output_shape(x.shape, p);
  ASSERT_EQ(shape, (std::vector<int64_t>{2, 1, 2}));
  HostTensor y(shape, DType::f32), indices(shape, DType::i64);
  const TensorRef indices_ref = indices.ref();
  reference::max_pool2d(x.ref(), y.ref(), &indices_ref, p);
  // Plane 1, output (0, 1): taps at in-plane 1, 3, 9, 11 (i = 13, 15, 21, 23) -> 3, 6, 4, 7.
  EXPECT_EQ(y.at(3), 7);
  EXPECT_EQ(indices.index_at(3), 11);
}

TEST(Pool2dReference, RejectsDeviceTensorsAndMismatchedOutputs) {
  Pool2d p;
  p.kernel_size = {2, 2};
  HostTensor x = filled({1, 4, 4}, std::vector<double>(16, 1.0));
  HostTensor wrong_shape({1, 3, 3}, DType::f32);
  EXPECT_THROW(reference::avg_pool2d(x.ref(), wrong_shape.ref(), p), Error);
  HostTensor wrong_dtype({1, 2, 2}, DType::f16);
  EXPECT_THROW(reference::avg_pool2d(x.ref(), wrong_dtype.ref(), p), Error);
  HostTensor y({1, 2, 2}, DType::f32);
  TensorRef on_device = x.ref();
  on_device.device = 0;
  EXPECT_THROW(reference::avg_pool2d(on_device, y.ref(), p), Error);
}

}  // namespace
}  // namespace solops
