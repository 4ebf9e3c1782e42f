// Pooling operators. Semantics follow torch.nn.functional (see docs/api.md).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
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

// Chunked mean along the sequence axis of x [B, S, H, D] (spec §4.6). Uniform mode: output chunk t
// averages tokens [t * chunk_size, min((t + 1) * chunk_size, S)). Ragged mode (int32 offsets
// [NS + 1] and indices [NC, 2] on the device): output chunk j = (s, k) = indices[j] averages tokens
// [offsets[s] + k * chunk_size, min(that + chunk_size, offsets[s + 1])) of every batch row.
struct MeanPooling {
  int64_t chunk_size = 0;  // > 0 and a multiple of 32
  // Ragged mode only. True: before the launch, copy offsets and indices to the host, synchronize
  // the stream and check them with check_ragged_chunks (a host round trip; refused while the
  // stream is being captured into a CUDA graph). False: the kernel trusts them, yet never reads or
  // writes outside the tensors: an output chunk whose (s, k) names no chunk inside x (s out of
  // range, k < 0, the chunk past its sequence, offsets outside [0, S]) is written as NaN.
  bool check_ragged_metadata = true;
};

// Ragged mode's metadata sizes: offsets [sequences + 1], indices [chunks, 2].
struct RaggedSizes {
  int64_t sequences = 0;
  int64_t chunks = 0;
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


// Mean pooling: output [B, ceil(S / chunk_size), H, D] in uniform mode (ragged = nullopt), else
// [B, ragged->chunks, H, D]. The metadata check needs the offsets' and indices' contents;
// check_ragged_chunks does it on host copies, mean_pooling on the device tensors.
std::vector<int64_t> mean_pooling_output_shape(std::span<const int64_t> x_shape, const MeanPooling& p,
                                               std::optional<RaggedSizes> ragged = std::nullopt);
Cost mean_pooling_cost(std::span<const int64_t> x_shape, DType dtype, const MeanPooling& p,
                       std::optional<RaggedSizes> ragged = std::nullopt);
// Throws solops::Error unless offsets (NS + 1 values) partition [0, seq_len) (offsets[0] = 0,
// non-decreasing, offsets[NS] = seq_len) and indices (NC (s, k) pairs, flattened) list every
// chunk of every sequence exactly once, sequence-major and in order, as spec §4.6 enumerates them.
void check_ragged_chunks(std::span<const int32_t> offsets, std::span<const int32_t> indices, int64_t seq_len,
                         int64_t chunk_size);
// offsets and indices: both null (uniform mode) or both given (ragged mode).
void mean_pooling(const TensorRef& x, const TensorRef& y, const TensorRef* offsets, const TensorRef* indices,
                  const MeanPooling& p, cudaStream_t stream = nullptr);

// CPU references (solops/reference.hpp): the executable specification. Host tensors only; float64
// accumulation, one rounding to the output dtype; slow by design.
namespace reference {

void max_pool1d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool1d& p);
void avg_pool1d(const TensorRef& x, const TensorRef& y, const Pool1d& p);
void max_pool2d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool2d& p);
void avg_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p);
void max_pool3d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool3d& p);
void avg_pool3d(const TensorRef& x, const TensorRef& y, const Pool3d& p);
void adaptive_max_pool2d(const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                         const AdaptivePool2d& p);
void adaptive_avg_pool2d(const TensorRef& x, const TensorRef& y, const AdaptivePool2d& p);
// Ragged metadata is always checked (check_ragged_chunks); p.check_ragged_metadata is ignored.
void mean_pooling(const TensorRef& x, const TensorRef& y, const TensorRef* offsets, const TensorRef* indices,
                  const MeanPooling& p);

}  // namespace reference

}  // namespace solops
