// 1-D pooling on the GPU against the CPU references: every catalogue row, random shapes and
// params, NaN / -inf / tie inputs, and device-side validation. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "gpu/pool/pool_gpu_checks.hpp"
#include "solops/error.hpp"

namespace solops {
namespace {

using testing::compare_with_reference;
using testing::DeviceBuffer;
using testing::fill_random;
using testing::HostTensor;
using testing::Op;
using testing::output_shape;

const char* op_name(Op op) {
  return op == Op::avg ? "AvgPool1dFwd" : op == Op::max ? "MaxPool1dFwd" : "MaxPool1dIndicesFwd";
}

Pool1d pool_from_manifest(const nlohmann::json& params) {
  Pool1d p;
  p.kernel_size = params.at("kernel_size").get<int64_t>();
  if (params.contains("stride") && !params["stride"].is_null()) p.stride = params["stride"].get<int64_t>();
  p.padding = params.value("padding", int64_t{0});
  p.dilation = params.value("dilation", int64_t{1});
  p.ceil_mode = params.value("ceil_mode", false);
  p.count_include_pad = params.value("count_include_pad", true);
  return p;
}

// Random window params: kernel 1-9, stride 1 to max_stride (or none, i.e. the kernel size, one
// time in four), padding up to half the kernel, dilation 1-3 one time in three (max only), ceil
// mode and count_include_pad either way.
Pool1d random_window(std::mt19937_64& rng, Op op, int64_t max_stride) {
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  Pool1d p;
  p.kernel_size = uniform(1, 9);
  if (uniform(0, 3) > 0) p.stride = uniform(1, max_stride);
  p.padding = uniform(0, p.kernel_size / 2);
  if (op != Op::avg && uniform(0, 2) == 0) p.dilation = uniform(1, 3);
  p.ceil_mode = uniform(0, 1) == 1;
  p.count_include_pad = uniform(0, 1) == 1;
  return p;
}

class Pool1dGpu : public testing::GpuTestWithParam<Op> {};

TEST_P(Pool1dGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2027);
  const int rows = testing::for_each_catalogue_row(op_name(GetParam()), rng, [&](const auto& row, HostTensor& x) {
    EXPECT_EQ(compare_with_reference(GetParam(), x, pool_from_manifest(row["params"])), "")
        << row["workload"] << " " << row["dtype"];
  });
  EXPECT_GT(rows, 0) << "no catalogue rows for " << op_name(GetParam());
}

// Random geometry: odd lengths, length 1, unbatched input, padding, dilation, ceil mode, long rows.
TEST_P(Pool1dGpu, RandomShapesAndParams) {
  std::mt19937_64 rng(11 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  testing::compare_random_cases(GetParam(), 150, 4, rng, [&] {
    const Pool1d p = random_window(rng, GetParam(), 5);
    const int64_t length = uniform(0, 5) == 0 ? uniform(2000, 30000) : uniform(1, 70);
    std::vector<int64_t> shape = {uniform(1, 3), uniform(1, 5), length};
    if (uniform(0, 4) == 0) shape.erase(shape.begin());
    return std::pair{shape, p};
  });
}

TEST_P(Pool1dGpu, NaNMinusInfAndTies) {
  std::mt19937_64 rng(101);
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x({2, 3, 257}, dtype);
    fill_random(x, rng, true);
    EXPECT_EQ(compare_with_reference(GetParam(), x, Pool1d{5, 2, 2, 1, true, false}), "") << dtype_name(dtype);
    EXPECT_EQ(compare_with_reference(GetParam(), x, Pool1d{128, 1, 0, 1, false, true}), "") << dtype_name(dtype);
  }
  HostTensor all_minus_inf({1, 2, 9}, DType::f16);
  for (int64_t i = 0; i < all_minus_inf.numel(); ++i) {
    all_minus_inf.set(i, i < 9 ? -std::numeric_limits<double>::infinity() : 2.0);
  }
  EXPECT_EQ(compare_with_reference(GetParam(), all_minus_inf, Pool1d{3, 1, 1, 1, false, true}), "");
}

// Many rows take tiles of up to 2048 outputs (src/pool/pool1d.cu), and the catalogue's kernel
// sizes (max 3 and 5, avg 3, 4 and 5) unroll their taps: cover both on random lengths that split
// into tiles unevenly, with the other params random, and tensors that start one element into
// their allocation.
TEST_P(Pool1dGpu, ManyRowsAndCatalogueKernelSizes) {
  std::mt19937_64 rng(41 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  const std::vector<int64_t> kernel_sizes =
      GetParam() == Op::avg ? std::vector<int64_t>{3, 4, 5, 7} : std::vector<int64_t>{3, 5, 7};
  for (const int64_t kernel : kernel_sizes) {
    int cases = 0;
    while (cases < 4) {
      Pool1d p;
      p.kernel_size = kernel;
      p.stride = uniform(1, 4);
      p.padding = uniform(0, kernel / 2);
      if (GetParam() != Op::avg) p.dilation = uniform(1, 2);
      p.ceil_mode = uniform(0, 1) == 1;
      p.count_include_pad = uniform(0, 1) == 1;
      const std::vector<int64_t> shape = {uniform(20, 40), 64, uniform(1500, 5000)};
      try {
        output_shape(GetParam(), shape, p);
      } catch (const Error&) {
        continue;
      }
      HostTensor x(shape, dtypes[cases % 3]);
      fill_random(x, rng, cases % 2 == 0);
      EXPECT_EQ(compare_with_reference(GetParam(), x, p, cases == 1 ? 1 : 0), "")
          << "case " << cases << " shape " << detail::shape_text(shape) << " " << dtype_name(x.dtype)
          << " kernel " << p.kernel_size << " stride " << *p.stride << " padding " << p.padding
          << " dilation " << p.dilation << " ceil " << p.ceil_mode;
      ++cases;
    }
  }
}

// Rows of whole 16-byte vectors that start aligned run the warp-tile kernel (src/pool/pool1d.cu):
// lengths that are multiples of 8 elements, from one vector up; params that put padding and
// ceil-mode overhangs at both tile edges; strides up to the longest a warp tile holds; and large
// calls, whose rows split into the largest tiles.
TEST_P(Pool1dGpu, WarpTilesOnAlignedRows) {
  std::mt19937_64 rng(47 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  testing::compare_random_cases(GetParam(), 60, 2, rng, [&] {
    const Pool1d p = random_window(rng, GetParam(), uniform(0, 5) == 0 ? 16 : 5);
    const int64_t length = 8 * (uniform(0, 2) == 0 ? uniform(1, 4) : uniform(100, 600));
    return std::pair{std::vector<int64_t>{uniform(1, 4), uniform(1, 40), length}, p};
  });
  for (const DType dtype : {DType::f16, DType::f32}) {
    HostTensor x({32, 128, 4096}, dtype);
    fill_random(x, rng, true);
    EXPECT_EQ(compare_with_reference(GetParam(), x, Pool1d{3, 1, 1, 1, false, true}), "") << dtype_name(dtype);
  }
}

// Averages of the windows k3 s2 p1 and k4 s2 p1 on aligned rows, in calls of at most one wave of
// threads, run small_avg_pool_kernel (src/pool/pool1d.cu): lengths that are multiples of 8
// elements, from one chunk up, so that output rows end inside a thread's 4 outputs and (k3, ceil
// mode) a thread's chunk can lie past the row's end; ceil mode and count_include_pad either way.
TEST_P(Pool1dGpu, SmallAveragesOfCompiledWindows) {
  std::mt19937_64 rng(53 + static_cast<int>(GetParam()));
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  testing::compare_random_cases(GetParam(), 60, 3, rng, [&] {
    Pool1d p;
    p.kernel_size = uniform(3, 4);
    p.stride = 2;
    p.padding = 1;
    p.ceil_mode = uniform(0, 1) == 1;
    p.count_include_pad = uniform(0, 1) == 1;
    std::vector<int64_t> shape = {uniform(1, 3), uniform(1, 40), 8 * uniform(1, 80)};
    if (uniform(0, 4) == 0) shape.erase(shape.begin());
    return std::pair{shape, p};
  });
}

// Max windows of 3 with stride 3 and no padding take the tiling kernel (src/pool/pool1d.cu) with
// positions or in f32, whatever the row's alignment: lengths a multiple of 3 or not, tensors that
// start one element into their allocation, and ceil mode, whose last window hangs over the row's
// end where the length is not a multiple of 3 (the general kernels take those).
TEST_P(Pool1dGpu, WindowsThatTileTheRow) {
  std::mt19937_64 rng(59 + static_cast<int>(GetParam()));
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (const int64_t length : {3, 7, 16, 24, 1000, 4096, 4097}) {
      for (const bool ceil_mode : {false, true}) {
        HostTensor x({3, 5, length}, dtype);
        fill_random(x, rng, length % 2 == 0);
        EXPECT_EQ(compare_with_reference(GetParam(), x, Pool1d{3, std::nullopt, 0, 1, ceil_mode, true},
                                         static_cast<size_t>(length % 3)),
                  "")
            << dtype_name(dtype) << " length " << length << " ceil " << ceil_mode;
      }
    }
  }
}

// Strides too long to stage a warp's outputs in shared memory read the taps from global memory.
TEST_P(Pool1dGpu, SpansTooLongToStage) {
  std::mt19937_64 rng(43);
  for (const DType dtype : {DType::f32, DType::bf16}) {
    HostTensor x({2, 3, 150001}, dtype);
    fill_random(x, rng, true);
    Pool1d p;
    p.kernel_size = 3;
    p.stride = dtype == DType::f32 ? 400 : 800;
    p.padding = 1;
    p.ceil_mode = true;
    EXPECT_EQ(compare_with_reference(GetParam(), x, p), "") << dtype_name(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, Pool1dGpu, ::testing::Values(Op::max, Op::max_with_indices, Op::avg),
                         [](const auto& info) { return std::string(op_name(info.param)); });

TEST(Pool1dGpuValidation, OutputAliasingInputIsRejected) {
  SOLOPS_REQUIRE_GPU();
  DeviceBuffer buffer(4 * 64 * sizeof(float));
  const std::vector<int64_t> x_shape{4, 64}, y_shape{4, 32};
  const TensorRef x = make_tensor(buffer.data(), DType::f32, x_shape, 0);
  const TensorRef y = make_tensor(buffer.data(), DType::f32, y_shape, 0);
  try {
    Pool1d p;
    p.kernel_size = 2;
    max_pool1d(x, y, p);
    ADD_FAILURE() << "accepted an output that aliases the input";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_pool1d: input and output overlap in memory"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace solops
