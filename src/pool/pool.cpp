// Public entry points of the sliding-window pools: shape rules, cost models and the CUDA calls.
// The rules live in pool_rules.cpp; 1-D pools run the 2-D kernels on one-row planes, 3-D pools
// their own kernel (pool3d.cu).
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

template <class Params>
void max_pool(std::string_view op, const TensorRef& x, const TensorRef& y, const TensorRef* indices,
              const Params& p, cudaStream_t stream) {
  const auto g = detail::validate_pool_call(op, PoolKind::max, detail::Placement::device, x, y, indices, p);
  if (pools_depth_slices(g) && !indices) return detail::launch_max_pool(op, as_depth_slices(g), x, y, nullptr, stream);
  if (g.spatial_rank == 3) return detail::launch_max_pool3d(op, g, x, y, indices, stream);
  detail::launch_max_pool(op, g, x, y, indices, stream);
}

template <class Params>
void avg_pool(std::string_view op, const TensorRef& x, const TensorRef& y, const Params& p,
              cudaStream_t stream) {
  const auto g = detail::validate_pool_call(op, PoolKind::avg, detail::Placement::device, x, y, nullptr, p);
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
