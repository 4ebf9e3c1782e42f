// The CPU references against PyTorch: tests/golden/pool2d.json holds F.max_pool2d / F.avg_pool2d
// results that tests/golden/make_golden.py recorded on the GPU machine (spec §4.0–4.3).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "solops/error.hpp"
#include "solops/pool.hpp"
#include "solops/reference.hpp"
#include "solops/tensor.hpp"
#include "source_path.hpp"


namespace {

using nlohmann::json;
using solops::DType;

// Written into outputs before the call, so an element the reference never writes cannot pass.
// No golden value is anywhere near it.
constexpr float kUnwrittenValue = -777.0f;
constexpr int64_t kUnwrittenIndex = -777;
constexpr int kMismatchesShown = 5;

// A missing file throws, so every test that needs it fails (never skips) with the path in the message.
const json& golden() {
  static const json file = [] {
    const std::string path = solops::testing::source_path("tests/golden/pool2d.json");
    std::ifstream in(path);
    if (!in) {
      throw std::runtime_error("golden file missing: " + path + " (make it with tests/golden/make_golden.py)");
    }
    return json::parse(in);
  }();
  return file;
}

DType dtype_of(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "f16") return DType::f16;
  if (name == "bf16") return DType::bf16;
  throw std::runtime_error("unknown golden dtype: " + name);
}

// JSON has no NaN or infinity, so the generator writes them as strings.
float decode_value(const json& value) {
  if (!value.is_string()) return static_cast<float>(value.get<double>());
  const std::string text = value.get<std::string>();
  if (text == "nan") return std::numeric_limits<float>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<float>::infinity();
  if (text == "-inf") return -std::numeric_limits<float>::infinity();
  throw std::runtime_error("unknown golden value: " + text);
}

std::vector<float> decode_values(const json& values) {
  std::vector<float> decoded;
  decoded.reserve(values.size());
  for (const json& value : values) decoded.push_back(decode_value(value));
  return decoded;
}

// A host buffer of f32, f16 or bf16 elements, read and written as float. Golden inputs are
// exactly representable in their dtype, so the conversions in and out are exact.
class HostTensor {
 public:
  HostTensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    int64_t numel = 1;
    for (int64_t size : shape_) numel *= size;
    bytes_.resize(static_cast<size_t>(numel * solops::dtype_size(dtype_)));
  }

  int64_t numel() const { return static_cast<int64_t>(bytes_.size()) / solops::dtype_size(dtype_); }
  solops::TensorRef ref() { return solops::make_tensor(bytes_.data(), dtype_, shape_); }

  void set(int64_t i, float value) {
    std::byte* element = bytes_.data() + i * solops::dtype_size(dtype_);
    switch (dtype_) {
      case DType::f32: std::memcpy(element, &value, sizeof value); return;
      case DType::f16: {
        const __half half = __float2half_rn(value);
        std::memcpy(element, &half, sizeof half);
        return;
      }
      case DType::bf16: {
        const __nv_bfloat16 bf16 = __float2bfloat16_rn(value);
        std::memcpy(element, &bf16, sizeof bf16);
        return;
      }
      default: throw std::runtime_error("HostTensor holds f32, f16 or bf16 only");
    }
  }

  float get(int64_t i) const {
    const std::byte* element = bytes_.data() + i * solops::dtype_size(dtype_);
    switch (dtype_) {
      case DType::f32: {
        float value;
        std::memcpy(&value, element, sizeof value);
        return value;
      }
      case DType::f16: {
        __half half;
        std::memcpy(&half, element, sizeof half);
        return __half2float(half);
      }
      case DType::bf16: {
        __nv_bfloat16 bf16;
        std::memcpy(&bf16, element, sizeof bf16);
        return __bfloat162float(bf16);
      }
      default: throw std::runtime_error("HostTensor holds f32, f16 or bf16 only");
    }
  }

  void fill(float value) {
    for (int64_t i = 0; i < numel(); ++i) set(i, value);
  }

  std::vector<float> values() const {
    std::vector<float> all(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) all[static_cast<size_t>(i)] = get(i);
    return all;
  }

 private:
  DType dtype_;
  std::vector<int64_t> shape_;
  std::vector<std::byte> bytes_;
};

// PyTorch takes an int for both axes or an (H, W) pair.
std::array<int64_t, 2> per_axis(const json& value) {
  if (value.is_array()) return {value.at(0).get<int64_t>(), value.at(1).get<int64_t>()};
  return {value.get<int64_t>(), value.get<int64_t>()};
}

// The golden params are PyTorch's keyword arguments; keys an op does not take are absent.
solops::Pool2d pool_params(const json& params) {
  solops::Pool2d pool;
  pool.kernel_size = per_axis(params.at("kernel_size"));
  if (!params.at("stride").is_null()) pool.stride = per_axis(params.at("stride"));
  pool.padding = per_axis(params.at("padding"));
  pool.ceil_mode = params.at("ceil_mode").get<bool>();
  if (params.contains("dilation")) pool.dilation = per_axis(params.at("dilation"));
  if (params.contains("count_include_pad")) pool.count_include_pad = params.at("count_include_pad").get<bool>();
  if (params.contains("divisor_override") && !params.at("divisor_override").is_null()) {
    pool.divisor_override = params.at("divisor_override").get<int64_t>();
  }
  return pool;
}

std::vector<int64_t> output_shape(const std::string& op, const std::vector<int64_t>& input_shape,
                                  const solops::Pool2d& pool) {
  if (op == "max_pool2d") return solops::max_pool2d_output_shape(input_shape, pool);
  if (op == "avg_pool2d") return solops::avg_pool2d_output_shape(input_shape, pool);
  throw std::runtime_error("unknown golden op: " + op);
}

// Max-pool returns one of its inputs: NaN where PyTorch has NaN, else the same value with the
// same sign (a -0 / +0 tie tells which tap won).
bool same_max_value(float actual, float expected) {
  if (std::isnan(expected)) return std::isnan(actual);
  return actual == expected && std::signbit(actual) == std::signbit(expected);
}

// Spec §1 tolerance |actual - expected| <= tol + tol * |expected|; §4.1 proposes 1e-5 for f32.
double avg_pool_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16: return 1e-3;
    case DType::bf16: return 1.6e-2;
    default: return 1e-5;
  }
}

bool close_avg_value(float actual, float expected, double tolerance) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  const double error = std::abs(static_cast<double>(actual) - static_cast<double>(expected));
  return error <= tolerance + tolerance * std::abs(static_cast<double>(expected));
}

// One failure per tensor, listing the first few flat positions that differ.
template <typename T, typename Match>
void expect_all_match(const std::vector<T>& actual, const std::vector<T>& expected, Match match,
                      const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int64_t mismatches = 0;
  std::ostringstream shown;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (match(actual[i], expected[i])) continue;
    if (mismatches < kMismatchesShown) shown << "\n  [" << i << "] got " << actual[i] << ", want " << expected[i];
    ++mismatches;
  }
  EXPECT_EQ(mismatches, 0) << what << ": " << mismatches << " of " << expected.size() << " differ" << shown.str();
}

void check_max_pool_case(const json& golden_case) {
  const DType dtype = dtype_of(golden_case.at("dtype").get<std::string>());
  const auto input_shape = golden_case.at("input_shape").get<std::vector<int64_t>>();
  const auto expected_shape = golden_case.at("output_shape").get<std::vector<int64_t>>();
  const solops::Pool2d pool = pool_params(golden_case.at("params"));
  EXPECT_EQ(solops::max_pool2d_output_shape(input_shape, pool), expected_shape);

  HostTensor x(dtype, input_shape);
  const std::vector<float> input = decode_values(golden_case.at("input"));
  for (size_t i = 0; i < input.size(); ++i) x.set(static_cast<int64_t>(i), input[i]);
  HostTensor y(dtype, expected_shape);
  y.fill(kUnwrittenValue);
  std::vector<int64_t> indices(static_cast<size_t>(y.numel()), kUnwrittenIndex);
  const solops::TensorRef indices_ref = solops::make_tensor(indices.data(), DType::i64, expected_shape);

  solops::reference::max_pool2d(x.ref(), y.ref(), &indices_ref, pool);

  expect_all_match(y.values(), decode_values(golden_case.at("output")), same_max_value, "output");
  expect_all_match(indices, golden_case.at("indices").get<std::vector<int64_t>>(), std::equal_to<int64_t>(),
                   "indices");
}

void check_avg_pool_case(const json& golden_case) {
  const DType dtype = dtype_of(golden_case.at("dtype").get<std::string>());
  const auto input_shape = golden_case.at("input_shape").get<std::vector<int64_t>>();
  const auto expected_shape = golden_case.at("output_shape").get<std::vector<int64_t>>();
  const solops::Pool2d pool = pool_params(golden_case.at("params"));
  EXPECT_EQ(solops::avg_pool2d_output_shape(input_shape, pool), expected_shape);

  HostTensor x(dtype, input_shape);
  const std::vector<float> input = decode_values(golden_case.at("input"));
  for (size_t i = 0; i < input.size(); ++i) x.set(static_cast<int64_t>(i), input[i]);
  HostTensor y(dtype, expected_shape);
  y.fill(kUnwrittenValue);

  solops::reference::avg_pool2d(x.ref(), y.ref(), pool);

  const double tolerance = avg_pool_tolerance(dtype);
  expect_all_match(
      y.values(), decode_values(golden_case.at("output")),
      [tolerance](float actual, float expected) { return close_avg_value(actual, expected, tolerance); }, "output");
}

// Runs check on every golden case of one op; an exception fails that case, not the rest.
template <typename Check>
void for_each_case(const std::string& op, Check check) {
  int cases_run = 0;
  for (const json& golden_case : golden().at("cases")) {
    if (golden_case.at("op") != op) continue;
    SCOPED_TRACE(op + " case \"" + golden_case.at("name").get<std::string>() + "\"");
    try {
      check(golden_case);
    } catch (const std::exception& error) {
      ADD_FAILURE() << "threw: " << error.what();
    }
    ++cases_run;
  }
  EXPECT_GT(cases_run, 0) << "no " << op << " case in the golden file";
}

TEST(Pool2dGolden, MaxPoolMatchesPyTorch) { for_each_case("max_pool2d", check_max_pool_case); }

TEST(Pool2dGolden, AvgPoolMatchesPyTorch) { for_each_case("avg_pool2d", check_avg_pool_case); }

// Parameter sets where PyTorch raised must throw solops::Error. So must those whose dilated
// windows can fall wholly in the padding: PyTorch accepts them, spec §4.0 rejects them.
TEST(Pool2dGolden, OutputShapesMatchPyTorch) {
  const json& shape_cases = golden().at("shape_cases");
  EXPECT_FALSE(shape_cases.empty());
  for (const json& shape_case : shape_cases) {
    SCOPED_TRACE(shape_case.dump());
    const auto op = shape_case.at("op").get<std::string>();
    const auto input_shape = shape_case.at("input_shape").get<std::vector<int64_t>>();
    const solops::Pool2d pool = pool_params(shape_case.at("params"));
    if (shape_case.at("output_shape").is_null() || shape_case.value("has_window_without_real_tap", false)) {
      EXPECT_THROW(output_shape(op, input_shape, pool), solops::Error);
      continue;
    }
    try {
      EXPECT_EQ(output_shape(op, input_shape, pool), shape_case.at("output_shape").get<std::vector<int64_t>>());
    } catch (const std::exception& error) {
      ADD_FAILURE() << "threw: " << error.what();
    }
  }
}

}  // namespace
