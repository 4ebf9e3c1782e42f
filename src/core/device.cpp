#include "core/device.hpp"

#include "core/check.hpp"

namespace solops::detail {

int multiprocessor_count(int device) {
  int count = 0;
  check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device),
             "multiprocessor_count", "cudaDeviceGetAttribute");
  return count;
}

int64_t l2_cache_bytes(int device) {
  int bytes = 0;
  check_cuda(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device), "l2_cache_bytes",
             "cudaDeviceGetAttribute");
  return bytes;
}

void check_launch(std::string_view op) { check_cuda(cudaGetLastError(), op, "kernel launch"); }

}  // namespace solops::detail
