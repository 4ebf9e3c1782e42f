// The 1-D pools (spec §4.0–4.3): shape rules, one test per validation rule, the CPU references
// against cases computed by hand, the cost model and the C ABI.
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
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Pool1d window(int64_t k, std::optional<int64_t> s = std::nullopt, int64_t p = 0, int64_t d = 1,
              bool ceil = false, bool count_include_pad = true) {
  return {k, s, p, d, ceil, count_include_pad};
}

TEST(Pool1dOutputShape, BatchedUnbatchedCeilAndDefaultStride) {
  EXPECT_EQ(max_pool1d_output_shape(Shape{32, 80, 4096}, window(3, 3)), (Shape{32, 80, 1365}));
  EXPECT_EQ(max_pool1d_output_shape(Shape{80, 4096}, window(3)), (Shape{80, 1365}));
  EXPECT_EQ(max_pool1d_output_shape(Shape{64, 256, 128}, window(128, 1)), (Shape{64, 256, 1}));
  // Spec example: I=5, k=2, s=2 gives 2 outputs, 3 in ceil mode.
  EXPECT_EQ(avg_pool1d_output_shape(Shape{1, 1, 5}, window(2, 2)), (Shape{1, 1, 2}));
  EXPECT_EQ(avg_pool1d_output_shape(Shape{1, 1, 5}, window(2, 2, 0, 1, true)), (Shape{1, 1, 3}));
  // Catalogue: ecg k5 s2 p2 d2 ceil over 2048 -> ceil((2048 + 4 - 9) / 2) + 1 = 1023.
  EXPECT_EQ(max_pool1d_output_shape(Shape{16, 128, 2048}, window(5, 2, 2, 2, true)), (Shape{16, 128, 1023}));
  EXPECT_EQ(max_pool1d_output_shape(Shape{0, 3, 9}, window(3)), (Shape{0, 3, 3}));
}

void expect_rejected(const Shape& shape, const Pool1d& p, const std::string& fragment, bool avg = false) {
  try {
    avg ? avg_pool1d_output_shape(shape, p) : max_pool1d_output_shape(shape, p);
    ADD_FAILURE() << "accepted, expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::invalid_argument);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(avg ? "avg_pool1d" : "max_pool1d"), std::string::npos) << e.what();
  }
}

TEST(Pool1dValidation, WrongRank) {
  expect_rejected({8}, window(2), "2-D [C, L] or 3-D [N, C, L]");
  expect_rejected({1, 2, 8, 8}, window(2), "2-D [C, L] or 3-D [N, C, L]");
}

TEST(Pool1dValidation, EmptyNonBatchDim) { expect_rejected({2, 0, 8}, window(2), "empty dim"); }

TEST(Pool1dValidation, ParameterRulesNameTheScalarParameter) {
  expect_rejected({1, 1, 8}, window(0), "kernel_size = 0 must be >= 1");
  expect_rejected({1, 1, 8}, window(2, 0), "stride = 0 must be >= 1");
  expect_rejected({1, 1, 8}, window(2, 1, 0, 0), "dilation = 0 must be >= 1");
  expect_rejected({1, 1, 8}, window(2, 1, 0, 2), "avg-pool has no dilation", true);
  expect_rejected({1, 1, 8}, window(3, 1, -1), "padding = -1 must be >= 0");
  expect_rejected({1, 1, 8}, window(3, 1, 2), "must be at most half the kernel size (kernel_size = 3)");
}

TEST(Pool1dValidation, WindowsThatMissTheInput) {
  expect_rejected({1, 1, 4}, window(7, 1, 1), "output size along L would be");
  // I=1, k=2, d=2, p=1: the taps -1 and 1 miss [0, 1).
  expect_rejected({1, 1, 1}, window(2, 1, 1, 2), "window 0 along L has no element inside the input");
}

HostTensor filled(Shape shape, const std::vector<double>& values) {
  HostTensor t(std::move(shape), DType::f32);
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<double> avg_row(const std::vector<double>& x, const Pool1d& p) {
  HostTensor in = filled({1, static_cast<int64_t>(x.size())}, x);  // unbatched [C, L]
  HostTensor out(avg_pool1d_output_shape(in.shape, p), DType::f32);
  out.poison();
  reference::avg_pool1d(in.ref(), out.ref(), p);
  std::vector<double> values;
  for (int64_t i = 0; i < out.numel(); ++i) values.push_back(out.at(i));
  return values;
}

TEST(AvgPool1dReference, SpecExamples) {
  // I=6, k=3, s=2, p=1, ceil, all ones -> [2/3, 1, 1, 1/2] with padding counted, all 1 without.
  const std::vector<double> ones(6, 1.0);
  const auto included = avg_row(ones, window(3, 2, 1, 1, true, true));
  ASSERT_EQ(included.size(), 4u);
  EXPECT_NEAR(included[0], 2.0 / 3, 1e-7);
  EXPECT_EQ(included[1], 1.0);
  EXPECT_EQ(included[2], 1.0);
  EXPECT_EQ(included[3], 0.5);
  EXPECT_EQ(avg_row(ones, window(3, 2, 1, 1, true, false)), std::vector<double>(4, 1.0));
  // I=5, k=2, s=2, ceil on 0..4 -> [0.5, 2.5, 4.0]: the last divisor is 1.
  EXPECT_EQ(avg_row({0, 1, 2, 3, 4}, window(2, 2, 0, 1, true)), (std::vector<double>{0.5, 2.5, 4.0}));
}

struct MaxResult {
  std::vector<double> values;
  std::vector<int64_t> indices;
};

MaxResult max_row(const std::vector<double>& x, const Pool1d& p) {
  HostTensor in = filled({1, 1, static_cast<int64_t>(x.size())}, x);
  const auto shape = max_pool1d_output_shape(in.shape, p);
  HostTensor out(shape, DType::f32), indices(shape, DType::i64);
  out.poison();
  indices.poison();
  const TensorRef indices_ref = indices.ref();
  reference::max_pool1d(in.ref(), out.ref(), &indices_ref, p);
  MaxResult r;
  for (int64_t i = 0; i < out.numel(); ++i) {
    r.values.push_back(out.at(i));
    r.indices.push_back(indices.index_at(i));
  }
  return r;
}

TEST(MaxPool1dReference, AllMinusInfWindowsReportTheirFirstRealTap) {
  // Spec §4.3: k=3, s=1, p=1 over [-inf] * 4 -> indices [0, 0, 1, 2].
  const auto r = max_row(std::vector<double>(4, -kInf), window(3, 1, 1));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{0, 0, 1, 2}));
  EXPECT_EQ(r.values, std::vector<double>(4, -kInf));
}

TEST(MaxPool1dReference, TiesKeepTheFirstAndTheLastNaNWins) {
  const auto ties = max_row({5, 5, 1, 5}, window(4, 1));
  EXPECT_EQ(ties.indices, (std::vector<int64_t>{0}));
  const auto nans = max_row({1, kNaN, 9, kNaN, 2}, window(5, 1));
  EXPECT_TRUE(std::isnan(nans.values[0]));
  EXPECT_EQ(nans.indices, (std::vector<int64_t>{3}));
}

TEST(MaxPool1dReference, DilatedCeilWindows) {
  // k=2, d=2, s=2, ceil over 0..5: windows {0,2}, {2,4}, {4} (the tap 6 is past the input).
  const auto r = max_row({0, 1, 2, 3, 4, 5}, window(2, 2, 0, 2, true));
  EXPECT_EQ(r.values, (std::vector<double>{2, 4, 4}));
  EXPECT_EQ(r.indices, (std::vector<int64_t>{2, 4, 4}));
  EXPECT_EQ(max_row({0, 1, 2, 3, 4, 5}, window(2, 2, 0, 2, false)).values, (std::vector<double>{2, 4}));
}

TEST(Pool1dCost, MatchesTheRoofline) {
  const Cost values = max_pool1d_cost(Shape{32, 80, 4096}, DType::f16, window(3, 3));
  const double outputs = 32.0 * 80 * 1365, inputs = 32.0 * 80 * 4096;
  EXPECT_DOUBLE_EQ(values.flops, outputs * 3);
  EXPECT_DOUBLE_EQ(values.bytes, (inputs + outputs) * 2);
  EXPECT_DOUBLE_EQ(max_pool1d_with_indices_cost(Shape{32, 80, 4096}, DType::f32, window(3, 3)).bytes,
                   (inputs + outputs) * 4 + outputs * 8);
  EXPECT_DOUBLE_EQ(avg_pool1d_cost(Shape{4, 128, 4096}, DType::f16, window(3, 2, 1)).flops, 4.0 * 128 * 2048 * 3);
}

TEST(Pool1dCApi, ShapeReferenceAndNullPointers) {
  solops_pool1d_params p{};
  p.kernel_size = 3;
  p.has_stride = 1;
  p.stride = 2;
  p.padding = 1;
  p.dilation = 1;
  p.count_include_pad = 1;
  const int64_t x_shape[3] = {4, 128, 4096};
  int32_t rank = 0;
  int64_t shape[SOLOPS_MAX_RANK] = {};
  ASSERT_EQ(solops_avg_pool1d_output_shape(3, x_shape, &p, &rank, shape), SOLOPS_OK) << solops_last_error();
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(shape[2], 2048);
  EXPECT_EQ(solops_max_pool1d_output_shape(3, x_shape, nullptr, &rank, shape), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("solops_max_pool1d_output_shape: params is a null pointer"),
            std::string::npos);
  EXPECT_EQ(solops_max_pool1d(nullptr, nullptr, nullptr, &p, nullptr), SOLOPS_INVALID_ARGUMENT);

  HostTensor in = filled({1, 6}, std::vector<double>(6, 1.0));
  HostTensor out({1, 3}, DType::f32);
  const auto as_c = [](HostTensor& t) {
    solops_tensor c{};
    c.data = t.bytes.data();
    c.dtype = static_cast<int32_t>(t.dtype);
    c.rank = static_cast<int32_t>(t.shape.size());
    for (int32_t i = c.rank - 1, stride = 1; i >= 0; stride *= static_cast<int32_t>(t.shape[i]), --i) {
      c.shape[i] = t.shape[i];
      c.strides[i] = stride;
    }
    c.device = SOLOPS_CPU;
    return c;
  };
  const solops_tensor in_c = as_c(in), out_c = as_c(out);
  ASSERT_EQ(solops_reference_avg_pool1d(&in_c, &out_c, &p), SOLOPS_OK) << solops_last_error();
  EXPECT_NEAR(out.at(0), 2.0 / 3, 1e-7);
  EXPECT_EQ(out.at(2), 1.0);
  // The device entry point rejects host memory with a clear error.
  EXPECT_EQ(solops_avg_pool1d(&in_c, &out_c, &p, nullptr), SOLOPS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(solops_last_error()).find("avg_pool1d"), std::string::npos) << solops_last_error();
}

}  // namespace
}  // namespace solops
