// Launchers of the 2-D pooling kernels (pool2d.cu), which run the 1-D pools too (one-row planes).
// Inputs are already validated; `op` names the caller's op in launch errors.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "pool/pool_geometry.hpp"

namespace solops::detail {

void launch_max_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_avg_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, cudaStream_t stream);

}  // namespace solops::detail
