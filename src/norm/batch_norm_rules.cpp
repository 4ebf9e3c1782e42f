// BatchNormFwd (training) and BatchNormBwd: the shape rules, the validation of a call, the plan of its
// kernels and its workspace, the cost models and the entry points.
#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>

#include "core/device.hpp"
#include "core/integer.hpp"
#include "norm/batch_norm.hpp"

namespace solops {
namespace detail {
namespace {

// Blocks of a cluster (the portable size), vectors a thread holds at most.
constexpr int kMaxClusterBlocks = 8;
constexpr int kMaxHeld = 8;
// A warp of a block serving several channels covers 32 / lanes of them.
constexpr int kWarp = 32;

BatchNormPlanes resolve_channels(std::string_view op, std::span<const int64_t> x_shape, double eps) {
  const BatchNormPlanes planes = resolve_batch_norm_planes(op, x_shape, eps);
  // The product fits int64 (resolve_batch_norm_planes checked x's).
  require(planes.batch * planes.plane <= INT_MAX, op, "x ", shape_text(x_shape),
          " has 2^31 or more values a channel (B · prod(spatial)): a channel's values are indexed in 32 bits");
  return planes;
}

void check_stats_tensor(std::string_view op, Placement placement, std::string_view name, const TensorRef& t,
                        std::span<const int64_t> channels) {
  check_tensor(placement, op, name, t);
  check_dtype(op, name, t, DType::f32);
  check_shape(op, name, t, channels);
}

}  // namespace

void check_channels_last_rank(std::string_view op, std::span<const int64_t> x_shape, bool channels_last) {
  require(!channels_last || x_shape.size() == 4, op, "x ", shape_text(x_shape),
          ": channels_last applies to a 4-D x [B, C, H, W] only (torch.channels_last)");
}

BatchNormPlanes resolve_batch_norm_training(std::string_view op, std::span<const int64_t> x_shape,
                                            const BatchNormTraining& p) {
  const BatchNormPlanes planes = resolve_channels(op, x_shape, p.eps);
  require(std::isfinite(p.momentum), op, "momentum = ", p.momentum, " must be finite");
  const int64_t values = planes.batch * planes.plane;
  require(values != 1 || planes.channels == 0, op, "x ", shape_text(x_shape),
          " has one value a channel (B · prod(spatial) = 1): training needs more than one, as F.batch_norm");
  return planes;
}

BatchNormPlanes resolve_batch_norm_backward(std::string_view op, std::span<const int64_t> x_shape) {
  return resolve_channels(op, x_shape, 0.0);
}

BatchNormPlanes validate_batch_norm_training(std::string_view op, Placement placement,
                                             const BatchNormTrainingTensors& t, const BatchNormTraining& p) {
  check_batch_norm_x(op, placement, t.x);
  const BatchNormPlanes planes = resolve_batch_norm_training(op, t.x.sizes(), p);
  const int64_t channels[] = {planes.channels};
  require((t.running_mean == nullptr) == (t.running_var == nullptr), op,
          "running_mean and running_var must be given together (or neither)");
  check_batch_norm_channel_tensor(op, placement, "running_mean", t.running_mean, t.x.dtype, channels);
  check_batch_norm_channel_tensor(op, placement, "running_var", t.running_var, t.x.dtype, channels);
  check_batch_norm_channel_tensor(op, placement, "weight", t.weight, t.x.dtype, channels);
  check_batch_norm_channel_tensor(op, placement, "bias", t.bias, t.x.dtype, channels);
  check_like_x(op, placement, "output", t.y, t.x);
  check_stats_tensor(op, placement, "save_mean", t.save_mean, channels);
  check_stats_tensor(op, placement, "save_invstd", t.save_invstd, channels);
  const NamedTensor tensors[] = {{"x", &t.x},
                                 {"running_mean", t.running_mean},
                                 {"running_var", t.running_var},
                                 {"weight", t.weight},
                                 {"bias", t.bias},
                                 {"output", &t.y},
                                 {"save_mean", &t.save_mean},
                                 {"save_invstd", &t.save_invstd}};
  // The running statistics are written too: nothing may share a byte with them either.
  check_outputs_apart(op, std::span(tensors).subspan(1, 2), tensors);
  check_outputs_apart(op, std::span(tensors).subspan(5), tensors);
  const bool channels_last = is_strictly_channels_last(t.x);
  check_workspace(op, placement, batch_norm_training_workspace_elements(t.x.sizes(), p, channels_last), t.workspace,
                  tensors, "batch_norm_training_workspace_elements");
  return memory_planes(planes, channels_last);
}

BatchNormPlanes validate_batch_norm_backward(std::string_view op, Placement placement,
                                             const BatchNormBackwardTensors& t) {
  check_batch_norm_x(op, placement, t.x);
  const BatchNormPlanes planes = resolve_batch_norm_backward(op, t.x.sizes());
  const int64_t channels[] = {planes.channels};
  check_like_x(op, placement, "grad_out", t.grad_out, t.x);
  check_batch_norm_channel_tensor(op, placement, "weight", t.weight, t.x.dtype, channels);
  check_stats_tensor(op, placement, "save_mean", t.save_mean, channels);
  check_stats_tensor(op, placement, "save_invstd", t.save_invstd, channels);
  check_like_x(op, placement, "grad_x", t.grad_x, t.x);
  check_batch_norm_channel_tensor(op, placement, "grad_weight", t.grad_weight, t.x.dtype, channels);
  check_batch_norm_channel_tensor(op, placement, "grad_bias", t.grad_bias, t.x.dtype, channels);
  const NamedTensor tensors[] = {{"grad_out", &t.grad_out},      {"x", &t.x},
                                 {"weight", t.weight},            {"save_mean", &t.save_mean},
                                 {"save_invstd", &t.save_invstd}, {"grad_x", &t.grad_x},
                                 {"grad_weight", t.grad_weight},  {"grad_bias", t.grad_bias}};
  check_outputs_apart(op, std::span(tensors).subspan(5), tensors);
  const bool channels_last = is_strictly_channels_last(t.x);
  check_workspace(op, placement, batch_norm_backward_workspace_elements(t.x.sizes(), channels_last), t.workspace,
                  tensors, "batch_norm_backward_workspace_elements");
  return memory_planes(planes, channels_last);
}

int BatchNormPlan::team() const { return kBatchNormThreads >> channel_bits; }
int BatchNormPlan::chunk_vectors() const { return team() * held; }
int64_t BatchNormPlan::groups() const { return ceil_div(planes.channels, int64_t{1} << channel_bits); }

BatchNormPlan plan_batch_norm(const BatchNormPlanes& planes, int vec) {
  BatchNormPlan plan{.planes = planes, .vec = vec};
  plan.plane_vectors = static_cast<int>(planes.plane / vec);
  plan.channel_vectors = static_cast<int>(planes.batch * planes.plane / vec);
  // Planes of fewer than a warp's vectors: a warp reads the same vectors of 32 / lanes channels.
  const auto lanes = static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::clamp(plan.plane_vectors, 1, kWarp))));
  const auto channels =
      std::min<int64_t>(kWarp / lanes, std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(planes.channels, 1))));
  plan.lane_bits = std::countr_zero(static_cast<unsigned>(lanes));
  plan.channel_bits = std::countr_zero(static_cast<unsigned>(channels));
  const int team = plan.team(), n = plan.channel_vectors;
  if (n > int64_t{kMaxClusterBlocks} * team * kMaxHeld) {
    plan.held = kMaxHeld;
    plan.chunks = static_cast<int>(ceil_div(n, plan.chunk_vectors()));
    return plan;
  }
  plan.clustered = true;
  // The fewest blocks that hold the channel, never more to fill the SMs: a cluster's launch and its
  // barriers cost more than one SM takes to read a block's chunk (at most 32 KiB).
  int blocks = 1;
  while (int64_t{blocks} * team * kMaxHeld < n) blocks *= 2;
  plan.chunks = blocks;
  plan.held = std::max(2, static_cast<int>(std::bit_ceil(static_cast<unsigned>(ceil_div(n, int64_t{blocks} * team)))));
  return plan;
}

int64_t batch_norm_training_workspace(const BatchNormPlan& plan) {
  // A float4 (count, mean, M2, unused) a chunk.
  return plan.clustered ? 0 : plan.planes.channels * plan.chunks * 4;
}

int64_t batch_norm_backward_workspace(const BatchNormPlan& plan) {
  // A float2 (sum of grad_out, sum of grad_out * (x - mean)) a chunk, then one a channel.
  return plan.clustered ? 0 : plan.planes.channels * (plan.chunks + 1) * 2;
}

}  // namespace detail

// The workspace functions name the op in their errors: the PyTorch binding meets the shape rule there first.
int64_t batch_norm_training_workspace_elements(std::span<const int64_t> x_shape, const BatchNormTraining& p,
                                               bool channels_last) {
  constexpr std::string_view kOp = "batch_norm_training";
  const detail::BatchNormPlanes planes = detail::resolve_batch_norm_training(kOp, x_shape, p);
  detail::check_channels_last_rank(kOp, x_shape, channels_last);
  return detail::batch_norm_training_workspace(
      detail::plan_batch_norm(detail::memory_planes(planes, channels_last), 1));
}

int64_t batch_norm_backward_workspace_elements(std::span<const int64_t> x_shape, bool channels_last) {
  constexpr std::string_view kOp = "batch_norm_backward";
  const detail::BatchNormPlanes planes = detail::resolve_batch_norm_backward(kOp, x_shape);
  detail::check_channels_last_rank(kOp, x_shape, channels_last);
  return detail::batch_norm_backward_workspace(
      detail::plan_batch_norm(detail::memory_planes(planes, channels_last), 1));
}

Cost batch_norm_training_cost(std::span<const int64_t> x_shape, DType dtype, const BatchNormTraining& p) {
  const detail::BatchNormPlanes planes = detail::resolve_batch_norm_training("batch_norm_training_cost", x_shape, p);
  const auto numel = static_cast<double>(planes.batch * planes.channels * planes.plane);
  return {10 * numel, 2 * numel * static_cast<double>(dtype_size(dtype)) + 16 * static_cast<double>(planes.channels)};
}

Cost batch_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype) {
  const detail::BatchNormPlanes planes = detail::resolve_batch_norm_backward("batch_norm_backward_cost", x_shape);
  const auto numel = static_cast<double>(planes.batch * planes.channels * planes.plane);
  return {8 * numel, 3 * numel * static_cast<double>(dtype_size(dtype)) + 12 * static_cast<double>(planes.channels)};
}

void batch_norm_training(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                         const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef& save_mean,
                         const TensorRef& save_invstd, const TensorRef* workspace, const BatchNormTraining& p,
                         cudaStream_t stream) {
  constexpr std::string_view kOp = "batch_norm_training";
  const detail::BatchNormTrainingTensors t{x, running_mean, running_var, weight, bias, y, save_mean, save_invstd,
                                           workspace};
  const detail::BatchNormPlanes planes = detail::validate_batch_norm_training(kOp, detail::Placement::device, t, p);
  detail::launch_batch_norm_training(kOp, planes, t, p, stream);
}

void batch_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& save_mean, const TensorRef& save_invstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const TensorRef* workspace,
                         cudaStream_t stream) {
  constexpr std::string_view kOp = "batch_norm_backward";
  const detail::BatchNormBackwardTensors t{grad_out, x,           weight,    save_mean, save_invstd,
                                           grad_x,   grad_weight, grad_bias, workspace};
  const detail::BatchNormPlanes planes = detail::validate_batch_norm_backward(kOp, detail::Placement::device, t);
  detail::launch_batch_norm_backward(kOp, planes, t, stream);
}

}  // namespace solops
