// Host tensors of any dtype for the tests (and as C ABI tensors): filled from a pattern, compared with
// expected values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/host_values.hpp"
#include "solops/c/common.h"
#include "solops/tensor.hpp"

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
  void poison() {
    if (!bytes.empty()) std::memset(bytes.data(), 0xFF, bytes.size());  // memset of null is undefined, even of 0 bytes
  }
};

// A tensor of `shape` and `dtype` whose elements cycle through `values`.
inline HostTensor filled(std::vector<int64_t> shape, const std::vector<double>& values, DType dtype = DType::f32) {
  HostTensor t(std::move(shape), dtype);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, values[static_cast<size_t>(i) % values.size()]);
  return t;
}

// Each element within `tolerance` (relative, and absolute near zero) of its expected value; NaN
// where NaN is expected.
inline void expect_values(HostTensor& t, const std::vector<double>& want, double tolerance = 1e-6) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(t.at(i))) << "element " << i;
    else EXPECT_NEAR(t.at(i), want[i], tolerance * (1 + std::abs(want[i]))) << "element " << i;
  }
}

// A host tensor as the C ABI's solops_tensor.
inline solops_tensor c_tensor(HostTensor& t) {
  solops_tensor c{};
  const TensorRef ref = t.ref();
  c.data = ref.data;
  c.dtype = static_cast<int32_t>(ref.dtype);
  c.rank = ref.rank;
  for (int i = 0; i < ref.rank; ++i) {
    c.shape[i] = ref.shape[i];
    c.strides[i] = ref.strides[i];
  }
  c.device = SOLOPS_CPU;
  return c;
}

// A tensor of a shape no memory could hold (its elements or bytes pass int64, which make_tensor
// refuses), over a few bytes: every check must refuse it before reading one.
inline TensorRef unholdable_tensor(const std::vector<int64_t>& shape, DType dtype = DType::f32) {
  alignas(8) static unsigned char storage[8];
  TensorRef t;
  t.data = storage;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  std::copy(shape.begin(), shape.end(), t.shape.begin());  // strides stay 0
  return t;
}

// Both NaN, or the same value: what exact results must be.
inline bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace solops::testing
