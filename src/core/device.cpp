#include "core/device.hpp"

#include "core/check.hpp"

namespace solops::detail {
namespace {

// `query` names the caller in the error of a failed query.
int device_attribute(cudaDeviceAttr attribute, int device, std::string_view query) {
  int value = 0;
  check_cuda(cudaDeviceGetAttribute(&value, attribute, device), query, "cudaDeviceGetAttribute");
  return value;
}

}  // namespace

int multiprocessor_count(int device) {
  return device_attribute(cudaDevAttrMultiProcessorCount, device, "multiprocessor_count");
}

int64_t l2_cache_bytes(int device) { return device_attribute(cudaDevAttrL2CacheSize, device, "l2_cache_bytes"); }

void check_launch(std::string_view op) { check_cuda(cudaGetLastError(), op, "kernel launch"); }

}  // namespace solops::detail
