// The implicit-GEMM convolution for bf16 (conv_implicit_gemm.cuh): one translation unit a dtype.
#include "conv/conv_implicit_gemm.cuh"

namespace solops::detail {

void launch_conv_implicit_gemm_bf16(const ConvProblem& problem, const void* x, const void* weight, const void* bias,
                                    void* y, cudaStream_t stream) {
  conv_gemm::launch_for_shape<__nv_bfloat16>(problem, x, weight, bias, y, stream);
}

}  // namespace solops::detail
