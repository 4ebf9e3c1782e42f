// Launchers of the sliding-window pooling kernels. Inputs are already validated; `op` names the
// caller's op in launch errors. launch_max_pool / launch_avg_pool (pool2d.cu) take 1-D and 2-D
// geometries; the 3-D launchers (pool3d.cu) take 3-D ones.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "pool/pool_geometry.hpp"

namespace solops::detail {

void launch_max_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_avg_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, cudaStream_t stream);
void launch_max_pool3d(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                       const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_avg_pool3d(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                       const TensorRef& y, cudaStream_t stream);

}  // namespace solops::detail
