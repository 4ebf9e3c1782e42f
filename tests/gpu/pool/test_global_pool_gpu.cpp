// Windows that cover whole planes run the global kernel (src/pool/global_pool.cu): 1-D, 2-D and
// 3-D sliding windows with one output per plane, and adaptive pools to 1×1. Random plane sizes
// on both sides of the kernel's lane-group switch (128 elements), padding, count_include_pad,
// divisor_override, unbatched input, many planes, and NaN / -inf / tie inputs, against the CPU
// references on poisoned outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "gpu/pool/pool_gpu_checks.hpp"

namespace solops {
namespace {

using testing::compare_with_reference;
using testing::fill_random;
using testing::HostTensor;
using testing::Op;

class GlobalPoolGpu : public testing::GpuTestWithParam<Op> {
 protected:
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

  // A kernel of `in` or (where the op allows a kernel larger than its input) a few more taps, padded
  // enough to fit (kernel <= in + 2 * padding) and by at most the extra taps (so the one window
  // reads the whole axis) and half the kernel.
  void covering_axis(int64_t in, int64_t& kernel, int64_t& padding, bool larger_kernel = true) {
    const int64_t extra = larger_kernel && uniform(0, 2) == 0 ? uniform(1, std::min<int64_t>(3, in)) : 0;
    kernel = in + extra;
    padding = uniform((extra + 1) / 2, std::min(kernel / 2, extra));
  }

  // Random values (with NaN / -inf / ties in every third case) of `shape`, in dtypes by turn.
  HostTensor input(std::vector<int64_t> shape, int cases) {
    const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
    if (uniform(0, 4) == 0) shape.erase(shape.begin());  // unbatched
    HostTensor x(shape, dtypes[cases % 3]);
    fill_random(x, rng_, cases % 3 == 0);
    return x;
  }

  std::mt19937_64 rng_{97};
};

TEST_P(GlobalPoolGpu, OneDimensional) {
  for (int cases = 0; cases < 60; ++cases) {
    Pool1d p;
    const int64_t length = uniform(0, 1) ? uniform(1, 127) : uniform(128, 600);
    covering_axis(length, p.kernel_size, p.padding);
    p.count_include_pad = uniform(0, 1) == 1;
    HostTensor x = input({uniform(1, 3), uniform(1, 700), length}, cases);
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "")
        << "case " << cases << " shape " << detail::shape_text(x.shape) << " " << dtype_name(x.dtype)
        << " kernel " << p.kernel_size << " padding " << p.padding;
  }
}

TEST_P(GlobalPoolGpu, TwoDimensional) {
  for (int cases = 0; cases < 60; ++cases) {
    Pool2d p;
    const int64_t h = uniform(1, 20), w = uniform(1, 20);
    covering_axis(h, p.kernel_size[0], p.padding[0]);
    covering_axis(w, p.kernel_size[1], p.padding[1]);
    p.count_include_pad = uniform(0, 1) == 1;
    if (uniform(0, 3) == 0) p.divisor_override = uniform(1, 50);
    HostTensor x = input({uniform(1, 3), uniform(1, 300), h, w}, cases);
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "")
        << "case " << cases << " shape " << detail::shape_text(x.shape) << " " << dtype_name(x.dtype)
        << " kernel " << p.kernel_size[0] << "x" << p.kernel_size[1] << " padding " << p.padding[0] << ","
        << p.padding[1] << " divisor " << p.divisor_override.value_or(0);
  }
}

TEST_P(GlobalPoolGpu, ThreeDimensional) {
  for (int cases = 0; cases < 40; ++cases) {
    Pool3d p;
    const int64_t d = uniform(1, 6), h = uniform(1, 9), w = uniform(1, 9);
    // avg_pool3d refuses inputs smaller than its kernel, as PyTorch's does.
    const bool larger_kernel = GetParam() != Op::avg;
    covering_axis(d, p.kernel_size[0], p.padding[0], larger_kernel);
    covering_axis(h, p.kernel_size[1], p.padding[1], larger_kernel);
    covering_axis(w, p.kernel_size[2], p.padding[2], larger_kernel);
    p.count_include_pad = uniform(0, 1) == 1;
    if (uniform(0, 3) == 0) p.divisor_override = uniform(1, 50);
    HostTensor x = input({uniform(1, 2), uniform(1, 100), d, h, w}, cases);
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "")
        << "case " << cases << " shape " << detail::shape_text(x.shape) << " " << dtype_name(x.dtype);
  }
}

TEST_P(GlobalPoolGpu, AdaptiveToOneByOne) {
  for (int cases = 0; cases < 60; ++cases) {
    HostTensor x = input({uniform(1, 8), uniform(1, 600), uniform(1, 30), uniform(1, 30)}, cases);
    EXPECT_EQ(compare_with_reference(GetParam(), x, AdaptivePool2d{{1, 1}}, cases % 5 == 0 ? 1 : 0), "")
        << "case " << cases << " shape " << detail::shape_text(x.shape) << " " << dtype_name(x.dtype);
  }
}

// Whole planes of -inf report their first element; NaNs their last.
TEST_P(GlobalPoolGpu, AllMinusInfAndNaNPlanes) {
  for (const int64_t size : {49, 300}) {
    HostTensor minus_inf({3, 1, size}, DType::f16);
    for (int64_t i = 0; i < minus_inf.numel(); ++i) minus_inf.set(i, -std::numeric_limits<double>::infinity());
    minus_inf.set(size + 7, std::numeric_limits<double>::quiet_NaN());
    minus_inf.set(size + 20, std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(compare_with_reference(GetParam(), minus_inf, Pool1d{size, std::nullopt, 0, 1, false, true}), "");
  }
}

const char* op_name(Op op) { return op == Op::avg ? "Avg" : op == Op::max ? "Max" : "MaxWithIndices"; }

INSTANTIATE_TEST_SUITE_P(Ops, GlobalPoolGpu, ::testing::Values(Op::max, Op::max_with_indices, Op::avg),
                         [](const auto& info) { return std::string(op_name(info.param)); });

}  // namespace
}  // namespace solops
