// Adaptive 2-D pooling (spec §4.4–4.5): the resolved geometry shared by the shape rule, the CPU
// references and the CUDA launcher, the bin rule, and the launchers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "pool/pool_tensor_checks.hpp"
#include "solops/cost.hpp"
#include "solops/pool.hpp"

namespace solops::detail {

struct AdaptiveGeometry {
  bool batched = true;  // false for unbatched [C, H, W] input
  int64_t batch = 1;
  int64_t channels = 1;
  int64_t planes = 1;
  // In-plane sizes are int32: resolve_adaptive_pool2d rejects planes of 2^31 or more elements.
  int in_h = 0, in_w = 0;
  int out_h = 0, out_w = 0;

  std::vector<int64_t> output_shape() const;
  int64_t outputs() const { return planes * out_h * out_w; }
};

// Bin o of an axis of `in` elements split into `out` bins: [floor(o*in/out), ceil((o+1)*in/out)).
// Adjacent bins overlap by one element where out does not divide o*in; out > in repeats elements.
struct AdaptiveBin {
  int start, end;
};
__host__ __device__ inline AdaptiveBin adaptive_bin(int o, int in, int out) {
  // 32-bit division where the products fit (every plane below 46341 × 46341): a 64-bit division
  // is a long subroutine on the GPU, and each bin needs two of them per axis.
  if (int64_t{out} * in + out <= INT32_MAX) {
    const auto u_in = static_cast<uint32_t>(in), u_out = static_cast<uint32_t>(out), u_o = static_cast<uint32_t>(o);
    return {static_cast<int>(u_o * u_in / u_out), static_cast<int>(((u_o + 1) * u_in + u_out - 1) / u_out)};
  }
  const int64_t start = int64_t{o} * in / out;
  const int64_t end = (int64_t{o + 1} * in + out - 1) / out;
  return {static_cast<int>(start), static_cast<int>(end)};
}

AdaptiveGeometry resolve_adaptive_pool2d(std::string_view op, std::span<const int64_t> x_shape,
                                         const AdaptivePool2d& p);

// The tensor checks of every entry point (pool_tensor_checks.hpp) around the shape rule.
AdaptiveGeometry validate_adaptive_pool2d_call(std::string_view op, Placement placement, const TensorRef& x,
                                               const TensorRef& y, const TensorRef* indices,
                                               const AdaptivePool2d& p);

Cost adaptive_pool2d_cost(const AdaptiveGeometry& g, DType dtype, int64_t index_bytes);

void launch_adaptive_max_pool2d(std::string_view op, const AdaptiveGeometry& g, const TensorRef& x,
                                const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_adaptive_avg_pool2d(std::string_view op, const AdaptiveGeometry& g, const TensorRef& x,
                                const TensorRef& y, cudaStream_t stream);

}  // namespace solops::detail
