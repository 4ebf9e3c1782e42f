// What the pooling GPU tests share: each op kind for 1-D, 2-D, 3-D and adaptive pools, the comparison of our
// kernel with the CPU reference on poisoned outputs, random inputs with special values, and the loop
// over random cases.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "gpu/gpu_support.hpp"
#include "manifest_rows.hpp"
#include "gpu/pool/pool2d_cases.hpp"
#include "solops/error.hpp"
#include "solops/reference.hpp"

namespace solops::testing {

enum class Op { max, max_with_indices, avg };

// The op of each kind for 1-D and 2-D windows, so that one comparison serves both.
inline std::vector<int64_t> output_shape(Op op, const std::vector<int64_t>& x_shape, const Pool1d& p) {
  return op == Op::avg ? avg_pool1d_output_shape(x_shape, p) : max_pool1d_output_shape(x_shape, p);
}
inline std::vector<int64_t> output_shape(Op op, const std::vector<int64_t>& x_shape, const Pool2d& p) {
  return op == Op::avg ? avg_pool2d_output_shape(x_shape, p) : max_pool2d_output_shape(x_shape, p);
}

inline std::vector<int64_t> output_shape(Op op, const std::vector<int64_t>& x_shape, const Pool3d& p) {
  return op == Op::avg ? avg_pool3d_output_shape(x_shape, p) : max_pool3d_output_shape(x_shape, p);
}
inline std::vector<int64_t> output_shape(Op, const std::vector<int64_t>& x_shape, const AdaptivePool2d& p) {
  return adaptive_pool2d_output_shape(x_shape, p);
}

inline void run_reference(Op op, const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                          const Pool1d& p) {
  if (op == Op::avg) reference::avg_pool1d(x, y, p);
  else reference::max_pool1d(x, y, indices, p);
}
inline void run_reference(Op op, const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                          const Pool2d& p) {
  if (op == Op::avg) reference::avg_pool2d(x, y, p);
  else reference::max_pool2d(x, y, indices, p);
}

inline void run_reference(Op op, const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                          const Pool3d& p) {
  if (op == Op::avg) reference::avg_pool3d(x, y, p);
  else reference::max_pool3d(x, y, indices, p);
}
inline void run_reference(Op op, const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                          const AdaptivePool2d& p) {
  if (op == Op::avg) reference::adaptive_avg_pool2d(x, y, p);
  else reference::adaptive_max_pool2d(x, y, indices, p);
}

inline void run_device(Op op, const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                       const Pool1d& p) {
  switch (op) {
    case Op::max: max_pool1d(x, y, p); break;
    case Op::max_with_indices: max_pool1d_with_indices(x, y, indices, p); break;
    case Op::avg: avg_pool1d(x, y, p); break;
  }
}
inline void run_device(Op op, const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                       const Pool2d& p) {
  switch (op) {
    case Op::max: max_pool2d(x, y, p); break;
    case Op::max_with_indices: max_pool2d_with_indices(x, y, indices, p); break;
    case Op::avg: avg_pool2d(x, y, p); break;
  }
}

inline void run_device(Op op, const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                       const Pool3d& p) {
  switch (op) {
    case Op::max: max_pool3d(x, y, p); break;
    case Op::max_with_indices: max_pool3d_with_indices(x, y, indices, p); break;
    case Op::avg: avg_pool3d(x, y, p); break;
  }
}
inline void run_device(Op op, const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                       const AdaptivePool2d& p) {
  switch (op) {
    case Op::max: adaptive_max_pool2d(x, y, p); break;
    case Op::max_with_indices: adaptive_max_pool2d_with_indices(x, y, indices, p); break;
    case Op::avg: adaptive_avg_pool2d(x, y, p); break;
  }
}

inline TensorRef on_device(const HostTensor& host, const DeviceBuffer& buffer) {
  return make_tensor(buffer.data(), host.dtype, host.shape, 0);
}

// Runs our kernel and the reference on x; returns a description of the first disagreement, or
// an empty string. The device tensors start `offset` elements into their allocations.
template <class Params>
std::string compare_with_reference(Op op, HostTensor& x, const Params& p, size_t offset = 0) {
  const auto shape = output_shape(op, x.shape, p);
  HostTensor expected(shape, x.dtype), expected_indices(shape, DType::i64);
  HostTensor actual(shape, x.dtype), actual_indices(shape, DType::i64);
  const TensorRef expected_indices_ref = expected_indices.ref();
  run_reference(op, x.ref(), expected.ref(), &expected_indices_ref, p);

  DeviceBuffer x_device(x.bytes.size(), offset * dtype_size(x.dtype)),
      y_device(actual.bytes.size(), offset * dtype_size(x.dtype)),
      indices_device(actual_indices.bytes.size(), offset * sizeof(int64_t));
  x_device.upload(x.bytes.data());
  y_device.poison();
  indices_device.poison();
  const TensorRef y_ref = on_device(actual, y_device);
  const TensorRef indices_ref = on_device(actual_indices, indices_device);
  run_device(op, on_device(x, x_device), y_ref, indices_ref, p);
  testing::cuda_ok(cudaDeviceSynchronize(), "kernel");
  y_device.download(actual.bytes.data());
  indices_device.download(actual_indices.bytes.data());

  const double tolerance = testing::avg_tolerance(x.dtype);
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double want = expected.at(i), got = actual.at(i);
    const bool value_ok = testing::same_value(want, got) ||
                          (op == Op::avg && std::abs(got - want) <= tolerance * (1 + std::abs(want)));
    if (!value_ok) {
      return detail::concat("output[", i, "] = ", got, ", reference ", want);
    }
    if (op == Op::max_with_indices && actual_indices.index_at(i) != expected_indices.index_at(i)) {
      return detail::concat("indices[", i, "] = ", actual_indices.index_at(i), ", reference ",
                            expected_indices.index_at(i), " (value ", want, ")");
    }
  }
  return {};
}

// Random normal values rounded to the dtype, with optional NaN / -inf / tie injection.
inline void fill_random(HostTensor& x, std::mt19937_64& rng, bool special_values) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 15);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = normal(rng);
    if (special_values) {
      switch (pick(rng)) {
        case 0: v = std::numeric_limits<double>::quiet_NaN(); break;
        case 1: case 2: v = -std::numeric_limits<double>::infinity(); break;
        case 3: case 4: case 5: v = std::round(v);  break;  // ties among small integers
        default: break;
      }
    }
    x.set(i, v);
  }
}

// Compares `count` random cases: draw() returns an input shape and a window, and
// combinations the shape rules reject are drawn again (the validation tests cover those). Dtypes
// rotate; every `special_every`-th input has NaN / -inf / ties.
template <class Draw>
void compare_random_cases(Op op, int count, int special_every, std::mt19937_64& rng, Draw&& draw) {
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  for (int cases = 0; cases < count;) {
    const auto [shape, p] = draw();
    try {
      output_shape(op, shape, p);
    } catch (const Error&) {
      continue;
    }
    HostTensor x(shape, dtypes[cases % 3]);
    fill_random(x, rng, cases % special_every == 0);
    EXPECT_EQ(compare_with_reference(op, x, p), "")
        << "case " << cases << " shape " << detail::shape_text(shape) << " " << dtype_name(x.dtype) << " "
        << describe(p);
    ++cases;
  }
}

// A 2-D or 3-D window (Pool2d, Pool3d) from a manifest row's params: PyTorch's keyword arguments,
// each an int or a per-axis list; absent keys take PyTorch's defaults.
template <class Window>
Window window_from_manifest(const nlohmann::json& params) {
  constexpr size_t kAxes = std::tuple_size_v<decltype(Window::kernel_size)>;
  const auto given = [&](const char* key) { return params.contains(key) && !params[key].is_null(); };
  const auto per_axis = [&](const char* key, int64_t fallback) {
    std::array<int64_t, kAxes> values;
    values.fill(fallback);
    if (given(key)) {
      const auto& v = params[key];
      for (size_t a = 0; a < kAxes; ++a) values[a] = (v.is_number() ? v : v[a]).template get<int64_t>();
    }
    return values;
  };
  Window p;
  p.kernel_size = per_axis("kernel_size", 1);
  if (given("stride")) p.stride = per_axis("stride", 1);
  p.padding = per_axis("padding", 0);
  p.dilation = per_axis("dilation", 1);
  p.ceil_mode = params.value("ceil_mode", false);
  p.count_include_pad = params.value("count_include_pad", true);
  if (given("divisor_override")) p.divisor_override = params["divisor_override"].template get<int64_t>();
  return p;
}

// Calls visit(row, x) for every manifest row of `op`, with x filled with random normal values of
// the row's input shape and dtype; returns how many rows there were.
template <class Visit>
int for_each_catalogue_row(std::string_view op, std::mt19937_64& rng, Visit&& visit) {
  const std::vector<nlohmann::json> rows = catalogue_rows(op);
  for (const auto& row : rows) {
    HostTensor x(row["tensors"]["input"].template get<std::vector<int64_t>>(), parse_dtype(row["dtype"]));
    fill_random(x, rng, false);
    visit(row, x);
  }
  return static_cast<int>(rows.size());
}

}  // namespace solops::testing
