// cuDNN pooling baseline for the benchmark: a thin C ABI over legacy cudnnPoolingForward,
// loaded by python/solops/bench/cudnn.py through ctypes. Not part of the solops library.
//
// Only functions present in both cuDNN 9.14 (system library on the H200 machine) and 9.19
// (PyTorch's copy, already loaded when torch is imported first) are used.

#include <cudnn.h>

#include <cstdint>
#include <string>

namespace {

// Same numbering as solops_dtype in include/solops/solops.h, so callers share one table.
enum BaselineDtype : int32_t { kF32 = 0, kF16 = 1, kBf16 = 2 };

// 0 = max, 1 = average counting padding, 2 = average over real elements only.
enum BaselineMode : int32_t { kMax = 0, kAvgIncludePad = 1, kAvgExcludePad = 2 };

// One handle and one set of descriptors per thread: creating a cuDNN handle costs milliseconds
// and must not land between timed calls. They are never destroyed on purpose: destroying them
// from a thread-exit or static destructor races with the CUDA driver's own teardown at exit.
struct ThreadState {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr;
  cudnnTensorDescriptor_t y_desc = nullptr;
  cudnnPoolingDescriptor_t pool_desc = nullptr;
};

thread_local ThreadState tls_state;
thread_local std::string tls_last_error;

int32_t fail(const std::string& message) {
  tls_last_error = message;
  return 1;
}

int32_t fail(const char* where, cudnnStatus_t status) {
  return fail(std::string(where) + ": " + cudnnGetErrorString(status));
}

cudnnStatus_t init_thread_state(ThreadState& state) {
  if (state.handle != nullptr) return CUDNN_STATUS_SUCCESS;
  cudnnStatus_t status = cudnnCreate(&state.handle);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnCreateTensorDescriptor(&state.x_desc);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnCreateTensorDescriptor(&state.y_desc);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnCreatePoolingDescriptor(&state.pool_desc);
  if (status != CUDNN_STATUS_SUCCESS) state.handle = nullptr;  // retry on the next call
  return status;
}

bool to_cudnn_dtype(int32_t dtype, cudnnDataType_t* out) {
  switch (dtype) {
    case kF32: *out = CUDNN_DATA_FLOAT; return true;
    case kF16: *out = CUDNN_DATA_HALF; return true;
    case kBf16: *out = CUDNN_DATA_BFLOAT16; return true;
    default: return false;
  }
}

bool to_cudnn_mode(int32_t mode, cudnnPoolingMode_t* out) {
  switch (mode) {
    // The deterministic variant is the one whose tie-breaking is fixed from run to run.
    case kMax: *out = CUDNN_POOLING_MAX_DETERMINISTIC; return true;
    case kAvgIncludePad: *out = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING; return true;
    case kAvgExcludePad: *out = CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING; return true;
    default: return false;
  }
}

}  // namespace

extern "C" {

const char* solops_cudnn_last_error(void) { return tls_last_error.c_str(); }

// The cuDNN version actually loaded in this process (e.g. 91900), not the one compiled against.
int64_t solops_cudnn_version(void) { return static_cast<int64_t>(cudnnGetVersion()); }

// y[n, c, out_h, out_w] = pool(x[n, c, in_h, in_w]); both dense NCHW. The caller chooses the
// output size (e.g. PyTorch's ceil-mode size); whether cuDNN's result then equals PyTorch's is
// left to the caller's correctness check. Returns 0 on success, nonzero with a message otherwise.
int32_t solops_cudnn_pool2d_forward(int32_t mode, int32_t dtype, int32_t n, int32_t c,
                                    int32_t in_h, int32_t in_w, int32_t out_h, int32_t out_w,
                                    int32_t kernel_h, int32_t kernel_w, int32_t pad_h,
                                    int32_t pad_w, int32_t stride_h, int32_t stride_w,
                                    const void* x, void* y, void* stream) {
  cudnnDataType_t data_type;
  if (!to_cudnn_dtype(dtype, &data_type)) return fail("unsupported dtype " + std::to_string(dtype));
  cudnnPoolingMode_t pooling_mode;
  if (!to_cudnn_mode(mode, &pooling_mode)) return fail("unsupported mode " + std::to_string(mode));

  ThreadState& state = tls_state;
  cudnnStatus_t status = init_thread_state(state);
  if (status != CUDNN_STATUS_SUCCESS) return fail("cudnn init", status);

  status = cudnnSetStream(state.handle, static_cast<cudaStream_t>(stream));
  if (status != CUDNN_STATUS_SUCCESS) return fail("cudnnSetStream", status);
  status = cudnnSetTensor4dDescriptor(state.x_desc, CUDNN_TENSOR_NCHW, data_type, n, c, in_h, in_w);
  if (status != CUDNN_STATUS_SUCCESS) return fail("cudnnSetTensor4dDescriptor(x)", status);
  status =
      cudnnSetTensor4dDescriptor(state.y_desc, CUDNN_TENSOR_NCHW, data_type, n, c, out_h, out_w);
  if (status != CUDNN_STATUS_SUCCESS) return fail("cudnnSetTensor4dDescriptor(y)", status);
  // NaN propagation matches PyTorch, where any NaN in a window makes the max NaN.
  status = cudnnSetPooling2dDescriptor(state.pool_desc, pooling_mode, CUDNN_PROPAGATE_NAN,
                                       kernel_h, kernel_w, pad_h, pad_w, stride_h, stride_w);
  if (status != CUDNN_STATUS_SUCCESS) return fail("cudnnSetPooling2dDescriptor", status);

  // Scaling factors are float for every non-double data type.
  const float alpha = 1.0f;
  const float beta = 0.0f;
  status = cudnnPoolingForward(state.handle, state.pool_desc, &alpha, state.x_desc, x, &beta,
                               state.y_desc, y);
  if (status != CUDNN_STATUS_SUCCESS) return fail("cudnnPoolingForward", status);
  return 0;
}

}  // extern "C"
