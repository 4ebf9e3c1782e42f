// The tensors of one convolution call, for the family's CPU tests.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "host_tensor.hpp"
#include "solops/conv.hpp"
#include "solops/reference.hpp"

namespace solops::testing::conv {

using Shape = std::vector<int64_t>;

// One reference call: x and the weight from their values, an optional bias, y of the output shape
// (from the shape rule), poisoned.
struct ConvCall {
  ConvOp op;
  Conv p;
  HostTensor x, weight;
  std::optional<HostTensor> bias;
  HostTensor y;

  ConvCall(ConvOp op_, const Shape& x_shape, const std::vector<double>& x_values, const Shape& weight_shape,
           const std::vector<double>& weight_values, std::optional<std::vector<double>> bias_values, Conv p_,
           DType dtype = DType::f32)
      : op(op_),
        p(p_),
        x(filled(x_shape, x_values, dtype)),
        weight(filled(weight_shape, weight_values, dtype)),
        bias(bias_values ? std::optional(filled({weight_shape[0]}, *bias_values, dtype)) : std::nullopt),
        y(output_shape(), dtype) {
    y.poison();
  }
  Shape output_shape() const {
    std::optional<std::span<const int64_t>> bias_shape;
    if (bias) bias_shape = bias->shape;
    return conv_output_shape(op, x.shape, weight.shape, bias_shape, p);
  }
  void run() {
    const std::optional<TensorRef> b = bias ? std::optional(bias->ref()) : std::nullopt;
    reference::conv(op, x.ref(), weight.ref(), b ? &*b : nullptr, y.ref(), p);
  }
};

}  // namespace solops::testing::conv
