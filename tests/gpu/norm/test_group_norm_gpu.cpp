// GroupNorm and InstanceNorm, forward and backward, on the GPU against the CPU references (spec
// §2.9-2.12, §6.4): every catalogue row, random shapes (N = 1, spatial size 1, odd planes that take
// 8-byte or single-element accesses, groups long enough to be read again each pass, one-warp groups,
// affine on and off, running statistics present and absent, NaN and infinities, misaligned pointers),
// empty dims, CUDA graph capture, bitwise determinism of two runs, the backward's parameter gradients
// left out (output_mask) keeping the bits of the rest, and the device-side rules; the same for
// channels_last x (every catalogue row, random 4-D shapes, y, grad_out and grad_x channels_last).
// Outputs (the running statistics' start aside) are poisoned first.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
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

// Spec §2.9, 2.11 (forward) and §2.10, 2.12 (backward), atol = rtol; the f32 statistics to 1e-5.
double forward_tolerance(DType dtype) { return dtype == DType::f32 ? 1e-5 : dtype == DType::f16 ? 1e-3 : 1.6e-2; }
double backward_tolerance(DType dtype) { return dtype == DType::f32 ? 1e-4 : dtype == DType::f16 ? 1e-2 : 2e-2; }
constexpr double kStatsTolerance = 1e-5;

// One call: GroupNorm with `groups`, or InstanceNorm (instance) with or without use_input_stats and
// running statistics.
struct SpatialInputs {
  HostTensor x;
  int64_t groups = 1;
  bool instance = false;
  bool use_input_stats = true;
  std::optional<HostTensor> weight = std::nullopt, bias = std::nullopt, running_mean = std::nullopt,
                            running_var = std::nullopt;
  double momentum = 0.1, eps = 1e-5;

  int64_t stats_groups() const { return instance ? x.shape[1] : groups; }
  Shape stats_shape() const { return {x.shape[0], stats_groups()}; }
  InstanceNorm instance_params() const { return {use_input_stats, momentum, eps}; }
};

SpatialInputs random_inputs(Shape shape, DType dtype, std::mt19937_64& rng, int64_t groups, bool instance, bool affine,
                            bool running, Values values = Values::normal) {
  SpatialInputs in{HostTensor(std::move(shape), dtype), groups, instance};
  fill(in.x, rng, values);
  const Shape channels{in.x.shape[1]};
  if (affine) {
    in.weight.emplace(channels, dtype);
    in.bias.emplace(channels, dtype);
    fill(*in.weight, rng);
    fill(*in.bias, rng);
  }
  if (running) {
    in.running_mean.emplace(channels, DType::f32);
    in.running_var.emplace(channels, DType::f32);
    fill(*in.running_mean, rng);
    std::uniform_real_distribution<double> variance(0.5, 2.0);
    for (int64_t c = 0; c < channels[0]; ++c) in.running_var->set(c, variance(rng));
  }
  return in;
}

std::string describe(const SpatialInputs& in) {
  return detail::concat(in.instance ? "instance_norm" : "group_norm", " x ", detail::shape_text(in.x.shape), " ",
                        dtype_name(in.x.dtype), in.instance ? "" : " groups ", in.instance ? 0 : in.groups,
                        in.weight ? " affine" : "", in.running_mean ? " running" : "",
                        in.use_input_stats ? "" : " by running statistics");
}

std::optional<TensorRef> host_ref(std::optional<HostTensor>& t) { return t ? std::optional(t->ref()) : std::nullopt; }

// A device copy of an optional host tensor and its TensorRef.
struct DeviceCopy {
  std::unique_ptr<DeviceBuffer> buffer;
  std::optional<TensorRef> ref;

  DeviceCopy(const std::optional<HostTensor>& host, size_t pad = 0) : buffer(upload(host, pad)) {
    if (host) ref = device_ref(buffer->data(), host->dtype, host->shape);
  }
  const TensorRef* pointer() { return optional_ref(ref); }
};

// The forward's outputs, downloaded.
struct ForwardResult {
  HostTensor y, mean, rstd;
  std::optional<HostTensor> running_mean = std::nullopt, running_var = std::nullopt;
};

size_t stats_bytes(const SpatialInputs& in) {
  return static_cast<size_t>(in.stats_shape()[0] * in.stats_shape()[1]) * sizeof(float);
}

// `t`'s bytes as a device copy holds them: channels_last storage where `channels_last` (4-D x).
std::vector<unsigned char> stored(const HostTensor& t, bool channels_last) {
  return channels_last ? to_channels_last(t) : t.bytes;
}

// A device tensor of x's shape into `host` (logical order), from channels_last storage where `channels_last`.
void download_like_x(DeviceBuffer& buffer, HostTensor& host, bool channels_last) {
  if (!channels_last) return buffer.download(host.bytes.data());
  std::vector<unsigned char> bytes(host.bytes.size());
  buffer.download(bytes.data());
  from_channels_last(bytes, host);
}

// A TensorRef of x's shape over `data`, with channels_last strides where `channels_last`.
TensorRef ref_like_x(void* data, const HostTensor& x, bool channels_last) {
  const TensorRef ref = device_ref(data, x.dtype, x.shape);
  return channels_last ? with_channels_last(ref) : ref;
}

// The forward on the device (x and y `offset` elements into their allocations; replayed from a CUDA
// graph where `graph`; x and y channels_last where `channels_last`, 4-D x only), with the statistics.
ForwardResult run_forward(SpatialInputs& in, size_t offset = 0, bool graph = false, bool channels_last = false) {
  const size_t shift = offset * dtype_size(in.x.dtype);
  DeviceBuffer x(in.x.bytes.size(), shift), y(in.x.bytes.size(), shift);
  x.upload(stored(in.x, channels_last).data());
  y.poison();
  DeviceBuffer mean(stats_bytes(in)), rstd(stats_bytes(in));
  mean.poison();
  rstd.poison();
  DeviceCopy weight(in.weight), bias(in.bias), running_mean(in.running_mean), running_var(in.running_var);
  const int64_t elements =
      in.instance ? instance_norm_workspace_elements(in.x.shape, in.instance_params(), in.running_mean.has_value()) : 0;
  DeviceBuffer workspace(static_cast<size_t>(elements) * sizeof(float));
  workspace.poison();
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, {elements});
  const TensorRef x_ref = ref_like_x(x.data(), in.x, channels_last), y_ref = ref_like_x(y.data(), in.x, channels_last);
  const TensorRef mean_ref = device_ref(mean.data(), DType::f32, in.stats_shape());
  const TensorRef rstd_ref = device_ref(rstd.data(), DType::f32, in.stats_shape());
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        if (in.instance) {
          instance_norm_with_stats(x_ref, running_mean.pointer(), running_var.pointer(), weight.pointer(),
                                   bias.pointer(), y_ref, mean_ref, rstd_ref, elements ? &workspace_ref : nullptr,
                                   in.instance_params(), stream);
        } else {
          group_norm_with_stats(x_ref, weight.pointer(), bias.pointer(), y_ref, mean_ref, rstd_ref, {in.groups, in.eps},
                                stream);
        }
      },
      graph);
  ForwardResult result{HostTensor(in.x.shape, in.x.dtype), HostTensor(in.stats_shape(), DType::f32),
                       HostTensor(in.stats_shape(), DType::f32)};
  download_like_x(y, result.y, channels_last);
  mean.download(result.mean.bytes.data());
  rstd.download(result.rstd.bytes.data());
  if (in.running_mean) {
    result.running_mean.emplace(in.running_mean->shape, DType::f32);
    result.running_var.emplace(in.running_var->shape, DType::f32);
    running_mean.buffer->download(result.running_mean->bytes.data());
    running_var.buffer->download(result.running_var->bytes.data());
  }
  return result;
}

// The reference's outputs for the same call (on copies of the running statistics).
ForwardResult run_reference(SpatialInputs& in) {
  ForwardResult want{HostTensor(in.x.shape, in.x.dtype), HostTensor(in.stats_shape(), DType::f32),
                     HostTensor(in.stats_shape(), DType::f32), in.running_mean, in.running_var};
  auto weight = host_ref(in.weight), bias = host_ref(in.bias);
  auto running_mean = host_ref(want.running_mean), running_var = host_ref(want.running_var);
  const TensorRef mean = want.mean.ref(), rstd = want.rstd.ref();
  if (in.instance) {
    reference::instance_norm(in.x.ref(), optional_ref(running_mean), optional_ref(running_var), optional_ref(weight),
                             optional_ref(bias), want.y.ref(), &mean, &rstd, in.instance_params());
  } else {
    reference::group_norm(in.x.ref(), optional_ref(weight), optional_ref(bias), want.y.ref(), &mean, &rstd,
                          {in.groups, in.eps});
  }
  return want;
}

std::string compare_forward(SpatialInputs& in, size_t offset = 0, bool graph = false, bool channels_last = false) {
  ForwardResult want = run_reference(in), got = run_forward(in, offset, graph, channels_last);
  const double tolerance = forward_tolerance(in.x.dtype);
  std::string difference = first_difference("output", want.y, got.y, tolerance, tolerance);
  if (difference.empty()) difference = first_difference("mean", want.mean, got.mean, kStatsTolerance, kStatsTolerance);
  if (difference.empty()) difference = first_difference("rstd", want.rstd, got.rstd, kStatsTolerance, kStatsTolerance);
  if (difference.empty() && in.running_mean) {
    difference =
        first_difference("running_mean", *want.running_mean, *got.running_mean, kStatsTolerance, kStatsTolerance);
    if (difference.empty()) {
      difference =
          first_difference("running_var", *want.running_var, *got.running_var, kStatsTolerance, kStatsTolerance);
    }
  }
  return difference;
}

// The backward's outputs.
struct BackwardResult {
  HostTensor grad_x, grad_weight, grad_bias;
};

// The parameter gradients a backward call asks for: {grad_weight, grad_bias} (the torch ops' output_mask).
using GradientMask = std::array<bool, 2>;

// The backward on the device for grad_out `dy` and the statistics (x and the gradients `offset` elements
// into their allocations; x, grad_out and grad_x channels_last where `channels_last`), the parameter
// gradients where `mask` asks for them: the others are null pointers (and with neither, the workspace
// too) and empty in the result.
BackwardResult device_backward(SpatialInputs& in, HostTensor& dy, HostTensor& mean, HostTensor& rstd,
                               size_t offset = 0, bool channels_last = false, GradientMask mask = {true, true}) {
  const Shape channels{in.x.shape[1]};
  const size_t shift = offset * dtype_size(in.x.dtype);
  DeviceBuffer x(in.x.bytes.size(), shift), grad_out(dy.bytes.size(), shift), grad_x(in.x.bytes.size(), shift);
  x.upload(stored(in.x, channels_last).data());
  grad_out.upload(stored(dy, channels_last).data());
  grad_x.poison();
  DeviceBuffer mean_device(mean.bytes.size()), rstd_device(rstd.bytes.size());
  mean_device.upload(mean.bytes.data());
  rstd_device.upload(rstd.bytes.data());
  const size_t gradient_bytes = static_cast<size_t>(channels[0] * dtype_size(in.x.dtype));
  DeviceBuffer grad_weight(mask[0] ? gradient_bytes : 0), grad_bias(mask[1] ? gradient_bytes : 0);
  grad_weight.poison();
  grad_bias.poison();
  DeviceCopy weight_device(in.weight);
  const InstanceNormBackward instance{in.use_input_stats};
  const bool gradients = mask[0] || mask[1];
  const int64_t elements = in.instance
                               ? instance_norm_backward_workspace_elements(in.x.shape, instance, gradients)
                               : group_norm_backward_workspace_elements(in.x.shape, {in.groups}, gradients);
  DeviceBuffer workspace(static_cast<size_t>(elements) * sizeof(float));
  workspace.poison();
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, {elements});
  const TensorRef x_ref = ref_like_x(x.data(), in.x, channels_last);
  const TensorRef dy_ref = ref_like_x(grad_out.data(), in.x, channels_last);
  const TensorRef grad_x_ref = ref_like_x(grad_x.data(), in.x, channels_last);
  const TensorRef mean_ref = device_ref(mean_device.data(), DType::f32, mean.shape);
  const TensorRef rstd_ref = device_ref(rstd_device.data(), DType::f32, rstd.shape);
  const TensorRef gw_ref = device_ref(grad_weight.data(), in.x.dtype, channels);
  const TensorRef gb_ref = device_ref(grad_bias.data(), in.x.dtype, channels);
  const TensorRef* gw = mask[0] ? &gw_ref : nullptr;
  const TensorRef* gb = mask[1] ? &gb_ref : nullptr;
  if (in.instance) {
    instance_norm_backward(dy_ref, x_ref, weight_device.pointer(), mean_ref, rstd_ref, grad_x_ref, gw, gb,
                           elements ? &workspace_ref : nullptr, instance);
  } else {
    group_norm_backward(dy_ref, x_ref, weight_device.pointer(), mean_ref, rstd_ref, grad_x_ref, gw, gb,
                        elements ? &workspace_ref : nullptr, {in.groups});
  }
  cuda_ok(cudaDeviceSynchronize(), "backward");
  BackwardResult got{HostTensor(in.x.shape, in.x.dtype), HostTensor(mask[0] ? channels : Shape{0}, in.x.dtype),
                     HostTensor(mask[1] ? channels : Shape{0}, in.x.dtype)};
  download_like_x(grad_x, got.grad_x, channels_last);
  if (mask[0]) grad_weight.download(got.grad_weight.bytes.data());
  if (mask[1]) grad_bias.download(got.grad_bias.bytes.data());
  return got;
}

// The backward on the device and by the reference, from the reference forward's statistics and a random
// grad_out (x, grad_out and grad_x channels_last on the device where `channels_last`).
std::pair<BackwardResult, BackwardResult> run_backward(SpatialInputs& in, std::mt19937_64& rng, size_t offset = 0,
                                                       bool channels_last = false) {
  const ForwardResult forward = run_reference(in);
  HostTensor dy(in.x.shape, in.x.dtype);
  fill(dy, rng);
  const Shape channels{in.x.shape[1]};
  BackwardResult want{HostTensor(in.x.shape, in.x.dtype), HostTensor(channels, in.x.dtype),
                      HostTensor(channels, in.x.dtype)};
  auto weight = host_ref(in.weight);
  HostTensor mean = forward.mean, rstd = forward.rstd;
  const TensorRef gw = want.grad_weight.ref(), gb = want.grad_bias.ref();
  if (in.instance) {
    reference::instance_norm_backward(dy.ref(), in.x.ref(), optional_ref(weight), mean.ref(), rstd.ref(),
                                      want.grad_x.ref(), &gw, &gb, InstanceNormBackward{in.use_input_stats});
  } else {
    reference::group_norm_backward(dy.ref(), in.x.ref(), optional_ref(weight), mean.ref(), rstd.ref(),
                                   want.grad_x.ref(), &gw, &gb, {in.groups});
  }
  BackwardResult got = device_backward(in, dy, mean, rstd, offset, channels_last);
  return {std::move(want), std::move(got)};
}

// The parameter gradients left out (each one, and both: the grad_x kernel alone, no workspace) give
// the full call's bits of what is still asked for: grad_x does not depend on the mask. "" or the
// first difference; random normal statistics (rstd in [0.5, 2)) serve, nothing is compared with the
// reference. x, grad_out and grad_x channels_last where `channels_last`, `offset` elements past an
// aligned address (1: the one-element paths).
std::string compare_masked_backward(SpatialInputs& in, std::mt19937_64& rng, bool channels_last = false,
                                    size_t offset = 0) {
  HostTensor dy(in.x.shape, in.x.dtype), mean(in.stats_shape(), DType::f32), rstd(in.stats_shape(), DType::f32);
  fill(dy, rng);
  fill(mean, rng);
  std::uniform_real_distribution<double> scale(0.5, 2.0);
  for (int64_t i = 0; i < rstd.numel(); ++i) rstd.set(i, scale(rng));
  const BackwardResult full = device_backward(in, dy, mean, rstd, offset, channels_last);
  for (const GradientMask mask : {GradientMask{false, false}, GradientMask{true, false}, GradientMask{false, true}}) {
    const BackwardResult part = device_backward(in, dy, mean, rstd, offset, channels_last, mask);
    const std::string masked = detail::concat(" with output_mask [", mask[0], ", ", mask[1], "]");
    if (part.grad_x.bytes != full.grad_x.bytes) return "grad_x differs" + masked;
    if (mask[0] && part.grad_weight.bytes != full.grad_weight.bytes) return "grad_weight differs" + masked;
    if (mask[1] && part.grad_bias.bytes != full.grad_bias.bytes) return "grad_bias differs" + masked;
  }
  return "";
}

std::string compare_backward(SpatialInputs& in, std::mt19937_64& rng, size_t offset = 0, bool channels_last = false) {
  auto [want, got] = run_backward(in, rng, offset, channels_last);
  const double tolerance = backward_tolerance(in.x.dtype);
  // The parameter gradients sum B * S terms: their atol grows with the square root of the count.
  const double sums = tolerance * std::sqrt(static_cast<double>(std::max<int64_t>(1, in.x.numel() / in.x.shape[1])));
  std::string difference = first_difference("grad_x", want.grad_x, got.grad_x, tolerance, tolerance);
  if (difference.empty())
    difference = first_difference("grad_weight", want.grad_weight, got.grad_weight, sums, tolerance);
  if (difference.empty()) difference = first_difference("grad_bias", want.grad_bias, got.grad_bias, sums, tolerance);
  return difference;
}

class GroupNormGpu : public testing::GpuTest {};

// Every catalogue row of the four ops; InstanceNorm's rows with running statistics normalize by them
// (use_input_stats off, as the reference library's rows run).
template <class Compare>
void for_each_row(const char* op, bool instance, Compare compare) {
  std::mt19937_64 rng(70);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows(op);
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const bool running = row["tensors"].contains("running_mean");
    const int64_t groups = row["params"].value("num_groups", int64_t{1});
    SpatialInputs in = random_inputs(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(row["dtype"]), rng, groups,
                                     instance, row["tensors"].contains("weight"), running);
    in.use_input_stats = !running;
    EXPECT_EQ(compare(in, rng), "") << op << " " << row["workload"] << " " << describe(in);
  }
}

TEST_F(GroupNormGpu, EveryForwardCatalogueRow) {
  const auto forward = [](SpatialInputs& in, std::mt19937_64&) { return compare_forward(in); };
  for_each_row("GroupNormFwd", false, forward);
  for_each_row("InstanceNormFwd", true, forward);
}

TEST_F(GroupNormGpu, EveryBackwardCatalogueRow) {
  const auto backward = [](SpatialInputs& in, std::mt19937_64& rng) { return compare_backward(in, rng); };
  for_each_row("GroupNormBwd", false, backward);
  for_each_row("InstanceNormBwd", true, backward);
}

// One of `sizes`, uniformly.
template <size_t N>
int64_t pick(const int64_t (&sizes)[N], std::mt19937_64& rng) {
  return sizes[std::uniform_int_distribution<size_t>(0, N - 1)(rng)];
}

// Random case c of GroupNorm (c even) or InstanceNorm (c odd) on x of `shape`: a random divisor of C
// as the group count; by c, the dtype, affine on and off, running statistics present and absent,
// use_input_stats on and off, NaN and infinities every ninth case, eps 0.1 and momentum 0.5 now and then.
SpatialInputs random_call(std::mt19937_64& rng, int c, Shape shape) {
  const bool instance = c % 2 == 1;
  std::vector<int64_t> divisors;
  for (int64_t g = 1; g <= shape[1]; ++g) {
    if (shape[1] % g == 0) divisors.push_back(g);
  }
  const int64_t groups = divisors[std::uniform_int_distribution<size_t>(0, divisors.size() - 1)(rng)];
  int64_t plane = 1;
  for (size_t d = 2; d < shape.size(); ++d) plane *= shape[d];
  const bool use_input_stats = !instance || c % 5 != 3;
  if (instance && use_input_stats && plane == 1) shape.push_back(2);  // F.instance_norm needs two
  SpatialInputs in = random_inputs(std::move(shape), kRandomDtypes[c % 3], rng, groups, instance, c % 4 != 3,
                                   instance && (c % 3 != 0 || !use_input_stats), draw_values(c));
  in.use_input_stats = use_input_stats;
  if (c % 7 == 2) in.eps = 0.1;
  if (c % 11 == 4) in.momentum = 0.5;
  return in;
}

// A random call: B from a short list (N = 1 included), C with a divisor as the group count, spatial
// dims odd, even or 1, up to ~300 K elements; every ninth case with NaN and infinities, every sixth
// with x one element off alignment; now and then groups of 40 K elements, read again each pass.
SpatialInputs random_case(std::mt19937_64& rng, int c) {
  static const int64_t kBatches[] = {1, 2, 3, 8};
  static const int64_t kChannels[] = {1, 2, 3, 4, 6, 8, 12, 32, 64};
  static const int64_t kSpatial[] = {1, 2, 3, 5, 7, 8, 14, 28, 30, 31, 32};
  Shape shape{pick(kBatches, rng), pick(kChannels, rng)};
  for (int d = std::uniform_int_distribution<int>(c % 2 == 1 ? 1 : 0, 3)(rng); d > 0; --d)
    shape.push_back(pick(kSpatial, rng));
  if (c % 17 == 5) shape = {2, 4, 100, 101};  // 10100-element planes: long groups
  return random_call(rng, c, std::move(shape));
}

TEST_F(GroupNormGpu, RandomForwardCalls) {
  std::mt19937_64 rng(71);
  for (int c = 0; c < kRandomCases; ++c) {
    SpatialInputs in = random_case(rng, c);
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_forward(in, offset), "") << "case " << c << " " << describe(in) << " offset " << offset;
  }
}

TEST_F(GroupNormGpu, RandomBackwardCalls) {
  std::mt19937_64 rng(72);
  for (int c = 0; c < kRandomCases; ++c) {
    SpatialInputs in = random_case(rng, c);
    if (c % 9 == 4) continue;  // NaN inputs: covered by the forward
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_backward(in, rng, offset), "") << "case " << c << " " << describe(in) << " offset " << offset;
  }
}

TEST_F(GroupNormGpu, EdgeShapes) {
  std::mt19937_64 rng(73);
  // Empty batch (InstanceNorm's running statistics become NaN), empty planes (left as they are, the
  // statistics mean 0 and rstd NaN), no channels, one-element groups, a group of one long row.
  std::vector<SpatialInputs> cases;
  cases.push_back(random_inputs({0, 4, 3}, DType::f32, rng, 1, true, true, true));
  cases.push_back(random_inputs({2, 4, 0}, DType::f16, rng, 1, true, true, true));
  cases.push_back(random_inputs({2, 4, 0}, DType::bf16, rng, 2, false, true, false));
  cases.push_back(random_inputs({2, 0, 5}, DType::f32, rng, 3, false, false, false));
  cases.push_back(random_inputs({5, 6}, DType::f16, rng, 6, false, true, false));
  cases.push_back(random_inputs({1, 2, 70000}, DType::bf16, rng, 1, false, true, false));
  cases.push_back(random_inputs({1, 3, 300, 300}, DType::f32, rng, 1, true, false, true));
  // The backward's whole batch in one block at its limit (16 planes of a group over the batch), and
  // one sample past it (blocks per sample, the parameter gradients from the workspace).
  cases.push_back(random_inputs({16, 3, 30, 30}, DType::f16, rng, 3, true, true, false));
  cases.push_back(random_inputs({17, 3, 30, 30}, DType::bf16, rng, 3, true, true, false));
  cases.push_back(random_inputs({4, 8, 16, 16}, DType::f32, rng, 2, false, true, false));
  cases.push_back(random_inputs({5, 8, 16, 16}, DType::f16, rng, 2, false, true, false));
  for (SpatialInputs& in : cases) {
    EXPECT_EQ(compare_forward(in), "") << describe(in);
    if (in.x.numel() > 0) {
      EXPECT_EQ(compare_backward(in, rng), "") << describe(in);
    }
  }
}

TEST_F(GroupNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(74);
  SpatialInputs groups = random_inputs({8, 128, 32, 32}, DType::f16, rng, 32, false, true, false);
  EXPECT_EQ(compare_forward(groups, 0, true), "");
  SpatialInputs running = random_inputs({4, 64, 30, 30}, DType::bf16, rng, 1, true, true, true);
  EXPECT_EQ(compare_forward(running, 0, true), "");  // the running statistics' update too
}

// Two runs of the forward, and two of the backward (the same grad_out), give the same bits: outputs,
// statistics, running statistics and gradients (x, grad_out and grad_x channels_last where
// `channels_last`).
void expect_two_runs_give_the_same_bits(SpatialInputs& in, bool channels_last) {
  SCOPED_TRACE(describe(in) + (channels_last ? " channels_last" : ""));
  const ForwardResult first = run_forward(in, 0, false, channels_last),
                      second = run_forward(in, 0, false, channels_last);
  EXPECT_EQ(first.y.bytes, second.y.bytes);
  EXPECT_EQ(first.mean.bytes, second.mean.bytes);
  EXPECT_EQ(first.rstd.bytes, second.rstd.bytes);
  if (in.running_mean) {
    EXPECT_EQ(first.running_mean->bytes, second.running_mean->bytes);
    EXPECT_EQ(first.running_var->bytes, second.running_var->bytes);
  }
  std::mt19937_64 first_rng(9), second_rng(9);
  const auto [want_a, got_a] = run_backward(in, first_rng, 0, channels_last);
  const auto [want_b, got_b] = run_backward(in, second_rng, 0, channels_last);
  EXPECT_EQ(got_a.grad_x.bytes, got_b.grad_x.bytes);
  EXPECT_EQ(got_a.grad_weight.bytes, got_b.grad_weight.bytes);
  EXPECT_EQ(got_a.grad_bias.bytes, got_b.grad_bias.bytes);
}

TEST_F(GroupNormGpu, TwoRunsGiveTheSameBits) {
  std::mt19937_64 rng(75);
  for (bool instance : {false, true}) {
    SpatialInputs in = random_inputs({8, 64, 28, 28}, DType::f32, rng, 8, instance, true, instance);
    expect_two_runs_give_the_same_bits(in, false);
  }
}

// channels_last x (4-D): every 4-D catalogue row (all are), forward and backward.
TEST_F(GroupNormGpu, ChannelsLastCatalogueRows) {
  const auto forward = [](SpatialInputs& in, std::mt19937_64&) { return compare_forward(in, 0, false, true); };
  const auto backward = [](SpatialInputs& in, std::mt19937_64& rng) { return compare_backward(in, rng, 0, true); };
  for_each_row("GroupNormFwd", false, forward);
  for_each_row("InstanceNormFwd", true, forward);
  for_each_row("GroupNormBwd", false, backward);
  for_each_row("InstanceNormBwd", true, backward);
}

// A random 4-D channels_last call: odd C / G (single-element vectors), C / G = 1 (InstanceNorm's
// tiles of several groups), one-position rows (H = 1 or W = 1), N = 1, groups wider than a block's
// threads (C / G = 2100: 525 vectors of 4 or 2100 elements a row, walked in passes) and tall ones read again each
// pass; f32 / f16 / bf16, affine on and off, running statistics, misaligned pointers.
SpatialInputs random_channels_last_case(std::mt19937_64& rng, int c) {
  static const int64_t kBatches[] = {1, 2, 3, 8};
  static const int64_t kChannels[] = {2, 3, 4, 6, 8, 9, 12, 16, 24, 32, 48, 64, 96};
  static const int64_t kSpatial[] = {1, 2, 3, 5, 7, 8, 14, 28, 31};
  Shape shape{pick(kBatches, rng), pick(kChannels, rng), pick(kSpatial, rng), pick(kSpatial, rng)};
  if (shape[2] * shape[3] == 1) shape[3] = 2;  // channels_last and contiguous alike otherwise
  if (c % 13 == 6) shape = {2, 2100, 3, 5};    // 2100 channels a group: wider than a block
  if (c % 17 == 5) shape = {2, 16, 100, 101};  // 10100 rows: read again each pass
  SpatialInputs in = random_call(rng, c, std::move(shape));
  if (c % 13 == 6) in.groups = 1;  // one group of 2100 channels
  return in;
}

TEST_F(GroupNormGpu, ChannelsLastRandomCalls) {
  std::mt19937_64 rng(76);
  for (int c = 0; c < kRandomCases; ++c) {
    SpatialInputs in = random_channels_last_case(rng, c);
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_forward(in, offset, c % 10 == 3, true), "")
        << "case " << c << " channels_last " << describe(in) << " offset " << offset;
    if (c % 9 == 4) continue;  // NaN inputs: covered by the forward
    EXPECT_EQ(compare_backward(in, rng, offset, true), "")
        << "case " << c << " channels_last " << describe(in) << " offset " << offset;
  }
}

// The backward's output_mask, x contiguous and channels_last: every catalogue row and random calls.
TEST_F(GroupNormGpu, ParameterGradientsLeftOutKeepTheBits) {
  for (const bool channels_last : {false, true}) {
    const auto masked = [channels_last](SpatialInputs& in, std::mt19937_64& rng) {
      return compare_masked_backward(in, rng, channels_last);
    };
    for_each_row("GroupNormBwd", false, masked);
    for_each_row("InstanceNormBwd", true, masked);
  }
  std::mt19937_64 rng(78);
  for (int c = 0; c < kRandomCases; ++c) {
    if (c % 9 == 4) continue;  // NaN inputs: covered by the forward
    SpatialInputs in = random_case(rng, c), channels_last = random_channels_last_case(rng, c);
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_masked_backward(in, rng, false, offset), "") << "case " << c << " " << describe(in) << " offset "
                                                                   << offset;
    EXPECT_EQ(compare_masked_backward(channels_last, rng, true), "")
        << "case " << c << " channels_last " << describe(channels_last);
  }
}

TEST_F(GroupNormGpu, ChannelsLastTwoRunsGiveTheSameBits) {
  std::mt19937_64 rng(77);
  for (const auto& [shape, groups, instance] :
       {std::tuple{Shape{8, 64, 28, 28}, int64_t{8}, false}, std::tuple{Shape{4, 64, 30, 30}, int64_t{1}, true},
        std::tuple{Shape{2, 2100, 3, 5}, int64_t{1}, false}}) {
    SpatialInputs in = random_inputs(shape, DType::f32, rng, groups, instance, true, instance);
    expect_two_runs_give_the_same_bits(in, true);
  }
}

TEST_F(GroupNormGpu, ChannelsLastRulesOnTheDevice) {
  const Shape shape{2, 4, 3, 5};
  DeviceBuffer x(2 * 4 * 3 * 5 * 4), y(2 * 4 * 3 * 5 * 4);
  HostTensor host(shape, DType::f32);
  const TensorRef x_ref = ref_like_x(x.data(), host, true), y_contiguous = ref_like_x(y.data(), host, false);
  expect_message([&] { group_norm(x_ref, nullptr, nullptr, y_contiguous, {2}); },
                 "group_norm: output must be in x's memory format (channels_last)");
}

TEST_F(GroupNormGpu, DeviceRules) {
  const Shape shape{2, 4, 8}, channels{4};
  DeviceBuffer x(2 * 4 * 8 * 4), y(2 * 4 * 8 * 4), stats(4 * sizeof(float)), workspace(16 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::f32, shape), y_ref = device_ref(y.data(), DType::f32, shape);
  const TensorRef stats_ref = device_ref(stats.data(), DType::f32, channels);
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, {16});
  expect_message([&] { group_norm(x_ref, nullptr, nullptr, x_ref, {2}); },
                 "group_norm: x and output overlap in memory");
  HostTensor host_var({4}, DType::f32);
  const TensorRef host_var_ref = host_var.ref();
  expect_message([&] { instance_norm(x_ref, &stats_ref, &host_var_ref, nullptr, nullptr, y_ref, &workspace_ref, {}); },
                 "instance_norm: running_var must be a CUDA tensor");
  expect_message([&] { instance_norm(x_ref, &stats_ref, &stats_ref, nullptr, nullptr, y_ref, &workspace_ref, {}); },
                 "overlap in memory");
  DeviceBuffer other(4 * sizeof(float));
  const TensorRef other_ref = device_ref(other.data(), DType::f32, channels);
  expect_message([&] { instance_norm(x_ref, &stats_ref, &other_ref, nullptr, nullptr, y_ref, nullptr, {}); },
                 "workspace is null but this call needs 16 f32 elements (instance_norm_workspace_elements)");
}

}  // namespace
}  // namespace solops::testing::norm
