// The resolved geometry of one 2-D pooling call, shared by the shape rule, the CPU reference and
// the CUDA launcher. Built only by resolve_pool2d, which enforces every rule of spec §4.0.
#pragma once

#include <array>
#include <span>
#include <string_view>
#include <vector>

#include "solops/pool.hpp"

namespace solops::detail {

enum class Pool2dKind { max, avg };

struct Pool2dGeometry {
  bool batched = true;  // false for unbatched [C, H, W] input
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t planes = 1;  // batch * channels, each pooled independently
  // In-plane sizes are int32: resolve_pool2d rejects planes of 2^31 or more elements.
  int in_h = 0, in_w = 0;
  int out_h = 0, out_w = 0;
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  bool count_include_pad = true;
  int divisor_override = 0;  // 0 = none (a zero override is rejected)

  std::vector<int64_t> output_shape() const;
  int64_t outputs() const { return planes * out_h * out_w; }
};

Pool2dGeometry resolve_pool2d(std::string_view op, Pool2dKind kind, std::span<const int64_t> x_shape,
                              const Pool2d& p);

enum class Placement { device, host };

// The checks every entry point makes before computing: tensors (device or host memory), dtypes,
// shapes, and for device calls no overlap between input and outputs. Returns the geometry.
Pool2dGeometry validate_pool2d_call(std::string_view op, Pool2dKind kind, Placement placement,
                                    const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                                    const Pool2d& p);

// Output size of one axis (spec §4.0), before the positivity check.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                    bool ceil_mode);

}  // namespace solops::detail
