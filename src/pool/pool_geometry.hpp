// The resolved geometry of one 1-D, 2-D or 3-D pooling call, shared by the shape rules, the CPU
// references and the CUDA launchers. Built only by resolve_pool, which enforces every rule of
// spec §4.0. Missing leading axes are one element with a one-tap window: a 1-D pool is a 2-D pool
// of one input row, and 1-D and 2-D pools are 3-D pools of depth 1, so one set of references
// serves all three.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "pool/pool_tensor_checks.hpp"
#include "solops/cost.hpp"
#include "solops/pool.hpp"

namespace solops::detail {

enum class PoolKind { max, avg };

struct PoolGeometry {
  int spatial_rank = 2;  // 1: [N, C, L] input; 2: [N, C, H, W]; 3: [N, C, D, H, W]
  bool batched = true;   // false for unbatched input (no N dim)
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t planes = 1;  // batch * channels, each pooled independently
  // In-plane sizes are int32: the resolvers reject planes of 2^31 or more elements.
  int in_d = 1, in_h = 0, in_w = 0;
  int out_d = 1, out_h = 0, out_w = 0;
  int kernel_d = 1, kernel_h = 1, kernel_w = 1;
  int stride_d = 1, stride_h = 1, stride_w = 1;
  int pad_d = 0, pad_h = 0, pad_w = 0;
  int dilation_d = 1, dilation_h = 1, dilation_w = 1;
  bool count_include_pad = true;
  int divisor_override = 0;  // 0 = none (a zero override is rejected)

  std::vector<int64_t> output_shape() const;
  int64_t outputs() const { return planes * out_d * out_h * out_w; }
};

PoolGeometry resolve_pool(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                          const Pool1d& p);
PoolGeometry resolve_pool(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                          const Pool2d& p);
PoolGeometry resolve_pool(std::string_view op, PoolKind kind, std::span<const int64_t> x_shape,
                          const Pool3d& p);

// The checks every entry point makes before computing: tensors (device or host memory), dtypes,
// shapes, and no overlap between input and outputs. Returns the geometry.
PoolGeometry validate_pool_call(std::string_view op, PoolKind kind, Placement placement,
                                const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                const Pool1d& p);
PoolGeometry validate_pool_call(std::string_view op, PoolKind kind, Placement placement,
                                const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                const Pool2d& p);
PoolGeometry validate_pool_call(std::string_view op, PoolKind kind, Placement placement,
                                const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                const Pool3d& p);

// Roofline cost (spec §4.1–4.3): one compare-select or add per tap; input read once, outputs
// (and index_bytes per output) written once.
Cost pool_cost(const PoolGeometry& g, DType dtype, int64_t index_bytes);

// Output size of one axis (spec §4.0), before the positivity check.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                    bool ceil_mode);

}  // namespace solops::detail
