#include "core/check.hpp"

#include <cstdint>

namespace solops::detail {

std::ostream& operator<<(std::ostream& out, ShapeText text) {
  out << '[';
  for (size_t i = 0; i < text.shape.size(); ++i) out << (i ? ", " : "") << text.shape[i];
  return out << ']';
}

void check_cuda(cudaError_t status, std::string_view op, std::string_view what) {
  if (status != cudaSuccess) {
    throw Error(Status::cuda_error,
                concat(op, ": ", what, " failed: ", cudaGetErrorName(status), " (",
                       cudaGetErrorString(status), ")"));
  }
}

int64_t checked_mul(std::string_view op, std::string_view what, int64_t a, int64_t b) {
  int64_t product = 0;
  require(!__builtin_mul_overflow(a, b, &product), op, what, ": ", a, " * ", b, " passes the int64 range");
  return product;
}

int64_t checked_add(std::string_view op, std::string_view what, int64_t a, int64_t b) {
  int64_t sum = 0;
  require(!__builtin_add_overflow(a, b, &sum), op, what, ": ", a, " + ", b, " passes the int64 range");
  return sum;
}

int64_t checked_product(std::string_view op, std::string_view what, std::span<const int64_t> shape) {
  int64_t nonzero = 1;
  bool empty = false, overflow = false;
  for (int64_t size : shape) {
    if (size == 0) empty = true;
    else overflow = overflow || __builtin_mul_overflow(nonzero, size, &nonzero);
  }
  require(!overflow, op, what, " ", shape_text(shape), ": its sizes multiply past the int64 range",
          empty ? " (zeros aside)" : "");
  return empty ? 0 : nonzero;
}

namespace {

void check_layout(std::string_view op, std::string_view name, const TensorRef& t, Layouts layouts) {
  require(t.rank >= 0 && t.rank <= kMaxRank, op, name, ": rank ", t.rank, " is outside [0, ",
          kMaxRank, "]");
  for (int i = 0; i < t.rank; ++i) {
    require(t.shape[i] >= 0, op, name, ": size ", t.shape[i], " of dim ", i, " is negative");
  }
  require(dtype_size(t.dtype) > 0, op, name, ": unknown dtype code ", static_cast<int>(t.dtype));
  const int64_t elements = checked_product(op, name, t.sizes());
  // checked_mul's check, spelled out: its message names the tensor, which would cost a string a call.
  int64_t bytes = 0;
  require(!__builtin_mul_overflow(elements, dtype_size(t.dtype), &bytes), op, name, "'s size in bytes: ", elements,
          " * ", dtype_size(t.dtype), " passes the int64 range");
  require(elements == 0 || t.data != nullptr, op, name, ": data pointer is null");
  // overlaps() compares byte ranges, which must not wrap around.
  require(reinterpret_cast<uintptr_t>(t.data) <= UINTPTR_MAX - static_cast<uintptr_t>(bytes), op, name, "'s ", bytes,
          " bytes from its data pointer pass the end of the address space");
  if (layouts == Layouts::contiguous_or_channels_last) {
    if (!t.is_contiguous() && !is_channels_last(t)) {
      unsupported(op, name, " must be contiguous (row-major, e.g. NCHW) or channels_last; other strided",
                  " tensors are not supported, make them contiguous first");
    }
  } else if (!t.is_contiguous()) {
    unsupported(op, name, " must be contiguous (row-major, e.g. NCHW); strided and channels-last",
                " tensors are not supported, make them contiguous first");
  }
  require(reinterpret_cast<uintptr_t>(t.data) % dtype_size(t.dtype) == 0, op, name,
          ": data pointer is not aligned to its element size");
}

}  // namespace

bool is_channels_last(const TensorRef& t) {
  if (t.rank != 4) return false;
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (t.shape[d] == 1) continue;
    if (t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

bool is_strictly_channels_last(const TensorRef& t) { return !t.is_contiguous() && is_channels_last(t); }

void check_device_tensor(std::string_view op, std::string_view name, const TensorRef& t, Layouts layouts) {
  check_layout(op, name, t, layouts);
  require(t.device >= 0, op, name, " must be a CUDA tensor, got a CPU tensor");
  int current = -1;
  check_cuda(cudaGetDevice(&current), op, "cudaGetDevice");
  require(t.device == current, op, name, " is on cuda:", t.device, " but the current device is cuda:",
          current);
  if (t.numel() == 0 || t.device_memory_known) return;
  cudaPointerAttributes attributes{};
  check_cuda(cudaPointerGetAttributes(&attributes, t.data), op, "cudaPointerGetAttributes");
  require(attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged, op,
          name, ": data pointer is not device memory (the tensor claims cuda:", t.device, ")");
}

void check_host_tensor(std::string_view op, std::string_view name, const TensorRef& t, Layouts layouts) {
  check_layout(op, name, t, layouts);
  require(t.device == kCpu, op, name, " must be a CPU tensor for the reference");
}

void check_float_dtype(std::string_view op, std::string_view name, const TensorRef& t) {
  require(t.dtype == DType::f32 || t.dtype == DType::f16 || t.dtype == DType::bf16, op, name,
          ": dtype ", dtype_name(t.dtype), " is not supported (f32, f16 or bf16)");
}

void check_dtype(std::string_view op, std::string_view name, const TensorRef& t, DType expected) {
  require(t.dtype == expected, op, name, ": dtype ", dtype_name(t.dtype), " must be ",
          dtype_name(expected));
}

void check_shape(std::string_view op, std::string_view name, const TensorRef& t,
                 std::span<const int64_t> expected) {
  require(std::equal(t.sizes().begin(), t.sizes().end(), expected.begin(), expected.end()), op,
          name, ": shape ", shape_text(t.sizes()), " must be ", shape_text(expected));
}

bool overlaps(const TensorRef& a, const TensorRef& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  const auto a_begin = reinterpret_cast<uintptr_t>(a.data);
  const auto b_begin = reinterpret_cast<uintptr_t>(b.data);
  return a_begin < b_begin + b.bytes() && b_begin < a_begin + a.bytes();
}

void check_no_overlap(std::string_view op, std::string_view a_name, const TensorRef& a,
                      std::string_view b_name, const TensorRef& b) {
  require(!overlaps(a, b), op, a_name, " and ", b_name, " overlap in memory; this op is not in-place");
}

void check_tensor(Placement placement, std::string_view op, std::string_view name, const TensorRef& t,
                  Layouts layouts) {
  if (placement == Placement::device) {
    check_device_tensor(op, name, t, layouts);
  } else {
    check_host_tensor(op, name, t, layouts);
  }
}

void check_outputs_apart(std::string_view op, std::span<const NamedTensor> outputs,
                         std::span<const NamedTensor> tensors) {
  for (const auto& [out_name, out] : outputs) {
    if (!out) continue;
    for (const auto& [name, tensor] : tensors) {
      if (tensor && name != out_name) check_no_overlap(op, name, *tensor, out_name, *out);
    }
  }
}

void check_workspace(std::string_view op, Placement placement, int64_t needed, const TensorRef* workspace,
                     std::span<const NamedTensor> others, std::string_view sizing) {
  if (!workspace) {
    require(needed == 0 || placement == Placement::host, op, "workspace is null but this call needs ", needed,
            " f32 elements (", sizing, ")");
    return;
  }
  check_tensor(placement, op, "workspace", *workspace);
  check_dtype(op, "workspace", *workspace, DType::f32);
  require(workspace->numel() >= needed, op, "workspace has ", workspace->numel(), " elements, fewer than the ", needed,
          " this call needs (", sizing, ")");
  for (const NamedTensor& other : others) {
    if (other.tensor) check_no_overlap(op, other.name, *other.tensor, "workspace", *workspace);
  }
}

}  // namespace solops::detail
