// 3-D pooling on the GPU against the CPU references: every catalogue row, random shapes and
// params (odd sizes, size 1, unbatched, padding, dilation, ceil mode, divisors), NaN / -inf /
// tie inputs, and the compiled windows of pool3d.cu on their own. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <array>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "gpu/pool/pool_gpu_checks.hpp"

namespace solops {
namespace {

using testing::compare_with_reference;
using testing::fill_random;
using testing::HostTensor;
using testing::Op;

const char* op_name(Op op) {
  return op == Op::avg ? "AvgPool3dFwd" : op == Op::max ? "MaxPool3dFwd" : "MaxPool3dIndicesFwd";
}

class Pool3dGpu : public testing::GpuTestWithParam<Op> {};

TEST_P(Pool3dGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2029);
  const int rows = testing::for_each_catalogue_row(op_name(GetParam()), rng, [&](const auto& row, HostTensor& x) {
    EXPECT_EQ(compare_with_reference(GetParam(), x, testing::window_from_manifest<Pool3d>(row["params"])), "")
        << row["workload"] << " " << row["dtype"];
  });
  EXPECT_GT(rows, 0) << "no catalogue rows for " << op_name(GetParam());
}

TEST_P(Pool3dGpu, RandomShapesAndParams) {
  std::mt19937_64 rng(17 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  testing::compare_random_cases(GetParam(), 120, 4, rng, [&] {
    Pool3d p;
    for (int a = 0; a < 3; ++a) {
      p.kernel_size[a] = uniform(1, 4);
      p.padding[a] = uniform(0, p.kernel_size[a] / 2);
      if (GetParam() != Op::avg && uniform(0, 3) == 0) p.dilation[a] = uniform(1, 2);
    }
    if (uniform(0, 3) > 0) p.stride = std::array<int64_t, 3>{uniform(1, 3), uniform(1, 3), uniform(1, 3)};
    p.ceil_mode = uniform(0, 1) == 1;
    p.count_include_pad = uniform(0, 1) == 1;
    if (GetParam() == Op::avg && uniform(0, 4) == 0) p.divisor_override = uniform(0, 1) ? 7 : -3;
    std::vector<int64_t> shape = {uniform(1, 2), uniform(1, 3), uniform(1, 12), uniform(1, 20), uniform(1, 20)};
    if (uniform(0, 4) == 0) shape.erase(shape.begin());
    return std::pair{shape, p};
  });
}

TEST_P(Pool3dGpu, NaNMinusInfAndTies) {
  std::mt19937_64 rng(107);
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x({2, 3, 9, 13, 11}, dtype);
    fill_random(x, rng, true);
    Pool3d p;
    p.kernel_size = {3, 3, 3};
    p.stride = std::array<int64_t, 3>{2, 2, 2};
    p.padding = {1, 1, 1};
    p.ceil_mode = true;
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << dtype_name(dtype);
  }
}

// The windows pool3d.cu compiles in (kernel, stride and W padding; the D and H padding are read at
// run time, so they vary here).
std::vector<Pool3d> static_windows(Op op) {
  const auto window = [](std::array<int64_t, 3> kernel, std::array<int64_t, 3> stride, int64_t pad_w) {
    Pool3d p;
    p.kernel_size = kernel;
    p.stride = stride;
    p.padding = {0, 0, pad_w};
    return p;
  };
  if (op == Op::avg) {
    return {window({2, 2, 2}, {2, 2, 2}, 0), window({2, 3, 3}, {2, 2, 2}, 1), window({2, 2, 3}, {2, 2, 2}, 1)};
  }
  std::vector<Pool3d> windows = {window({2, 2, 2}, {2, 2, 2}, 0), window({3, 3, 3}, {2, 2, 2}, 1)};
  if (op == Op::max_with_indices) windows.push_back(window({1, 2, 2}, {1, 2, 2}, 0));
  return windows;
}

// Each compiled window on random shapes: widths that take the vector path (multiples of 8; the
// averages here are all under two waves, so they run one output a thread, the video and divisor
// windows on small_avg_pool_kernel) and widths that do not, output widths that leave a thread's
// column group partial, every D and H padding the window allows, ceil mode, count_include_pad,
// divisors, and NaN / -inf / ties.
TEST_P(Pool3dGpu, StaticWindowsOnRandomShapes) {
  std::mt19937_64 rng(41 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (Pool3d p : static_windows(GetParam())) {
    testing::compare_random_cases(GetParam(), 60, 3, rng, [&] {
      p.padding[0] = uniform(0, p.kernel_size[0] / 2);
      p.padding[1] = uniform(0, p.kernel_size[1] / 2);
      p.ceil_mode = uniform(0, 1) == 1;
      p.count_include_pad = uniform(0, 1) == 1;
      p.divisor_override.reset();
      if (GetParam() == Op::avg && uniform(0, 4) == 0) p.divisor_override = uniform(0, 1) ? 7 : -3;
      const int64_t w = uniform(0, 1) ? 8 * uniform(1, 8) : uniform(1, 70);
      std::vector<int64_t> shape = {uniform(1, 2), uniform(1, 3), uniform(1, 9), uniform(1, 20), w};
      if (uniform(0, 4) == 0) shape.erase(shape.begin());
      return std::pair{shape, p};
    });
  }
}

TEST_P(Pool3dGpu, StaticWindowsOnTensorsNotAlignedTo16Bytes) {
  // Widths that would take the 16-byte path, and an odd one, on tensors starting one element into
  // their allocations: scalar loads, and one store per output.
  std::mt19937_64 rng(43);
  for (Pool3d p : static_windows(GetParam())) {
    p.padding[0] = p.kernel_size[0] / 2;
    p.padding[1] = p.kernel_size[1] / 2;
    for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (const int64_t w : {64, 57}) {
        HostTensor x({2, 3, 7, 10, w}, dtype);
        fill_random(x, rng, true);
        EXPECT_EQ(compare_with_reference(GetParam(), x, p, 1), "")
            << dtype_name(dtype) << " W " << w << " " << testing::describe(p);
      }
    }
  }
}

TEST_P(Pool3dGpu, StaticWindowsOnMinusInfWindowsAndTies) {
  // Padding on every side and ceil mode, so windows reach past all six faces: planes of -inf (an
  // all -inf window reports its first real tap), planes of one repeated value (ties keep the
  // first tap), and random values with NaN / -inf / ties.
  std::mt19937_64 rng(47);
  for (Pool3d p : static_windows(GetParam())) {
    p.padding[0] = p.kernel_size[0] / 2;
    p.padding[1] = p.kernel_size[1] / 2;
    p.ceil_mode = true;
    for (const DType dtype : {DType::f32, DType::bf16}) {
      for (const int64_t w : {32, 13}) {
        HostTensor x({1, 3, 5, 9, w}, dtype);
        const int64_t plane = x.numel() / 3;
        fill_random(x, rng, true);
        for (int64_t i = 0; i < plane; ++i) x.set(i, -std::numeric_limits<double>::infinity());
        for (int64_t i = plane; i < 2 * plane; ++i) x.set(i, 2.0);
        EXPECT_EQ(compare_with_reference(GetParam(), x, p), "")
            << dtype_name(dtype) << " W " << w << " " << testing::describe(p);
      }
    }
  }
}

TEST_P(Pool3dGpu, StaticWindowsOnTensorsAlignedToTwoElements) {
  // Two elements in: aligned to the one-output-a-thread vector of the averages (stride_w elements:
  // 4 bytes for half types, 8 for f32) but not to 16 bytes. Even widths take vector loads, odd
  // ones scalar loads; D and H padding, ceil mode, count_include_pad and a divisor vary.
  std::mt19937_64 rng(59);
  int variant = 0;
  for (Pool3d p : static_windows(GetParam())) {
    for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (const int64_t w : {28, 22, 57}) {
        p.padding[0] = variant % 2 == 0 ? p.kernel_size[0] / 2 : 0;
        p.padding[1] = variant % 3 == 0 ? 0 : p.kernel_size[1] / 2;
        p.ceil_mode = variant % 2 == 1;
        p.count_include_pad = variant % 4 < 2;
        p.divisor_override.reset();
        if (GetParam() == Op::avg && variant % 5 == 0) p.divisor_override = 7;
        ++variant;
        HostTensor x({2, 3, 7, 10, w}, dtype);
        fill_random(x, rng, true);
        EXPECT_EQ(compare_with_reference(GetParam(), x, p, 2), "")
            << dtype_name(dtype) << " W " << w << " " << testing::describe(p);
      }
    }
  }
}

TEST_P(Pool3dGpu, AveragesOverTwoWavesTakeTheWideTiles) {
  // About a million outputs, over two waves of threads on any GPU of up to 256 SMs: the averages'
  // tiles of 16 bytes of columns (4 f16 or 2 f32 outputs a thread), with vector (W 64) and scalar
  // (W 63) loads.
  if (GetParam() != Op::avg) GTEST_SKIP() << "max windows have one tile size";
  std::mt19937_64 rng(61);
  int variant = 0;
  for (Pool3d p : static_windows(Op::avg)) {
    for (const int64_t w : {64, 63}) {
      const DType dtype = std::array{DType::f32, DType::f16, DType::bf16}[variant % 3];
      p.padding[0] = variant % 2 == 0 ? p.kernel_size[0] / 2 : 0;
      p.padding[1] = p.kernel_size[1] / 2;
      p.ceil_mode = variant % 2 == 1;
      p.count_include_pad = variant % 3 != 0;
      ++variant;
      HostTensor x({4, 32, 16, 64, w}, dtype);
      fill_random(x, rng, true);
      EXPECT_EQ(compare_with_reference(Op::avg, x, p), "")
          << dtype_name(dtype) << " W " << w << " " << testing::describe(p);
    }
  }
}

TEST_P(Pool3dGpu, DepthRunsCarryTheSharedDepthTap) {
  // Windows that overlap along depth (3x3x3 stride 2) run several output depths a thread once the
  // grid has a wave of threads to spare; these shapes give runs of 2 (bf16) and 5 (f32) output
  // depths on a 132-SM device, each with a shorter last run.
  if (GetParam() == Op::avg) GTEST_SKIP() << "no avg window overlaps along depth";
  std::mt19937_64 rng(53);
  Pool3d p;
  p.kernel_size = {3, 3, 3};
  p.stride = std::array<int64_t, 3>{2, 2, 2};
  p.padding = {1, 1, 1};
  for (const DType dtype : {DType::bf16, DType::f32}) {
    HostTensor x({1, 64, 14, 80, 320}, dtype);
    fill_random(x, rng, true);
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << dtype_name(dtype);
  }
  HostTensor x({1, 64, 13, 79, 319}, DType::f16);
  fill_random(x, rng, true);
  p.ceil_mode = true;
  EXPECT_EQ(compare_with_reference(GetParam(), x, p, 1), "") << "unaligned, ceil mode";
}

INSTANTIATE_TEST_SUITE_P(Ops, Pool3dGpu, ::testing::Values(Op::max, Op::max_with_indices, Op::avg),
                         [](const auto& info) { return std::string(op_name(info.param)); });

}  // namespace
}  // namespace solops
