// Adaptive 2-D pooling on the GPU against the CPU references: every catalogue row, random input
// and output sizes (overlapping bins, outputs larger than inputs, None), NaN / -inf / tie inputs,
// bins of many thousand taps, each lanes-per-bin path on unaligned tensors. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <array>
#include <limits>
#include <random>
#include <vector>

#include "gpu/pool/pool_gpu_checks.hpp"
#include "solops/error.hpp"

namespace solops {
namespace {

using testing::compare_with_reference;
using testing::fill_random;
using testing::HostTensor;
using testing::Op;

const char* op_name(Op op) {
  return op == Op::avg ? "AdaptiveAvgPool2dFwd"
         : op == Op::max ? "AdaptiveMaxPool2dFwd"
                         : "AdaptiveMaxPool2dIndicesFwd";
}

AdaptivePool2d pool_from_manifest(const nlohmann::json& params) {
  const auto& size = params.at("output_size");
  AdaptivePool2d p;
  for (int axis = 0; axis < 2; ++axis) {
    const auto& value = size.is_array() ? size[axis] : size;
    if (!value.is_null()) p.output_size[axis] = value.get<int64_t>();
  }
  return p;
}

class AdaptivePool2dGpu : public testing::GpuTestWithParam<Op> {};

TEST_P(AdaptivePool2dGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2028);
  const int rows = testing::for_each_catalogue_row(op_name(GetParam()), rng, [&](const auto& row, HostTensor& x) {
    EXPECT_EQ(compare_with_reference(GetParam(), x, pool_from_manifest(row["params"])), "")
        << row["workload"] << " " << row["dtype"];
  });
  EXPECT_GT(rows, 0) << "no catalogue rows for " << op_name(GetParam());
}

TEST_P(AdaptivePool2dGpu, RandomInputAndOutputSizes) {
  std::mt19937_64 rng(13 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  for (int cases = 0; cases < 150; ++cases) {
    const int64_t h = uniform(1, 60), w = uniform(1, 60);
    std::vector<int64_t> shape = {uniform(1, 3), uniform(1, 5), h, w};
    if (uniform(0, 4) == 0) shape.erase(shape.begin());
    AdaptivePool2d p;
    for (int axis = 0; axis < 2; ++axis) {
      if (uniform(0, 5) > 0) p.output_size[axis] = uniform(1, 70);  // sometimes None, sometimes > input
    }
    HostTensor x(shape, dtypes[cases % 3]);
    fill_random(x, rng, cases % 4 == 0);
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "")
        << "case " << cases << " shape " << detail::shape_text(shape) << " " << dtype_name(x.dtype)
        << " output " << p.output_size[0].value_or(-1) << "x" << p.output_size[1].value_or(-1);
  }
}

TEST_P(AdaptivePool2dGpu, NaNMinusInfTiesAndLargeBins) {
  std::mt19937_64 rng(103);
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x({2, 3, 23, 17}, dtype);
    fill_random(x, rng, true);
    EXPECT_EQ(compare_with_reference(GetParam(), x, AdaptivePool2d{{5, 3}}), "") << dtype_name(dtype);
    EXPECT_EQ(compare_with_reference(GetParam(), x, AdaptivePool2d{{1, 1}}), "") << dtype_name(dtype);
  }
  HostTensor large({2, 200, 211}, DType::f32);  // one bin of 42,200 taps per plane
  fill_random(large, rng, false);
  EXPECT_EQ(compare_with_reference(GetParam(), large, AdaptivePool2d{{1, 1}}), "");
  HostTensor all_minus_inf({1, 1, 4, 4}, DType::f16);
  for (int64_t i = 0; i < all_minus_inf.numel(); ++i) all_minus_inf.set(i, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(compare_with_reference(GetParam(), all_minus_inf, AdaptivePool2d{{3, 3}}), "");
}

// Bins of up to 128 taps take groups of 8 lanes (several bins a warp, one pass of loads); larger
// bins take whole warps, and bins over 512 taps several passes. Each shape below names the path
// it takes; bin counts are not multiples of a block's groups, so the last block has groups past
// the last bin. Tensors start 0 and 1 elements into their allocations; inputs have NaN / -inf /
// ties.
TEST_P(AdaptivePool2dGpu, GroupsOfLanesPerBinOnUnalignedTensors) {
  std::mt19937_64 rng(109);
  struct Case {
    std::vector<int64_t> shape;
    int64_t out_h, out_w;
  };
  const Case cases[] = {
      {{3, 5, 56, 56}, 6, 6},    // 8 lanes, 100-tap bins (spp-6x6)
      {{1, 7, 33, 41}, 4, 5},    // 8 lanes, up to 100 taps, 140 bins
      {{2, 3, 9, 11}, 7, 10},    // 8 lanes, bins of 1 to 4 taps: most lanes past the bin's end
      {{1, 2, 5, 6}, 9, 13},     // 8 lanes, outputs larger than the input
      {{2, 3, 16, 16}, 1, 2},    // 8 lanes at the bound: 128-tap bins, every lane's 16 loads real
      {{2, 3, 40, 50}, 3, 2},    // whole warp, up to 375 taps, one pass
      {{2, 2, 60, 70}, 2, 3},    // whole warp, up to 750 taps, two passes
      {{5, 61, 33}, 1, 2},       // unbatched, whole warp, 1037-tap bins: three passes
  };
  for (const Case& c : cases) {
    for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (const size_t offset : {0, 1}) {
        HostTensor x(c.shape, dtype);
        fill_random(x, rng, true);
        EXPECT_EQ(compare_with_reference(GetParam(), x, AdaptivePool2d{{c.out_h, c.out_w}}, offset), "")
            << detail::shape_text(c.shape) << " -> " << c.out_h << "x" << c.out_w << " " << dtype_name(dtype)
            << " offset " << offset;
      }
    }
  }
}

TEST_P(AdaptivePool2dGpu, TiesAndMinusInfPlanesInGroupsAndWarps) {
  // Planes of one repeated value (ties keep each bin's first tap, whichever lane holds it) and of
  // -inf (the first tap too), for 8-lane groups and whole warps with several passes.
  for (const auto& [h, w, out_h, out_w] : {std::array<int64_t, 4>{56, 56, 6, 6}, {60, 70, 2, 3}}) {
    HostTensor x({2, 3, h, w}, DType::bf16);
    const int64_t plane = h * w;
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.set(i, i / plane == 0 ? -std::numeric_limits<double>::infinity() : i / plane == 1 ? 2.0 : -0.5);
    }
    EXPECT_EQ(compare_with_reference(GetParam(), x, AdaptivePool2d{{out_h, out_w}}), "") << h << "x" << w;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, AdaptivePool2dGpu, ::testing::Values(Op::max, Op::max_with_indices, Op::avg),
                         [](const auto& info) { return std::string(op_name(info.param)); });

}  // namespace
}  // namespace solops
