// WeightNorm on the GPU against the CPU reference (spec §2.20, §6.7): every catalogue row, 120 random
// shapes over dim in [0, rank) and dim -1 (the whole tensor), edge shapes, PyTorch's [1, n, 1] g, rows
// shared by clusters, NaN and zero slices, unaligned pointers, bitwise run-to-run norms, CUDA graph
// capture and the device-side rules. Outputs and workspaces are poisoned first.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
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

// Spec §2.20: output fp32 1e-5, fp16 1e-3, bf16 1.6e-2; norm rtol 1e-5.
double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-5 : dtype == DType::f16 ? 1e-3 : 1.6e-2; }

Shape g_shape(const Shape& v_shape, int64_t dim) {
  if (dim < 0) return Shape{1};
  return Shape{v_shape[static_cast<size_t>(dim)]};
}

// weight_norm on the device (v, g and y `offset` elements into their allocations, y, norm and the
// workspace poisoned; replayed from a CUDA graph where `graph`) against the reference: the first
// disagreement, or "".
std::string compare(HostTensor& v, HostTensor& g, const WeightNorm& p, size_t offset = 0, bool graph = false) {
  const Shape norm_shape = weight_norm_norm_shape(v.shape, p);
  HostTensor expected(v.shape, v.dtype), actual(v.shape, v.dtype);
  HostTensor expected_norm(norm_shape, DType::f32), actual_norm(norm_shape, DType::f32);
  reference::weight_norm(v.ref(), g.ref(), expected.ref(), expected_norm.ref(), p);
  const int64_t workspace_elements = weight_norm_workspace_elements(v.shape, p);
  const size_t shift = offset * dtype_size(v.dtype);
  DeviceBuffer v_buffer(v.bytes.size(), shift), g_buffer(g.bytes.size(), shift), y(v.bytes.size(), shift);
  DeviceBuffer norm(expected_norm.bytes.size()), workspace(static_cast<size_t>(workspace_elements) * sizeof(float));
  v_buffer.upload(v.bytes.data());
  g_buffer.upload(g.bytes.data());
  y.poison();
  norm.poison();
  workspace.poison();
  const TensorRef v_ref = device_ref(v_buffer.data(), v.dtype, v.shape);
  const TensorRef g_ref = device_ref(g_buffer.data(), v.dtype, g.shape);
  const TensorRef y_ref = device_ref(y.data(), v.dtype, v.shape);
  const TensorRef norm_ref = device_ref(norm.data(), DType::f32, norm_shape);
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, Shape{workspace_elements});
  const TensorRef* workspace_arg = workspace_elements ? &workspace_ref : nullptr;
  launch_maybe_in_graph(
      [&](cudaStream_t stream) { weight_norm(v_ref, g_ref, y_ref, norm_ref, workspace_arg, p, stream); }, graph);
  y.download(actual.bytes.data());
  norm.download(actual_norm.bytes.data());
  const std::string norms = first_difference("norm", expected_norm, actual_norm, 0, 1e-5);
  if (!norms.empty()) return norms;
  return first_difference("output", expected, actual, tolerance(v.dtype), tolerance(v.dtype));
}

std::string describe(const HostTensor& v, const WeightNorm& p) {
  return detail::concat("v ", detail::shape_text(v.shape), " ", dtype_name(v.dtype), " dim ", p.dim);
}

struct Inputs {
  HostTensor v, g;
};

Inputs random_inputs(const Shape& shape, DType dtype, int64_t dim, std::mt19937_64& rng,
                     Values values = Values::normal) {
  Inputs in{HostTensor(shape, dtype), HostTensor(g_shape(shape, dim), dtype)};
  fill(in.v, rng, values);
  fill(in.g, rng);
  return in;
}

class WeightNormGpu : public testing::GpuTest {};

TEST_F(WeightNormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(50);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("WeightNormFwd");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const WeightNorm p{row["params"].value("dim", int64_t{0})};
    Inputs in = random_inputs(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(row["dtype"]), p.dim, rng);
    EXPECT_EQ(compare(in.v, in.g, p), "") << row["workload"] << " " << describe(in.v, p);
  }
}

TEST_F(WeightNormGpu, RandomShapes) {
  std::mt19937_64 rng(51);
  for (int c = 0; c < 120; ++c) {
    const Shape shape = draw_reduction_shape(rng);
    const auto rank = static_cast<int64_t>(shape.size());
    // Every fifth case the whole tensor (dim -1), the others a drawn dim.
    const WeightNorm p{c % 5 == 0 ? -1 : std::uniform_int_distribution<int64_t>(0, rank - 1)(rng)};
    Inputs in = random_inputs(shape, kRandomDtypes[c % 3], p.dim, rng, draw_values(c));
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare(in.v, in.g, p, offset), "") << "case " << c << " " << describe(in.v, p) << " offset " << offset;
  }
}

TEST_F(WeightNormGpu, EdgeShapesAndPyTorchsGShape) {
  std::mt19937_64 rng(52);
  for (const Shape& shape : {Shape{1}, Shape{5}, Shape{1, 1}, Shape{3, 0}, Shape{0, 5}, Shape{2, 3, 0}}) {
    for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
      Inputs in = random_inputs(shape, DType::f32, dim, rng);
      EXPECT_EQ(compare(in.v, in.g, {dim}), "") << describe(in.v, {dim});
    }
  }
  Inputs in = random_inputs({6, 3, 5}, DType::bf16, 1, rng);
  in.g.shape = {1, 3, 1};  // as nn.utils.weight_norm stores g
  EXPECT_EQ(compare(in.v, in.g, {1}), "");
}

// Few long rows (dim 0), shared by a cluster of blocks where x takes 32 KB a row (not [3, 8192]
// bf16, nor [1, 65536] f32, which still takes two passes), a NaN in row 1 where there is one;
// [1, 65536] bf16 took two passes before.
TEST_F(WeightNormGpu, RowsSharedByClusters) {
  std::mt19937_64 rng(56);
  for (const Shape& shape : {Shape{1, 65536}, Shape{3, 8192}, Shape{2, 40000}, Shape{4, 16384}}) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      Inputs in = random_inputs(shape, dtype, 0, rng);
      if (shape[0] > 1) in.v.set(shape[1] + 17, std::numeric_limits<double>::quiet_NaN());
      EXPECT_EQ(compare(in.v, in.g, {0}), "") << describe(in.v, {0});
    }
  }
}

TEST_F(WeightNormGpu, NaNStaysInItsSliceAndZeroSlicesMatchPyTorch) {
  std::mt19937_64 rng(53);
  Inputs in = random_inputs({64, 4097}, DType::f16, 0, rng);
  in.v.set(3 * 4097 + 5, std::numeric_limits<double>::quiet_NaN());
  for (int64_t j = 0; j < 4097; ++j) in.v.set(7 * 4097 + j, 0);
  EXPECT_EQ(compare(in.v, in.g, {0}), "");
  Inputs whole = random_inputs({64, 4097}, DType::f32, -1, rng);
  whole.v.set(99, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(compare(whole.v, whole.g, {-1}), "");
}

TEST_F(WeightNormGpu, UnalignedAndDeterministic) {
  std::mt19937_64 rng(54);
  Inputs in = random_inputs({1, 16384}, DType::bf16, 0, rng);
  for (size_t offset : {1, 3}) EXPECT_EQ(compare(in.v, in.g, {0}, offset), "") << offset;
  // Bit-identical norms from run to run: the split norms' partials are added in a fixed order.
  const WeightNorm p{-1};
  Inputs whole = random_inputs({2048, 4096}, DType::f16, -1, rng);
  const int64_t elements = weight_norm_workspace_elements(whole.v.shape, p);
  DeviceBuffer v(whole.v.bytes.size()), g(2), y(whole.v.bytes.size()), norm(sizeof(float)),
      workspace(sizeof(float) * static_cast<size_t>(elements));
  v.upload(whole.v.bytes.data());
  g.upload(whole.g.bytes.data());
  const TensorRef v_ref = device_ref(v.data(), DType::f16, whole.v.shape);
  const TensorRef g_ref = device_ref(g.data(), DType::f16, {1});
  const TensorRef y_ref = device_ref(y.data(), DType::f16, whole.v.shape);
  const TensorRef norm_ref = device_ref(norm.data(), DType::f32, {1});
  const TensorRef w_ref = device_ref(workspace.data(), DType::f32, Shape{elements});
  float first = 0, again = 0;
  weight_norm(v_ref, g_ref, y_ref, norm_ref, &w_ref, p);
  norm.download(&first);
  for (int i = 0; i < 5; ++i) {
    weight_norm(v_ref, g_ref, y_ref, norm_ref, &w_ref, p);
    norm.download(&again);
    EXPECT_EQ(first, again);
  }
}

TEST_F(WeightNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(55);
  Inputs rows = random_inputs({2048, 4096}, DType::bf16, 0, rng);
  EXPECT_EQ(compare(rows.v, rows.g, {0}, 0, true), "");
  Inputs whole = random_inputs({1, 16384}, DType::f32, -1, rng);
  EXPECT_EQ(compare(whole.v, whole.g, {-1}, 0, true), "");
}

TEST_F(WeightNormGpu, DeviceRules) {
  DeviceBuffer v(2048 * 4096 * 2), g(2), y(2048 * 4096 * 2), norm(4), small(16 * sizeof(float));
  const Shape shape{2048, 4096};
  const TensorRef v_ref = device_ref(v.data(), DType::bf16, shape), g_ref = device_ref(g.data(), DType::bf16, {1});
  const TensorRef y_ref = device_ref(y.data(), DType::bf16, shape), norm_ref = device_ref(norm.data(), DType::f32, {1});
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  expect_message([&] { weight_norm(v_ref, g_ref, y_ref, norm_ref, nullptr, {-1}); },
                 "weight_norm: workspace is null but this call needs 1024 f32 elements");
  expect_message([&] { weight_norm(v_ref, g_ref, y_ref, norm_ref, &small_ref, {-1}); },
                 "workspace has 16 elements, fewer than the 1024");
  const TensorRef in_y = device_ref(y.data(), DType::f32, Shape{1024});
  expect_message([&] { weight_norm(v_ref, g_ref, y_ref, norm_ref, &in_y, {-1}); }, "output and workspace overlap");
  expect_message([&] { weight_norm(v_ref, g_ref, v_ref, norm_ref, &small_ref, {0}); }, "g [1] must hold 2048");
  HostTensor host({4}, DType::f32), host_g({4}, DType::f32), host_y({4}, DType::f32), host_norm({4}, DType::f32);
  expect_message([&] { weight_norm(host.ref(), host_g.ref(), host_y.ref(), host_norm.ref(), nullptr, {}); },
                 "weight_norm: v must be a CUDA tensor");
}

}  // namespace
}  // namespace solops::testing::norm
