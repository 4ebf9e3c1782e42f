// Host-side element access for the CPU references: every float dtype is widened to double.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "solops/tensor.hpp"

namespace solops::detail {

inline double load_value(const TensorRef& t, int64_t i) {
  switch (t.dtype) {
    case DType::f32: return static_cast<const float*>(t.data)[i];
    case DType::f16: return __half2float(static_cast<const __half*>(t.data)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(t.data)[i]);
    default: return 0.0;  // the references accept float dtypes only
  }
}

// Rounds to the tensor's dtype. f16/bf16 go through float: the double rounding this implies
// can differ from a single rounding by one unit in the last place, far inside the tolerance.
inline void store_value(const TensorRef& t, int64_t i, double value) {
  switch (t.dtype) {
    case DType::f32: static_cast<float*>(t.data)[i] = static_cast<float>(value); break;
    case DType::f16: static_cast<__half*>(t.data)[i] = __float2half_rn(static_cast<float>(value)); break;
    case DType::bf16:
      static_cast<__nv_bfloat16*>(t.data)[i] = __float2bfloat16_rn(static_cast<float>(value));
      break;
    default: break;
  }
}

}  // namespace solops::detail
