// Host-side element access for the CPU references: every float dtype is widened to double.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "solops/tensor.hpp"

namespace solops::detail {

// float8_e4m3fn (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no infinity, S.1111.111 is
// NaN, the largest finite 448) as the quantizing norms write it: one round to nearest even from the
// exact value, saturating to +-448 (CUDA's __NV_SATFINITE), NaN to 0x7F. The host references
// round here rather than through CUDA's conversion, so the two are checked against each other.
inline uint8_t encode_e4m3(double v) {
  if (std::isnan(v)) return 0x7F;
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  const double a = std::fabs(v);
  if (a >= 448) return sign | 0x7E;
  // The spacing of representable values around a: 2^(exponent - 3), with subnormals below 2^-6
  // spaced as the lowest binade. a / step is exact, so nearbyint rounds the true value once.
  int exponent = 0;
  std::frexp(a, &exponent);
  const int binade = a < 0x1p-6 ? -6 : exponent - 1;
  const auto units = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - binade)));
  // units is in [0, 16]: 16 carries into the next binade, which the field arithmetic absorbs.
  if (binade == -6 && units < 8) return sign | static_cast<uint8_t>(units);
  return sign | static_cast<uint8_t>(((binade + 7) << 3) + units - 8);
}

inline double decode_e4m3(uint8_t code) {
  const double sign = code & 0x80 ? -1.0 : 1.0;
  const int exponent = (code >> 3) & 0xF, mantissa = code & 0x7;
  if ((code & 0x7F) == 0x7F) return std::nan("");
  if (exponent == 0) return sign * std::ldexp(mantissa, -9);
  return sign * std::ldexp(8 + mantissa, exponent - 10);
}

inline double load_value(const TensorRef& t, int64_t i) {
  switch (t.dtype) {
    case DType::f32: return static_cast<const float*>(t.data)[i];
    case DType::f16: return __half2float(static_cast<const __half*>(t.data)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(t.data)[i]);
    case DType::fp8_e4m3: return decode_e4m3(static_cast<const uint8_t*>(t.data)[i]);
    default: return 0.0;  // the references accept float dtypes only
  }
}

// Rounds to the tensor's dtype. fp8 rounds the double itself; f16/bf16 go through float: the
// double rounding this implies can differ from a single rounding by one unit in the last place,
// far inside the tolerance.
inline void store_value(const TensorRef& t, int64_t i, double value) {
  switch (t.dtype) {
    case DType::f32: static_cast<float*>(t.data)[i] = static_cast<float>(value); break;
    case DType::f16: static_cast<__half*>(t.data)[i] = __float2half_rn(static_cast<float>(value)); break;
    case DType::bf16:
      static_cast<__nv_bfloat16*>(t.data)[i] = __float2bfloat16_rn(static_cast<float>(value));
      break;
    case DType::fp8_e4m3: static_cast<uint8_t*>(t.data)[i] = encode_e4m3(value); break;
    default: break;
  }
}

}  // namespace solops::detail
