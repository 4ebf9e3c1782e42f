// Validation helpers shared by every op: each failed rule throws solops::Error with a message
// that names the op, the argument and the rule.
#pragma once

#include <cuda_runtime_api.h>

#include <span>
#include <sstream>
#include <string>
#include <string_view>

#include "solops/error.hpp"
#include "solops/tensor.hpp"

namespace solops::detail {

template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

// A shape as messages write it, "[2, 3]", formatted only when a message is built: the rules pass
// shapes to require() on every call, and a rule that holds must cost no string.
struct ShapeText {
  std::span<const int64_t> shape;
};
std::ostream& operator<<(std::ostream& out, ShapeText text);
inline ShapeText shape_text(std::span<const int64_t> shape) { return {shape}; }

template <class... Parts>
void require(bool rule_holds, std::string_view op, const Parts&... message) {
  if (!rule_holds) throw Error(Status::invalid_argument, concat(op, ": ", message...));
}

template <class... Parts>
[[noreturn]] void unsupported(std::string_view op, const Parts&... message) {
  throw Error(Status::unsupported, concat(op, ": ", message...));
}

void check_cuda(cudaError_t status, std::string_view op, std::string_view what);

// Arithmetic on sizes the caller gives: each throws solops::Error naming the op and `what` (the
// argument, or the quantity) where the result would pass int64. Check before applying a smaller
// limit (2^31 elements a plane or a row): a wrapped-around result could pass it.
int64_t checked_mul(std::string_view op, std::string_view what, int64_t a, int64_t b);
int64_t checked_add(std::string_view op, std::string_view what, int64_t a, int64_t b);
// The product of a shape's sizes, checked the same way. Its non-zero sizes must multiply within
// int64 too, so that every partial product of the sizes (strides, planes, rows; an empty tensor's
// too) fits, and the code that follows may multiply them unchecked.
int64_t checked_product(std::string_view op, std::string_view what, std::span<const int64_t> shape);

// Where a call's tensors live: the device for the ops, the host for their CPU references.
enum class Placement { device, host };

// The memory layouts a tensor may have: dense row-major only, or also channels_last (a 4-D tensor
// whose dim 1, the channels, is innermost: torch.channels_last).
enum class Layouts { contiguous, contiguous_or_channels_last };

// Whether a 4-D tensor's strides are channels_last's, as PyTorch's
// is_contiguous(memory_format=torch.channels_last) reads them (size-1 dims may carry any stride).
bool is_channels_last(const TensorRef& t);
// channels_last and not also contiguous: where both hold (C = 1, H = W = 1, ...) the two layouts are
// the same memory, and the contiguous reading of it is the one to take.
bool is_strictly_channels_last(const TensorRef& t);

// A tensor the kernel reads or writes: non-null data (unless empty) in device memory of the
// current device, in one of `layouts`. The memory's kind is asked of the driver unless the caller
// vouches for it (TensorRef::device_memory_known).
void check_device_tensor(std::string_view op, std::string_view name, const TensorRef& t,
                         Layouts layouts = Layouts::contiguous);
void check_float_dtype(std::string_view op, std::string_view name, const TensorRef& t);
void check_dtype(std::string_view op, std::string_view name, const TensorRef& t, DType expected);
void check_shape(std::string_view op, std::string_view name, const TensorRef& t,
                 std::span<const int64_t> expected);
// Whether the two tensors' byte ranges share a byte (empty tensors share none).
bool overlaps(const TensorRef& a, const TensorRef& b);
// Rejects any overlap of the two tensors' byte ranges: solops ops are not in-place.
void check_no_overlap(std::string_view op, std::string_view a_name, const TensorRef& a,
                      std::string_view b_name, const TensorRef& b);
// The same, for host tensors given to a reference.
void check_host_tensor(std::string_view op, std::string_view name, const TensorRef& t,
                       Layouts layouts = Layouts::contiguous);
// check_device_tensor or check_host_tensor, as the placement says.
void check_tensor(Placement placement, std::string_view op, std::string_view name, const TensorRef& t,
                  Layouts layouts = Layouts::contiguous);

// A tensor of a call, with the name its messages use; null where the call leaves it out.
struct NamedTensor {
  std::string_view name;
  const TensorRef* tensor;
};

// No output shares a byte with any other tensor of the call (absent ones are null; an output
// listed among `tensors` is skipped against itself, by name).
void check_outputs_apart(std::string_view op, std::span<const NamedTensor> outputs,
                         std::span<const NamedTensor> tensors);

// A caller's f32 scratch: when given, a tensor of at least `needed` elements apart from every other
// tensor of the call; null only when none are needed (or on the host, where the references need
// none). `sizing` names the public function that tells the caller `needed`.
void check_workspace(std::string_view op, Placement placement, int64_t needed, const TensorRef* workspace,
                     std::span<const NamedTensor> others, std::string_view sizing);

}  // namespace solops::detail
