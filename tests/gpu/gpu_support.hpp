// Device buffers and the skip rule shared by the GPU tests.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace solops::testing {

inline bool has_cuda_device() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// Every GPU test starts with this: without a device it skips with a message in the test log.
#define SOLOPS_REQUIRE_GPU()                                                         \
  do {                                                                               \
    if (!::solops::testing::has_cuda_device()) {                                     \
      GTEST_SKIP() << "SKIPPED: no CUDA device on this machine; GPU tests need one"; \
    }                                                                                \
  } while (0)

// The GPU tests' fixtures: each test skips (SOLOPS_REQUIRE_GPU) where there is no device.
template <class Fixture>
class RequiresGpu : public Fixture {
 protected:
  void SetUp() override { SOLOPS_REQUIRE_GPU(); }
};
using GpuTest = RequiresGpu<::testing::Test>;
template <class Param>
using GpuTestWithParam = RequiresGpu<::testing::TestWithParam<Param>>;

inline void cuda_ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
  }
}

// `bytes` of device memory starting `offset` bytes into an allocation, so that tests can hand
// the kernels pointers of any alignment.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes, size_t offset = 0) : bytes_(bytes) {
    if (bytes_) cuda_ok(cudaMalloc(&allocation_, bytes_ + offset), "cudaMalloc");
    data_ = static_cast<char*>(allocation_) + offset;
  }
  ~DeviceBuffer() { cudaFree(allocation_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }
  // Empty buffers (an empty batch) have no allocation to copy to or from.
  void upload(const void* host) {
    if (bytes_) cuda_ok(cudaMemcpy(data_, host, bytes_, cudaMemcpyHostToDevice), "upload");
  }
  void download(void* host) const {
    if (bytes_) cuda_ok(cudaMemcpy(host, data_, bytes_, cudaMemcpyDeviceToHost), "download");
  }
  void poison() {
    if (bytes_) cuda_ok(cudaMemset(data_, 0xFF, bytes_), "poison");
  }

 private:
  void* allocation_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_;
};

}  // namespace solops::testing
