// BatchNormFwd in training mode and BatchNormBwd on the GPU against the CPU references (spec §2.6,
// §2.8): every catalogue row, 120 random shapes each (ranks 2 to 5, odd and power-of-two planes, plane
// size 1, C = 1, B = 1, with and without weight, bias and running statistics, the [C] tensors in f32
// or x's dtype, unaligned pointers, NaN and infinities, a large common offset), edge shapes (no values,
// no channels, more values a channel than a cluster holds, odd and vector planes in two passes),
// determinism (two runs give the same bits), CUDA graph capture, a rejected call leaving the running
// statistics as they were, and the device-side rules; channels_last x (every 4-D catalogue row and
// random 4-D shapes, y and grad_x channels_last too, grad_out channels_last) against the reference on
// the same values in contiguous order. Outputs are poisoned first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
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

// Spec §2.6, §2.8: fp16 1e-2, bf16 2e-2 (atol = rtol) on every output; f32 1e-4 (proposed). The saved
// statistics are f32 from either side: rtol 1e-4.
double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-4 : dtype == DType::f16 ? 1e-2 : 2e-2; }
constexpr double kStatsTolerance = 1e-4;

// One training call's host tensors; absent ones are nullopt.
struct TrainingInputs {
  HostTensor x;
  std::optional<HostTensor> mean = std::nullopt, var = std::nullopt, weight = std::nullopt, bias = std::nullopt;
  BatchNormTraining p{};
};

DType parameter_dtype(DType x_dtype, bool x_dtype_parameters) { return x_dtype_parameters ? x_dtype : DType::f32; }

// x of `values`; normal running means, weights and biases, running variances in [0.5, 2].
TrainingInputs training_inputs(const Shape& shape, DType dtype, std::mt19937_64& rng, bool affine = true,
                               bool running = true, bool x_dtype_parameters = false, Values values = Values::normal) {
  const Shape channels{shape[1]};
  const DType pd = parameter_dtype(dtype, x_dtype_parameters);
  TrainingInputs in{HostTensor(shape, dtype)};
  fill(in.x, rng, values);
  if (running) {
    in.mean.emplace(channels, pd);
    in.var.emplace(channels, pd);
    fill(*in.mean, rng);
    std::uniform_real_distribution<double> variance(0.5, 2.0);
    for (int64_t c = 0; c < shape[1]; ++c) in.var->set(c, variance(rng));
  }
  if (affine) {
    in.weight.emplace(channels, pd);
    in.bias.emplace(channels, pd);
    fill(*in.weight, rng);
    fill(*in.bias, rng);
  }
  return in;
}

std::string describe(const TrainingInputs& in) {
  return detail::concat("x ", detail::shape_text(in.x.shape), " ", dtype_name(in.x.dtype),
                        in.weight ? " affine" : "", in.mean ? " running" : "",
                        in.mean && in.mean->dtype != DType::f32 ? " x-dtype parameters" : "", " momentum ",
                        in.p.momentum, " eps ", in.p.eps);
}

std::optional<TensorRef> host_ref(std::optional<HostTensor>& t) {
  return t ? std::optional<TensorRef>(t->ref()) : std::nullopt;
}

// A device copy of an optional host tensor and its TensorRef; where channels_last (x, grad_out of a
// 4-D call), the copy holds the host's values in channels_last storage and the ref its strides.
struct DeviceTensor {
  std::unique_ptr<DeviceBuffer> buffer;
  std::optional<TensorRef> ref;
  bool channels_last = false;

  DeviceTensor(const std::optional<HostTensor>& host, size_t offset = 0, bool channels_last_ = false)
      : channels_last(channels_last_) {
    if (!host) return;
    buffer = std::make_unique<DeviceBuffer>(host->bytes.size(), offset * dtype_size(host->dtype));
    buffer->upload(channels_last ? to_channels_last(*host).data() : host->bytes.data());
    ref = device_ref(buffer->data(), host->dtype, host->shape);
    if (channels_last) ref = with_channels_last(*ref);
  }
  const TensorRef* get() { return optional_ref(ref); }
  void download(HostTensor& host) const {
    if (!channels_last) return buffer->download(host.bytes.data());
    std::vector<unsigned char> bytes(host.bytes.size());
    buffer->download(bytes.data());
    from_channels_last(bytes, host);
  }
};

// What a training call wrote: y, the saved statistics, the running statistics.
struct TrainingOutputs {
  HostTensor y, save_mean, save_invstd;
  std::optional<HostTensor> mean, var;
};

// A host tensor of `shape` and `dtype` with every byte 0xFF (NaN): an output's initial contents.
HostTensor poisoned(const Shape& shape, DType dtype) {
  HostTensor t(shape, dtype);
  t.poison();
  return t;
}

// The device op on copies of `in` (x and y `offset` elements into their allocations, outputs poisoned,
// replayed from a CUDA graph where `graph`; x and y channels_last where `channels_last`, 4-D x only).
TrainingOutputs run_training(const TrainingInputs& in, size_t offset = 0, bool graph = false,
                             bool channels_last = false) {
  const Shape channels{in.x.shape[1]};
  TrainingOutputs out{HostTensor(in.x.shape, in.x.dtype), HostTensor(channels, DType::f32),
                      HostTensor(channels, DType::f32), in.mean, in.var};
  DeviceTensor x(std::optional(in.x), offset, channels_last), mean(in.mean), var(in.var), weight(in.weight),
      bias(in.bias), y(poisoned(in.x.shape, in.x.dtype), offset, channels_last);
  DeviceBuffer save_mean(channels[0] * 4), save_invstd(channels[0] * 4);
  save_mean.poison();
  save_invstd.poison();
  const int64_t elements = batch_norm_training_workspace_elements(in.x.shape, in.p, channels_last);
  DeviceBuffer workspace(static_cast<size_t>(elements) * 4);
  workspace.poison();
  const TensorRef y_ref = *y.get();
  const TensorRef save_mean_ref = device_ref(save_mean.data(), DType::f32, channels);
  const TensorRef save_invstd_ref = device_ref(save_invstd.data(), DType::f32, channels);
  std::optional<TensorRef> workspace_ref;
  if (elements > 0) workspace_ref = device_ref(workspace.data(), DType::f32, {elements});
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        batch_norm_training(*x.get(), mean.get(), var.get(), weight.get(), bias.get(), y_ref, save_mean_ref,
                            save_invstd_ref, optional_ref(workspace_ref), in.p, stream);
      },
      graph);
  y.download(out.y);
  save_mean.download(out.save_mean.bytes.data());
  save_invstd.download(out.save_invstd.bytes.data());
  if (out.mean) mean.download(*out.mean);
  if (out.var) var.download(*out.var);
  return out;
}

TrainingOutputs reference_training(TrainingInputs in) {
  const Shape channels{in.x.shape[1]};
  TrainingOutputs out{HostTensor(in.x.shape, in.x.dtype), HostTensor(channels, DType::f32),
                      HostTensor(channels, DType::f32), std::nullopt, std::nullopt};
  auto mean = host_ref(in.mean), var = host_ref(in.var), weight = host_ref(in.weight), bias = host_ref(in.bias);
  reference::batch_norm_training(in.x.ref(), optional_ref(mean), optional_ref(var), optional_ref(weight),
                                 optional_ref(bias), out.y.ref(), out.save_mean.ref(), out.save_invstd.ref(), in.p);
  out.mean = in.mean;
  out.var = in.var;
  return out;
}

// The device op against the reference: the first disagreement, or "".
std::string compare_training(const TrainingInputs& in, size_t offset = 0, bool graph = false,
                             bool channels_last = false) {
  TrainingOutputs want = reference_training(in), got = run_training(in, offset, graph, channels_last);
  const double tol = tolerance(in.x.dtype);
  std::string difference = first_difference("output", want.y, got.y, tol, tol);
  if (difference.empty()) {
    difference = first_difference("save_mean", want.save_mean, got.save_mean, 1e-5, kStatsTolerance);
  }
  if (difference.empty()) {
    difference = first_difference("save_invstd", want.save_invstd, got.save_invstd, 0, kStatsTolerance);
  }
  if (difference.empty() && want.mean) difference = first_difference("running_mean", *want.mean, *got.mean, tol, tol);
  if (difference.empty() && want.var) difference = first_difference("running_var", *want.var, *got.var, tol, tol);
  return difference;
}

class BatchNormTrainingGpu : public testing::GpuTest {};

TEST_F(BatchNormTrainingGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(70);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("BatchNormFwd");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const TrainingInputs in =
        training_inputs(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(row["dtype"]), rng);
    EXPECT_EQ(compare_training(in), "") << row["workload"] << " " << describe(in);
  }
}

// A shape of rank 2 to 5: B and C from short lists (1 included), spatial dims odd, even or 1, at most
// ~400 K elements so that the CPU reference stays quick. Rank 2 with B = 1 (one value a channel) is
// drawn again with B = 2.
Shape draw_shape(std::mt19937_64& rng) {
  static const int64_t kBatches[] = {1, 2, 3, 8, 17};
  static const int64_t kChannels[] = {1, 3, 8, 37, 64, 100, 257};
  static const int64_t kSpatial[] = {1, 2, 3, 7, 8, 28, 31, 32, 64, 100, 1000};
  const auto pick = [&rng](const auto& sizes) {
    return sizes[std::uniform_int_distribution<size_t>(0, std::size(sizes) - 1)(rng)];
  };
  Shape shape{pick(kBatches), pick(kChannels)};
  int64_t numel = shape[0] * shape[1], values = shape[0];
  for (int d = std::uniform_int_distribution<int>(0, 3)(rng); d > 0; --d) {
    int64_t size = pick(kSpatial);
    while (size > 1 && numel * size > 400'000) size /= 4;
    shape.push_back(std::max<int64_t>(size, 1));
    numel *= shape.back();
    values *= shape.back();
  }
  if (values == 1) shape[0] = 2;
  return shape;
}

TEST_F(BatchNormTrainingGpu, RandomShapes) {
  std::mt19937_64 rng(71);
  for (int c = 0; c < kRandomCases; ++c) {
    // A common offset of 1000 in half types only: in f32 the mean's own rounding (1000 * 2^-24) already
    // moves y by more than 1e-4 where the weight is large.
    const DType dtype = kRandomDtypes[c % 3];
    const Values values = c % 11 == 6 && dtype != DType::f32 ? Values::offset : draw_values(c);
    TrainingInputs in = training_inputs(draw_shape(rng), dtype, rng, c % 4 != 3, c % 5 != 4, c % 7 == 2, values);
    if (c % 5 == 2) in.p.eps = 0.1;
    if (c % 3 == 1) in.p.momentum = 1.0 / (c + 1);  // nn.BatchNorm's cumulative average
    const size_t offset = c % 6 == 5 ? 1 : 0;      // misaligned x and y: one element at a time
    EXPECT_EQ(compare_training(in, offset), "") << "case " << c << " " << describe(in) << " offset " << offset;
  }
}

TEST_F(BatchNormTrainingGpu, EdgeShapes) {
  std::mt19937_64 rng(72);
  const ShapeAndType cases[] = {
      {{0, 3, 4, 4}, DType::f16},     // no values: NaN saved, running statistics untouched
      {{2, 3, 0}, DType::bf16},       // empty planes, the same
      {{2, 0, 5}, DType::f32},        // no channels
      {{2, 1}, DType::f32},           // two values, one channel
      {{2, 1, 1, 1}, DType::f16},     // planes of one element
      {{70000, 2}, DType::bf16},      // rank 2 in two passes (a block serves both channels)
      {{3, 2, 8200}, DType::f16},     // vector planes, a cluster of 2 blocks, the second partial
      {{3, 2, 44000}, DType::f16},    // vector planes in two passes (16500 vectors), a partial last chunk
      {{1, 2, 200001}, DType::f32},   // odd planes in two passes: single elements
      {{2, 300000}, DType::f16},      // many channels of one value an image
      {{5, 37, 3}, DType::bf16},      // planes of three, 37 channels: a partial last group
      {{6, 37, 16}, DType::f16},      // planes of two vectors, 37 channels: idle threads' loads predicated off
      {{17, 5, 4097}, DType::f16},    // planes one element past a vector multiple
      {{1, 3, 16, 1024}, DType::f32}, // a cluster of 2 blocks a channel
      {{1, 3, 16, 4096}, DType::f32}, // a full cluster of 8 blocks a channel
  };
  for (const auto& [shape, dtype] : cases) {
    const TrainingInputs in = training_inputs(shape, dtype, rng);
    EXPECT_EQ(compare_training(in), "") << describe(in);
  }
}

// A shape and dtype for each plan, for the tests of [C] tensors in x's dtype (loaded as bits with x,
// converted after x's loads).
const ShapeAndType kEveryPlan[] = {
    {{8, 64, 32, 32}, DType::f16},   // single blocks, 4 vectors a thread
    {{1, 3, 16, 4096}, DType::bf16}, // a cluster of 4 blocks a channel
    {{3, 2, 44000}, DType::f16},     // two passes
    {{6, 37, 16}, DType::bf16},      // idle channel slots
    {{5, 37, 3}, DType::f16},        // single elements
};

// weight, bias and the running statistics in x's dtype on every plan.
TEST_F(BatchNormTrainingGpu, ParametersInXsDtype) {
  std::mt19937_64 rng(73);
  for (const auto& [shape, dtype] : kEveryPlan) {
    const TrainingInputs in = training_inputs(shape, dtype, rng, true, true, true);
    EXPECT_EQ(compare_training(in), "") << describe(in);
  }
}

// A 4-D shape for the channels_last tests: B, C and H, W from draw_shape's lists (C = 1 and H = W = 1,
// where channels_last is also contiguous, included).
Shape draw_4d_shape(std::mt19937_64& rng) {
  Shape shape = draw_shape(rng);
  while (shape.size() != 4) shape = draw_shape(rng);
  return shape;
}

TEST_F(BatchNormTrainingGpu, ChannelsLast) {
  std::mt19937_64 rng(77);
  for_each_channels_last_catalogue_row("BatchNormFwd", [&](const auto& row, const Shape& shape, DType dtype) {
    const TrainingInputs in = training_inputs(shape, dtype, rng);
    EXPECT_EQ(compare_training(in, 0, false, true), "") << row["workload"] << " channels_last " << describe(in);
  });
  for (int c = 0; c < kRandomCases / 2; ++c) {
    const DType dtype = kRandomDtypes[c % 3];
    TrainingInputs in = training_inputs(draw_4d_shape(rng), dtype, rng, c % 4 != 3, c % 5 != 4, c % 7 == 2,
                                        draw_values(c));
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_training(in, offset, c % 10 == 3, true), "")
        << "case " << c << " channels_last " << describe(in) << " offset " << offset;
  }
  // Two runs give the same bits.
  const TrainingInputs in = training_inputs({8, 64, 32, 32}, DType::bf16, rng);
  EXPECT_EQ(run_training(in, 0, false, true).y.bytes, run_training(in, 0, false, true).y.bytes);
}

TEST_F(BatchNormTrainingGpu, OutputInAnotherLayoutThanXIsRefused) {
  std::mt19937_64 rng(78);
  const TrainingInputs in = training_inputs({2, 3, 4, 5}, DType::f32, rng, false, false);
  DeviceTensor x(std::optional(in.x), 0, true), y(std::optional(in.x));
  DeviceBuffer stats(12), invstd(12);
  const Shape channels{3};
  expect_message([&] {
    batch_norm_training(*x.get(), nullptr, nullptr, nullptr, nullptr, *y.get(),
                        device_ref(stats.data(), DType::f32, channels), device_ref(invstd.data(), DType::f32, channels),
                        nullptr, {});
  },
                 "batch_norm_training: output must be in x's memory format (channels_last)");
}

TEST_F(BatchNormTrainingGpu, NaNPoisonsItsChannelOnly) {
  std::mt19937_64 rng(73);
  for (const Shape& shape : {Shape{4, 3, 37}, Shape{3, 2, 20000}}) {
    TrainingInputs in = training_inputs(shape, DType::f32, rng);
    in.x.set(shape[2] + 5, std::numeric_limits<double>::quiet_NaN());  // channel 1 of image 0
    TrainingOutputs got = run_training(in);
    EXPECT_TRUE(std::isnan(got.save_mean.at(1)) && std::isnan(got.mean->at(1)) && std::isnan(got.var->at(1)));
    EXPECT_FALSE(std::isnan(got.save_mean.at(0)) || std::isnan(got.var->at(0)));
    EXPECT_EQ(compare_training(in), "") << describe(in);
  }
}

TEST_F(BatchNormTrainingGpu, TwoRunsGiveTheSameBits) {
  std::mt19937_64 rng(74);
  for (const Shape& shape : {Shape{8, 64, 32, 32}, Shape{4, 3, 70000}, Shape{64, 37}}) {
    const TrainingInputs in = training_inputs(shape, DType::bf16, rng);
    const TrainingOutputs first = run_training(in), second = run_training(in);
    EXPECT_EQ(first.y.bytes, second.y.bytes);
    EXPECT_EQ(first.save_mean.bytes, second.save_mean.bytes);
    EXPECT_EQ(first.save_invstd.bytes, second.save_invstd.bytes);
    EXPECT_EQ(first.mean->bytes, second.mean->bytes);
    EXPECT_EQ(first.var->bytes, second.var->bytes);
  }
}

TEST_F(BatchNormTrainingGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(75);
  for (const Shape& shape : {Shape{4, 128, 32, 32}, Shape{2, 3, 40000}, Shape{32, 64}}) {
    const TrainingInputs in = training_inputs(shape, DType::f16, rng);
    EXPECT_EQ(compare_training(in, 0, true), "") << describe(in);
    const TrainingOutputs eager = run_training(in), replayed = run_training(in, 0, true);
    EXPECT_EQ(eager.y.bytes, replayed.y.bytes);
    EXPECT_EQ(eager.var->bytes, replayed.var->bytes);
  }
}

TEST_F(BatchNormTrainingGpu, ARejectedCallLeavesTheRunningStatistics) {
  std::mt19937_64 rng(76);
  TrainingInputs in = training_inputs({4, 3, 10}, DType::f32, rng);
  DeviceTensor x(std::optional(in.x)), mean(in.mean), var(in.var);
  const Shape channels{3};
  DeviceBuffer y(in.x.bytes.size()), stats(12), other(12), wrong(16);
  const TensorRef y_ref = device_ref(y.data(), DType::f32, in.x.shape);
  const TensorRef stats_ref = device_ref(stats.data(), DType::f32, channels);
  const TensorRef other_ref = device_ref(other.data(), DType::f32, channels);
  const TensorRef wrong_weight = device_ref(wrong.data(), DType::f32, {4});
  expect_message([&] {
    batch_norm_training(*x.get(), mean.get(), var.get(), &wrong_weight, nullptr, y_ref, stats_ref, other_ref, nullptr,
                        {});
  },
                 "batch_norm_training: weight: shape [4] must be [3]");
  expect_message([&] {
    batch_norm_training(*x.get(), mean.get(), var.get(), nullptr, nullptr, y_ref, stats_ref, stats_ref, nullptr, {});
  },
                 "save_invstd and save_mean overlap in memory");
  HostTensor mean_after(channels, DType::f32), var_after(channels, DType::f32);
  mean.download(mean_after);
  var.download(var_after);
  EXPECT_EQ(mean_after.bytes, in.mean->bytes);
  EXPECT_EQ(var_after.bytes, in.var->bytes);
}

TEST_F(BatchNormTrainingGpu, DeviceRules) {
  const Shape shape{2, 4, 8}, channels{4};
  DeviceBuffer x(2 * 4 * 8 * 2), y(2 * 4 * 8 * 2), stats(16), invstd(16), small(16);
  const TensorRef x_ref = device_ref(x.data(), DType::f16, shape), y_ref = device_ref(y.data(), DType::f16, shape);
  const TensorRef stats_ref = device_ref(stats.data(), DType::f32, channels);
  const TensorRef invstd_ref = device_ref(invstd.data(), DType::f32, channels);
  HostTensor host_var({4}, DType::f32);
  const TensorRef host_var_ref = host_var.ref();
  const TensorRef small_ref = device_ref(small.data(), DType::f32, channels);
  expect_message([&] {
    batch_norm_training(x_ref, &small_ref, &host_var_ref, nullptr, nullptr, y_ref, stats_ref, invstd_ref, nullptr, {});
  },
                 "batch_norm_training: running_var must be a CUDA tensor");
  const TensorRef host_pointer = device_ref(host_var.bytes.data(), DType::f32, channels);
  expect_message([&] {
    batch_norm_training(x_ref, &small_ref, &host_pointer, nullptr, nullptr, y_ref, stats_ref, invstd_ref, nullptr, {});
  },
                 "running_var: data pointer is not device memory");
  // A call in two passes needs its workspace.
  DeviceBuffer big_x(size_t{2} * 3 * 8193 * 4), big_y(size_t{2} * 3 * 8193 * 4), big_stats(12), big_invstd(12);
  const Shape big{2, 3, 8193}, three{3};
  expect_message([&] {
    batch_norm_training(device_ref(big_x.data(), DType::f32, big), nullptr, nullptr, nullptr, nullptr,
                        device_ref(big_y.data(), DType::f32, big), device_ref(big_stats.data(), DType::f32, three),
                        device_ref(big_invstd.data(), DType::f32, three), nullptr, {});
  },
                 "batch_norm_training: workspace is null but this call needs 108 f32 elements");
}

// ---- the backward --------------------------------------------------------------------------------

struct BackwardInputs {
  HostTensor grad_out, x, save_mean, save_invstd;
  std::optional<HostTensor> weight = std::nullopt;
  DType gradient_dtype = DType::f32;  // of grad_weight and grad_bias
};

// x and grad_out of `values`; the saved statistics the reference forward gives for x.
BackwardInputs backward_inputs(const Shape& shape, DType dtype, std::mt19937_64& rng, bool affine = true,
                               bool x_dtype_parameters = false, Values values = Values::normal) {
  const TrainingInputs forward = training_inputs(shape, dtype, rng, false, false, false, values);
  const TrainingOutputs stats = reference_training(forward);
  BackwardInputs in{HostTensor(shape, dtype), forward.x, stats.save_mean, stats.save_invstd};
  fill(in.grad_out, rng, values == Values::offset ? Values::normal : values);
  in.gradient_dtype = parameter_dtype(dtype, x_dtype_parameters);
  if (affine) {
    in.weight.emplace(Shape{shape[1]}, in.gradient_dtype);
    fill(*in.weight, rng);
  }
  return in;
}

std::string describe(const BackwardInputs& in) {
  return detail::concat("x ", detail::shape_text(in.x.shape), " ", dtype_name(in.x.dtype), in.weight ? " weight" : "",
                        " gradients ", dtype_name(in.gradient_dtype));
}

struct BackwardOutputs {
  HostTensor grad_x, grad_weight, grad_bias;
};

// x, grad_out and grad_x channels_last where `channels_last` (4-D x only).
BackwardOutputs run_backward(const BackwardInputs& in, size_t offset = 0, bool graph = false,
                             bool channels_last = false) {
  const Shape channels{in.x.shape[1]};
  BackwardOutputs out{HostTensor(in.x.shape, in.x.dtype), HostTensor(channels, in.gradient_dtype),
                      HostTensor(channels, in.gradient_dtype)};
  DeviceTensor grad_out(std::optional(in.grad_out), offset, channels_last), x(std::optional(in.x), offset, channels_last),
      mean(std::optional(in.save_mean)), invstd(std::optional(in.save_invstd)), weight(in.weight),
      grad_x(poisoned(in.x.shape, in.x.dtype), offset, channels_last);
  DeviceBuffer grad_weight(out.grad_weight.bytes.size()), grad_bias(out.grad_bias.bytes.size());
  grad_weight.poison();
  grad_bias.poison();
  const int64_t elements = batch_norm_backward_workspace_elements(in.x.shape, channels_last);
  DeviceBuffer workspace(static_cast<size_t>(elements) * 4);
  workspace.poison();
  const TensorRef grad_x_ref = *grad_x.get();
  const TensorRef grad_weight_ref = device_ref(grad_weight.data(), in.gradient_dtype, channels);
  const TensorRef grad_bias_ref = device_ref(grad_bias.data(), in.gradient_dtype, channels);
  std::optional<TensorRef> workspace_ref;
  if (elements > 0) workspace_ref = device_ref(workspace.data(), DType::f32, {elements});
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        batch_norm_backward(*grad_out.get(), *x.get(), weight.get(), *mean.get(), *invstd.get(), grad_x_ref,
                            &grad_weight_ref, &grad_bias_ref, optional_ref(workspace_ref), stream);
      },
      graph);
  grad_x.download(out.grad_x);
  grad_weight.download(out.grad_weight.bytes.data());
  grad_bias.download(out.grad_bias.bytes.data());
  return out;
}

std::string compare_backward(BackwardInputs in, size_t offset = 0, bool graph = false, bool channels_last = false) {
  const Shape channels{in.x.shape[1]};
  BackwardOutputs want{HostTensor(in.x.shape, in.x.dtype), HostTensor(channels, in.gradient_dtype),
                       HostTensor(channels, in.gradient_dtype)};
  auto weight = host_ref(in.weight);
  const TensorRef grad_weight = want.grad_weight.ref(), grad_bias = want.grad_bias.ref();
  reference::batch_norm_backward(in.grad_out.ref(), in.x.ref(), optional_ref(weight), in.save_mean.ref(),
                                 in.save_invstd.ref(), want.grad_x.ref(), &grad_weight, &grad_bias);
  BackwardOutputs got = run_backward(in, offset, graph, channels_last);
  const double tol = tolerance(in.x.dtype);
  // The parameters' gradients are sums of L values: atol scaled by sqrt(L).
  const double values = channels[0] > 0 ? static_cast<double>(in.x.numel() / channels[0]) : 0.0;
  const double sums_atol = tol * std::sqrt(std::max(1.0, values));
  std::string difference = first_difference("grad_x", want.grad_x, got.grad_x, tol, tol);
  if (difference.empty()) {
    difference = first_difference("grad_weight", want.grad_weight, got.grad_weight, sums_atol, tol);
  }
  if (difference.empty()) difference = first_difference("grad_bias", want.grad_bias, got.grad_bias, sums_atol, tol);
  return difference;
}

class BatchNormBackwardGpu : public testing::GpuTest {};

TEST_F(BatchNormBackwardGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(80);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("BatchNormBwd");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const Shape shape = row["tensors"]["x"].get<Shape>();
    const BackwardInputs in = backward_inputs(shape, testing::parse_dtype(row["dtype"]), rng);
    EXPECT_EQ(compare_backward(in), "") << row["workload"] << " " << describe(in);
  }
}

TEST_F(BatchNormBackwardGpu, RandomShapes) {
  std::mt19937_64 rng(81);
  for (int c = 0; c < kRandomCases; ++c) {
    const DType dtype = kRandomDtypes[c % 3];
    const Values values = c % 11 == 6 && dtype != DType::f32 ? Values::offset : draw_values(c);
    const BackwardInputs in = backward_inputs(draw_shape(rng), dtype, rng, c % 4 != 3, c % 7 == 2, values);
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_backward(in, offset), "") << "case " << c << " " << describe(in) << " offset " << offset;
  }
}

TEST_F(BatchNormBackwardGpu, EdgeShapes) {
  std::mt19937_64 rng(82);
  const ShapeAndType cases[] = {
      {{0, 3, 4, 4}, DType::f16},     // no values: zero parameter gradients
      {{2, 0, 5}, DType::f32},        // no channels
      {{2, 1}, DType::f32},           // two values, one channel
      {{70000, 2}, DType::bf16},      // rank 2 in two passes
      {{3, 2, 8200}, DType::f16},     // vector planes, a cluster of 2 blocks, the second partial
      {{3, 2, 44000}, DType::f16},    // vector planes in two passes (16500 vectors), a partial last chunk
      {{1, 2, 200001}, DType::f32},   // odd planes in two passes
      {{2, 300000}, DType::f16},      // many channels
      {{5, 37, 3}, DType::bf16},      // planes of three, a partial last group of channels
      {{6, 37, 16}, DType::f16},      // planes of two vectors, a partial last group: loads predicated off
      {{1, 3, 16, 1024}, DType::f32}, // a cluster of 2 blocks a channel
      {{1, 3, 16, 4096}, DType::f32}, // a full cluster of 8 blocks a channel
  };
  for (const auto& [shape, dtype] : cases) {
    const BackwardInputs in = backward_inputs(shape, dtype, rng);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

// weight and the parameters' gradients in x's dtype on every plan.
TEST_F(BatchNormBackwardGpu, ParametersInXsDtype) {
  std::mt19937_64 rng(83);
  for (const auto& [shape, dtype] : kEveryPlan) {
    const BackwardInputs in = backward_inputs(shape, dtype, rng, true, true);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

TEST_F(BatchNormBackwardGpu, ChannelsLast) {
  std::mt19937_64 rng(84);
  for_each_channels_last_catalogue_row("BatchNormBwd", [&](const auto& row, const Shape& shape, DType dtype) {
    const BackwardInputs in = backward_inputs(shape, dtype, rng);
    EXPECT_EQ(compare_backward(in, 0, false, true), "") << row["workload"] << " channels_last " << describe(in);
  });
  for (int c = 0; c < kRandomCases / 2; ++c) {
    const DType dtype = kRandomDtypes[c % 3];
    const BackwardInputs in = backward_inputs(draw_4d_shape(rng), dtype, rng, c % 4 != 3, c % 7 == 2, draw_values(c));
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_backward(in, offset, c % 10 == 3, true), "")
        << "case " << c << " channels_last " << describe(in) << " offset " << offset;
  }
  const BackwardInputs in = backward_inputs({8, 64, 32, 32}, DType::f16, rng);
  EXPECT_EQ(run_backward(in, 0, false, true).grad_x.bytes, run_backward(in, 0, false, true).grad_x.bytes);
}

TEST_F(BatchNormBackwardGpu, GradOutInAnotherLayoutThanXIsRefused) {
  std::mt19937_64 rng(85);
  const BackwardInputs in = backward_inputs({2, 3, 4, 5}, DType::f32, rng, false);
  DeviceTensor x(std::optional(in.x), 0, true), grad_out(std::optional(in.grad_out)), grad_x(std::optional(in.x), 0, true),
      mean(std::optional(in.save_mean)), invstd(std::optional(in.save_invstd));
  expect_message([&] {
    batch_norm_backward(*grad_out.get(), *x.get(), nullptr, *mean.get(), *invstd.get(), *grad_x.get(), nullptr,
                        nullptr, nullptr);
  },
                 "batch_norm_backward: grad_out must be in x's memory format (channels_last)");
}

TEST_F(BatchNormBackwardGpu, TwoRunsGiveTheSameBitsAndAGraphReplaysThem) {
  std::mt19937_64 rng(83);
  for (const Shape& shape : {Shape{8, 64, 32, 32}, Shape{4, 3, 70000}, Shape{64, 37}}) {
    const BackwardInputs in = backward_inputs(shape, DType::f16, rng);
    const BackwardOutputs first = run_backward(in), second = run_backward(in), replayed = run_backward(in, 0, true);
    for (const BackwardOutputs* other : {&second, &replayed}) {
      EXPECT_EQ(first.grad_x.bytes, other->grad_x.bytes);
      EXPECT_EQ(first.grad_weight.bytes, other->grad_weight.bytes);
      EXPECT_EQ(first.grad_bias.bytes, other->grad_bias.bytes);
    }
  }
}

}  // namespace
}  // namespace solops::testing::norm
