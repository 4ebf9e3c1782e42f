#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>

namespace solops::detail {

// Threads one SM holds at full occupancy (sm_90).
constexpr int kThreadsPerSm = 2048;

int multiprocessor_count(int device);
int64_t l2_cache_bytes(int device);

// Turns a launch failure into solops::Error naming the op.
void check_launch(std::string_view op);

}  // namespace solops::detail
