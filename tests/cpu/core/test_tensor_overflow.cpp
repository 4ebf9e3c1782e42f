// TensorRef and make_tensor given shapes whose element or byte counts pass int64, and data whose
// bytes would wrap around the address space: refused with an error, never wrapped around.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "expect_error.hpp"
#include "host_tensor.hpp"
#include "solops/reference.hpp"
#include "solops/tensor.hpp"

namespace solops {
namespace {

using testing::expect_error;
using testing::HostTensor;
using testing::unholdable_tensor;
using Shape = std::vector<int64_t>;

constexpr int64_t k2To32 = int64_t{1} << 32;

TEST(TensorOverflow, MakeTensorRefusesShapesWhoseStridesPassInt64) {
  expect_error([] { make_tensor(nullptr, DType::f32, Shape{k2To32, k2To32}); },
               "make_tensor: shape [4294967296, 4294967296]: its sizes multiply past the int64 range");
  expect_error([] { make_tensor(nullptr, DType::f32, Shape{k2To32, k2To32, 0}); },
               "make_tensor: shape [4294967296, 4294967296, 0]: its sizes multiply past the int64 range (zeros aside)");
}

TEST(TensorOverflow, NumelAndBytesThrowRatherThanWrap) {
  expect_error([] { unholdable_tensor({k2To32, k2To32}).numel(); },
               "TensorRef::numel: shape [4294967296, 4294967296]: its sizes multiply past the int64 range");
  expect_error([] { unholdable_tensor({int64_t{1} << 62}, DType::i64).bytes(); },
               "TensorRef::bytes: elements * element size: 4611686018427387904 * 8 passes the int64 range");
  EXPECT_EQ(unholdable_tensor({int64_t{1} << 62}, DType::fp8_e4m3).bytes(), int64_t{1} << 62);
}

TEST(TensorOverflow, IsContiguousComparesStridesWithoutArithmetic) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  TensorRef t = make_tensor(nullptr, DType::f32, Shape{2, 3});
  t.strides = {kMax, 1};
  EXPECT_FALSE(t.is_contiguous());
  t.strides = {3, kMin};
  EXPECT_FALSE(t.is_contiguous());
  t = make_tensor(nullptr, DType::f32, Shape{1, 3});
  t.strides = {kMin, 1};  // a size-1 dim's stride is never read
  EXPECT_TRUE(t.is_contiguous());
}

TEST(TensorOverflow, DataWhoseBytesPassTheEndOfTheAddressSpaceIsRefused) {
  // 16 bytes from 8 below the end.
  const TensorRef x =
      make_tensor(reinterpret_cast<void*>(std::numeric_limits<uintptr_t>::max() - 7), DType::f32, Shape{4});
  HostTensor y({}, DType::f32);
  expect_error([&] { reference::vector_norm(x, y.ref(), {}); },
               "reference::vector_norm: x's 16 bytes from its data pointer pass the end of the address space");
}

}  // namespace
}  // namespace solops
