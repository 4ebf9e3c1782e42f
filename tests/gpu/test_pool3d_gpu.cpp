// 3-D pooling on the GPU against the CPU references: every catalogue row, random shapes and
// params (odd sizes, size 1, unbatched, padding, dilation, ceil mode, divisors), NaN / -inf /
// tie inputs. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <random>

#include "gpu/pool_gpu_checks.hpp"
#include "solops/error.hpp"

namespace solops {
namespace {

using testing::compare_with_reference;
using testing::fill_random;
using testing::HostTensor;
using testing::Op;
using testing::output_shape;

const char* op_name(Op op) {
  return op == Op::avg ? "AvgPool3dFwd" : op == Op::max ? "MaxPool3dFwd" : "MaxPool3dIndicesFwd";
}

class Pool3dGpu : public ::testing::TestWithParam<Op> {
 protected:
  void SetUp() override { SOLOPS_REQUIRE_GPU(); }
};

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
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  int cases = 0;
  while (cases < 120) {
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
    try {
      output_shape(GetParam(), shape, p);
    } catch (const Error&) {
      continue;  // an invalid combination: the CPU validation tests cover those
    }
    HostTensor x(shape, dtypes[cases % 3]);
    fill_random(x, rng, cases % 4 == 0);
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "")
        << "case " << cases << " shape " << detail::shape_string(shape) << " " << dtype_name(x.dtype);
    ++cases;
  }
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

INSTANTIATE_TEST_SUITE_P(Ops, Pool3dGpu, ::testing::Values(Op::max, Op::max_with_indices, Op::avg),
                         [](const auto& info) { return std::string(op_name(info.param)); });

}  // namespace
}  // namespace solops
