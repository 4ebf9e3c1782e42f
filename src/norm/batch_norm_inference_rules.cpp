// BatchNormInferenceFwd: the shape rule, the validation of a call, the cost model and the entry point.
#include "norm/batch_norm_inference.hpp"
#include "norm/row_norm.hpp"

namespace solops {
namespace detail {

BatchNormPlanes resolve_batch_norm_planes(std::string_view op, std::span<const int64_t> x_shape, double eps) {
  require(x_shape.size() >= 2, op, "x ", shape_text(x_shape),
          " must have rank >= 2: [B, C, *spatial], the channels in dim 1 (as F.batch_norm)");
  for (int64_t size : x_shape) require(size >= 0, op, "x ", shape_text(x_shape), " has a negative dim");
  checked_product(op, "x", x_shape);  // so that every product of its sizes fits in int64
  check_eps(op, eps);
  BatchNormPlanes planes{.batch = x_shape[0], .channels = x_shape[1]};
  for (int64_t size : x_shape.subspan(2)) planes.plane *= size;
  return planes;
}

BatchNormPlanes memory_planes(const BatchNormPlanes& planes, bool channels_last) {
  if (!channels_last) return planes;
  return {.batch = planes.batch * planes.plane, .channels = planes.channels, .plane = 1};
}

void check_batch_norm_x(std::string_view op, Placement placement, const TensorRef& x) {
  check_tensor(placement, op, "x", x, Layouts::contiguous_or_channels_last);
  check_float_dtype(op, "x", x);
}

void check_like_x(std::string_view op, Placement placement, std::string_view name, const TensorRef& t,
                  const TensorRef& x) {
  check_tensor(placement, op, name, t, Layouts::contiguous_or_channels_last);
  check_dtype(op, name, t, x.dtype);
  check_shape(op, name, t, x.sizes());
  const bool channels_last = is_strictly_channels_last(x);
  require(channels_last ? is_channels_last(t) : t.is_contiguous(), op, name, " must be in x's memory format (",
          channels_last ? "channels_last" : "contiguous", "): the kernels walk both with x's offsets");
}

void check_batch_norm_channel_tensor(std::string_view op, Placement placement, std::string_view name,
                                     const TensorRef* t, DType x_dtype, std::span<const int64_t> channels) {
  if (!t) return;
  check_tensor(placement, op, name, *t);
  require(t->dtype == DType::f32 || t->dtype == x_dtype, op, name, ": dtype ", dtype_name(t->dtype), " must be f32 or ",
          "x's dtype ", dtype_name(x_dtype));
  check_shape(op, name, *t, channels);
}

BatchNormPlanes validate_batch_norm_inference(std::string_view op, Placement placement,
                                              const BatchNormInferenceTensors& t, const BatchNormInference& p) {
  check_batch_norm_x(op, placement, t.x);
  const BatchNormPlanes planes = resolve_batch_norm_planes(op, t.x.sizes(), p.eps);
  const NamedTensor inputs[] = {{"x", &t.x},
                                {"weight", t.weight},
                                {"bias", t.bias},
                                {"running_mean", &t.running_mean},
                                {"running_var", &t.running_var}};
  const int64_t channels[] = {planes.channels};
  for (const auto& [name, parameter] : std::span(inputs).subspan(1)) {
    check_batch_norm_channel_tensor(op, placement, name, parameter, t.x.dtype, channels);
  }
  check_like_x(op, placement, "output", t.y, t.x);
  const NamedTensor output[] = {{"output", &t.y}};
  check_outputs_apart(op, output, inputs);
  return memory_planes(planes, is_strictly_channels_last(t.x));
}

}  // namespace detail

std::vector<int64_t> batch_norm_inference_output_shape(std::span<const int64_t> x_shape, const BatchNormInference& p) {
  detail::resolve_batch_norm_planes("batch_norm_inference", x_shape, p.eps);
  return {x_shape.begin(), x_shape.end()};
}

Cost batch_norm_inference_cost(std::span<const int64_t> x_shape, DType dtype, const BatchNormInference& p) {
  const detail::BatchNormPlanes planes = detail::resolve_batch_norm_planes("batch_norm_inference_cost", x_shape, p.eps);
  const auto numel = static_cast<double>(planes.batch * planes.channels * planes.plane);
  return {4 * numel, 2 * numel * static_cast<double>(dtype_size(dtype)) + 16 * static_cast<double>(planes.channels)};
}

void batch_norm_inference(const TensorRef& x, const TensorRef* weight, const TensorRef* bias,
                          const TensorRef& running_mean, const TensorRef& running_var, const TensorRef& y,
                          const BatchNormInference& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "batch_norm_inference";
  const detail::BatchNormInferenceTensors t{x, weight, bias, running_mean, running_var, y};
  const detail::BatchNormPlanes planes = detail::validate_batch_norm_inference(kOp, detail::Placement::device, t, p);
  detail::launch_batch_norm_inference(kOp, planes, t, static_cast<float>(p.eps), stream);
}

}  // namespace solops
