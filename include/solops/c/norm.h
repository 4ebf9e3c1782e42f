/* solops C ABI of the normalization family (spec §2); the shared types are in solops/c/common.h. */
#ifndef SOLOPS_C_NORM_H
#define SOLOPS_C_NORM_H

#include "solops/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Row norms over the trailing normalized_rank dims of x (RMSNorm, LayerNorm, GemmaRMSNorm).
 * has_eps = 0 takes the op's default: the f32 machine epsilon for rms_norm (PyTorch's eps=None on
 * CUDA), 1e-5 for layer_norm, 1e-6 for gemma_rms_norm. */
typedef struct {
  int32_t normalized_rank;
  int64_t normalized_shape[SOLOPS_MAX_RANK];
  int32_t has_eps;
  double eps;
} solops_norm_params;

/* Fused add-norms, over the last dim of x. has_eps = 0: 1e-6 (RMSNorm), 1e-5 (LayerNorm). */
typedef struct {
  int32_t has_eps;
  double eps;
} solops_fused_add_norm_params;

/* AdaLayerNorm, over the last dim of x. has_eps = 0: 1e-5. */
typedef struct {
  int32_t has_eps;
  double eps;
} solops_ada_layer_norm_params;

/* The row-norm backward ops and the statistics' shape: the trailing dims of x that are normalized
 * (eps is folded into the saved rstd). */
typedef struct {
  int32_t normalized_rank;
  int64_t normalized_shape[SOLOPS_MAX_RANK];
} solops_norm_backward_params;

/* L1NormFwd / L2NormFwd: torch.linalg.vector_norm(x, ord, dim, keepdim). ord 1 or 2; dim_count = 0
 * reduces every dim (dim=None), else dim[0, dim_count) (negative ones wrap; no duplicates). */
typedef struct {
  int32_t ord;
  int32_t dim_count;
  int64_t dim[SOLOPS_MAX_RANK];
  int32_t keepdim;
} solops_vector_norm_params;

/* WeightNormFwd: torch._weight_norm(v, g, dim). dim in [0, rank) or -1, which is PyTorch's "one norm
 * of the whole tensor" (spec 6.7), not the last axis. */
typedef struct {
  int64_t dim;
} solops_weight_norm_params;

/* SpectralNormPowerIterFwd: normalized_shape must be (I,), x's last dim (validation only); n_iter >= 0;
 * eps >= 0 and not NaN. No defaults here: PyTorch's are n_iter 1, eps 1e-12. */
typedef struct {
  int32_t normalized_rank;
  int64_t normalized_shape[SOLOPS_MAX_RANK];
  int64_t n_iter;
  double eps;
} solops_spectral_norm_power_iter_params;

/* BatchNormInferenceFwd: has_eps = 0 takes F.batch_norm's default, 1e-5. */
typedef struct {
  int32_t has_eps;
  double eps;
} solops_batch_norm_inference_params;

/* BatchNormFwd in training mode: has_momentum = 0 and has_eps = 0 take F.batch_norm's defaults, 0.1
 * and 1e-5. */
typedef struct {
  int32_t has_momentum;
  double momentum;
  int32_t has_eps;
  double eps;
} solops_batch_norm_training_params;

/* Row norms. weight and bias may be NULL (scale 1, shift 0); gemma_rms_norm's weight is required.
 * Outputs may not overlap inputs, except in the fused add-norms' in-place form: output = x and
 * residual_out = residual (the same data pointers). The output shape is x's. */
solops_status solops_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_params* p,
                                           int32_t* out_rank, int64_t* out_shape);
solops_status solops_layer_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_params* p,
                                             int32_t* out_rank, int64_t* out_shape);
solops_status solops_gemma_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape);
solops_status solops_fused_add_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                     const solops_fused_add_norm_params* p, int32_t* out_rank,
                                                     int64_t* out_shape);
solops_status solops_fused_add_layer_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                       const solops_fused_add_norm_params* p, int32_t* out_rank,
                                                       int64_t* out_shape);

solops_status solops_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                              const solops_norm_params* p, void* stream);
solops_status solops_layer_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* bias,
                                const solops_tensor* y, const solops_norm_params* p, void* stream);
solops_status solops_gemma_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                    const solops_norm_params* p, void* stream);
solops_status solops_fused_add_rms_norm(const solops_tensor* x, const solops_tensor* residual,
                                        const solops_tensor* weight, const solops_tensor* output,
                                        const solops_tensor* residual_out, const solops_fused_add_norm_params* p,
                                        void* stream);
solops_status solops_fused_add_layer_norm(const solops_tensor* x, const solops_tensor* residual,
                                          const solops_tensor* weight, const solops_tensor* bias,
                                          const solops_tensor* output, const solops_tensor* residual_out,
                                          const solops_fused_add_norm_params* p, void* stream);

solops_status solops_reference_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                        const solops_norm_params* p);
solops_status solops_reference_layer_norm(const solops_tensor* x, const solops_tensor* weight,
                                          const solops_tensor* bias, const solops_tensor* y,
                                          const solops_norm_params* p);
solops_status solops_reference_gemma_rms_norm(const solops_tensor* x, const solops_tensor* weight,
                                              const solops_tensor* y, const solops_norm_params* p);
solops_status solops_reference_fused_add_rms_norm(const solops_tensor* x, const solops_tensor* residual,
                                                  const solops_tensor* weight, const solops_tensor* output,
                                                  const solops_tensor* residual_out,
                                                  const solops_fused_add_norm_params* p);
solops_status solops_reference_fused_add_layer_norm(const solops_tensor* x, const solops_tensor* residual,
                                                    const solops_tensor* weight, const solops_tensor* bias,
                                                    const solops_tensor* output, const solops_tensor* residual_out,
                                                    const solops_fused_add_norm_params* p);

solops_status solops_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                   const solops_norm_params* p, solops_cost* cost);
solops_status solops_layer_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_norm_params* p, solops_cost* cost);
solops_status solops_gemma_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_norm_params* p, solops_cost* cost);
solops_status solops_fused_add_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                             const solops_fused_add_norm_params* p, solops_cost* cost);
solops_status solops_fused_add_layer_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                               const solops_fused_add_norm_params* p, solops_cost* cost);

/* AdaLayerNorm: y = scale * layer_norm(x) + shift over the last dim; scale, shift and y have x's
 * shape and dtype (all required); y may not overlap an input. The output shape is x's. */
solops_status solops_ada_layer_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_ada_layer_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape);
solops_status solops_ada_layer_norm(const solops_tensor* x, const solops_tensor* scale, const solops_tensor* shift,
                                    const solops_tensor* y, const solops_ada_layer_norm_params* p, void* stream);
solops_status solops_reference_ada_layer_norm(const solops_tensor* x, const solops_tensor* scale,
                                              const solops_tensor* shift, const solops_tensor* y,
                                              const solops_ada_layer_norm_params* p);
solops_status solops_ada_layer_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_ada_layer_norm_params* p, solops_cost* cost);

/* Quantizing row norms (RMSNormQuant, LayerNormQuant) over the trailing normalized_rank dims of x.
 * has_eps = 0: 1e-6 (rms_norm_quant), 1e-5 (layer_norm_quant). weight and bias may be NULL. q is
 * SOLOPS_FP8_E4M3 of x's shape (the output shape), scale SOLOPS_F32 of x's leading dims; no output
 * may overlap another tensor of the call. */
solops_status solops_rms_norm_quant_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape);
solops_status solops_layer_norm_quant_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                   const solops_norm_params* p, int32_t* out_rank,
                                                   int64_t* out_shape);
solops_status solops_rms_norm_quant(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* q,
                                    const solops_tensor* scale, const solops_norm_params* p, void* stream);
solops_status solops_layer_norm_quant(const solops_tensor* x, const solops_tensor* weight,
                                      const solops_tensor* bias, const solops_tensor* q, const solops_tensor* scale,
                                      const solops_norm_params* p, void* stream);
solops_status solops_reference_rms_norm_quant(const solops_tensor* x, const solops_tensor* weight,
                                              const solops_tensor* q, const solops_tensor* scale,
                                              const solops_norm_params* p);
solops_status solops_reference_layer_norm_quant(const solops_tensor* x, const solops_tensor* weight,
                                                const solops_tensor* bias, const solops_tensor* q,
                                                const solops_tensor* scale, const solops_norm_params* p);
solops_status solops_rms_norm_quant_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_norm_params* p, solops_cost* cost);
solops_status solops_layer_norm_quant_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                           const solops_norm_params* p, solops_cost* cost);

/* QK-norm: q_out = RMSNorm(q) * q_weight, k_out = RMSNorm(k) * k_weight over the same trailing
 * normalized_rank dims (has_eps = 0: 1e-6). k has q's dtype and may differ in its leading dims; the
 * weights may be NULL; no output overlaps another output or an input. The output shape function
 * applies to either of q and k (each output has its input's shape). */
solops_status solops_qk_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_params* p,
                                          int32_t* out_rank, int64_t* out_shape);
solops_status solops_qk_norm(const solops_tensor* q, const solops_tensor* k, const solops_tensor* q_weight,
                             const solops_tensor* k_weight, const solops_tensor* q_out, const solops_tensor* k_out,
                             const solops_norm_params* p, void* stream);
solops_status solops_reference_qk_norm(const solops_tensor* q, const solops_tensor* k, const solops_tensor* q_weight,
                                       const solops_tensor* k_weight, const solops_tensor* q_out,
                                       const solops_tensor* k_out, const solops_norm_params* p);
solops_status solops_qk_norm_cost(int32_t q_rank, const int64_t* q_shape, int32_t k_rank, const int64_t* k_shape,
                                  int32_t dtype, const solops_norm_params* p, solops_cost* cost);

/* GroupRMSNorm (spec 2.19): x of rank >= 2 viewed as [..., G, D], normalized_shape (D,) (has_eps =
 * 0: 1e-6); each length-D vector is RMS-normalized and scaled by weight[g, :], weight [G, D] of x's
 * dtype or NULL (scale 1). y has x's shape (the output shape); rstd is f32 of x.shape[:-1]
 * (solops_norm_stats_shape). No output may overlap another tensor of the call. */
solops_status solops_group_rms_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                 const solops_norm_params* p, int32_t* out_rank,
                                                 int64_t* out_shape);
solops_status solops_group_rms_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                    const solops_tensor* rstd, const solops_norm_params* p, void* stream);
solops_status solops_reference_group_rms_norm(const solops_tensor* x, const solops_tensor* weight,
                                              const solops_tensor* y, const solops_tensor* rstd,
                                              const solops_norm_params* p);
solops_status solops_group_rms_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                         const solops_norm_params* p, solops_cost* cost);

/* Training forward and backward of RMSNorm and LayerNorm. mean and rstd are f32, one per row, of
 * shape x.shape[:-normalized_rank] (solops_norm_stats_shape); the forward writes them, the
 * backward reads them. The backward's weight may be NULL (scale 1); grad_weight and grad_bias may
 * be NULL (not computed). Its workspace is an f32 CUDA tensor of at least
 * solops_rms_norm_backward_workspace_elements / solops_layer_norm_backward_workspace_elements
 * elements, NULL where that is 0 or neither gradient is asked for. No output, nor the workspace,
 * may overlap another tensor of the call. */
solops_status solops_norm_stats_shape(int32_t x_rank, const int64_t* x_shape, const solops_norm_backward_params* p,
                                      int32_t* out_rank, int64_t* out_shape);
solops_status solops_rms_norm_with_stats(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* y,
                                         const solops_tensor* rstd, const solops_norm_params* p, void* stream);
solops_status solops_layer_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                           const solops_tensor* bias, const solops_tensor* y,
                                           const solops_tensor* mean, const solops_tensor* rstd,
                                           const solops_norm_params* p, void* stream);
solops_status solops_rms_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                       const solops_tensor* weight, const solops_tensor* rstd,
                                       const solops_tensor* grad_x, const solops_tensor* grad_weight,
                                       const solops_tensor* workspace, const solops_norm_backward_params* p,
                                       void* stream);
solops_status solops_layer_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                         const solops_tensor* weight, const solops_tensor* mean,
                                         const solops_tensor* rstd, const solops_tensor* grad_x,
                                         const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                         const solops_tensor* workspace, const solops_norm_backward_params* p,
                                         void* stream);
solops_status solops_rms_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                         const solops_norm_backward_params* p, int64_t* elements);
solops_status solops_layer_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                           const solops_norm_backward_params* p, int64_t* elements);
solops_status solops_reference_rms_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                                   const solops_tensor* y, const solops_tensor* rstd,
                                                   const solops_norm_params* p);
solops_status solops_reference_layer_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                                     const solops_tensor* bias, const solops_tensor* y,
                                                     const solops_tensor* mean, const solops_tensor* rstd,
                                                     const solops_norm_params* p);
solops_status solops_reference_rms_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                 const solops_tensor* weight, const solops_tensor* rstd,
                                                 const solops_tensor* grad_x, const solops_tensor* grad_weight,
                                                 const solops_norm_backward_params* p);
solops_status solops_reference_layer_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                   const solops_tensor* weight, const solops_tensor* mean,
                                                   const solops_tensor* rstd, const solops_tensor* grad_x,
                                                   const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                                   const solops_norm_backward_params* p);
solops_status solops_rms_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                            const solops_norm_backward_params* p, solops_cost* cost);
solops_status solops_layer_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_norm_backward_params* p, solops_cost* cost);

/* Vector norms (spec 2.22, 2.23): y of x's dtype and the output shape (0-d for a full reduction:
 * out_rank 0). workspace: SOLOPS_F32 with at least solops_vector_norm_workspace_elements elements,
 * or NULL when that is 0; nothing is allocated. Deterministic. y and workspace overlap nothing. */
solops_status solops_vector_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                              const solops_vector_norm_params* p, int32_t* out_rank,
                                              int64_t* out_shape);
solops_status solops_vector_norm_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                    const solops_vector_norm_params* p, int64_t* elements);
solops_status solops_vector_norm(const solops_tensor* x, const solops_tensor* y, const solops_tensor* workspace,
                                 const solops_vector_norm_params* p, void* stream);
solops_status solops_reference_vector_norm(const solops_tensor* x, const solops_tensor* y,
                                           const solops_vector_norm_params* p);
solops_status solops_vector_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                      const solops_vector_norm_params* p, solops_cost* cost);

/* WeightNorm (spec 2.20): y = v * (g / ||v||) with f32 norms; g of v's dtype with n = v.shape[dim]
 * (1 for dim -1) elements ([n] or PyTorch's [1, .., n, .., 1]); y of v's shape and dtype; norm
 * SOLOPS_F32 [n]; workspace as for the vector norm (solops_weight_norm_workspace_elements, NULL when
 * 0). Deterministic; outputs and workspace overlap nothing. */
solops_status solops_weight_norm_workspace_elements(int32_t v_rank, const int64_t* v_shape,
                                                    const solops_weight_norm_params* p, int64_t* elements);
solops_status solops_weight_norm(const solops_tensor* v, const solops_tensor* g, const solops_tensor* y,
                                 const solops_tensor* norm, const solops_tensor* workspace,
                                 const solops_weight_norm_params* p, void* stream);
solops_status solops_reference_weight_norm(const solops_tensor* v, const solops_tensor* g, const solops_tensor* y,
                                           const solops_tensor* norm, const solops_weight_norm_params* p);
solops_status solops_weight_norm_cost(int32_t v_rank, const int64_t* v_shape, int32_t v_dtype,
                                      const solops_weight_norm_params* p, solops_cost* cost);

/* SpectralNormPowerIterFwd (spec 2.21): n_iter power-iteration steps on W = x [O, I] (SOLOPS_F32,
 * SOLOPS_F16 or SOLOPS_BF16), v = normalize(W^T u) then u = normalize(W v), then sigma = u^T (W v), all
 * in f32. u SOLOPS_F32 [O], v SOLOPS_F32 [I] (only read); sigma SOLOPS_F32 0-d (rank 0), u_out [O],
 * v_out [I] SOLOPS_F32; workspace SOLOPS_F32 with at least
 * solops_spectral_norm_power_iter_workspace_elements elements, or NULL when that is 0. Deterministic;
 * outputs and workspace overlap nothing. */
solops_status solops_spectral_norm_power_iter_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                                 const solops_spectral_norm_power_iter_params* p,
                                                                 int64_t* elements);
solops_status solops_spectral_norm_power_iter(const solops_tensor* x, const solops_tensor* u, const solops_tensor* v,
                                              const solops_tensor* sigma, const solops_tensor* u_out,
                                              const solops_tensor* v_out, const solops_tensor* workspace,
                                              const solops_spectral_norm_power_iter_params* p, void* stream);
solops_status solops_reference_spectral_norm_power_iter(const solops_tensor* x, const solops_tensor* u,
                                                        const solops_tensor* v, const solops_tensor* sigma,
                                                        const solops_tensor* u_out, const solops_tensor* v_out,
                                                        const solops_spectral_norm_power_iter_params* p);
solops_status solops_spectral_norm_power_iter_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                                   const solops_spectral_norm_power_iter_params* p, solops_cost* cost);

/* BatchNormInferenceFwd (spec 2.7, 6.3): F.batch_norm(training=False) in the spec's argument order,
 * y = (x - running_mean) / sqrt(running_var + eps) * weight + bias per channel (dim 1 of x [B, C,
 * *spatial], rank >= 2; SOLOPS_F32, SOLOPS_F16 or SOLOPS_BF16), in f32, rounded once. weight, bias,
 * running_mean and running_var are [C] of SOLOPS_F32 or x's dtype; weight and bias may be NULL (scale 1,
 * shift 0). x is contiguous or, 4-D, channels_last (torch.channels_last strides); y has x's shape (the
 * output shape), dtype and memory format and overlaps no input. eps finite and >= 0. */
solops_status solops_batch_norm_inference_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                       const solops_batch_norm_inference_params* p, int32_t* out_rank,
                                                       int64_t* out_shape);
solops_status solops_batch_norm_inference(const solops_tensor* x, const solops_tensor* weight,
                                          const solops_tensor* bias, const solops_tensor* running_mean,
                                          const solops_tensor* running_var, const solops_tensor* y,
                                          const solops_batch_norm_inference_params* p, void* stream);
solops_status solops_reference_batch_norm_inference(const solops_tensor* x, const solops_tensor* weight,
                                                    const solops_tensor* bias, const solops_tensor* running_mean,
                                                    const solops_tensor* running_var, const solops_tensor* y,
                                                    const solops_batch_norm_inference_params* p);
solops_status solops_batch_norm_inference_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                               const solops_batch_norm_inference_params* p, solops_cost* cost);

/* GroupNormFwd / GroupNormBwd (spec 2.9, 2.10): F.group_norm over x [B, C, *spatial] (rank >= 2,
 * contiguous; SOLOPS_F32, SOLOPS_F16 or SOLOPS_BF16), num_groups > 0 dividing C; eps finite and >= 0
 * (PyTorch's default 1e-5; the backward reads none). weight and bias are [C] of x's dtype and may be
 * NULL (scale 1, shift 0); y has x's shape (the output shape) and dtype; mean and rstd are SOLOPS_F32 of
 * the stats shape [B, G] (with_stats; the reference's may be NULL). The backward: grad_out, grad_x of
 * x's shape and dtype, grad_weight and grad_bias [C] of x's dtype (NULL: not computed), workspace
 * SOLOPS_F32 of backward_workspace_elements (NULL where that is 0). No output may overlap another
 * tensor of the call. */
typedef struct {
  int64_t num_groups;
  double eps;
} solops_group_norm_params;

/* InstanceNormFwd / InstanceNormBwd (spec 2.11, 2.12, 6.4): F.instance_norm (PyTorch's defaults:
 * use_input_stats 1, momentum 0.1, eps 1e-5). running_mean and running_var are SOLOPS_F32 [C], both
 * or neither (required with use_input_stats = 0), updated in place with use_input_stats; the workspace
 * (SOLOPS_F32 of workspace_elements) holds each instance's statistics for that update. mean and rstd
 * are SOLOPS_F32 [B, C]: the statistics each instance was normalized with. The backward's
 * use_input_stats says which gradient: of statistics taken from x, or of fixed ones. */
typedef struct {
  int32_t use_input_stats;
  double momentum;
  double eps;
} solops_instance_norm_params;

solops_status solops_group_norm_output_shape(int32_t x_rank, const int64_t* x_shape, const solops_group_norm_params* p,
                                             int32_t* out_rank, int64_t* out_shape);
solops_status solops_group_norm_stats_shape(int32_t x_rank, const int64_t* x_shape, const solops_group_norm_params* p,
                                            int32_t* out_rank, int64_t* out_shape);
solops_status solops_group_norm(const solops_tensor* x, const solops_tensor* weight, const solops_tensor* bias,
                                const solops_tensor* y, const solops_group_norm_params* p, void* stream);
solops_status solops_group_norm_with_stats(const solops_tensor* x, const solops_tensor* weight,
                                           const solops_tensor* bias, const solops_tensor* y,
                                           const solops_tensor* mean, const solops_tensor* rstd,
                                           const solops_group_norm_params* p, void* stream);
solops_status solops_reference_group_norm(const solops_tensor* x, const solops_tensor* weight,
                                          const solops_tensor* bias, const solops_tensor* y, const solops_tensor* mean,
                                          const solops_tensor* rstd, const solops_group_norm_params* p);
solops_status solops_group_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                     const solops_group_norm_params* p, int32_t affine, solops_cost* cost);
solops_status solops_group_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                         const solops_tensor* weight, const solops_tensor* mean,
                                         const solops_tensor* rstd, const solops_tensor* grad_x,
                                         const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                         const solops_tensor* workspace, const solops_group_norm_params* p,
                                         void* stream);
solops_status solops_reference_group_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                   const solops_tensor* weight, const solops_tensor* mean,
                                                   const solops_tensor* rstd, const solops_tensor* grad_x,
                                                   const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                                   const solops_group_norm_params* p);
solops_status solops_group_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                            const solops_group_norm_params* p,
                                                            int32_t parameter_gradients, int64_t* elements);
solops_status solops_group_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_group_norm_params* p, int32_t weight, solops_cost* cost);

solops_status solops_instance_norm_output_shape(int32_t x_rank, const int64_t* x_shape,
                                                const solops_instance_norm_params* p, int32_t* out_rank,
                                                int64_t* out_shape);
solops_status solops_instance_norm_stats_shape(int32_t x_rank, const int64_t* x_shape,
                                               const solops_instance_norm_params* p, int32_t* out_rank,
                                               int64_t* out_shape);
solops_status solops_instance_norm_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                      const solops_instance_norm_params* p, int32_t running_stats,
                                                      int64_t* elements);
solops_status solops_instance_norm(const solops_tensor* x, const solops_tensor* running_mean,
                                   const solops_tensor* running_var, const solops_tensor* weight,
                                   const solops_tensor* bias, const solops_tensor* y, const solops_tensor* workspace,
                                   const solops_instance_norm_params* p, void* stream);
solops_status solops_instance_norm_with_stats(const solops_tensor* x, const solops_tensor* running_mean,
                                              const solops_tensor* running_var, const solops_tensor* weight,
                                              const solops_tensor* bias, const solops_tensor* y,
                                              const solops_tensor* mean, const solops_tensor* rstd,
                                              const solops_tensor* workspace, const solops_instance_norm_params* p,
                                              void* stream);
solops_status solops_reference_instance_norm(const solops_tensor* x, const solops_tensor* running_mean,
                                             const solops_tensor* running_var, const solops_tensor* weight,
                                             const solops_tensor* bias, const solops_tensor* y,
                                             const solops_tensor* mean, const solops_tensor* rstd,
                                             const solops_instance_norm_params* p);
solops_status solops_instance_norm_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                        const solops_instance_norm_params* p, int32_t affine, int32_t running_stats,
                                        solops_cost* cost);
solops_status solops_instance_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                            const solops_tensor* weight, const solops_tensor* mean,
                                            const solops_tensor* rstd, const solops_tensor* grad_x,
                                            const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                            const solops_tensor* workspace, const solops_instance_norm_params* p,
                                            void* stream);
solops_status solops_reference_instance_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                      const solops_tensor* weight, const solops_tensor* mean,
                                                      const solops_tensor* rstd, const solops_tensor* grad_x,
                                                      const solops_tensor* grad_weight,
                                                      const solops_tensor* grad_bias,
                                                      const solops_instance_norm_params* p);
solops_status solops_instance_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                               const solops_instance_norm_params* p,
                                                               int32_t parameter_gradients, int64_t* elements);
solops_status solops_instance_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                                 const solops_instance_norm_params* p, int32_t weight,
                                                 solops_cost* cost);
/* BatchNormFwd in training mode (spec 2.6, 6.3), the spec's argument order (F.batch_norm's): the
 * batch's mean and biased variance of each channel (dim 1 of x [B, C, *spatial], rank >= 2; SOLOPS_F32,
 * SOLOPS_F16 or SOLOPS_BF16), y = (x - mean) / sqrt(var + eps) * weight + bias in f32, rounded once;
 * save_mean and save_invstd (SOLOPS_F32 [C]) for the backward. running_mean and running_var (both or
 * NULL), weight and bias (NULL: 1 and 0) are [C] of SOLOPS_F32 or x's dtype; the running statistics
 * are updated in place with momentum and the unbiased variance, after every check has passed. x is
 * contiguous or, 4-D, channels_last; y has x's shape, dtype and memory format. B * prod(spatial) > 1 (or
 * x empty) and below 2^31; eps finite and >= 0; momentum finite. workspace: SOLOPS_F32 of at least
 * solops_batch_norm_training_workspace_elements elements (channels_last != 0 for a channels_last x,
 * whose channels the kernels walk differently), NULL where that is 0. Deterministic. No tensor overlaps
 * another. */
solops_status solops_batch_norm_training_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                            int32_t channels_last,
                                                            const solops_batch_norm_training_params* p,
                                                            int64_t* elements);
solops_status solops_batch_norm_training(const solops_tensor* x, const solops_tensor* running_mean,
                                         const solops_tensor* running_var, const solops_tensor* weight,
                                         const solops_tensor* bias, const solops_tensor* y,
                                         const solops_tensor* save_mean, const solops_tensor* save_invstd,
                                         const solops_tensor* workspace, const solops_batch_norm_training_params* p,
                                         void* stream);
solops_status solops_reference_batch_norm_training(const solops_tensor* x, const solops_tensor* running_mean,
                                                   const solops_tensor* running_var, const solops_tensor* weight,
                                                   const solops_tensor* bias, const solops_tensor* y,
                                                   const solops_tensor* save_mean, const solops_tensor* save_invstd,
                                                   const solops_batch_norm_training_params* p);
solops_status solops_batch_norm_training_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              const solops_batch_norm_training_params* p, solops_cost* cost);

/* BatchNormBwd (spec 2.8): the gradients of training-mode batch norm from the forward's save_mean and
 * save_invstd (SOLOPS_F32 [C]). grad_out, x and grad_x share x's shape, dtype and memory format
 * (contiguous, or 4-D channels_last); weight (NULL: 1), grad_weight and grad_bias are [C] of SOLOPS_F32
 * or x's dtype, grad_weight and grad_bias may be NULL (not computed). workspace: SOLOPS_F32 of at least
 * solops_batch_norm_backward_workspace_elements elements (channels_last as x), NULL where that is 0.
 * Deterministic. Outputs overlap no tensor of the call. */
solops_status solops_batch_norm_backward_workspace_elements(int32_t x_rank, const int64_t* x_shape,
                                                            int32_t channels_last, int64_t* elements);
solops_status solops_batch_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                         const solops_tensor* weight, const solops_tensor* save_mean,
                                         const solops_tensor* save_invstd, const solops_tensor* grad_x,
                                         const solops_tensor* grad_weight, const solops_tensor* grad_bias,
                                         const solops_tensor* workspace, void* stream);
solops_status solops_reference_batch_norm_backward(const solops_tensor* grad_out, const solops_tensor* x,
                                                   const solops_tensor* weight, const solops_tensor* save_mean,
                                                   const solops_tensor* save_invstd, const solops_tensor* grad_x,
                                                   const solops_tensor* grad_weight, const solops_tensor* grad_bias);
solops_status solops_batch_norm_backward_cost(int32_t x_rank, const int64_t* x_shape, int32_t x_dtype,
                                              solops_cost* cost);

#ifdef __cplusplus
}
#endif

#endif /* SOLOPS_C_NORM_H */
