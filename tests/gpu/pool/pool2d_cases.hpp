// Helpers shared by the GPU pooling tests: parameter text and the avg-pool tolerance.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "host_tensor.hpp"
#include "solops/pool.hpp"

namespace solops::testing {

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

// The parameters of a 1-D window, for failure messages.
inline std::string describe(const Pool1d& p) {
  std::ostringstream out;
  out << "kernel=" << p.kernel_size << " stride=";
  if (p.stride) out << *p.stride;
  else out << "None";
  out << " padding=" << p.padding << " dilation=" << p.dilation << " ceil=" << p.ceil_mode
      << " count_include_pad=" << p.count_include_pad;
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

}  // namespace solops::testing
