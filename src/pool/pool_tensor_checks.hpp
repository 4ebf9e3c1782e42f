// The input layout rule and the tensor checks every pooling entry point makes, for any kind of
// pooling geometry.
#pragma once

#include <span>
#include <string_view>

#include "core/check.hpp"

namespace solops::detail {

// The [N, C, *spatial] or unbatched [C, *spatial] input every pool takes (spec §4.0): the rank,
// a non-negative batch, every other dim non-empty. `layouts` names the accepted ranks in messages.
struct PoolLayout {
  bool batched;
  int64_t batch, channels;
};
PoolLayout resolve_layout(std::string_view op, std::span<const int64_t> x_shape, int64_t spatial,
                          std::string_view layouts);

// The tensor checks of every pooling call, around the geometry `resolve` computes from x's shape
// (any geometry with output_shape()): x on the placement's memory with a float dtype, then y of
// x's dtype and the output shape, int64 indices of the same shape, and no overlap between input and
// outputs. Returns the geometry.
template <class Resolve>
auto validate_pool_tensors(std::string_view op, Placement placement, const TensorRef& x,
                           const TensorRef& y, const TensorRef* indices, Resolve&& resolve) {
  check_tensor(placement, op, "input", x);
  check_float_dtype(op, "input", x);
  const auto g = resolve();
  check_tensor(placement, op, "output", y);
  check_dtype(op, "output", y, x.dtype);
  check_shape(op, "output", y, g.output_shape());
  if (indices) {
    check_tensor(placement, op, "indices", *indices);
    check_dtype(op, "indices", *indices, DType::i64);
    check_shape(op, "indices", *indices, g.output_shape());
  }
  // The references too: they write outputs while later windows still read the input.
  check_no_overlap(op, "input", x, "output", y);
  if (indices) {
    check_no_overlap(op, "input", x, "indices", *indices);
    check_no_overlap(op, "output", y, "indices", *indices);
  }
  return g;
}

}  // namespace solops::detail
