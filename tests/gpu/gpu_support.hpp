// Device buffers, device views, CUDA graph capture of a launch and the skip rule shared by the GPU tests.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "solops/tensor.hpp"

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

// A view of device memory on cuda:0, where the tests run.
inline TensorRef device_ref(const void* data, DType dtype, const std::vector<int64_t>& shape) {
  return make_tensor(const_cast<void*>(data), dtype, shape, 0);
}

// Calls launch(stream) on the default stream, or captures it into a CUDA graph on a new stream
// and replays that once (`graph`); then waits for the device.
template <class Launch>
void launch_maybe_in_graph(Launch launch, bool graph) {
  if (graph) {
    cudaStream_t stream;
    cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
    cudaGraph_t captured;
    cudaGraphExec_t exec;
    cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
    launch(stream);
    cuda_ok(cudaStreamEndCapture(stream, &captured), "end capture");
    cuda_ok(cudaGraphInstantiate(&exec, captured, 0), "instantiate");
    cuda_ok(cudaGraphLaunch(exec, stream), "launch");
    cuda_ok(cudaStreamSynchronize(stream), "replay");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(captured);
    cudaStreamDestroy(stream);
  } else {
    launch(nullptr);
  }
  cuda_ok(cudaDeviceSynchronize(), "kernel");
}

}  // namespace solops::testing
