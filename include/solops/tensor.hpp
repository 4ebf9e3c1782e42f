// Non-owning view of a tensor: the caller owns the memory, solops only reads the description.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace solops {

enum class DType : int32_t { f32 = 0, f16 = 1, bf16 = 2, fp8_e4m3 = 3, i32 = 4, i64 = 5 };

std::string_view dtype_name(DType dtype);
int64_t dtype_size(DType dtype);
bool is_floating(DType dtype);

// Where the data lives: kCpu, or the CUDA device ordinal (>= 0).
inline constexpr int32_t kCpu = -1;

inline constexpr int kMaxRank = 8;

struct TensorRef {
  void* data = nullptr;
  DType dtype = DType::f32;
  int32_t rank = 0;
  std::array<int64_t, kMaxRank> shape{};
  std::array<int64_t, kMaxRank> strides{};  // in elements
  int32_t device = kCpu;
  // Set where the caller guarantees that `data` is memory of CUDA device `device` (PyTorch's CUDA
  // tensors are): the ops then skip their query of the pointer's kind (cudaPointerGetAttributes, a
  // driver call per tensor per call). Left false, every CUDA op asks the driver.
  bool device_memory_known = false;

  std::span<const int64_t> sizes() const { return {shape.data(), static_cast<size_t>(rank)}; }
  // numel(), bytes() and is_contiguous() throw solops::Error where the count passes int64 (as do
  // make_tensor and every op given such a tensor).
  int64_t numel() const;
  bool is_contiguous() const;
  int64_t bytes() const;
};

// A contiguous (row-major) tensor view; throws solops::Error if the rank exceeds kMaxRank.
TensorRef make_tensor(void* data, DType dtype, std::span<const int64_t> shape,
                      int32_t device = kCpu);

}  // namespace solops
