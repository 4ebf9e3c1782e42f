// Launching a kernel in thread-block clusters, shared by the families whose kernels split work
// over a cluster's CTAs (the row norms, batch norm, the implicit-GEMM convolution).
#pragma once

#include <cuda_runtime_api.h>

namespace solops::detail {

// kernel<<<grid, block, shared, stream>>>(args...) in clusters of `cluster` blocks along x. A failed
// launch is left to check_launch, as the <<<>>> launches' are.
template <class... Params, class... Args>
void launch_clustered(void (*kernel)(Params...), dim3 grid, dim3 block, unsigned cluster, size_t shared,
                      cudaStream_t stream, const Args&... args) {
  if (cluster == 1) {
    kernel<<<grid, block, shared, stream>>>(args...);
    return;
  }
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  const cudaLaunchConfig_t config{grid, block, shared, stream, &attribute, 1};
  static_cast<void>(cudaLaunchKernelEx(&config, kernel, args...));
}

}  // namespace solops::detail
