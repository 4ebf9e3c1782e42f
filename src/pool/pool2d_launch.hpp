// Launchers of the 2-D pooling kernels (pool2d.cu). Inputs are already validated.
#pragma once

#include <cuda_runtime_api.h>

#include "pool/pool2d_geometry.hpp"

namespace solops::detail {

void launch_max_pool2d(const Pool2dGeometry& g, const TensorRef& x, const TensorRef& y,
                       const TensorRef* indices, cudaStream_t stream);
void launch_avg_pool2d(const Pool2dGeometry& g, const TensorRef& x, const TensorRef& y,
                       cudaStream_t stream);

}  // namespace solops::detail
