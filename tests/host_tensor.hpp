// Host tensors of any dtype for the tests (and as C ABI tensors): filled from a pattern, compared with
// expected values.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
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

// The strides of a [N, C, H, W] tensor stored channels_last (torch.channels_last: C innermost, then W, H, N).
inline std::array<int64_t, 4> channels_last_strides(const std::vector<int64_t>& s) {
  return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

// Element i (logical order) of a 4-D tensor at its channels_last position.
inline int64_t channels_last_index(const std::vector<int64_t>& s, int64_t i) {
  const int64_t w = i % s[3], h = i / s[3] % s[2], c = i / (s[2] * s[3]) % s[1], n = i / (s[1] * s[2] * s[3]);
  const auto strides = channels_last_strides(s);
  return n * strides[0] + c * strides[1] + h * strides[2] + w * strides[3];
}

// `t`'s bytes in channels_last storage.
inline std::vector<unsigned char> to_channels_last(const HostTensor& t) {
  std::vector<unsigned char> bytes(t.bytes.size());
  const int64_t size = dtype_size(t.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    std::copy_n(t.bytes.data() + i * size, size, bytes.data() + channels_last_index(t.shape, i) * size);
  }
  return bytes;
}

// The inverse: channels_last storage `bytes` of `t`'s shape back into `t` (logical order).
inline void from_channels_last(const std::vector<unsigned char>& bytes, HostTensor& t) {
  const int64_t size = dtype_size(t.dtype);
  for (int64_t i = 0; i < t.numel(); ++i) {
    std::copy_n(bytes.data() + channels_last_index(t.shape, i) * size, size, t.bytes.data() + i * size);
  }
}

// A 4-D tensor's values held in channels_last storage: ref() views them with channels_last strides,
// logical() copies them back in contiguous order.
struct ChannelsLastTensor {
  HostTensor storage;

  explicit ChannelsLastTensor(const HostTensor& t) : storage(t) { storage.bytes = to_channels_last(t); }
  TensorRef ref() {
    TensorRef r = storage.ref();
    const auto strides = channels_last_strides(storage.shape);
    std::copy(strides.begin(), strides.end(), r.strides.begin());
    return r;
  }
  HostTensor logical() const {
    HostTensor t(storage.shape, storage.dtype);
    from_channels_last(storage.bytes, t);
    return t;
  }
};

// Both NaN, or the same value: what exact results must be.
inline bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace solops::testing
