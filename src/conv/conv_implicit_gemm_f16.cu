// The implicit-GEMM convolution for f16 (conv_implicit_gemm.cuh): one translation unit a dtype.
#include "conv/conv_implicit_gemm.cuh"

namespace solops::detail {

void launch_conv_implicit_gemm_f16(const ConvProblem& problem, const void* x, const void* weight, const void* bias,
                                   void* y, cudaStream_t stream) {
  conv_gemm::launch_for_shape<__half>(problem, x, weight, bias, y, stream);
}

}  // namespace solops::detail
