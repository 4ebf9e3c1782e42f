// Public entry points of the sliding-window pools: shape rules, cost models and the CUDA calls.
// The rules live in pool_rules.cpp. Each rank has its kernel (pool1d.cu, pool2d.cu, pool3d.cu);
// windows that cover whole planes run the global kernel (global_pool.cu).
#include <algorithm>

#include "pool/pool_launch.hpp"
#include "pool/pool_geometry.hpp"
#include "solops/pool.hpp"

namespace solops {
namespace {

using detail::PoolKind;

template <class Params>
std::vector<int64_t> output_shape(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                                  const Params& p) {
  return detail::resolve_pool(op, kind, x_shape, p).output_shape();
}

template <class Params>
Cost cost(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape, DType dtype,
          const Params& p, int64_t index_bytes) {
  return detail::pool_cost(detail::resolve_pool(op, kind, x_shape, p), dtype, index_bytes);
}

// A 3-D window one tap deep with stride 1 and no depth padding pools every depth slice on its own:
// the 2-D kernels run it on N*C*D planes. (Positions are not per slice, so max with positions
// stays on the 3-D kernel.)
bool pools_depth_slices(const detail::PoolGeometry& g) {
  return g.spatial_rank == 3 && g.kernel_d == 1 && g.stride_d == 1 && g.pad_d == 0;
}

detail::PoolGeometry as_depth_slices(detail::PoolGeometry g) {
  g.spatial_rank = 2;
  g.planes *= g.in_d;
  g.in_d = g.out_d = 1;
  return g;
}

// One window that reads every element of its plane: one output per axis, whose taps (dilation 1,
// or a single tap) span the axis.
bool covers_plane(const detail::PoolGeometry& g) {
  const auto covers = [](int in, int out, int kernel, int pad, int dilation) {
    return out == 1 && (dilation == 1 || kernel == 1) && kernel - pad >= in;
  };
  return covers(g.in_d, g.out_d, g.kernel_d, g.pad_d, g.dilation_d) &&
         covers(g.in_h, g.out_h, g.kernel_h, g.pad_h, g.dilation_h) &&
         covers(g.in_w, g.out_w, g.kernel_w, g.pad_w, g.dilation_w);
}

int plane_size(const detail::PoolGeometry& g) { return g.in_d * g.in_h * g.in_w; }

// PyTorch's divisor (spec §4.1) of a window that covers its plane: per axis the window clipped to
// the padded extent with count_include_pad, else the real elements, the whole axis.
int64_t covering_window_divisor(const detail::PoolGeometry& g) {
  if (g.divisor_override != 0) return g.divisor_override;
  if (!g.count_include_pad) return plane_size(g);
  const auto taps = [](int64_t in, int64_t kernel, int64_t pad) { return std::min(kernel, in + 2 * pad); };
  return taps(g.in_d, g.kernel_d, g.pad_d) * taps(g.in_h, g.kernel_h, g.pad_h) * taps(g.in_w, g.kernel_w, g.pad_w);
}

template <class Params>
void max_pool(std::string_view op, const TensorRef& x, const TensorRef& y, const TensorRef* indices,
              const Params& p, cudaStream_t stream) {
  const auto g = detail::validate_pool_call(op, PoolKind::max, detail::Placement::device, x, y, indices, p);
  if (covers_plane(g)) return detail::launch_global_max_pool(op, g.planes, plane_size(g), x, y, indices, stream);
  if (g.spatial_rank == 1) return detail::launch_max_pool1d(op, g, x, y, indices, stream);
  if (pools_depth_slices(g) && !indices) return detail::launch_max_pool(op, as_depth_slices(g), x, y, nullptr, stream);
  if (g.spatial_rank == 3) return detail::launch_max_pool3d(op, g, x, y, indices, stream);
  detail::launch_max_pool(op, g, x, y, indices, stream);
}

template <class Params>
void avg_pool(std::string_view op, const TensorRef& x, const TensorRef& y, const Params& p,
              cudaStream_t stream) {
  const auto g = detail::validate_pool_call(op, PoolKind::avg, detail::Placement::device, x, y, nullptr, p);
  if (covers_plane(g)) {
    return detail::launch_global_avg_pool(op, g.planes, plane_size(g), covering_window_divisor(g), x, y, stream);
  }
  if (g.spatial_rank == 1) return detail::launch_avg_pool1d(op, g, x, y, stream);
  if (pools_depth_slices(g)) return detail::launch_avg_pool(op, as_depth_slices(g), x, y, stream);
  if (g.spatial_rank == 3) return detail::launch_avg_pool3d(op, g, x, y, stream);
  detail::launch_avg_pool(op, g, x, y, stream);
}

}  // namespace

std::vector<int64_t> max_pool1d_output_shape(std::span<const int64_t> x_shape, const Pool1d& p) {
  return output_shape("max_pool1d", PoolKind::max, x_shape, p);
}
std::vector<int64_t> avg_pool1d_output_shape(std::span<const int64_t> x_shape, const Pool1d& p) {
  return output_shape("avg_pool1d", PoolKind::avg, x_shape, p);
}
std::vector<int64_t> max_pool2d_output_shape(std::span<const int64_t> x_shape, const Pool2d& p) {
  return output_shape("max_pool2d", PoolKind::max, x_shape, p);
}
std::vector<int64_t> avg_pool2d_output_shape(std::span<const int64_t> x_shape, const Pool2d& p) {
  return output_shape("avg_pool2d", PoolKind::avg, x_shape, p);
}
std::vector<int64_t> max_pool3d_output_shape(std::span<const int64_t> x_shape, const Pool3d& p) {
  return output_shape("max_pool3d", PoolKind::max, x_shape, p);
}
std::vector<int64_t> avg_pool3d_output_shape(std::span<const int64_t> x_shape, const Pool3d& p) {
  return output_shape("avg_pool3d", PoolKind::avg, x_shape, p);
}

Cost max_pool1d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool1d& p) {
  return cost("max_pool1d", PoolKind::max, x_shape, dtype, p, 0);
}
Cost max_pool1d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype, const Pool1d& p) {
  return cost("max_pool1d", PoolKind::max, x_shape, dtype, p, sizeof(int64_t));
}
Cost avg_pool1d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool1d& p) {
  return cost("avg_pool1d", PoolKind::avg, x_shape, dtype, p, 0);
}
Cost max_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p) {
  return cost("max_pool2d", PoolKind::max, x_shape, dtype, p, 0);
}
Cost max_pool2d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p) {
  return cost("max_pool2d", PoolKind::max, x_shape, dtype, p, sizeof(int64_t));
}
Cost avg_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p) {
  return cost("avg_pool2d", PoolKind::avg, x_shape, dtype, p, 0);
}
Cost max_pool3d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool3d& p) {
  return cost("max_pool3d", PoolKind::max, x_shape, dtype, p, 0);
}
Cost max_pool3d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype, const Pool3d& p) {
  return cost("max_pool3d", PoolKind::max, x_shape, dtype, p, sizeof(int64_t));
}
Cost avg_pool3d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool3d& p) {
  return cost("avg_pool3d", PoolKind::avg, x_shape, dtype, p, 0);
}

void max_pool1d(const TensorRef& x, const TensorRef& y, const Pool1d& p, cudaStream_t stream) {
  max_pool("max_pool1d", x, y, nullptr, p, stream);
}
void max_pool1d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                             const Pool1d& p, cudaStream_t stream) {
  max_pool("max_pool1d", x, y, &indices, p, stream);
}
void avg_pool1d(const TensorRef& x, const TensorRef& y, const Pool1d& p, cudaStream_t stream) {
  avg_pool("avg_pool1d", x, y, p, stream);
}
void max_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p, cudaStream_t stream) {
  max_pool("max_pool2d", x, y, nullptr, p, stream);
}
void max_pool2d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                             const Pool2d& p, cudaStream_t stream) {
  max_pool("max_pool2d", x, y, &indices, p, stream);
}
void avg_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p, cudaStream_t stream) {
  avg_pool("avg_pool2d", x, y, p, stream);
}
void max_pool3d(const TensorRef& x, const TensorRef& y, const Pool3d& p, cudaStream_t stream) {
  max_pool("max_pool3d", x, y, nullptr, p, stream);
}
void max_pool3d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                             const Pool3d& p, cudaStream_t stream) {
  max_pool("max_pool3d", x, y, &indices, p, stream);
}
void avg_pool3d(const TensorRef& x, const TensorRef& y, const Pool3d& p, cudaStream_t stream) {
  avg_pool("avg_pool3d", x, y, p, stream);
}

}  // namespace solops
