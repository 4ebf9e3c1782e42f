// Adaptive 2-D pooling: shape rule, validation, cost model and the public entry points.
#include <climits>

#include "core/check.hpp"
#include "pool/adaptive_pool2d.hpp"

namespace solops {
namespace detail {

std::vector<int64_t> AdaptiveGeometry::output_shape() const {
  if (batched) return {batch, channels, out_h, out_w};
  return {channels, out_h, out_w};
}

AdaptiveGeometry resolve_adaptive_pool2d(std::string_view op, std::span<const int64_t> x_shape,
                                         const AdaptivePool2d& p) {
  const auto rank = static_cast<int64_t>(x_shape.size());
  const PoolLayout layout = resolve_layout(op, x_shape, 2, "3-D [C, H, W] or 4-D [N, C, H, W]");
  AdaptiveGeometry g;
  g.batched = layout.batched;
  g.batch = layout.batch;
  g.channels = layout.channels;
  const int64_t in[2] = {x_shape[rank - 2], x_shape[rank - 1]};
  int64_t out[2];
  for (int axis = 0; axis < 2; ++axis) {
    out[axis] = p.output_size[axis].value_or(in[axis]);
    require(out[axis] >= 1, op, "output_size[", axis, "] = ", out[axis], " must be >= 1");
  }
  require(in[0] * in[1] <= INT_MAX && out[0] <= INT_MAX && out[1] <= INT_MAX &&
              out[0] * out[1] <= INT_MAX,
          op, "input ", shape_text(x_shape), " or output size (", out[0], ", ", out[1],
          ") has planes of 2^31 or more elements: 32-bit in-plane indexing would overflow");
  g.planes = g.batch * g.channels;
  g.in_h = static_cast<int>(in[0]);
  g.in_w = static_cast<int>(in[1]);
  g.out_h = static_cast<int>(out[0]);
  g.out_w = static_cast<int>(out[1]);
  checked_product(op, "output", g.output_shape());  // so that outputs() fits in int64
  return g;
}

Cost adaptive_pool2d_cost(const AdaptiveGeometry& g, DType dtype, int64_t index_bytes) {
  // Taps of an axis: the bins' lengths summed, I plus one per overlap (spec §4.4).
  const auto scanned = [](int in, int out) {
    double taps = 0;
    for (int o = 0; o < out; ++o) taps += adaptive_bin(o, in, out).end - adaptive_bin(o, in, out).start;
    return taps;
  };
  const double outputs = static_cast<double>(g.outputs());
  const double inputs = static_cast<double>(g.planes) * g.in_h * g.in_w;
  return {static_cast<double>(g.planes) * scanned(g.in_h, g.out_h) * scanned(g.in_w, g.out_w),
          (inputs + outputs) * static_cast<double>(dtype_size(dtype)) + outputs * index_bytes};
}

AdaptiveGeometry validate_adaptive_pool2d_call(std::string_view op, Placement placement, const TensorRef& x,
                                               const TensorRef& y, const TensorRef* indices,
                                               const AdaptivePool2d& p) {
  return validate_pool_tensors(op, placement, x, y, indices,
                               [&] { return resolve_adaptive_pool2d(op, x.sizes(), p); });
}

}  // namespace detail

using detail::Placement;
using detail::validate_adaptive_pool2d_call;

std::vector<int64_t> adaptive_pool2d_output_shape(std::span<const int64_t> x_shape, const AdaptivePool2d& p) {
  return detail::resolve_adaptive_pool2d("adaptive_pool2d", x_shape, p).output_shape();
}

Cost adaptive_avg_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const AdaptivePool2d& p) {
  return detail::adaptive_pool2d_cost(detail::resolve_adaptive_pool2d("adaptive_avg_pool2d", x_shape, p), dtype, 0);
}

Cost adaptive_max_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const AdaptivePool2d& p) {
  return detail::adaptive_pool2d_cost(detail::resolve_adaptive_pool2d("adaptive_max_pool2d", x_shape, p), dtype, 0);
}

Cost adaptive_max_pool2d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype,
                                           const AdaptivePool2d& p) {
  return detail::adaptive_pool2d_cost(detail::resolve_adaptive_pool2d("adaptive_max_pool2d", x_shape, p), dtype,
                                      sizeof(int64_t));
}

void adaptive_avg_pool2d(const TensorRef& x, const TensorRef& y, const AdaptivePool2d& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "adaptive_avg_pool2d";
  detail::launch_adaptive_avg_pool2d(kOp, validate_adaptive_pool2d_call(kOp, Placement::device, x, y, nullptr, p), x, y,
                                     stream);
}

void adaptive_max_pool2d(const TensorRef& x, const TensorRef& y, const AdaptivePool2d& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "adaptive_max_pool2d";
  detail::launch_adaptive_max_pool2d(kOp, validate_adaptive_pool2d_call(kOp, Placement::device, x, y, nullptr, p), x, y,
                                     nullptr, stream);
}

void adaptive_max_pool2d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                                      const AdaptivePool2d& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "adaptive_max_pool2d";
  detail::launch_adaptive_max_pool2d(kOp, validate_adaptive_pool2d_call(kOp, Placement::device, x, y, &indices, p), x,
                                     y, &indices, stream);
}
}  // namespace solops
