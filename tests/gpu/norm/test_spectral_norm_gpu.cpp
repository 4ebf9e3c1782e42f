// SpectralNormPowerIter on the GPU against the CPU reference (spec §2.21): every catalogue row, 120
// random shapes (odd, one, short and long O and I; n_iter 0 to 3; f32, f16, bf16; some unaligned, some
// with NaN and inf), empty and one-sided shapes, n_iter 0's copies, the zero matrix and eps, NaN, the
// one-row kernel's edge values, unaligned pointers, bitwise run-to-run and graph-replay equality, CUDA
// graph capture and the device-side rules, at the spec's tolerance (sigma rtol 1e-4, u_out and v_out
// atol 1e-5, rtol 1e-4). Outputs and workspaces are poisoned first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

struct Inputs {
  HostTensor x, u, v;
};

Inputs random_inputs(const Shape& shape, DType dtype, std::mt19937_64& rng, Values values = Values::normal) {
  Inputs in{HostTensor(shape, dtype), HostTensor({shape[0]}, DType::f32), HostTensor({shape[1]}, DType::f32)};
  fill(in.x, rng, values);
  fill(in.u, rng);
  fill(in.v, rng);
  return in;
}

struct Outputs {
  HostTensor sigma, u_out, v_out;

  explicit Outputs(const Shape& x_shape)
      : sigma({}, DType::f32), u_out({x_shape[0]}, DType::f32), v_out({x_shape[1]}, DType::f32) {}
};

SpectralNormPowerIter params(const Inputs& in, int64_t n_iter, double eps = 1e-12) {
  return {{in.x.shape[1]}, n_iter, eps};
}

// spectral_norm_power_iter on the device: every tensor `offset` elements into its allocation, the
// outputs and the workspace poisoned first; replayed from a CUDA graph where `graph`.
Outputs run_on_device(const Inputs& in, const SpectralNormPowerIter& p, size_t offset = 0, bool graph = false) {
  const Shape vector_shapes[] = {{in.x.shape[0]}, {in.x.shape[1]}};
  const int64_t elements = spectral_norm_power_iter_workspace_elements(in.x.shape, p);
  const size_t shift = offset * sizeof(float);
  DeviceBuffer x(in.x.bytes.size(), offset * dtype_size(in.x.dtype)), u(in.u.bytes.size(), shift),
      v(in.v.bytes.size(), shift), sigma(sizeof(float), shift), u_out(in.u.bytes.size(), shift),
      v_out(in.v.bytes.size(), shift), workspace(static_cast<size_t>(elements) * sizeof(float));
  x.upload(in.x.bytes.data());
  u.upload(in.u.bytes.data());
  v.upload(in.v.bytes.data());
  sigma.poison();
  u_out.poison();
  v_out.poison();
  workspace.poison();
  const TensorRef x_ref = device_ref(x.data(), in.x.dtype, in.x.shape);
  const TensorRef u_ref = device_ref(u.data(), DType::f32, vector_shapes[0]);
  const TensorRef v_ref = device_ref(v.data(), DType::f32, vector_shapes[1]);
  const TensorRef sigma_ref = device_ref(sigma.data(), DType::f32, {});
  const TensorRef u_out_ref = device_ref(u_out.data(), DType::f32, vector_shapes[0]);
  const TensorRef v_out_ref = device_ref(v_out.data(), DType::f32, vector_shapes[1]);
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, Shape{elements});
  const TensorRef* workspace_arg = elements ? &workspace_ref : nullptr;
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        spectral_norm_power_iter(x_ref, u_ref, v_ref, sigma_ref, u_out_ref, v_out_ref, workspace_arg, p, stream);
      },
      graph);
  Outputs out(in.x.shape);
  sigma.download(out.sigma.bytes.data());
  u_out.download(out.u_out.bytes.data());
  v_out.download(out.v_out.bytes.data());
  return out;
}

// The device's outputs against the reference's at spec §2.21's tolerance (sigma rtol 1e-4; u_out and
// v_out atol 1e-5, rtol 1e-4): the first disagreement, or "".
std::string compare(Inputs& in, const SpectralNormPowerIter& p, size_t offset = 0, bool graph = false) {
  Outputs expected(in.x.shape);
  reference::spectral_norm_power_iter(in.x.ref(), in.u.ref(), in.v.ref(), expected.sigma.ref(), expected.u_out.ref(),
                                      expected.v_out.ref(), p);
  Outputs actual = run_on_device(in, p, offset, graph);
  std::string difference = first_difference("sigma", expected.sigma, actual.sigma, 0, 1e-4);
  if (difference.empty()) difference = first_difference("u_out", expected.u_out, actual.u_out, 1e-5, 1e-4);
  if (difference.empty()) difference = first_difference("v_out", expected.v_out, actual.v_out, 1e-5, 1e-4);
  return difference;
}

bool same_bits(const Outputs& a, const Outputs& b) {
  return a.sigma.bytes == b.sigma.bytes && a.u_out.bytes == b.u_out.bytes && a.v_out.bytes == b.v_out.bytes;
}

std::string describe(const Inputs& in, const SpectralNormPowerIter& p) {
  return detail::concat("x ", detail::shape_text(in.x.shape), " ", dtype_name(in.x.dtype), " n_iter ", p.n_iter,
                        " eps ", p.eps);
}

class SpectralNormGpu : public testing::GpuTest {};

TEST_F(SpectralNormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(60);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("SpectralNormPowerIterFwd");
  ASSERT_EQ(rows.size(), 9u);
  for (const auto& row : rows) {
    const Shape shape = row["tensors"]["x"].get<Shape>();
    ASSERT_EQ(row["tensors"]["normalized"].get<Shape>(), Shape{shape[1]}) << row["workload"];
    Inputs in = random_inputs(shape, testing::parse_dtype(row["dtype"]), rng);
    const SpectralNormPowerIter p =
        params(in, row["params"].value("n_iter", int64_t{1}), row["params"].value("eps", 1e-12));
    EXPECT_EQ(compare(in, p), "") << row["workload"] << " " << describe(in, p);
  }
}

TEST_F(SpectralNormGpu, RandomShapes) {
  // Odd, one, short and long rows and columns, none a multiple of 8 but 64, 1000 and 4096; at most
  // about 2M elements, so that the reference stays quick.
  static const int64_t kSizes[] = {1, 2, 3, 7, 15, 31, 64, 100, 257, 1000, 1023, 2049, 3001, 4096};
  std::mt19937_64 rng(61);
  std::uniform_int_distribution<size_t> size_of(0, std::size(kSizes) - 1);
  for (int c = 0; c < 120; ++c) {
    int64_t rows = kSizes[size_of(rng)], cols = kSizes[size_of(rng)];
    while (rows * cols > 2'000'000) rows = std::max<int64_t>(1, rows / 4);
    Inputs in = random_inputs({rows, cols}, kRandomDtypes[c % 3], rng, draw_values(c));
    const SpectralNormPowerIter p = params(in, c % 4);
    const size_t offset = c % 5 == 3 ? 1 : 0;
    EXPECT_EQ(compare(in, p, offset), "") << "case " << c << " " << describe(in, p) << " offset " << offset;
  }
}

// Every dtype: an empty W's data pointer is null (as PyTorch's), and a kernel that loads ahead of
// its bounds test faults on it in the f16/bf16 code but not in the f32 code (3bcb2c1's one-block
// path, caught only by the PyTorch tests).
TEST_F(SpectralNormGpu, EdgeShapes) {
  std::mt19937_64 rng(62);
  for (const Shape& shape : {Shape{1, 1}, Shape{0, 5}, Shape{5, 0}, Shape{0, 0}, Shape{1, 0}, Shape{1, 16384},
                             Shape{1, 65536}, Shape{1, 40001}, Shape{16384, 1}, Shape{3, 7}, Shape{40000, 3}}) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (int64_t n_iter : {0, 1, 3}) {
        Inputs in = random_inputs(shape, dtype, rng);
        EXPECT_EQ(compare(in, params(in, n_iter)), "") << describe(in, params(in, n_iter));
      }
    }
  }
  Inputs in = random_inputs({100, 300}, DType::f16, rng);
  EXPECT_EQ(compare(in, params(in, 25)), "") << "many iterations";
}

TEST_F(SpectralNormGpu, NIterZeroCopiesUAndV) {
  std::mt19937_64 rng(63);
  Inputs in = random_inputs({2048, 4096}, DType::bf16, rng);
  const Outputs out = run_on_device(in, params(in, 0));
  EXPECT_EQ(out.u_out.bytes, in.u.bytes);
  EXPECT_EQ(out.v_out.bytes, in.v.bytes);
  EXPECT_EQ(compare(in, params(in, 0)), "");
}

TEST_F(SpectralNormGpu, ZeroMatrixAndEps) {
  std::mt19937_64 rng(64);
  Inputs in = random_inputs({64, 1000}, DType::bf16, rng);
  for (int64_t i = 0; i < in.x.numel(); ++i) in.x.set(i, 0);
  EXPECT_EQ(compare(in, params(in, 1)), "") << "zeros";
  EXPECT_EQ(compare(in, params(in, 1, 0.0)), "") << "0 / 0 with eps 0";
  Outputs out = run_on_device(in, params(in, 2));
  for (int64_t i = 0; i < out.v_out.numel(); ++i) ASSERT_EQ(out.v_out.at(i), 0.0) << i;
  EXPECT_EQ(out.sigma.at(0), 0.0);
}

TEST_F(SpectralNormGpu, NaNInWSpreads) {
  std::mt19937_64 rng(65);
  for (const int64_t rows : {257, 1}) {  // the chain of kernels, and the one-row kernel
    Inputs in = random_inputs({rows, 1000}, DType::f16, rng);
    in.x.set((rows - 1) / 2 * 1000 + 17, std::numeric_limits<double>::quiet_NaN());
    for (int64_t n_iter : {0, 1, 2}) EXPECT_EQ(compare(in, params(in, n_iter)), "") << rows << " rows, " << n_iter;
    Outputs out = run_on_device(in, params(in, 1));
    EXPECT_TRUE(std::isnan(out.sigma.at(0)) && std::isnan(out.u_out.at(0)) && std::isnan(out.v_out.at(999))) << rows;
  }
}

// One row runs one kernel in closed form (src/norm/spectral_norm.cu, one_row_power_iteration):
// against the reference's steps on infinities, zeros with eps 0, a zero u, and a u whose ratio to
// eps overflows over a zero W. 3001 columns take the elementwise kernel, 4096 the vector kernel of
// whole rows.
TEST_F(SpectralNormGpu, OneRowEdgeValues) {
  std::mt19937_64 rng(69);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (const int64_t cols : {3001, 4096}) {
      Inputs in = random_inputs({1, cols}, dtype, rng);
      in.x.set(1234, -std::numeric_limits<double>::infinity());
      for (int64_t n_iter : {1, 3}) {
        EXPECT_EQ(compare(in, params(in, n_iter)), "") << "-inf, " << describe(in, params(in, n_iter));
      }
      for (int64_t i = 0; i < in.x.numel(); ++i) in.x.set(i, 0);
      EXPECT_EQ(compare(in, params(in, 1)), "") << "zeros, " << cols;
      EXPECT_EQ(compare(in, params(in, 2, 0.0)), "") << "zeros with eps 0, " << cols;
      in.u.set(0, 1e30);
      EXPECT_EQ(compare(in, params(in, 1)), "") << "zeros, u = 1e30, " << cols;
      Inputs zero_u = random_inputs({1, cols}, dtype, rng);
      zero_u.u.set(0, 0);
      EXPECT_EQ(compare(zero_u, params(zero_u, 2)), "") << "u = 0, " << describe(zero_u, params(zero_u, 2));
    }
  }
}

TEST_F(SpectralNormGpu, UnalignedPointers) {
  std::mt19937_64 rng(66);
  Inputs in = random_inputs({2048, 4096}, DType::f16, rng);
  for (size_t offset : {1, 3}) EXPECT_EQ(compare(in, params(in, 1), offset), "") << offset;
  Inputs f32 = random_inputs({64, 1000}, DType::f32, rng);
  EXPECT_EQ(compare(f32, params(f32, 2), 1), "");
}

TEST_F(SpectralNormGpu, BitIdenticalFromRunToRun) {
  std::mt19937_64 rng(67);
  for (const Shape& shape : {Shape{2048, 4096}, Shape{1, 16384}, Shape{1000, 1023}}) {
    Inputs in = random_inputs(shape, DType::bf16, rng);
    const SpectralNormPowerIter p = params(in, 2);
    const Outputs first = run_on_device(in, p);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(same_bits(first, run_on_device(in, p))) << describe(in, p);
  }
}

TEST_F(SpectralNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(68);
  for (int64_t n_iter : {0, 1, 2}) {
    Inputs in = random_inputs({2048, 4096}, DType::bf16, rng);
    EXPECT_EQ(compare(in, params(in, n_iter), 0, true), "") << n_iter;
    EXPECT_TRUE(same_bits(run_on_device(in, params(in, n_iter)), run_on_device(in, params(in, n_iter), 0, true)));
  }
}

TEST_F(SpectralNormGpu, DeviceRules) {
  const Shape shape{2048, 4096};
  DeviceBuffer x(2048 * 4096 * 2), u(2048 * 4), v(4096 * 4), sigma(4), u_out(2048 * 4), v_out(4096 * 4),
      small(16 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::bf16, shape);
  const TensorRef u_ref = device_ref(u.data(), DType::f32, {2048}), v_ref = device_ref(v.data(), DType::f32, {4096});
  const TensorRef sigma_ref = device_ref(sigma.data(), DType::f32, {});
  const TensorRef u_out_ref = device_ref(u_out.data(), DType::f32, {2048});
  const TensorRef v_out_ref = device_ref(v_out.data(), DType::f32, {4096});
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  const SpectralNormPowerIter p{{4096}};
  const auto call = [&](const TensorRef& u_arg, const TensorRef& u_out_arg, const TensorRef* workspace) {
    spectral_norm_power_iter(x_ref, u_arg, v_ref, sigma_ref, u_out_arg, v_out_ref, workspace, p);
  };
  expect_message([&] { call(u_ref, u_out_ref, nullptr); },
                 "spectral_norm_power_iter: workspace is null but this call needs 135168 f32 elements "
                 "(spectral_norm_power_iter_workspace_elements)");
  expect_message([&] { call(u_ref, u_out_ref, &small_ref); }, "workspace has 16 elements, fewer than the 135168");
  const TensorRef in_x = device_ref(x.data(), DType::f32, Shape{135168});
  expect_message([&] { call(u_ref, u_out_ref, &in_x); }, "x and workspace overlap in memory");
  expect_message([&] { call(u_ref, u_ref, &small_ref); }, "u and u_out overlap in memory");
  HostTensor host_u({2048}, DType::f32);
  expect_message([&] { call(host_u.ref(), u_out_ref, nullptr); }, "spectral_norm_power_iter: u must be a CUDA tensor");
  const TensorRef claims_device = device_ref(host_u.bytes.data(), DType::f32, {2048});
  expect_message([&] { call(claims_device, u_out_ref, nullptr); }, "u: data pointer is not device memory");
  // n_iter = 0 reads W once through W v and needs no workspace.
  spectral_norm_power_iter(x_ref, u_ref, v_ref, sigma_ref, u_out_ref, v_out_ref, nullptr, {{4096}, 0});
  testing::cuda_ok(cudaDeviceSynchronize(), "n_iter 0");
}

}  // namespace
}  // namespace solops::testing::norm
