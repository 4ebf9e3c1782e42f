/* solops C ABI of the convolution family (spec §3.0-3.9); the shared types are in solops/c/common.h.
 * One set of functions serves the nine operators: `op` names one (solops_conv_op). */
#ifndef SOLOPS_C_CONV_H
#define SOLOPS_C_CONV_H

#include "solops/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The operators (solops::ConvOp): F.conv1d / conv2d / conv3d; conv2d restricted to a 1x1 kernel,
 * to groups == C_in, to 1 < groups < C_in, to a dilation other than 1; relu(conv2d + bias) with the
 * bias required; conv1d padded dilation * (kW - 1) on the left only (no padding parameter). */
typedef enum {
  SOLOPS_CONV1D = 0,
  SOLOPS_CONV2D = 1,
  SOLOPS_CONV3D = 2,
  SOLOPS_POINTWISE_CONV2D = 3,
  SOLOPS_DEPTHWISE_CONV2D = 4,
  SOLOPS_GROUPED_CONV2D = 5,
  SOLOPS_DILATED_CONV2D = 6,
  SOLOPS_CONV2D_BIAS_RELU = 7,
  SOLOPS_CONV1D_CAUSAL = 8
} solops_conv_op;

/* padding_mode: the explicit sizes of `padding` (both sides of each axis), PyTorch's 'valid' or 'same'. */
typedef enum {
  SOLOPS_CONV_PADDING_EXPLICIT = 0,
  SOLOPS_CONV_PADDING_VALID = 1,
  SOLOPS_CONV_PADDING_SAME = 2
} solops_conv_padding;

/* Per-axis values in the input's order: (D, H, W), (H, W) or (L); entries past the op's spatial
 * rank are ignored. */
typedef struct {
  int64_t stride[3];
  int64_t padding[3];
  int64_t dilation[3];
  int32_t padding_mode; /* solops_conv_padding */
  int64_t groups;
} solops_conv_params;

/* bias_shape = NULL: no bias (bias_rank is then ignored). Writes the output rank and shape (shape
 * has room for SOLOPS_MAX_RANK). */
solops_status solops_conv_output_shape(int32_t op, int32_t x_rank, const int64_t* x_shape, int32_t weight_rank,
                                       const int64_t* weight_shape, int32_t bias_rank, const int64_t* bias_shape,
                                       const solops_conv_params* p, int32_t* out_rank, int64_t* out_shape);
solops_status solops_conv_cost(int32_t op, int32_t x_rank, const int64_t* x_shape, int32_t weight_rank,
                               const int64_t* weight_shape, int32_t bias_rank, const int64_t* bias_shape,
                               int32_t x_dtype, const solops_conv_params* p, solops_cost* cost);
/* y = op(x, weight, bias) on the given CUDA stream; bias may be NULL. */
solops_status solops_conv(int32_t op, const solops_tensor* x, const solops_tensor* weight, const solops_tensor* bias,
                          const solops_tensor* y, const solops_conv_params* p, void* stream);
/* The float64 CPU reference of the same call, on host tensors. */
solops_status solops_reference_conv(int32_t op, const solops_tensor* x, const solops_tensor* weight,
                                    const solops_tensor* bias, const solops_tensor* y, const solops_conv_params* p);

#ifdef __cplusplus
}
#endif

#endif /* SOLOPS_C_CONV_H */
