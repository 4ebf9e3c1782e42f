// Helpers shared by the pooling tests: host buffers in any float dtype, parameter text.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/host_values.hpp"
#include "solops/pool.hpp"

namespace solops::testing {

// A host tensor whose storage is raw bytes of its dtype.
struct HostTensor {
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;

  HostTensor(std::vector<int64_t> shape_, DType dtype_) : shape(std::move(shape_)), dtype(dtype_) {
    int64_t count = 1;
    for (int64_t s : shape) count *= s;
    bytes.assign(static_cast<size_t>(count * dtype_size(dtype)), 0);
  }
  int64_t numel() const { return static_cast<int64_t>(bytes.size()) / dtype_size(dtype); }
  TensorRef ref() { return make_tensor(bytes.data(), dtype, shape); }
  double at(int64_t i) { return detail::load_value(ref(), i); }
  void set(int64_t i, double v) { detail::store_value(ref(), i, v); }
  int64_t index_at(int64_t i) const {
    int64_t v;
    std::memcpy(&v, bytes.data() + i * sizeof(int64_t), sizeof v);
    return v;
  }
  // Every byte 0xFF: NaN for every float dtype, -1 for indices. Catches unwritten outputs.
  void poison() { std::memset(bytes.data(), 0xFF, bytes.size()); }
};

// The parameters of a 2-D or 3-D window (Pool2d, Pool3d), for failure messages.
template <class Window>
std::string describe(const Window& p) {
  std::ostringstream out;
  const auto tuple = [&](const auto& values) {
    out << "(";
    for (size_t a = 0; a < values.size(); ++a) out << (a ? "," : "") << values[a];
    out << ")";
  };
  out << "kernel=";
  tuple(p.kernel_size);
  out << " stride=";
  if (p.stride) tuple(*p.stride);
  else out << "None";
  out << " padding=";
  tuple(p.padding);
  out << " dilation=";
  tuple(p.dilation);
  out << " ceil=" << p.ceil_mode << " count_include_pad=" << p.count_include_pad;
  if (p.divisor_override) out << " divisor=" << *p.divisor_override;
  return out.str();
}

// Tolerance of avg-pool (spec §4.1): |out - ref| <= tol + tol * |ref|.
inline double avg_tolerance(DType dtype) {
  switch (dtype) {
    case DType::f16: return 1e-3;
    case DType::bf16: return 1.6e-2;
    default: return 1e-5;
  }
}

// Both NaN, or the same value: max-pool results are exact.
inline bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace solops::testing
