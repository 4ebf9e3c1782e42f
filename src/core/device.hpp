#pragma once

#include <cuda_runtime_api.h>

#include <string_view>

namespace solops::detail {

int multiprocessor_count(int device);

// Turns a launch failure into solops::Error naming the op.
void check_launch(std::string_view op);

}  // namespace solops::detail
