// A batch norm's [C] tensor (weight, bias, a running statistic, a parameter's gradient) as its
// kernels read and write it: f32 or x's dtype (spec §6.3), or absent. Shared by the inference kernel
// (batch_norm_inference.cu) and the training kernels (batch_norm.cuh).
#pragma once

#include "core/dispatch.cuh"
#include "solops/tensor.hpp"

namespace solops::detail {

// data null where the call has no such tensor; f32 false: x's dtype T.
struct ChannelTensor {
  void* data = nullptr;
  bool f32 = true;
};

inline ChannelTensor channel_tensor(const TensorRef* t) {
  return t ? ChannelTensor{t->data, t->dtype == DType::f32} : ChannelTensor{};
}

// Element c as f32; `absent` where there is no tensor. A plain load, not __ldg: the training forward
// writes the running statistics it reads.
template <class T>
__device__ __forceinline__ float load_channel(const ChannelTensor& t, int64_t c, float absent) {
  if (!t.data) return absent;
  return t.f32 ? static_cast<const float*>(t.data)[c] : to_float(static_cast<const T*>(t.data)[c]);
}

template <class T>
__device__ __forceinline__ void store_channel(const ChannelTensor& t, int64_t c, float value) {
  if (t.f32) static_cast<float*>(t.data)[c] = value;
  else static_cast<T*>(t.data)[c] = from_float<T>(value);
}

}  // namespace solops::detail
