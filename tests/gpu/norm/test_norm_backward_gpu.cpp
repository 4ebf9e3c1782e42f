// The training forward's statistics and RMSNormBwd and LayerNormBwd on the GPU against the CPU
// reference (spec §2.13, 2.14): every catalogue row, random shapes (as the row norms' forward),
// NaN propagation, many rows (blocks of several rows, rows staged ahead), a large common offset,
// rows shared by clusters, an empty batch, parameter gradients bit-identical from run to run, CUDA
// graph capture and the workspace rules. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "gpu/gpu_support.hpp"
#include "gpu/norm/norm_gpu_checks.hpp"
#include "host_tensor.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// One case of the tests that walk a list of shapes, with or without a weight.
struct ShapeTypeAndWeight {
  Shape shape;
  DType dtype;
  bool weight;
};

// A host tensor copied to the device (`pad` bytes into its allocation), or a poisoned device
// tensor of its shape and dtype for an output.
struct OnDevice {
  std::unique_ptr<DeviceBuffer> buffer;
  TensorRef ref;

  OnDevice(HostTensor& host, size_t pad, bool poisoned = false)
      : buffer(std::make_unique<DeviceBuffer>(host.bytes.size(), pad * dtype_size(host.dtype))),
        ref(make_tensor(buffer->data(), host.dtype, host.shape, 0)) {
    if (poisoned) buffer->poison();
    else buffer->upload(host.bytes.data());
  }
  void download(HostTensor& host) const { buffer->download(host.bytes.data()); }
};

// One backward call: x, grad_out, an optional weight, and the statistics of the reference's
// training forward, so that the comparison isolates the backward.
struct BackwardInputs {
  Op op;  // rms or layer
  HostTensor x, dy;
  std::optional<HostTensor> weight = std::nullopt;
  int normalized_dims = 1;

  Shape normalized_shape() const { return Shape(x.shape.end() - normalized_dims, x.shape.end()); }
  Shape stats_shape() const { return Shape(x.shape.begin(), x.shape.end() - normalized_dims); }
};

BackwardInputs make_backward_inputs(Op op, Shape shape, DType dtype, std::mt19937_64& rng, bool weight = true,
                                    int normalized_dims = 1, Values values = Values::normal) {
  BackwardInputs in{op, HostTensor(shape, dtype), HostTensor(shape, dtype)};
  in.normalized_dims = normalized_dims;
  fill(in.x, rng, values);
  fill(in.dy, rng);
  if (weight) {
    in.weight.emplace(in.normalized_shape(), dtype);
    fill(*in.weight, rng);
  }
  return in;
}

std::string describe(const BackwardInputs& in) {
  return detail::concat(op_name(in.op), "_backward x ", detail::shape_text(in.x.shape), " ", dtype_name(in.x.dtype),
                        " normalized dims ", in.normalized_dims, in.weight ? " weight" : "");
}

// Spec §2.13, 2.14 (proposed): atol = rtol; the parameter gradients are sums over M rows, so their
// atol grows with sqrt(M).
double backward_tolerance(DType dtype) { return dtype == DType::f32 ? 1e-4 : dtype == DType::f16 ? 1e-2 : 2e-2; }

// The training forward on the device and the reference: output and statistics.
std::string compare_training_forward(BackwardInputs& in, size_t pad = 0) {
  const bool layer = in.op == Op::layer;
  const Shape ns = in.normalized_shape();
  const double eps = default_eps(in.op);
  HostTensor y(in.x.shape, in.x.dtype), mean(in.stats_shape(), DType::f32), rstd(in.stats_shape(), DType::f32);
  std::optional<TensorRef> host_weight;
  if (in.weight) host_weight = in.weight->ref();
  if (layer) {
    reference::layer_norm_with_stats(in.x.ref(), optional_ref(host_weight), nullptr, y.ref(), mean.ref(), rstd.ref(),
                                     {ns, eps});
  } else {
    reference::rms_norm_with_stats(in.x.ref(), optional_ref(host_weight), y.ref(), rstd.ref(), {ns, eps});
  }
  const OnDevice x(in.x, pad), d_y(y, pad, true), d_mean(mean, pad, true), d_rstd(rstd, pad, true);
  std::optional<OnDevice> weight;
  std::optional<TensorRef> weight_ref;
  if (in.weight) weight_ref = weight.emplace(*in.weight, pad).ref;
  if (layer) {
    layer_norm_with_stats(x.ref, optional_ref(weight_ref), nullptr, d_y.ref, d_mean.ref, d_rstd.ref, {ns, eps});
  } else {
    rms_norm_with_stats(x.ref, optional_ref(weight_ref), d_y.ref, d_rstd.ref, {ns, eps});
  }
  testing::cuda_ok(cudaDeviceSynchronize(), "training forward");
  HostTensor got_y(y.shape, y.dtype), got_mean(mean.shape, DType::f32), got_rstd(rstd.shape, DType::f32);
  d_y.download(got_y);
  d_rstd.download(got_rstd);
  const double tol = tolerance(in.op, in.x.dtype);
  std::string difference = first_difference("output", y, got_y, tol, tol);
  if (difference.empty()) difference = first_difference("rstd", rstd, got_rstd, 1e-5, 1e-4);
  if (layer && difference.empty()) {
    d_mean.download(got_mean);
    difference = first_difference("mean", mean, got_mean, 1e-5, 1e-4);
  }
  return difference;
}

// The backward's workspace for x_shape, poisoned, and the pointer a call takes (null where none is
// needed).
struct BackwardWorkspace {
  int64_t elements;
  DeviceBuffer buffer;
  TensorRef ref;

  BackwardWorkspace(Op op, const Shape& x_shape, const Shape& ns)
      : elements(op == Op::layer ? layer_norm_backward_workspace_elements(x_shape, {ns})
                                 : rms_norm_backward_workspace_elements(x_shape, {ns})),
        buffer(static_cast<size_t>(elements) * sizeof(float)),
        ref(device_ref(buffer.data(), DType::f32, Shape{elements})) {
    buffer.poison();
  }
  const TensorRef* arg() const { return elements ? &ref : nullptr; }
};

// The backward on the device and the reference from the same statistics; returns the first
// disagreement, or "". `grad_weight_bits`, when given, receives the device's grad_weight.
std::string compare_backward(BackwardInputs& in, size_t pad = 0, HostTensor* grad_weight_bits = nullptr) {
  const bool layer = in.op == Op::layer;
  const Shape ns = in.normalized_shape();
  HostTensor y(in.x.shape, in.x.dtype), mean(in.stats_shape(), DType::f32), rstd(in.stats_shape(), DType::f32);
  std::optional<TensorRef> host_weight;
  if (in.weight) host_weight = in.weight->ref();
  if (layer) {
    reference::layer_norm_with_stats(in.x.ref(), optional_ref(host_weight), nullptr, y.ref(), mean.ref(), rstd.ref(),
                                     {ns, default_eps(in.op)});
  } else {
    reference::rms_norm_with_stats(in.x.ref(), optional_ref(host_weight), y.ref(), rstd.ref(),
                                   {ns, default_eps(in.op)});
  }
  HostTensor grad_x(in.x.shape, in.x.dtype), grad_w(ns, in.x.dtype), grad_b(ns, in.x.dtype);
  const TensorRef grad_w_ref = grad_w.ref(), grad_b_ref = grad_b.ref();
  if (layer) {
    reference::layer_norm_backward(in.dy.ref(), in.x.ref(), optional_ref(host_weight), mean.ref(), rstd.ref(),
                                   grad_x.ref(), &grad_w_ref, &grad_b_ref, {ns});
  } else {
    reference::rms_norm_backward(in.dy.ref(), in.x.ref(), optional_ref(host_weight), rstd.ref(), grad_x.ref(),
                                 &grad_w_ref, {ns});
  }

  const OnDevice x(in.x, pad), dy(in.dy, pad), d_mean(mean, pad), d_rstd(rstd, pad);
  const OnDevice d_grad_x(grad_x, pad, true), d_grad_w(grad_w, pad, true), d_grad_b(grad_b, pad, true);
  std::optional<OnDevice> weight;
  std::optional<TensorRef> weight_ref;
  if (in.weight) weight_ref = weight.emplace(*in.weight, pad).ref;
  const BackwardWorkspace workspace(in.op, in.x.shape, ns);
  if (layer) {
    layer_norm_backward(dy.ref, x.ref, optional_ref(weight_ref), d_mean.ref, d_rstd.ref, d_grad_x.ref, &d_grad_w.ref,
                        &d_grad_b.ref, workspace.arg(), {ns});
  } else {
    rms_norm_backward(dy.ref, x.ref, optional_ref(weight_ref), d_rstd.ref, d_grad_x.ref, &d_grad_w.ref,
                      workspace.arg(), {ns});
  }
  testing::cuda_ok(cudaDeviceSynchronize(), "backward");

  HostTensor got_x(grad_x.shape, grad_x.dtype), got_w(ns, grad_w.dtype), got_b(ns, grad_b.dtype);
  d_grad_x.download(got_x);
  d_grad_w.download(got_w);
  if (grad_weight_bits) d_grad_w.download(*grad_weight_bits);
  const double tol = backward_tolerance(in.x.dtype);
  const double rows = static_cast<double>(in.dy.numel()) / static_cast<double>(grad_w.numel());
  const double sum_atol = tol * std::sqrt(std::max(1.0, rows));
  std::string difference = first_difference("grad_x", grad_x, got_x, tol, tol);
  if (difference.empty()) difference = first_difference("grad_weight", grad_w, got_w, sum_atol, tol);
  if (layer && difference.empty()) {
    d_grad_b.download(got_b);
    difference = first_difference("grad_bias", grad_b, got_b, sum_atol, tol);
  }
  return difference;
}

class NormBackwardGpu : public testing::GpuTestWithParam<Op> {};

const char* catalogue_backward_op(Op op) { return op == Op::rms ? "RMSNormBwd" : "LayerNormBwd"; }

TEST_P(NormBackwardGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2031);
  for_each_catalogue_row(catalogue_backward_op(GetParam()),
                         [&](const nlohmann::json& row, const Shape& shape, DType dtype) {
                           BackwardInputs in = make_backward_inputs(GetParam(), shape, dtype, rng);
                           EXPECT_EQ(compare_backward(in), "") << row["workload"] << " " << describe(in);
                           EXPECT_EQ(compare_training_forward(in), "") << row["workload"] << " " << describe(in);
                         });
}

TEST_P(NormBackwardGpu, RandomShapes) {
  const Op op = GetParam();
  std::mt19937_64 rng(17 + static_cast<int>(op));
  for (int c = 0; c < kRandomCases; ++c) {
    const RandomShape drawn = draw_shape(rng, c, true);
    BackwardInputs in = make_backward_inputs(op, drawn.shape, kRandomDtypes[c % 3], rng, c % 5 != 2,
                                             drawn.normalized_dims, draw_values(c));
    const size_t pad = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_backward(in, pad), "") << "case " << c << " " << describe(in) << " offset " << pad;
    if (c % 4 == 1) {
      EXPECT_EQ(compare_training_forward(in, pad), "") << "case " << c << " " << describe(in);
    }
  }
}

TEST_P(NormBackwardGpu, NaNPropagatesToItsRowAndTheParameterGradients) {
  std::mt19937_64 rng(18);
  for (int64_t row_len : {4096, 3001, 20000}) {
    BackwardInputs in = make_backward_inputs(GetParam(), {4, row_len}, DType::bf16, rng);
    in.x.set(row_len + 17, std::numeric_limits<double>::quiet_NaN());  // row 1 only
    EXPECT_EQ(compare_backward(in), "") << describe(in);
    EXPECT_EQ(compare_training_forward(in), "") << describe(in);
  }
}

// Parameter gradients of many rows, taken by blocks of several rows on their own barriers: short
// rows many to a block with the last group part empty, rows that do not divide among the blocks,
// rows of 256 and 512 threads, rows just past a warp's multiple; and rows too long for it (f32
// 8192, f16 12288), which stay one a block.
TEST_P(NormBackwardGpu, ManyRowsInBlocksOfSeveralRows) {
  std::mt19937_64 rng(22);
  const ShapeAndType cases[] = {
      {{1001, 64}, DType::bf16},  {{133, 4096}, DType::f16},  {{2049, 4096}, DType::bf16}, {{300, 8192}, DType::bf16},
      {{531, 2056}, DType::bf16}, {{700, 8192}, DType::f32},  {{301, 12288}, DType::f16}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

// Many rows staged ahead in shared memory (row_norm_backward_staged): rows that leave some blocks
// one row fewer than others and blocks with fewer rows than stages ahead (140 rows), two and four
// vectors a thread in 128 to 512 threads, with and without a weight, every dtype.
TEST_P(NormBackwardGpu, ManyRowsStagedAhead) {
  std::mt19937_64 rng(23);
  const ShapeTypeAndWeight cases[] = {{{140, 2048}, DType::bf16, true},  {{140, 2048}, DType::f16, false},
                                      {{265, 1024}, DType::f32, false},  {{1000, 3072}, DType::bf16, true},
                                      {{397, 16384}, DType::bf16, true}, {{300, 8192}, DType::f16, false}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng, c.weight);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

// 1000 + randn, as NormGpu.LargeCommonOffset: x_hat from x and the f32 statistics must not lose the
// unit spread to the offset, in the staged kernel (many rows: x * rstd - mean * rstd in one FMA) and
// the row kernel (few rows: (x - mean) * rstd). The spec's tolerances.
TEST_P(NormBackwardGpu, LargeCommonOffset) {
  std::mt19937_64 rng(24);
  const ShapeTypeAndWeight cases[] = {{{264, 4096}, DType::f32, true},
                                      {{264, 4096}, DType::bf16, true},
                                      {{140, 8192}, DType::f16, false},
                                      {{16, 3000}, DType::f32, true}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng, c.weight, 1, Values::offset);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

// Rows shared by the blocks of a cluster: one row (its parameter gradients written directly), and
// several rows without a weight (no partials); with a weight, several rows stay a block's own.
TEST_P(NormBackwardGpu, RowsSharedByClusters) {
  std::mt19937_64 rng(21);
  const ShapeTypeAndWeight cases[] = {{{1, 65536}, DType::f16, true},
                                      {{1, 40000}, DType::bf16, true},
                                      {{1, 8192}, DType::f32, true},
                                      {{3, 8192}, DType::bf16, false},
                                      {{3, 8192}, DType::bf16, true}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng, c.weight);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
    EXPECT_EQ(compare_training_forward(in), "") << describe(in);
  }
}

TEST_P(NormBackwardGpu, ParameterGradientsAreDeterministic) {
  std::mt19937_64 rng(19);
  BackwardInputs in = make_backward_inputs(GetParam(), {2048, 4096}, DType::bf16, rng);
  HostTensor first(in.normalized_shape(), in.x.dtype), second(in.normalized_shape(), in.x.dtype);
  ASSERT_EQ(compare_backward(in, 0, &first), "");
  ASSERT_EQ(compare_backward(in, 0, &second), "");
  EXPECT_EQ(first.bytes, second.bytes);
}

TEST_P(NormBackwardGpu, EmptyBatchGivesZeroParameterGradients) {
  std::mt19937_64 rng(20);
  BackwardInputs in = make_backward_inputs(GetParam(), {0, 64}, DType::f16, rng);
  EXPECT_EQ(compare_backward(in), "");
}

INSTANTIATE_TEST_SUITE_P(NormBackward, NormBackwardGpu, ::testing::Values(Op::rms, Op::layer),
                         [](const auto& info) { return op_name(info.param); });

TEST_F(NormGpuCalls, TrainingForwardAndBackwardCapturedInACudaGraph) {
  // The replayed graph gives the bits of the same calls made directly (whose numerics the tests
  // above check).
  std::mt19937_64 rng(21);
  BackwardInputs in = make_backward_inputs(Op::layer, {64, 4096}, DType::bf16, rng);
  const Shape ns{4096};
  HostTensor mean({64}, DType::f32), rstd({64}, DType::f32), grad_x(in.x.shape, in.x.dtype),
      grad_w(ns, in.x.dtype), grad_b(ns, in.x.dtype);
  const OnDevice x(in.x, 0), dy(in.dy, 0), weight(*in.weight, 0), d_y(in.x, 0, true), d_mean(mean, 0, true),
      d_rstd(rstd, 0, true), d_grad_x(grad_x, 0, true), d_grad_w(grad_w, 0, true), d_grad_b(grad_b, 0, true);
  const BackwardWorkspace workspace(Op::layer, in.x.shape, ns);
  cudaStream_t stream;
  testing::cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  const auto calls = [&] {
    layer_norm_with_stats(x.ref, &weight.ref, nullptr, d_y.ref, d_mean.ref, d_rstd.ref, {ns}, stream);
    layer_norm_backward(dy.ref, x.ref, &weight.ref, d_mean.ref, d_rstd.ref, d_grad_x.ref, &d_grad_w.ref,
                        &d_grad_b.ref, workspace.arg(), {ns}, stream);
  };
  const auto results = [&] {
    testing::cuda_ok(cudaStreamSynchronize(stream), "synchronize");
    std::vector<HostTensor> out{HostTensor(grad_x.shape, grad_x.dtype), HostTensor(ns, grad_w.dtype),
                                HostTensor(ns, grad_b.dtype)};
    d_grad_x.download(out[0]);
    d_grad_w.download(out[1]);
    d_grad_b.download(out[2]);
    return out;
  };
  calls();
  const std::vector<HostTensor> direct = results();
  for (const OnDevice* output : {&d_y, &d_mean, &d_rstd, &d_grad_x, &d_grad_w, &d_grad_b}) output->buffer->poison();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  testing::cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
  calls();
  testing::cuda_ok(cudaStreamEndCapture(stream, &graph), "end capture");
  testing::cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  testing::cuda_ok(cudaGraphLaunch(exec, stream), "launch");
  const std::vector<HostTensor> replayed = results();
  for (size_t i = 0; i < direct.size(); ++i) EXPECT_EQ(replayed[i].bytes, direct[i].bytes) << "output " << i;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_F(NormGpuCalls, BackwardRejectsHostTensors) {
  HostTensor x({2, 8}, DType::f16), dy({2, 8}, DType::f16), rstd({2}, DType::f32), grad_x({2, 8}, DType::f16);
  try {
    rms_norm_backward(dy.ref(), x.ref(), nullptr, rstd.ref(), grad_x.ref(), nullptr, nullptr, {{8}});
    ADD_FAILURE() << "accepted a CPU tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rms_norm_backward: x must be a CUDA tensor"), std::string::npos) << e.what();
  }
}

// The workspace rule of the backward: needed for grad_weight or grad_bias over more than one row,
// of at least the elements the sizing function gives, apart from every other tensor; not needed
// without parameter gradients or for a single row.
TEST_F(NormGpuCalls, BackwardWorkspaceRules) {
  const Shape shape{64, 4096}, ns{4096};
  const int64_t needed = layer_norm_backward_workspace_elements(shape, {ns});
  EXPECT_EQ(needed, 2 * 64 * 4096);
  EXPECT_EQ(rms_norm_backward_workspace_elements(shape, {ns}), 64 * 4096);
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{1, 4096}, {ns}), 0);
  // grad_x's buffer has room for the f32 workspace laid over it below.
  DeviceBuffer x(64 * 4096 * 2), dy(64 * 4096 * 2), grad_x(64 * 4096 * 4), stats(64 * 4), grad_w(4096 * 2),
      small(16 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::bf16, shape), dy_ref = device_ref(dy.data(), DType::bf16, shape);
  const TensorRef grad_x_ref = device_ref(grad_x.data(), DType::bf16, shape);
  const TensorRef stats_ref = device_ref(stats.data(), DType::f32, Shape{64});
  const TensorRef grad_w_ref = device_ref(grad_w.data(), DType::bf16, ns);
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  expect_message([&] { layer_norm_backward(dy_ref, x_ref, nullptr, stats_ref, stats_ref, grad_x_ref, &grad_w_ref,
                                           nullptr, nullptr, {ns}); },
                 "layer_norm_backward: workspace is null but this call needs 524288 f32 elements "
                 "(layer_norm_backward_workspace_elements)");
  expect_message([&] { rms_norm_backward(dy_ref, x_ref, nullptr, stats_ref, grad_x_ref, &grad_w_ref, &small_ref,
                                         {ns}); },
                 "workspace has 16 elements, fewer than the 262144");
  const TensorRef in_grad_x = device_ref(grad_x.data(), DType::f32, Shape{64 * 4096});
  expect_message([&] { rms_norm_backward(dy_ref, x_ref, nullptr, stats_ref, grad_x_ref, &grad_w_ref, &in_grad_x,
                                         {ns}); },
                 "grad_x and workspace overlap in memory");
}

}  // namespace
}  // namespace solops::testing::norm
