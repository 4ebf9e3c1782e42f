// The C ABI of the convolution family: converts its C struct to the C++ API and exceptions to status codes.
#include <algorithm>
#include <optional>

#include "capi/capi.hpp"
#include "solops/c/conv.h"
#include "solops/conv.hpp"
#include "solops/reference.hpp"

using namespace solops::capi;

namespace {

solops::Conv to_params(const solops_conv_params* p, const char* function) {
  require_pointer(p, function, "params");
  solops::Conv conv;
  std::copy_n(p->stride, 3, conv.stride.begin());
  std::copy_n(p->padding, 3, conv.padding.begin());
  std::copy_n(p->dilation, 3, conv.dilation.begin());
  conv.padding_mode = static_cast<solops::ConvPadding>(p->padding_mode);
  conv.groups = p->groups;
  return conv;
}

// A bias's shape, or none where the caller passes NULL.
std::optional<std::span<const int64_t>> optional_shape(int32_t rank, const int64_t* shape, const char* function) {
  if (!shape) return std::nullopt;
  return to_shape(rank, shape, function, "bias_shape");
}

// The device call and the reference: the reference takes no stream.
template <class Op, class... Stream>
solops_status conv_call(const char* function, Op op, int32_t conv_op, const solops_tensor* x,
                        const solops_tensor* weight, const solops_tensor* bias, const solops_tensor* y,
                        const solops_conv_params* p, Stream... stream) {
  return guarded(function, [&] {
    // Named in argument order, so that the first bad argument is the one reported.
    const auto x_ref = to_tensor(x, function, "x");
    const auto weight_ref = to_tensor(weight, function, "weight");
    const auto bias_ref = optional_tensor(bias, function, "bias");
    const auto y_ref = to_tensor(y, function, "y");
    op(static_cast<solops::ConvOp>(conv_op), x_ref, weight_ref, bias_ref ? &*bias_ref : nullptr, y_ref,
       to_params(p, function), static_cast<cudaStream_t>(stream)...);
  });
}

}  // namespace

extern "C" {

solops_status solops_conv_output_shape(int32_t op, int32_t x_rank, const int64_t* x_shape, int32_t weight_rank,
                                       const int64_t* weight_shape, int32_t bias_rank, const int64_t* bias_shape,
                                       const solops_conv_params* p, int32_t* out_rank, int64_t* out_shape) {
  const char* const function = __func__;
  return guarded(function, [&] {
    write_shape(solops::conv_output_shape(static_cast<solops::ConvOp>(op), to_shape(x_rank, x_shape, function),
                                          to_shape(weight_rank, weight_shape, function, "weight_shape"),
                                          optional_shape(bias_rank, bias_shape, function), to_params(p, function)),
                out_rank, out_shape, function);
  });
}

solops_status solops_conv_cost(int32_t op, int32_t x_rank, const int64_t* x_shape, int32_t weight_rank,
                               const int64_t* weight_shape, int32_t bias_rank, const int64_t* bias_shape,
                               int32_t x_dtype, const solops_conv_params* p, solops_cost* cost) {
  const char* const function = __func__;
  return guarded(function, [&] {
    write_cost(solops::conv_cost(static_cast<solops::ConvOp>(op), to_shape(x_rank, x_shape, function),
                                 to_shape(weight_rank, weight_shape, function, "weight_shape"),
                                 optional_shape(bias_rank, bias_shape, function), static_cast<solops::DType>(x_dtype),
                                 to_params(p, function)),
               cost, function);
  });
}

solops_status solops_conv(int32_t op, const solops_tensor* x, const solops_tensor* weight, const solops_tensor* bias,
                          const solops_tensor* y, const solops_conv_params* p, void* stream) {
  return conv_call(__func__, solops::conv, op, x, weight, bias, y, p, stream);
}

solops_status solops_reference_conv(int32_t op, const solops_tensor* x, const solops_tensor* weight,
                                    const solops_tensor* bias, const solops_tensor* y, const solops_conv_params* p) {
  return conv_call(__func__, solops::reference::conv, op, x, weight, bias, y, p);
}

}  // extern "C"
