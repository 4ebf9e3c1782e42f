#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>

namespace solops::detail {

// Threads one SM holds at full occupancy (sm_90).
constexpr int kThreadsPerSm = 2048;

// A device's attributes, asked of the driver once per process and device (launchers read them on
// every call; they cannot change while the process runs).
int multiprocessor_count(int device);
int64_t l2_cache_bytes(int device);
// cudaDevAttrMaxSharedMemoryPerBlockOptin: shared memory a block may have, static and dynamic, with
// the opt-in.
int64_t max_shared_bytes_optin(int device);

// A kernel's launch facts on the current device, asked of the runtime once per kernel, device and
// configuration and remembered, for the same reason. `op` names the caller in the error of a failed
// query. `kernel` is the kernel's function (a __global__ function's address).
// cudaOccupancyMaxActiveBlocksPerMultiprocessor: the blocks of `threads` threads and `shared_bytes`
// of dynamic shared memory one SM holds at once.
int resident_blocks(std::string_view op, const void* kernel, int threads, size_t shared_bytes);
// The kernel's static shared memory (cudaFuncGetAttributes' sharedSizeBytes).
size_t static_shared_bytes(std::string_view op, const void* kernel);
// Sets the kernel's dynamic shared-memory limit on the current device (cudaFuncSetAttribute of
// cudaFuncAttributeMaxDynamicSharedMemorySize: not stream work, so capturable), unless the last call
// for this kernel and device set it so already.
void set_dynamic_shared_bytes(std::string_view op, const void* kernel, size_t shared_bytes);

// Turns a launch failure into solops::Error naming the op.
void check_launch(std::string_view op);

}  // namespace solops::detail
