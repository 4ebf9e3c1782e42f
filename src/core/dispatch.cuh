// The single place where runtime dtypes become compile-time element types.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/check.hpp"

namespace solops::detail {

// Calls f.template operator()<T>() with T = float, __half or __nv_bfloat16.
template <class F>
void dispatch_float(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f.template operator()<float>(); return;
    case DType::f16: f.template operator()<__half>(); return;
    case DType::bf16: f.template operator()<__nv_bfloat16>(); return;
    default: throw Error(Status::internal, concat("dispatch_float: unexpected dtype ", dtype_name(dtype)));
  }
}

template <class T>
__device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return __float2bfloat16_rn(v);
}

}  // namespace solops::detail
