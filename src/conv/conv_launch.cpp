// Which kernel serves a convolution call, decided from its shape alone (docs/perf/conv.md):
//   - depthwise causal 1-D with kW <= 4 (Mamba's short convolutions): a copy-shaped kernel;
//   - f16/bf16 with at least 16 output channels a group and a reduction (C_in / groups * taps) of
//     at least 16: the implicit GEMM on tensor cores;
//   - everything else (f32, depthwise, small groups, C_in = 1): the direct kernel on CUDA cores.
#include "conv/conv.hpp"
#include "core/device.hpp"

namespace solops::detail {
namespace {

// Below an m16n8k16 MMA's M (channels) or K (reduction), most of a tensor-core tile would multiply
// zeros.
constexpr int kMmaMinimum = 16;

bool uses_tensor_cores(const ConvGeometry& g, DType dtype) {
  return (dtype == DType::f16 || dtype == DType::bf16) && g.out_per_group >= kMmaMinimum &&
         g.reduction() >= kMmaMinimum;
}

}  // namespace

void launch_conv(std::string_view op, const ConvGeometry& g, const TensorRef& x, const TensorRef& weight,
                 const TensorRef* bias, const TensorRef& y, cudaStream_t stream) {
  if (g.outputs() == 0) return;
  const void* bias_data = bias ? bias->data : nullptr;
  if (fits_causal_depthwise(g, x, y)) {
    launch_conv_causal_depthwise(g, x.dtype, x.data, weight.data, bias_data, y.data, stream);
  } else {
    const ConvProblem problem = conv_problem(g, x, weight, y);
    if (!uses_tensor_cores(g, x.dtype)) {
      launch_conv_direct(problem, x.dtype, x.data, weight.data, bias_data, y.data, stream);
    } else if (x.dtype == DType::f16) {
      launch_conv_implicit_gemm_f16(problem, x.data, weight.data, bias_data, y.data, stream);
    } else {
      launch_conv_implicit_gemm_bf16(problem, x.data, weight.data, bias_data, y.data, stream);
    }
  }
  check_launch(op);
}

}  // namespace solops::detail
