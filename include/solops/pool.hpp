// Pooling operators. Semantics follow torch.nn.functional (see docs/api.md).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <optional>
#include <span>
#include <vector>

#include "solops/cost.hpp"
#include "solops/tensor.hpp"

namespace solops {

// Window of a 1-D pool over [N, C, L] or unbatched [C, L] input.
struct Pool1d {
  int64_t kernel_size = 0;
  std::optional<int64_t> stride;  // nullopt = kernel_size, as PyTorch's stride=None
  int64_t padding = 0;
  int64_t dilation = 1;            // max-pool only; avg-pool requires 1
  bool ceil_mode = false;
  bool count_include_pad = true;   // avg-pool only (PyTorch's avg_pool1d has no divisor_override)
};

// Window of a 2-D pool over [N, C, H, W] or unbatched [C, H, W] input. Per-axis values are (H, W).
struct Pool2d {
  std::array<int64_t, 2> kernel_size{};
  std::optional<std::array<int64_t, 2>> stride;  // nullopt = kernel_size, as PyTorch's stride=None
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};  // max-pool only; avg-pool requires {1, 1}
  bool ceil_mode = false;
  bool count_include_pad = true;           // avg-pool only
  std::optional<int64_t> divisor_override;  // avg-pool only; must be non-zero
};

// Window of a 3-D pool over [N, C, D, H, W] or unbatched [C, D, H, W] input. Per-axis values are
// (D, H, W).
struct Pool3d {
  std::array<int64_t, 3> kernel_size{};
  std::optional<std::array<int64_t, 3>> stride;  // nullopt = kernel_size, as PyTorch's stride=None
  std::array<int64_t, 3> padding{0, 0, 0};
  std::array<int64_t, 3> dilation{1, 1, 1};  // max-pool only; avg-pool requires {1, 1, 1}
  bool ceil_mode = false;
  bool count_include_pad = true;           // avg-pool only
  std::optional<int64_t> divisor_override;  // avg-pool only; must be non-zero
};

// Output grid of an adaptive 2-D pool over [N, C, H, W] or unbatched [C, H, W] input: (H_out,
// W_out), each >= 1; nullopt keeps the input's size on that axis (PyTorch's None). Output bin o of
// an axis covers [floor(o * I / O), ceil((o + 1) * I / O)).
struct AdaptivePool2d {
  std::array<std::optional<int64_t>, 2> output_size;
};

// Output shapes; they validate the parameters against the input shape and throw solops::Error.
std::vector<int64_t> max_pool1d_output_shape(std::span<const int64_t> x_shape, const Pool1d& p);
std::vector<int64_t> avg_pool1d_output_shape(std::span<const int64_t> x_shape, const Pool1d& p);
std::vector<int64_t> max_pool2d_output_shape(std::span<const int64_t> x_shape, const Pool2d& p);
std::vector<int64_t> avg_pool2d_output_shape(std::span<const int64_t> x_shape, const Pool2d& p);
std::vector<int64_t> max_pool3d_output_shape(std::span<const int64_t> x_shape, const Pool3d& p);
std::vector<int64_t> avg_pool3d_output_shape(std::span<const int64_t> x_shape, const Pool3d& p);

// Roofline cost: FLOPs (one compare-select or add per tap) and the minimum bytes moved.
Cost max_pool1d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool1d& p);
Cost max_pool1d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype, const Pool1d& p);
Cost avg_pool1d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool1d& p);
Cost max_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p);
Cost max_pool2d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p);
Cost avg_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool2d& p);
Cost max_pool3d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool3d& p);
Cost max_pool3d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype, const Pool3d& p);
Cost avg_pool3d_cost(std::span<const int64_t> x_shape, DType dtype, const Pool3d& p);

// y = max over each window. x, y: contiguous CUDA tensors of one float dtype (f32, f16, bf16).
void max_pool1d(const TensorRef& x, const TensorRef& y, const Pool1d& p, cudaStream_t stream = nullptr);
void max_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p, cudaStream_t stream = nullptr);
void max_pool3d(const TensorRef& x, const TensorRef& y, const Pool3d& p, cudaStream_t stream = nullptr);

// As max_pool*d, and indices (int64, y's shape) = flat position of the max in its plane:
// l for 1-D, h * W + w for 2-D, (d * H + h) * W + w for 3-D.
void max_pool1d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                             const Pool1d& p, cudaStream_t stream = nullptr);
void max_pool2d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                             const Pool2d& p, cudaStream_t stream = nullptr);
void max_pool3d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                             const Pool3d& p, cudaStream_t stream = nullptr);

// y = mean of each window, with PyTorch's divisor rule (count_include_pad, divisor_override).
void avg_pool1d(const TensorRef& x, const TensorRef& y, const Pool1d& p, cudaStream_t stream = nullptr);
void avg_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p, cudaStream_t stream = nullptr);
void avg_pool3d(const TensorRef& x, const TensorRef& y, const Pool3d& p, cudaStream_t stream = nullptr);

// Adaptive pools: the mean, or the max (and its in-plane position h * W + w), of each bin.
std::vector<int64_t> adaptive_pool2d_output_shape(std::span<const int64_t> x_shape, const AdaptivePool2d& p);
Cost adaptive_avg_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const AdaptivePool2d& p);
Cost adaptive_max_pool2d_cost(std::span<const int64_t> x_shape, DType dtype, const AdaptivePool2d& p);
Cost adaptive_max_pool2d_with_indices_cost(std::span<const int64_t> x_shape, DType dtype,
                                           const AdaptivePool2d& p);
void adaptive_avg_pool2d(const TensorRef& x, const TensorRef& y, const AdaptivePool2d& p,
                         cudaStream_t stream = nullptr);
void adaptive_max_pool2d(const TensorRef& x, const TensorRef& y, const AdaptivePool2d& p,
                         cudaStream_t stream = nullptr);
void adaptive_max_pool2d_with_indices(const TensorRef& x, const TensorRef& y, const TensorRef& indices,
                                      const AdaptivePool2d& p, cudaStream_t stream = nullptr);

}  // namespace solops
