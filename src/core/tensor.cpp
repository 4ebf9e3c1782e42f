#include "solops/tensor.hpp"

#include "core/check.hpp"

namespace solops {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
  }
  return "unknown";
}

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::fp8_e4m3: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
  }
  return 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16 ||
         dtype == DType::fp8_e4m3;
}

int64_t TensorRef::numel() const { return detail::checked_product("TensorRef::numel", "shape", sizes()); }

int64_t TensorRef::bytes() const {
  return detail::checked_mul("TensorRef::bytes", "elements * element size", numel(), dtype_size(dtype));
}

bool TensorRef::is_contiguous() const {
  if (numel() == 0) return true;  // as in PyTorch, whatever the strides
  int64_t expected = 1;
  for (int i = rank - 1; i >= 0; --i) {
    // Size-1 dims may carry any stride, as in PyTorch.
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

TensorRef make_tensor(void* data, DType dtype, std::span<const int64_t> shape, int32_t device) {
  detail::require(shape.size() <= static_cast<size_t>(kMaxRank), "make_tensor", "rank ",
                  shape.size(), " exceeds the maximum rank ", kMaxRank);
  detail::checked_product("make_tensor", "shape", shape);  // so that no stride below overflows
  TensorRef t;
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  t.device = device;
  int64_t stride = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    t.shape[i] = shape[i];
    t.strides[i] = stride;
    stride *= shape[i];
  }
  return t;
}

}  // namespace solops
