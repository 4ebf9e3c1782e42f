// GroupNorm and InstanceNorm, forward and backward: the shape rules, the validation of a call, the cost
// models and the entry points.
#include <climits>
#include <cmath>

#include "norm/batch_norm_inference.hpp"
#include "norm/group_norm.hpp"
#include "norm/row_norm.hpp"

namespace solops {
namespace detail {
namespace {

// x [B, C, *spatial] without a negative dim, its sizes multiplying within int64.
SpatialGroups resolve_planes(std::string_view op, std::span<const int64_t> x_shape, std::string_view function) {
  require(x_shape.size() >= 2, op, "x ", shape_text(x_shape),
          " must have rank >= 2: [B, C, *spatial], the channels in dim 1 (as ", function, ")");
  for (int64_t size : x_shape) require(size >= 0, op, "x ", shape_text(x_shape), " has a negative dim");
  checked_product(op, "x", x_shape);  // so that every product of its sizes fits in int64
  SpatialGroups g{.batch = x_shape[0], .channels = x_shape[1]};
  for (int64_t size : x_shape.subspan(2)) g.plane *= size;
  return g;
}

void check_parameter(std::string_view op, Placement placement, std::string_view name, const TensorRef* t, DType dtype,
                     std::span<const int64_t> shape) {
  if (!t) return;
  check_tensor(placement, op, name, *t);
  check_dtype(op, name, *t, dtype);
  check_shape(op, name, *t, shape);
}

// The checks of a forward call after x's and the shape rule's.
void check_forward_tensors(std::string_view op, Placement placement, const GroupNormTensors& t, const SpatialGroups& g,
                           bool update_running) {
  const int64_t channels[] = {g.channels};
  const int64_t stats[] = {g.batch, g.groups};
  check_parameter(op, placement, "weight", t.weight, t.x.dtype, channels);
  check_parameter(op, placement, "bias", t.bias, t.x.dtype, channels);
  check_parameter(op, placement, "running_mean", t.running_mean, DType::f32, channels);
  check_parameter(op, placement, "running_var", t.running_var, DType::f32, channels);
  check_like_x(op, placement, "output", t.y, t.x);
  check_parameter(op, placement, "mean", t.mean, DType::f32, stats);
  check_parameter(op, placement, "rstd", t.rstd, DType::f32, stats);
  const NamedTensor tensors[] = {{"x", &t.x},
                                 {"weight", t.weight},
                                 {"bias", t.bias},
                                 {"running_mean", t.running_mean},
                                 {"running_var", t.running_var},
                                 {"output", &t.y},
                                 {"mean", t.mean},
                                 {"rstd", t.rstd}};
  check_workspace(op, placement, update_running ? 2 * g.batch * g.channels : 0, t.workspace, tensors,
                  "instance_norm_workspace_elements");
  const NamedTensor outputs[] = {{"output", &t.y},
                                 {"mean", t.mean},
                                 {"rstd", t.rstd},
                                 {"running_mean", t.running_mean},
                                 {"running_var", t.running_var}};
  check_outputs_apart(op, outputs, tensors);
}

}  // namespace

SpatialGroups resolve_group_norm(std::string_view op, std::span<const int64_t> x_shape, int64_t num_groups,
                                 double eps) {
  SpatialGroups g = resolve_planes(op, x_shape, "F.group_norm");
  require(num_groups > 0, op, "num_groups = ", num_groups, " must be > 0");
  require(g.channels % num_groups == 0, op, "the C = ", g.channels, " channels of x ", shape_text(x_shape),
          " are not divisible by num_groups = ", num_groups);
  g.groups = num_groups;
  g.channels_per_group = g.channels / num_groups;
  require(g.channels_per_group <= INT_MAX && g.group_len() <= INT_MAX, op, "each group of x ", shape_text(x_shape),
          " has C / G = ", g.channels_per_group, " channels and (C / G) * S = ", g.group_len(),
          " elements; both must be below 2^31: groups are indexed in 32 bits");
  check_eps(op, eps);
  return g;
}

SpatialGroups resolve_instance_norm(std::string_view op, std::span<const int64_t> x_shape, const InstanceNorm& p) {
  SpatialGroups g = resolve_planes(op, x_shape, "F.instance_norm");
  g.groups = g.channels;
  require(g.plane <= INT_MAX, op, "each plane of x ", shape_text(x_shape), " has S = ", g.plane,
          " elements, 2^31 or more: planes are indexed in 32 bits");
  require(!p.use_input_stats || g.plane != 1, op, "x ", shape_text(x_shape),
          " has one spatial element an instance: use_input_stats needs more than one (as F.instance_norm)");
  check_eps(op, p.eps);
  require(std::isfinite(p.momentum), op, "momentum = ", p.momentum, " must be finite");
  return g;
}

SpatialGroups validate_group_norm(std::string_view op, Placement placement, const GroupNormTensors& t,
                                  const GroupNorm& p) {
  check_batch_norm_x(op, placement, t.x);
  SpatialGroups g = resolve_group_norm(op, t.x.sizes(), p.num_groups, p.eps);
  check_forward_tensors(op, placement, t, g, false);
  g.channels_last = is_strictly_channels_last(t.x);
  return g;
}

GroupNormMath instance_norm_math(const GroupNormTensors& t, const InstanceNorm& p) {
  const bool running = t.running_mean != nullptr;
  return {p.use_input_stats, p.use_input_stats && running, p.momentum, p.eps};
}

SpatialGroups validate_instance_norm(std::string_view op, Placement placement, const GroupNormTensors& t,
                                     const InstanceNorm& p) {
  check_batch_norm_x(op, placement, t.x);
  SpatialGroups g = resolve_instance_norm(op, t.x.sizes(), p);
  require((t.running_mean == nullptr) == (t.running_var == nullptr), op,
          "running_mean and running_var must be given together (both or neither)");
  require(p.use_input_stats || t.running_mean, op,
          "use_input_stats=False normalizes by the running statistics: running_mean and running_var are required");
  check_forward_tensors(op, placement, t, g, instance_norm_math(t, p).update_running);
  g.channels_last = is_strictly_channels_last(t.x);
  return g;
}

namespace {

// The checks of a backward call after x's and the shape rule's.
void check_backward_tensors(std::string_view op, Placement placement, const GroupNormBackwardTensors& t,
                            const SpatialGroups& g, std::string_view sizing) {
  const int64_t channels[] = {g.channels};
  const int64_t stats[] = {g.batch, g.groups};
  check_like_x(op, placement, "grad_out", t.grad_out, t.x);
  check_parameter(op, placement, "weight", t.weight, t.x.dtype, channels);
  check_parameter(op, placement, "mean", &t.mean, DType::f32, stats);
  check_parameter(op, placement, "rstd", &t.rstd, DType::f32, stats);
  check_like_x(op, placement, "grad_x", t.grad_x, t.x);
  check_parameter(op, placement, "grad_weight", t.grad_weight, t.x.dtype, channels);
  check_parameter(op, placement, "grad_bias", t.grad_bias, t.x.dtype, channels);
  const NamedTensor tensors[] = {
      {"grad_out", &t.grad_out}, {"x", &t.x},           {"weight", t.weight},           {"mean", &t.mean},
      {"rstd", &t.rstd},         {"grad_x", &t.grad_x}, {"grad_weight", t.grad_weight}, {"grad_bias", t.grad_bias}};
  check_workspace(op, placement, backward_partials_elements(g, t.grad_weight || t.grad_bias), t.workspace, tensors,
                  sizing);
  const NamedTensor outputs[] = {{"grad_x", &t.grad_x}, {"grad_weight", t.grad_weight}, {"grad_bias", t.grad_bias}};
  check_outputs_apart(op, outputs, tensors);
}

}  // namespace

SpatialGroups validate_group_norm_backward(std::string_view op, Placement placement, const GroupNormBackwardTensors& t,
                                           const GroupNormBackward& p) {
  check_batch_norm_x(op, placement, t.x);
  SpatialGroups g = resolve_group_norm(op, t.x.sizes(), p.num_groups, 0.0);
  check_backward_tensors(op, placement, t, g, "group_norm_backward_workspace_elements");
  g.channels_last = is_strictly_channels_last(t.x);
  return g;
}

SpatialGroups validate_instance_norm_backward(std::string_view op, Placement placement,
                                              const GroupNormBackwardTensors& t, const InstanceNormBackward& p) {
  check_batch_norm_x(op, placement, t.x);
  SpatialGroups g = resolve_instance_norm(op, t.x.sizes(), InstanceNorm{p.use_input_stats, 0.0, 0.0});
  check_backward_tensors(op, placement, t, g, "instance_norm_backward_workspace_elements");
  g.channels_last = is_strictly_channels_last(t.x);
  return g;
}

namespace {

Cost forward_cost(const SpatialGroups& g, DType dtype, bool affine, int64_t running_bytes) {
  const auto numel = static_cast<double>(g.batch * g.channels * g.plane);
  const auto channels = static_cast<double>(g.channels);
  const auto eb = static_cast<double>(dtype_size(dtype));
  return {(affine ? 5 : 3) * numel,
          (2 * numel + (affine ? 2 * channels : 0)) * eb + static_cast<double>(running_bytes)};
}

Cost backward_cost(const SpatialGroups& g, DType dtype, bool weight) {
  const auto numel = static_cast<double>(g.batch * g.channels * g.plane);
  const auto channels = static_cast<double>(g.channels);
  const auto eb = static_cast<double>(dtype_size(dtype));
  return {12 * numel,
          (3 * numel + 2 * channels + (weight ? channels : 0)) * eb + 8 * static_cast<double>(g.batch * g.groups)};
}

}  // namespace
}  // namespace detail

namespace {

constexpr std::string_view kGroupNorm = "group_norm";
constexpr std::string_view kInstanceNorm = "instance_norm";
constexpr std::string_view kGroupNormBackward = "group_norm_backward";
constexpr std::string_view kInstanceNormBackward = "instance_norm_backward";

// InstanceNorm's backward rule: the forward's, with no eps or momentum to check.
detail::SpatialGroups resolve_instance_backward(std::string_view op, std::span<const int64_t> x_shape,
                                                const InstanceNormBackward& p) {
  return detail::resolve_instance_norm(op, x_shape, InstanceNorm{p.use_input_stats, 0.0, 0.0});
}

void run_group_norm(std::string_view op, const detail::GroupNormTensors& t, const GroupNorm& p, cudaStream_t stream) {
  const detail::SpatialGroups g = detail::validate_group_norm(op, detail::Placement::device, t, p);
  detail::launch_group_norm(op, g, {.input_stats = true, .eps = p.eps}, t, stream);
}

void run_instance_norm(std::string_view op, const detail::GroupNormTensors& t, const InstanceNorm& p,
                       cudaStream_t stream) {
  const detail::SpatialGroups g = detail::validate_instance_norm(op, detail::Placement::device, t, p);
  detail::launch_group_norm(op, g, detail::instance_norm_math(t, p), t, stream);
}

}  // namespace

std::vector<int64_t> group_norm_output_shape(std::span<const int64_t> x_shape, const GroupNorm& p) {
  detail::resolve_group_norm(kGroupNorm, x_shape, p.num_groups, p.eps);
  return {x_shape.begin(), x_shape.end()};
}

std::vector<int64_t> group_norm_stats_shape(std::span<const int64_t> x_shape, const GroupNorm& p) {
  const detail::SpatialGroups g = detail::resolve_group_norm(kGroupNorm, x_shape, p.num_groups, p.eps);
  return {g.batch, g.groups};
}

std::vector<int64_t> instance_norm_output_shape(std::span<const int64_t> x_shape, const InstanceNorm& p) {
  detail::resolve_instance_norm(kInstanceNorm, x_shape, p);
  return {x_shape.begin(), x_shape.end()};
}

std::vector<int64_t> instance_norm_stats_shape(std::span<const int64_t> x_shape, const InstanceNorm& p) {
  const detail::SpatialGroups g = detail::resolve_instance_norm(kInstanceNorm, x_shape, p);
  return {g.batch, g.channels};
}

int64_t instance_norm_workspace_elements(std::span<const int64_t> x_shape, const InstanceNorm& p, bool running_stats) {
  const detail::SpatialGroups g = detail::resolve_instance_norm(kInstanceNorm, x_shape, p);
  return p.use_input_stats && running_stats ? 2 * g.batch * g.channels : 0;
}

int64_t group_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const GroupNormBackward& p,
                                               bool parameter_gradients) {
  const detail::SpatialGroups g = detail::resolve_group_norm(kGroupNormBackward, x_shape, p.num_groups, 0.0);
  return detail::backward_partials_elements(g, parameter_gradients);
}

int64_t instance_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const InstanceNormBackward& p,
                                                  bool parameter_gradients) {
  const detail::SpatialGroups g = resolve_instance_backward(kInstanceNormBackward, x_shape, p);
  return detail::backward_partials_elements(g, parameter_gradients);
}

Cost group_norm_cost(std::span<const int64_t> x_shape, DType dtype, const GroupNorm& p, bool affine) {
  const detail::SpatialGroups g = detail::resolve_group_norm("group_norm_cost", x_shape, p.num_groups, p.eps);
  return detail::forward_cost(g, dtype, affine, 0);
}

Cost instance_norm_cost(std::span<const int64_t> x_shape, DType dtype, const InstanceNorm& p, bool affine,
                        bool running_stats) {
  const detail::SpatialGroups g = detail::resolve_instance_norm("instance_norm_cost", x_shape, p);
  const int64_t running_bytes = running_stats ? (p.use_input_stats ? 16 : 8) * g.channels : 0;
  return detail::forward_cost(g, dtype, affine, running_bytes);
}

Cost group_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const GroupNormBackward& p, bool weight) {
  const detail::SpatialGroups g = detail::resolve_group_norm("group_norm_backward_cost", x_shape, p.num_groups, 0.0);
  return detail::backward_cost(g, dtype, weight);
}

Cost instance_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const InstanceNormBackward& p,
                                 bool weight) {
  return detail::backward_cost(resolve_instance_backward("instance_norm_backward_cost", x_shape, p), dtype, weight);
}

void group_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const GroupNorm& p, cudaStream_t stream) {
  run_group_norm(kGroupNorm, {.x = x, .weight = weight, .bias = bias, .y = y}, p, stream);
}

void group_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                           const TensorRef& mean, const TensorRef& rstd, const GroupNorm& p, cudaStream_t stream) {
  run_group_norm("group_norm_with_stats",
                 {.x = x, .weight = weight, .bias = bias, .y = y, .mean = &mean, .rstd = &rstd}, p, stream);
}

void instance_norm(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                   const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef* workspace,
                   const InstanceNorm& p, cudaStream_t stream) {
  run_instance_norm(kInstanceNorm,
                    {.x = x,
                     .weight = weight,
                     .bias = bias,
                     .y = y,
                     .running_mean = running_mean,
                     .running_var = running_var,
                     .workspace = workspace},
                    p, stream);
}

void instance_norm_with_stats(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                              const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef& mean,
                              const TensorRef& rstd, const TensorRef* workspace, const InstanceNorm& p,
                              cudaStream_t stream) {
  run_instance_norm("instance_norm_with_stats",
                    {.x = x,
                     .weight = weight,
                     .bias = bias,
                     .y = y,
                     .mean = &mean,
                     .rstd = &rstd,
                     .running_mean = running_mean,
                     .running_var = running_var,
                     .workspace = workspace},
                    p, stream);
}

void group_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight, const TensorRef& mean,
                         const TensorRef& rstd, const TensorRef& grad_x, const TensorRef* grad_weight,
                         const TensorRef* grad_bias, const TensorRef* workspace, const GroupNormBackward& p,
                         cudaStream_t stream) {
  const detail::GroupNormBackwardTensors t{grad_out, x, weight, mean, rstd, grad_x, grad_weight, grad_bias, workspace};
  const auto g = detail::validate_group_norm_backward(kGroupNormBackward, detail::Placement::device, t, p);
  detail::launch_group_norm_backward(kGroupNormBackward, g, true, t, stream);
}

void instance_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                            const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                            const TensorRef* grad_weight, const TensorRef* grad_bias, const TensorRef* workspace,
                            const InstanceNormBackward& p, cudaStream_t stream) {
  const detail::GroupNormBackwardTensors t{grad_out, x, weight, mean, rstd, grad_x, grad_weight, grad_bias, workspace};
  const auto g = detail::validate_instance_norm_backward(kInstanceNormBackward, detail::Placement::device, t, p);
  detail::launch_group_norm_backward(kInstanceNormBackward, g, p.use_input_stats, t, stream);
}

}  // namespace solops
