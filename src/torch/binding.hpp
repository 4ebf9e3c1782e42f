// What every family's PyTorch binding shares: the four targets an op is registered for, torch
// tensors as solops TensorRefs, outputs from PyTorch's allocator, and the registration of a family's
// table of ops. Built on PyTorch's stable C ABI (torch/csrc/stable), so one build loads into every
// PyTorch from the version it targets on (docs/architecture.md).
#pragma once

#include <cuda_runtime_api.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "solops/cost.hpp"
#include "solops/tensor.hpp"

namespace solops::torch_binding {

using torch::stable::Tensor;
using Ints = std::vector<int64_t>;

// Where a bound op runs, one registration each:
//   device     torch.ops.solops.<op> on CUDA tensors: the CUDA op on PyTorch's current stream
//              (also registered for CPU tensors, which the library's own checks then reject by name)
//   reference  torch.ops.solops_reference.<op> on CPU tensors: the float64 CPU reference
//   shape      torch.ops.solops_reference.<op> on meta tensors: outputs shaped by the C++ shape rule,
//              nothing run (the Python fakes of torch.ops.solops are tested against it)
//   cost       torch.ops.solops_cost.<op> on meta tensors: [flops, bytes] of the roofline model
enum class Target { device, reference, shape, cost };

// The solops view of a torch tensor: its data, dtype, sizes, strides and device, nothing copied.
// `op` and `name` name the tensor in the error for a dtype solops has no code for.
TensorRef view(const Tensor& t, std::string_view op, std::string_view name);
// view() of an optional tensor: nullopt where the caller passed None.
std::optional<TensorRef> view(const std::optional<Tensor>& t, std::string_view op, std::string_view name);
// The pointer a C++ API takes for an optional tensor.
inline const TensorRef* pointer(const std::optional<TensorRef>& t) { return t ? &*t : nullptr; }

// A tensor's sizes as the C++ shape rules and cost models take them.
std::span<const int64_t> sizes(const Tensor& t);
DType dtype(const Tensor& t, std::string_view op, std::string_view name);

// A cost model's answer as torch.ops.solops_cost returns it.
std::vector<double> cost_list(const Cost& cost);

// The part of a call that depends on where it runs: the device made current (the tensors' own, as
// PyTorch's ops do), the stream, and new tensors placed beside `anchor`.
template <Target kTarget>
class Call {
 public:
  explicit Call(const Tensor& anchor);
  // A new contiguous tensor of `shape` and `dtype` on the anchor's device, from PyTorch's allocator
  // (the caching allocator on CUDA; a CUDA graph's private pool while one is being captured).
  Tensor empty(std::span<const int64_t> shape, DType dtype) const;
  // The same in channels_last layout (torch.channels_last: a 4-D shape's dim 1 innermost).
  Tensor empty_channels_last(std::span<const int64_t> shape, DType dtype) const;
  // Runs device_op(stream) for the device target and reference_op() for the reference target; the
  // shape target runs nothing.
  void run(auto&& device_op, auto&& reference_op) const {
    if constexpr (kTarget == Target::device) device_op(stream_);
    if constexpr (kTarget == Target::reference) reference_op();
  }

 private:
  Tensor empty_strided(std::span<const int64_t> shape, std::span<const int64_t> strides, DType dtype) const;

  int32_t device_type_ = 0;
  int32_t device_index_ = 0;
  std::optional<torch::stable::accelerator::DeviceGuard> guard_;
  cudaStream_t stream_ = nullptr;
};

extern template class Call<Target::device>;
extern template class Call<Target::reference>;
extern template class Call<Target::shape>;

// One op of a family's table: its name, its schema's arguments and returns, and the boxed kernel
// of one target.
struct Op {
  const char* name;
  const char* arguments;  // "(Tensor x, int[2] kernel_size, ...)"
  const char* returns;    // "Tensor", "(Tensor, Tensor)", "()"
  void (*kernel)(StableIValue*, uint64_t, uint64_t);
};

// The schema of `op` in the solops and solops_reference namespaces, or in solops_cost (its
// arguments without alias annotations, returning float[]).
std::string schema(const Op& op, bool cost);

// Defines a family's ops in a namespace and registers one target's kernels; `m` is the library
// object of a STABLE_TORCH_LIBRARY_FRAGMENT or STABLE_TORCH_LIBRARY_IMPL block.
void define(auto& m, std::span<const Op> ops, bool cost) {
  for (const Op& op : ops) m.def(schema(op, cost).c_str());
}
void implement(auto& m, std::span<const Op> ops) {
  for (const Op& op : ops) m.impl(op.name, op.kernel);
}

}  // namespace solops::torch_binding

// Registers a family's ops: `table` is a variable template of the family's Op array over Target.
// Every namespace gets every op; each target's kernels go to its dispatch key.
#define SOLOPS_REGISTER_FAMILY(table)                                                                      \
  STABLE_TORCH_LIBRARY_FRAGMENT(solops, m) {                                                               \
    solops::torch_binding::define(m, table<solops::torch_binding::Target::device>, false);               \
  }                                                                                                        \
  STABLE_TORCH_LIBRARY_FRAGMENT(solops_reference, m) {                                                     \
    solops::torch_binding::define(m, table<solops::torch_binding::Target::reference>, false);            \
  }                                                                                                        \
  STABLE_TORCH_LIBRARY_FRAGMENT(solops_cost, m) {                                                          \
    solops::torch_binding::define(m, table<solops::torch_binding::Target::cost>, true);                  \
  }                                                                                                        \
  STABLE_TORCH_LIBRARY_IMPL(solops, CUDA, m) {                                                             \
    solops::torch_binding::implement(m, table<solops::torch_binding::Target::device>);                   \
  }                                                                                                        \
  STABLE_TORCH_LIBRARY_IMPL(solops, CPU, m) {                                                              \
    solops::torch_binding::implement(m, table<solops::torch_binding::Target::device>);                   \
  }                                                                                                        \
  STABLE_TORCH_LIBRARY_IMPL(solops_reference, CPU, m) {                                                    \
    solops::torch_binding::implement(m, table<solops::torch_binding::Target::reference>);                \
  }                                                                                                        \
  STABLE_TORCH_LIBRARY_IMPL(solops_reference, Meta, m) {                                                   \
    solops::torch_binding::implement(m, table<solops::torch_binding::Target::shape>);                    \
  }                                                                                                        \
  STABLE_TORCH_LIBRARY_IMPL(solops_cost, Meta, m) {                                                        \
    solops::torch_binding::implement(m, table<solops::torch_binding::Target::cost>);                     \
  }
