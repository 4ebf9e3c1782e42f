#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>

namespace solops::detail {

int multiprocessor_count(int device);
int64_t l2_cache_bytes(int device);

// Turns a launch failure into solops::Error naming the op.
void check_launch(std::string_view op);

}  // namespace solops::detail
