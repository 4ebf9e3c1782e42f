#include "torch/binding.hpp"

#include <torch/headeronly/core/ScalarType.h>

#include <algorithm>

#include "core/check.hpp"

namespace solops::torch_binding {

namespace {

using torch::headeronly::ScalarType;

// The torch dtypes solops has a code for; any other is rejected by name.
std::optional<DType> dtype_code(ScalarType type) {
  switch (type) {
    case ScalarType::Float: return DType::f32;
    case ScalarType::Half: return DType::f16;
    case ScalarType::BFloat16: return DType::bf16;
    case ScalarType::Float8_e4m3fn: return DType::fp8_e4m3;
    case ScalarType::Int: return DType::i32;
    case ScalarType::Long: return DType::i64;
    default: return std::nullopt;
  }
}

int32_t torch_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32: return aoti_torch_dtype_float32();
    case DType::f16: return aoti_torch_dtype_float16();
    case DType::bf16: return aoti_torch_dtype_bfloat16();
    case DType::fp8_e4m3: return aoti_torch_dtype_float8_e4m3fn();
    case DType::i32: return aoti_torch_dtype_int32();
    case DType::i64: return aoti_torch_dtype_int64();
  }
  throw Error(Status::internal, "solops: no torch dtype for dtype code " + std::to_string(static_cast<int>(dtype)));
}

// PyTorch's Python name of a dtype solops has no code for, as the error names it.
std::string_view torch_name(ScalarType type) {
  switch (type) {
    case ScalarType::Double: return "float64";
    case ScalarType::Bool: return "bool";
    case ScalarType::Byte: return "uint8";
    case ScalarType::Char: return "int8";
    case ScalarType::Short: return "int16";
    case ScalarType::ComplexHalf: return "complex32";
    case ScalarType::ComplexFloat: return "complex64";
    case ScalarType::ComplexDouble: return "complex128";
    case ScalarType::Float8_e5m2: return "float8_e5m2";
    default: return torch::headeronly::toString(type);
  }
}

void check_shim(AOTITorchError status, std::string_view what) {
  if (status != AOTI_TORCH_SUCCESS) throw Error(Status::internal, detail::concat("solops: PyTorch's ", what, " failed"));
}

}  // namespace

DType dtype(const Tensor& t, std::string_view op, std::string_view name) {
  const ScalarType type = t.scalar_type();
  const std::optional<DType> code = dtype_code(type);
  detail::require(code.has_value(), op, name, ": dtype ", torch_name(type), " is not supported by solops");
  return *code;
}

std::span<const int64_t> sizes(const Tensor& t) {
  const auto shape = t.sizes();
  return {shape.data(), shape.size()};
}

TensorRef view(const Tensor& t, std::string_view op, std::string_view name) {
  TensorRef ref;
  const int64_t rank = t.dim();
  detail::require(rank <= kMaxRank, op, name, ": rank ", rank, " exceeds ", kMaxRank);
  ref.rank = static_cast<int32_t>(rank);
  ref.dtype = dtype(t, op, name);
  ref.data = t.data_ptr();
  const auto shape = t.sizes();
  const auto strides = t.strides();
  std::copy(shape.begin(), shape.end(), ref.shape.begin());
  std::copy(strides.begin(), strides.end(), ref.strides.begin());
  // PyTorch's CUDA tensors hold memory of their device: the ops need not ask the driver.
  ref.device = t.is_cuda() ? t.get_device_index() : kCpu;
  ref.device_memory_known = ref.device != kCpu;
  return ref;
}

std::optional<TensorRef> view(const std::optional<Tensor>& t, std::string_view op, std::string_view name) {
  return t ? std::optional(view(*t, op, name)) : std::nullopt;
}

std::vector<double> cost_list(const Cost& cost) { return {cost.flops, cost.bytes}; }

template <Target kTarget>
Call<kTarget>::Call(const Tensor& anchor) {
  check_shim(aoti_torch_get_device_type(anchor.get(), &device_type_), "device query");
  check_shim(aoti_torch_get_device_index(anchor.get(), &device_index_), "device query");
  if (kTarget == Target::device && device_type_ == aoti_torch_device_type_cuda()) {
    guard_.emplace(device_index_);
    void* stream = nullptr;
    check_shim(aoti_torch_get_current_cuda_stream(device_index_, &stream), "current stream query");
    stream_ = static_cast<cudaStream_t>(stream);
  }
}

template <Target kTarget>
Tensor Call<kTarget>::empty(std::span<const int64_t> shape, DType dtype) const {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  return empty_strided(shape, strides, dtype);
}

template <Target kTarget>
Tensor Call<kTarget>::empty_channels_last(std::span<const int64_t> shape, DType dtype) const {
  if (shape.size() != 4) throw Error(Status::internal, "solops: a channels_last tensor is 4-D");
  // Strides as PyTorch gives them: dims in the order C, W, H, N from the innermost.
  std::vector<int64_t> strides(4);
  int64_t stride = 1;
  for (size_t d : {1, 3, 2, 0}) {
    strides[d] = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  return empty_strided(shape, strides, dtype);
}

template <Target kTarget>
Tensor Call<kTarget>::empty_strided(std::span<const int64_t> shape, std::span<const int64_t> strides,
                                    DType dtype) const {
  AtenTensorHandle handle = nullptr;
  check_shim(aoti_torch_empty_strided(static_cast<int64_t>(shape.size()), shape.data(), strides.data(),
                                      torch_dtype(dtype), device_type_, device_index_, &handle),
             "allocation");
  return Tensor(handle);
}

template class Call<Target::device>;
template class Call<Target::reference>;
template class Call<Target::shape>;

std::string schema(const Op& op, bool cost) {
  std::string arguments = op.arguments;
  if (!cost) return std::string(op.name) + arguments + " -> " + op.returns;
  // The cost model reads its tensors' shapes only: no alias annotations such as Tensor(a!).
  for (size_t open = arguments.find("Tensor("); open != std::string::npos; open = arguments.find("Tensor(", open)) {
    open += 6;
    arguments.erase(open, arguments.find(')', open) - open + 1);
  }
  return std::string(op.name) + arguments + " -> float[]";
}

}  // namespace solops::torch_binding
