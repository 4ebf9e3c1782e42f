// The vector norms, L1NormFwd and L2NormFwd, on the GPU against the CPU reference (spec §2.22, 2.23):
// every catalogue row, 120 random shapes and dim sets, 0-d, one-element and empty inputs, NaN and
// inf, f16 overflow to inf, unaligned x, bitwise run-to-run equality, reductions split over several
// blocks and runs loaded at once, CUDA graph capture and the workspace rules. Outputs and workspaces
// are poisoned first.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "gpu/gpu_support.hpp"
#include "gpu/norm/norm_gpu_checks.hpp"
#include "host_tensor.hpp"
#include "manifest_rows.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// Spec §2.22: fp32 1e-5, fp16 and bf16 1e-2 (atol = rtol).
double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-5 : 1e-2; }

// vector_norm on the device (x `offset` elements into its allocation, the output and workspace
// poisoned; replayed from a CUDA graph where `graph`) against the reference: the first
// disagreement, or "".
std::string compare(HostTensor& x, const VectorNorm& p, size_t offset = 0, bool graph = false) {
  const Shape out_shape = vector_norm_output_shape(x.shape, p);
  HostTensor expected(out_shape, x.dtype), actual(out_shape, x.dtype);
  reference::vector_norm(x.ref(), expected.ref(), p);
  const int64_t workspace_elements = vector_norm_workspace_elements(x.shape, p);
  DeviceBuffer x_buffer(x.bytes.size(), offset * dtype_size(x.dtype)), y(expected.bytes.size(), offset * 2);
  DeviceBuffer workspace(static_cast<size_t>(workspace_elements) * sizeof(float));
  x_buffer.upload(x.bytes.data());
  y.poison();
  workspace.poison();
  const TensorRef x_ref = device_ref(x_buffer.data(), x.dtype, x.shape);
  const TensorRef y_ref = device_ref(y.data(), x.dtype, out_shape);
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, Shape{workspace_elements});
  const TensorRef* workspace_arg = workspace_elements ? &workspace_ref : nullptr;
  launch_maybe_in_graph([&](cudaStream_t stream) { vector_norm(x_ref, y_ref, workspace_arg, p, stream); }, graph);
  y.download(actual.bytes.data());
  return first_difference("output", expected, actual, tolerance(x.dtype), tolerance(x.dtype));
}

std::string describe(const HostTensor& x, const VectorNorm& p) {
  return detail::concat("x ", detail::shape_text(x.shape), " ", dtype_name(x.dtype), " ord ", p.ord, " dim ",
                        detail::shape_text(p.dim), p.keepdim ? " keepdim" : "");
}

HostTensor random_x(const Shape& shape, DType dtype, std::mt19937_64& rng, Values values = Values::normal) {
  HostTensor x(shape, dtype);
  fill(x, rng, values);
  return x;
}

class VectorNormGpu : public testing::GpuTest {};

TEST_F(VectorNormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(40);
  for (const auto& [op, ord] : {std::pair{"L1NormFwd", 1}, std::pair{"L2NormFwd", 2}}) {
    const std::vector<nlohmann::json> rows = testing::catalogue_rows(op);
    ASSERT_FALSE(rows.empty());
    for (const auto& row : rows) {
      const VectorNorm p{ord, row["params"].value("dim", Shape{}), false};
      HostTensor x = random_x(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(row["dtype"]), rng);
      EXPECT_EQ(compare(x, p), "") << row["workload"] << " " << describe(x, p);
    }
  }
}

TEST_F(VectorNormGpu, RandomShapes) {
  std::mt19937_64 rng(41);
  std::uniform_int_distribution<int> coin(0, 1);
  for (int c = 0; c < 120; ++c) {
    const Shape shape = draw_reduction_shape(rng);
    const auto rank = static_cast<int>(shape.size());
    VectorNorm p{1 + coin(rng), {}, coin(rng) == 1};
    if (c % 4 != 0) {
      for (int d = 0; d < rank; ++d) {
        if (coin(rng)) p.dim.push_back(coin(rng) ? d : d - rank);
      }
    }
    HostTensor x = random_x(shape, kRandomDtypes[c % 3], rng, draw_values(c));
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare(x, p, offset), "") << "case " << c << " " << describe(x, p) << " offset " << offset;
  }
}

TEST_F(VectorNormGpu, EdgeShapes) {
  std::mt19937_64 rng(42);
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{1, 1}, Shape{3, 0}, Shape{0, 5}, Shape{1, 16384}}) {
    for (int ord : {1, 2}) {
      HostTensor x = random_x(shape, DType::f32, rng);
      const VectorNorm full{ord}, last{ord, shape.empty() ? Shape{} : Shape{-1}};
      EXPECT_EQ(compare(x, full), "") << describe(x, full);
      EXPECT_EQ(compare(x, last), "") << describe(x, last);
    }
  }
}

TEST_F(VectorNormGpu, NaNAndInfPropagate) {
  std::mt19937_64 rng(43);
  for (int ord : {1, 2}) {
    HostTensor x = random_x({64, 32768}, DType::bf16, rng);
    x.set(12345, std::numeric_limits<double>::infinity());
    EXPECT_EQ(compare(x, {ord}), "") << "inf";
    x.set(777777, std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(compare(x, {ord}), "") << "NaN";
    EXPECT_EQ(compare(x, {ord, {1}}), "") << "NaN, per row";
  }
}

TEST_F(VectorNormGpu, F16L1OverflowsToInf) {
  // Spec §2.22: |x| of [2048, 4096] randn sums to ~6.7e6 > 65504, so the f16 result is +inf.
  std::mt19937_64 rng(44);
  HostTensor x = random_x({2048, 4096}, DType::f16, rng);
  EXPECT_EQ(compare(x, {1}), "");
}

TEST_F(VectorNormGpu, UnalignedAndDeterministic) {
  std::mt19937_64 rng(45);
  HostTensor x = random_x({4, 128, 4096}, DType::f16, rng);
  for (size_t offset : {1, 3}) EXPECT_EQ(compare(x, {2, {0, 2}}, offset), "") << offset;
  // Bit-identical from run to run: the partial sums and their order depend on the shape alone.
  const VectorNorm p{2};
  DeviceBuffer x_buffer(x.bytes.size()), y(2), workspace(sizeof(float) * vector_norm_workspace_elements(x.shape, p));
  x_buffer.upload(x.bytes.data());
  const TensorRef x_ref = device_ref(x_buffer.data(), x.dtype, x.shape), y_ref = device_ref(y.data(), x.dtype, {});
  const TensorRef w_ref =
      device_ref(workspace.data(), DType::f32, Shape{vector_norm_workspace_elements(x.shape, p)});
  uint16_t first = 0, again = 0;
  vector_norm(x_ref, y_ref, &w_ref, p);
  y.download(&first);
  for (int i = 0; i < 5; ++i) {
    vector_norm(x_ref, y_ref, &w_ref, p);
    y.download(&again);
    EXPECT_EQ(first, again);
  }
}

// Reductions split over several blocks an output: outputs of several runs, whose partials meet at
// the grid-wide barrier, with chunks that cross run boundaries (vector walk over three runs of
// 40000) and more splits than the grid has resident blocks (each block takes several); rows whose
// length is no multiple of the vector (run walk); outputs of one aligned run, whose partials the
// second kernel adds (100 rows of 11 splits, a full reduction of 48).
TEST_F(VectorNormGpu, SplitReductions) {
  std::mt19937_64 rng(47);
  const std::pair<Shape, VectorNorm> cases[] = {
      {{3, 5, 40000}, {2, {0, 2}}},    {{3, 5, 40000}, {1, {0, -1}}}, {{7, 50001}, {2, {1}}},
      {{100, 100000}, {1, {1}}},       {{40000, 3}, {2, {0}}},        {{2, 3, 65536}, {2, {}}},
  };
  for (const auto& [shape, p] : cases) {
    ASSERT_GT(vector_norm_workspace_elements(shape, p), 0) << detail::shape_text(shape);
    for (DType dtype : kRandomDtypes) {
      HostTensor x = random_x(shape, dtype, rng);
      EXPECT_EQ(compare(x, p), "") << describe(x, p);
    }
  }
}

// Outputs of one block whose runs are loaded all at once (run_norms): two loads a run (f32 runs of
// 4096), runs shorter than the block's threads, runs over two outer reduced dims, and nine runs,
// more than a thread's eight loads (the run walk instead).
TEST_F(VectorNormGpu, RunsLoadedAtOnce) {
  std::mt19937_64 rng(48);
  const std::pair<Shape, VectorNorm> cases[] = {
      {{4, 16, 4096}, {2, {0, 2}}},
      {{3, 7, 1000}, {1, {0, 2}}},
      {{2, 3, 2, 5, 64}, {2, {0, 2, 4}}},
      {{9, 2, 512}, {1, {0, 2}}},
  };
  for (const auto& [shape, p] : cases) {
    ASSERT_EQ(vector_norm_workspace_elements(shape, p), 0) << detail::shape_text(shape);
    for (DType dtype : kRandomDtypes) {
      HostTensor x = random_x(shape, dtype, rng);
      EXPECT_EQ(compare(x, p), "") << describe(x, p);
    }
  }
}

TEST_F(VectorNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(46);
  HostTensor x = random_x({2048, 4096}, DType::bf16, rng);
  EXPECT_EQ(compare(x, {2}, 0, true), "");
  EXPECT_EQ(compare(x, {1, {1}}, 0, true), "");
}

TEST_F(VectorNormGpu, WorkspaceRulesOnTheDevice) {
  const Shape shape{2048, 4096};
  DeviceBuffer x(2048 * 4096 * 2), y(2), small(16 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::bf16, shape), y_ref = device_ref(y.data(), DType::bf16, {});
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  expect_message([&] { vector_norm(x_ref, y_ref, nullptr, {}); },
                 "vector_norm: workspace is null but this call needs 1024 f32 elements");
  expect_message([&] { vector_norm(x_ref, y_ref, &small_ref, {}); }, "workspace has 16 elements, fewer than the 1024");
  const TensorRef in_x = device_ref(x.data(), DType::f32, Shape{1024});
  expect_message([&] { vector_norm(x_ref, y_ref, &in_x, {}); }, "x and workspace overlap in memory");
  HostTensor host({4}, DType::f32), host_y({}, DType::f32);
  expect_message([&] { vector_norm(host.ref(), host_y.ref(), nullptr, {}); }, "vector_norm: x must be a CUDA tensor");
}

}  // namespace
}  // namespace solops::testing::norm
