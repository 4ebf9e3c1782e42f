// A batch norm's [C] tensor (weight, bias, a running statistic, a parameter's gradient) as its
// kernels read and write it: f32 or x's dtype (spec §6.3), or absent. Shared by the inference kernel
// (batch_norm_inference.cu) and the training kernels (batch_norm.cuh).
#pragma once

#include <cstdint>
#include <cstring>

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

// Element c's bits as stored: an f32's, or a 16-bit T's in the low half (0 where there is no tensor).
// A plain load, not __ldg: the training forward writes the running statistics it reads. Loaded apart
// from channel_value, so that a kernel can issue x's loads between the two: converted right after its
// load, an f16 or bf16 element made the thread wait a DRAM round trip for it before x's loads (SASS).
template <class T>
__device__ __forceinline__ uint32_t load_channel_bits(const ChannelTensor& t, int64_t c) {
  if (!t.data) return 0;
  if constexpr (sizeof(T) == 2) {
    if (!t.f32) return static_cast<const unsigned short*>(t.data)[c];
  }
  return static_cast<const uint32_t*>(t.data)[c];
}

// The value of load_channel_bits' `bits` as f32; `absent` where there is no tensor. Selects, not
// branches: ptxas did not move x's loads above a branch here, so one put the conversion (and the wait
// for its load) before the rest of x's loads (SASS of backward_apply).
template <class T>
__device__ __forceinline__ float channel_value(const ChannelTensor& t, uint32_t bits, float absent) {
  float value = __uint_as_float(bits);
  if constexpr (sizeof(T) == 2) {
    const auto low = static_cast<unsigned short>(bits);
    T narrow;
    memcpy(&narrow, &low, sizeof narrow);
    value = t.f32 ? value : to_float(narrow);
  }
  return t.data ? value : absent;
}

// Element c as f32, loaded (plainly, as load_channel_bits) and converted in one step; `absent` where
// there is no tensor.
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
