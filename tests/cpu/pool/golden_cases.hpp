// Helpers shared by the golden tests: reading the files tests/golden/make_golden.py writes, host
// tensors of their dtypes, PyTorch's keyword arguments as our parameters, and the comparisons
// (max-pool values and indices exact, means within the spec's tolerance).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "solops/error.hpp"
#include "solops/tensor.hpp"
#include "source_path.hpp"

namespace solops::testing::golden {

using nlohmann::json;

// Written into outputs before the call, so an element the reference never writes cannot pass.
// No golden value is anywhere near it.
constexpr float kUnwrittenValue = -777.0f;
constexpr int64_t kUnwrittenIndex = -777;
constexpr int kMismatchesShown = 5;

// A missing file throws, so every test that needs it fails (never skips) with the path in the message.
inline json load(const std::string& relative_path) {
  const std::string path = source_path(relative_path);
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("golden file missing: " + path +
                             " (make it on the GPU machine with python3 tests/golden/make_golden.py)");
  }
  return json::parse(in);
}

inline DType dtype_of(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "f16") return DType::f16;
  if (name == "bf16") return DType::bf16;
  throw std::runtime_error("unknown golden dtype: " + name);
}

// JSON has no NaN or infinity, so the generator writes them as strings.
inline float decode_value(const json& value) {
  if (!value.is_string()) return static_cast<float>(value.get<double>());
  const std::string text = value.get<std::string>();
  if (text == "nan") return std::numeric_limits<float>::quiet_NaN();
  if (text == "inf") return std::numeric_limits<float>::infinity();
  if (text == "-inf") return -std::numeric_limits<float>::infinity();
  throw std::runtime_error("unknown golden value: " + text);
}

inline std::vector<float> decode_values(const json& values) {
  std::vector<float> decoded;
  decoded.reserve(values.size());
  for (const json& value : values) decoded.push_back(decode_value(value));
  return decoded;
}

inline std::vector<int64_t> input_shape(const json& golden_case) {
  return golden_case.at("input_shape").get<std::vector<int64_t>>();
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

// PyTorch takes one int for every axis or one value per axis. Axes is int64_t (Pool1d) or an
// array of per-axis values.
template <class Axes>
Axes axis_values(const json& value) {
  const auto axis = [&value](size_t index) {
    return value.is_array() ? value.at(index).get<int64_t>() : value.get<int64_t>();
  };
  if constexpr (std::is_same_v<Axes, int64_t>) {
    return axis(0);
  } else {
    Axes values{};
    for (size_t index = 0; index < values.size(); ++index) values[index] = axis(index);
    return values;
  }
}

// The golden params of a sliding-window pool (Pool1d, Pool2d, Pool3d) are PyTorch's keyword
// arguments; keys an op does not take are absent.
template <class Window>
Window window_params(const json& params) {
  using Axes = decltype(Window::kernel_size);
  Window pool;
  pool.kernel_size = axis_values<Axes>(params.at("kernel_size"));
  if (!params.at("stride").is_null()) pool.stride = axis_values<Axes>(params.at("stride"));
  pool.padding = axis_values<Axes>(params.at("padding"));
  pool.ceil_mode = params.at("ceil_mode").get<bool>();
  if (params.contains("dilation")) pool.dilation = axis_values<Axes>(params.at("dilation"));
  if (params.contains("count_include_pad")) pool.count_include_pad = params.at("count_include_pad").get<bool>();
  if constexpr (requires { pool.divisor_override; }) {
    if (params.contains("divisor_override") && !params.at("divisor_override").is_null()) {
      pool.divisor_override = params.at("divisor_override").get<int64_t>();
    }
  }
  return pool;
}

// Max-pool returns one of its inputs: NaN where PyTorch has NaN, else the same value with the
// same sign (a -0 / +0 tie tells which tap won).
inline bool same_max_value(float actual, float expected) {
  if (std::isnan(expected)) return std::isnan(actual);
  return actual == expected && std::signbit(actual) == std::signbit(expected);
}

// Spec §1 tolerance |actual - expected| <= tol + tol * |expected|; §4.1 proposes 1e-5 for f32.
inline double mean_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16: return 1e-3;
    case DType::bf16: return 1.6e-2;
    default: return 1e-5;
  }
}

inline bool close_mean_value(float actual, float expected, double tolerance) {
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

// Runs a reference on one case's tensors: x, y and, for max-pools, indices (else null).
using RunReference = std::function<void(const TensorRef& x, const TensorRef& y, const TensorRef* indices)>;

// The case's input as a host tensor of its dtype, and an output of the case's shape marked unwritten.
struct CaseTensors {
  HostTensor x;
  HostTensor y;
};

inline CaseTensors case_tensors(const json& golden_case, DType dtype) {
  CaseTensors tensors{HostTensor(dtype, input_shape(golden_case)),
                      HostTensor(dtype, golden_case.at("output_shape").get<std::vector<int64_t>>())};
  const std::vector<float> input = decode_values(golden_case.at("input"));
  for (size_t i = 0; i < input.size(); ++i) tensors.x.set(static_cast<int64_t>(i), input[i]);
  tensors.y.fill(kUnwrittenValue);
  return tensors;
}

// rule_shape: our output-shape rule's answer for the case's input and params.
inline void check_max_case(const json& golden_case, const std::vector<int64_t>& rule_shape, const RunReference& run) {
  const DType dtype = dtype_of(golden_case.at("dtype").get<std::string>());
  const auto expected_shape = golden_case.at("output_shape").get<std::vector<int64_t>>();
  EXPECT_EQ(rule_shape, expected_shape);

  CaseTensors tensors = case_tensors(golden_case, dtype);
  std::vector<int64_t> indices(static_cast<size_t>(tensors.y.numel()), kUnwrittenIndex);
  const TensorRef indices_ref = make_tensor(indices.data(), DType::i64, expected_shape);

  run(tensors.x.ref(), tensors.y.ref(), &indices_ref);

  expect_all_match(tensors.y.values(), decode_values(golden_case.at("output")), same_max_value, "output");
  expect_all_match(indices, golden_case.at("indices").get<std::vector<int64_t>>(), std::equal_to<int64_t>(),
                   "indices");
}

inline void check_mean_case(const json& golden_case, const std::vector<int64_t>& rule_shape, const RunReference& run) {
  const DType dtype = dtype_of(golden_case.at("dtype").get<std::string>());
  EXPECT_EQ(rule_shape, golden_case.at("output_shape").get<std::vector<int64_t>>());

  CaseTensors tensors = case_tensors(golden_case, dtype);
  run(tensors.x.ref(), tensors.y.ref(), nullptr);

  const double tolerance = mean_tolerance(dtype);
  expect_all_match(
      tensors.y.values(), decode_values(golden_case.at("output")),
      [tolerance](float actual, float expected) { return close_mean_value(actual, expected, tolerance); }, "output");
}

// Runs check on every value case of one op; an exception fails that case, not the rest.
template <typename Check>
void for_each_case(const json& file, const std::string& op, Check check) {
  int cases_run = 0;
  for (const json& golden_case : file.at("cases")) {
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

// rule_shape(shape_case): our output-shape rule for the case's op, input shape and params.
// Parameter sets where PyTorch raised must throw solops::Error. So must those that PyTorch accepts
// and solops rejects, which the generator flags: dilated windows that can fall wholly in the
// padding (§4.0), adaptive output sizes of 0 (§4.4) and adaptive pools of zero channels (accepted
// by PyTorch's adaptive_avg_pool2d alone; docs/api.md).
template <typename RuleShape>
void check_shape_cases(const json& file, RuleShape rule_shape) {
  const json& shape_cases = file.at("shape_cases");
  EXPECT_FALSE(shape_cases.empty());
  for (const json& shape_case : shape_cases) {
    SCOPED_TRACE(shape_case.dump());
    if (shape_case.at("output_shape").is_null() || shape_case.value("has_window_without_real_tap", false) ||
        shape_case.value("has_empty_non_batch_axis", false)) {
      EXPECT_THROW(rule_shape(shape_case), solops::Error);
      continue;
    }
    try {
      EXPECT_EQ(rule_shape(shape_case), shape_case.at("output_shape").get<std::vector<int64_t>>());
    } catch (const std::exception& error) {
      ADD_FAILURE() << "threw: " << error.what();
    }
  }
}

}  // namespace solops::testing::golden
