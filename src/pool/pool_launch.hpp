// Launchers of the pooling kernels. Inputs are already validated; `op` names the caller's op in
// launch errors. launch_max_pool / launch_avg_pool (pool2d.cu) take 2-D geometries, the 1-D and
// 3-D launchers (pool1d.cu, pool3d.cu) 1-D and 3-D ones. The global launchers (global_pool.cu)
// reduce each of `planes` contiguous planes of `plane_size` elements to one output; max positions
// are flat positions in the plane.
#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

#include "pool/pool_geometry.hpp"

namespace solops::detail {

void launch_max_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_avg_pool(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                     const TensorRef& y, cudaStream_t stream);
void launch_max_pool1d(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                       const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_avg_pool1d(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                       const TensorRef& y, cudaStream_t stream);
void launch_max_pool3d(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                       const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_avg_pool3d(std::string_view op, const PoolGeometry& g, const TensorRef& x,
                       const TensorRef& y, cudaStream_t stream);

void launch_global_max_pool(std::string_view op, int64_t planes, int plane_size, const TensorRef& x,
                            const TensorRef& y, const TensorRef* indices, cudaStream_t stream);
void launch_global_avg_pool(std::string_view op, int64_t planes, int plane_size, int64_t divisor,
                            const TensorRef& x, const TensorRef& y, cudaStream_t stream);

}  // namespace solops::detail
