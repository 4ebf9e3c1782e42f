// 2-D pooling kernels against the CPU references: every catalogue row, random shapes and params,
// NaN / -inf / tie inputs, and the device-side validation rules. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "gpu/pool/pool_gpu_checks.hpp"
#include "solops/error.hpp"

namespace solops {
namespace {

using testing::compare_with_reference;
using testing::DeviceBuffer;
using testing::fill_random;
using testing::HostTensor;
using testing::Op;

const char* op_name(Op op) {
  return op == Op::avg ? "AvgPool2dFwd" : op == Op::max ? "MaxPool2dFwd" : "MaxPool2dIndicesFwd";
}

class Pool2dGpu : public testing::GpuTestWithParam<Op> {};

TEST_P(Pool2dGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2026);
  const int rows = testing::for_each_catalogue_row(op_name(GetParam()), rng, [&](const auto& row, HostTensor& x) {
    const auto p = testing::window_from_manifest<Pool2d>(row["params"]);
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "")
        << row["workload"] << " " << row["dtype"] << " " << testing::describe(p);
  });
  EXPECT_GT(rows, 0) << "no catalogue rows for " << op_name(GetParam());
}

// Random geometry: odd sizes, size 1, unbatched input, padding, dilation, ceil mode, divisors.
Pool2d random_pool(Op op, std::mt19937_64& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Pool2d p;
  p.kernel_size = {uniform(1, 6), uniform(1, 6)};
  if (uniform(0, 3) > 0) p.stride = std::array<int64_t, 2>{uniform(1, 4), uniform(1, 4)};
  p.padding = {uniform(0, p.kernel_size[0] / 2), uniform(0, p.kernel_size[1] / 2)};
  if (op != Op::avg && uniform(0, 2) == 0) p.dilation = {uniform(1, 3), uniform(1, 3)};
  p.ceil_mode = uniform(0, 1) == 1;
  p.count_include_pad = uniform(0, 1) == 1;
  if (op == Op::avg && uniform(0, 4) == 0) p.divisor_override = uniform(0, 1) ? 7 : -3;
  return p;
}

std::vector<int64_t> random_shape(std::mt19937_64& rng) {
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  // Mostly small odd sizes; sometimes planes large enough to need several tiles per plane.
  const bool large = uniform(0, 5) == 0;
  const int64_t h = large ? uniform(60, 300) : uniform(1, 40);
  const int64_t w = large ? uniform(60, 300) : uniform(1, 40);
  const int64_t c = uniform(1, 5);
  if (uniform(0, 4) == 0) return {c, h, w};
  return {uniform(1, 3), c, h, w};
}

TEST_P(Pool2dGpu, RandomShapesAndParams) {
  std::mt19937_64 rng(7 + static_cast<int>(GetParam()));
  testing::compare_random_cases(GetParam(), 150, 4, rng, [&] {
    const auto shape = random_shape(rng);
    return std::pair{shape, random_pool(GetParam(), rng)};
  });
}

TEST_P(Pool2dGpu, NaNMinusInfAndTies) {
  std::mt19937_64 rng(99);
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x({2, 3, 37, 29}, dtype);
    fill_random(x, rng, true);
    Pool2d p;
    p.kernel_size = {3, 3};
    p.stride = std::array<int64_t, 2>{2, 2};
    p.padding = {1, 1};
    p.ceil_mode = true;
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << dtype_name(dtype);
  }
  // Ties and -inf without NaN: the half types' positions over rows that are not whole vectors then
  // come from packed equality masks (first_maxima_in_row_pairs), not the tap-by-tap scan.
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x({2, 3, 37, 55}, dtype);
    fill_random(x, rng, true);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (std::isnan(x.at(i))) x.set(i, 1.0);  // one more tie among the rounded values
    }
    Pool2d p;
    p.kernel_size = {3, 3};
    p.stride = std::array<int64_t, 2>{2, 2};
    p.ceil_mode = true;
    for (const int64_t padding : {0, 1}) {
      p.padding = {padding, padding};
      EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << dtype_name(dtype) << " padding " << padding;
    }
  }
  // Whole windows of -inf, and whole planes of one repeated value, through the run-time window
  // (stride 1) and the row segments (stride 2 over rows of 9).
  HostTensor x({1, 2, 9, 9}, DType::f16);
  for (int64_t i = 0; i < x.numel(); ++i) x.set(i, i < 81 ? -std::numeric_limits<double>::infinity() : 2.0);
  Pool2d p;
  p.kernel_size = {3, 3};
  p.padding = {1, 1};
  for (const int64_t stride : {1, 2}) {
    p.stride = std::array<int64_t, 2>{stride, stride};
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << "stride " << stride;
  }
}

TEST_P(Pool2dGpu, RowsTooWideToStageInSharedMemory) {
  // 3 rows of 6000 f32 exceed the staged band limit: the taps are read from global memory.
  // (A window outside the catalogue's: the catalogue's run compiled kernels whatever the width.)
  std::mt19937_64 rng(5);
  HostTensor x({1, 2, 7, 6000}, DType::f32);
  fill_random(x, rng, true);
  Pool2d p;
  p.kernel_size = {3, 3};
  p.stride = std::array<int64_t, 2>{1, 2};
  p.padding = {1, 1};
  EXPECT_EQ(compare_with_reference(GetParam(), x, p), "");
  p.kernel_size = {2, 4};
  p.stride.reset();
  p.padding = {0, 1};
  p.ceil_mode = true;
  EXPECT_EQ(compare_with_reference(GetParam(), x, p), "");
}

// The windows of the catalogue run compiled kernels (pool2d_separable.cuh; the max over rows that
// are not whole 16-byte vectors pool2d_row_segments.cuh): cover each on random shapes, with widths
// that take the vector path (multiples of 8) and widths that don't (up to two row segments), every
// row padding, ceil mode, count_include_pad and divisors.
std::vector<Pool2d> catalogue_windows(Op op) {
  const auto window = [](int64_t kh, int64_t kw, int64_t pw) {
    Pool2d p;
    p.kernel_size = {kh, kw};
    p.stride = std::array<int64_t, 2>{2, 2};
    p.padding = {0, pw};
    return p;
  };
  if (op == Op::avg) return {window(3, 3, 1), window(5, 5, 2), window(3, 5, 2)};
  return {window(3, 3, 1), window(3, 3, 0), window(2, 2, 0)};
}

TEST_P(Pool2dGpu, CatalogueWindowsOnRandomShapes) {
  std::mt19937_64 rng(31 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (Pool2d p : catalogue_windows(GetParam())) {
    testing::compare_random_cases(GetParam(), 60, 3, rng, [&] {
      p.padding[0] = uniform(0, p.kernel_size[0] / 2);
      p.ceil_mode = uniform(0, 1) == 1;
      p.count_include_pad = uniform(0, 1) == 1;
      p.divisor_override.reset();
      if (GetParam() == Op::avg && uniform(0, 4) == 0) p.divisor_override = 7;
      const int64_t h = uniform(1, 40);
      const int64_t w = uniform(0, 1) ? 8 * uniform(1, 8) : uniform(1, 70);
      std::vector<int64_t> shape = {uniform(1, 3), uniform(1, 4), h, w};
      if (uniform(0, 4) == 0) shape.erase(shape.begin());
      return std::pair{shape, p};
    });
  }
}

// 2x2 windows of stride 2 and no padding tile the plane: max runs pool2d_disjoint_kernel where each
// thread's bytes of a row (8 with positions on half types, 16 otherwise) are aligned and its outputs
// fill whole vectors. Planes with a left-over input row or column, unbatched input, ceil mode with
// and without a partial window, NaN, -inf and ties, and shapes and offsets that take the other
// kernels (rows not whole vectors, out_w not a multiple of the outputs a thread, a tensor one
// element into its allocation).
TEST_P(Pool2dGpu, WindowsThatTileThePlane) {
  std::mt19937_64 rng(41);
  Pool2d p;
  p.kernel_size = {2, 2};
  p.stride = std::array<int64_t, 2>{2, 2};
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 17, 64}, {1, 5, 8, 8},  {3, 40, 16},   {2, 2, 30, 24},
                                                    {1, 1, 6, 40},  {2, 4, 28, 56}, {1, 2, 10, 20}, {1, 3, 9, 33}};
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (const auto& shape : shapes) {
      HostTensor x(shape, dtype);
      fill_random(x, rng, true);
      const std::string what = detail::concat(dtype_name(dtype), " ", detail::shape_text(shape));
      for (const bool ceil_mode : {false, true}) {
        p.ceil_mode = ceil_mode;
        EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << what << " " << testing::describe(p);
      }
      p.ceil_mode = false;
      EXPECT_EQ(compare_with_reference(GetParam(), x, p, 1), "") << what << ", offset 1";
    }
  }
}

TEST_P(Pool2dGpu, TensorsNotAlignedTo16Bytes) {
  // Widths that would take the 16-byte path, on tensors starting one element into an allocation.
  std::mt19937_64 rng(17);
  for (const Pool2d& p : catalogue_windows(GetParam())) {
    for (const DType dtype : {DType::f32, DType::f16}) {
      HostTensor x({2, 3, 20, 64}, dtype);
      fill_random(x, rng, true);
      EXPECT_EQ(compare_with_reference(GetParam(), x, p, 1), "")
          << dtype_name(dtype) << " " << testing::describe(p);
    }
  }
}

TEST_P(Pool2dGpu, LargeHalfInputsOnTheCatalogueWindows) {
  // Enough outputs for two output rows a thread on 132 SMs, with rows of whole 32-byte chunks:
  // max on half types then reads two vectors a row and shuffles its halo columns between lanes
  // (max with positions: one row of 16-byte vectors a thread).
  std::mt19937_64 rng(23);
  HostTensor x({16, 66, 32, 1024}, DType::f16);
  fill_random(x, rng, true);
  for (Pool2d p : catalogue_windows(GetParam())) {
    p.ceil_mode = p.padding[1] == 0;
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << testing::describe(p);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Pool2dGpu, ::testing::Values(Op::max, Op::max_with_indices, Op::avg),
                         [](const auto& info) { return std::string(op_name(info.param)); });

// Validation that needs device memory: aliasing, a CPU pointer claiming to be on the GPU.
class Pool2dGpuValidation : public testing::GpuTest {};

void expect_error(const std::function<void()>& call, const std::string& fragment) {
  try {
    call();
    ADD_FAILURE() << "accepted, expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST_F(Pool2dGpuValidation, OutputAliasingInputIsRejected) {
  DeviceBuffer buffer(4 * 16 * 16 * sizeof(float));
  const std::vector<int64_t> x_shape{4, 16, 16}, y_shape{4, 8, 8};
  const TensorRef x = make_tensor(buffer.data(), DType::f32, x_shape, 0);
  const TensorRef y = make_tensor(buffer.data(), DType::f32, y_shape, 0);
  Pool2d p;
  p.kernel_size = {2, 2};
  expect_error([&] { max_pool2d(x, y, p); }, "input and output overlap");
  expect_error([&] { avg_pool2d(x, y, p); }, "input and output overlap");
}

TEST_F(Pool2dGpuValidation, HostPointerClaimingToBeOnTheDevice) {
  std::vector<float> host(16 * 16);
  DeviceBuffer out(8 * 8 * sizeof(float));
  const std::vector<int64_t> x_shape{1, 16, 16}, y_shape{1, 8, 8};
  const TensorRef x = make_tensor(host.data(), DType::f32, x_shape, 0);
  const TensorRef y = make_tensor(out.data(), DType::f32, y_shape, 0);
  Pool2d p;
  p.kernel_size = {2, 2};
  expect_error([&] { max_pool2d(x, y, p); }, "data pointer is not device memory");
}

TEST_F(Pool2dGpuValidation, DtypeAndShapeMismatches) {
  DeviceBuffer in(16 * 16 * sizeof(float)), out(8 * 8 * sizeof(float)), indices(8 * 8 * 8);
  const std::vector<int64_t> x_shape{1, 16, 16}, y_shape{1, 8, 8}, bad_shape{1, 8, 7};
  const TensorRef x = make_tensor(in.data(), DType::f32, x_shape, 0);
  Pool2d p;
  p.kernel_size = {2, 2};
  expect_error([&] { max_pool2d(x, make_tensor(out.data(), DType::f16, y_shape, 0), p); },
               "output: dtype f16 must be f32");
  expect_error([&] { avg_pool2d(x, make_tensor(out.data(), DType::f32, bad_shape, 0), p); },
               "output: shape [1, 8, 7] must be [1, 8, 8]");
  expect_error([&] {
    max_pool2d_with_indices(x, make_tensor(out.data(), DType::f32, y_shape, 0),
                            make_tensor(indices.data(), DType::i32, y_shape, 0), p);
  }, "indices: dtype i32 must be i64");
  expect_error([&] { max_pool2d(make_tensor(in.data(), DType::i32, x_shape, 0),
                                make_tensor(out.data(), DType::i32, y_shape, 0), p); },
               "input: dtype i32 is not supported");
}

TEST_F(Pool2dGpuValidation, NonContiguousInputIsUnsupported) {
  DeviceBuffer in(16 * 16 * sizeof(float)), out(8 * 8 * sizeof(float));
  const std::vector<int64_t> x_shape{1, 16, 16}, y_shape{1, 8, 8};
  TensorRef x = make_tensor(in.data(), DType::f32, x_shape, 0);
  std::swap(x.strides[1], x.strides[2]);  // a transposed view
  Pool2d p;
  p.kernel_size = {2, 2};
  try {
    max_pool2d(x, make_tensor(out.data(), DType::f32, y_shape, 0), p);
    ADD_FAILURE() << "accepted a transposed input";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::unsupported);
    EXPECT_NE(std::string(e.what()).find("must be contiguous"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace solops
