// CPU references: the executable specification. Host tensors only; float64 accumulation,
// one rounding to the output dtype. Slow by design; used by tests and the benchmark.
#pragma once

#include "solops/norm.hpp"
#include "solops/pool.hpp"

namespace solops::reference {

void max_pool1d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool1d& p);
void avg_pool1d(const TensorRef& x, const TensorRef& y, const Pool1d& p);
void max_pool2d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool2d& p);
void avg_pool2d(const TensorRef& x, const TensorRef& y, const Pool2d& p);
void max_pool3d(const TensorRef& x, const TensorRef& y, const TensorRef* indices, const Pool3d& p);
void avg_pool3d(const TensorRef& x, const TensorRef& y, const Pool3d& p);
void adaptive_max_pool2d(const TensorRef& x, const TensorRef& y, const TensorRef* indices,
                         const AdaptivePool2d& p);
void adaptive_avg_pool2d(const TensorRef& x, const TensorRef& y, const AdaptivePool2d& p);
// Ragged metadata is always checked (check_ragged_chunks); p.check_ragged_metadata is ignored.
void mean_pooling(const TensorRef& x, const TensorRef& y, const TensorRef* offsets, const TensorRef* indices,
                  const MeanPooling& p);


// Row norms; the fused add-norms' in-place form (output = x, residual_out = residual) works here too.
void rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const RMSNorm& p);
void layer_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const LayerNorm& p);
void gemma_rms_norm(const TensorRef& x, const TensorRef& weight, const TensorRef& y, const GemmaRMSNorm& p);
void fused_add_rms_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight,
                        const TensorRef& output, const TensorRef& residual_out, const FusedAddRMSNorm& p);
void fused_add_layer_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight,
                          const TensorRef* bias, const TensorRef& output, const TensorRef& residual_out,
                          const FusedAddLayerNorm& p);
void ada_layer_norm(const TensorRef& x, const TensorRef& scale, const TensorRef& shift, const TensorRef& y,
                    const AdaLayerNorm& p);
// The quantizing norms: y in float64, q rounded from y / scale once (exact e4m3 rounding on the host).
void rms_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef& q, const TensorRef& scale,
                    const RMSNormQuant& p);
void layer_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& q,
                      const TensorRef& scale, const LayerNormQuant& p);
void qk_norm(const TensorRef& q, const TensorRef& k, const TensorRef* q_weight, const TensorRef* k_weight,
             const TensorRef& q_out, const TensorRef& k_out, const QKNorm& p);
void rms_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                         const RMSNorm& p);
void layer_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                           const TensorRef& mean, const TensorRef& rstd, const LayerNorm& p);
void group_rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                    const GroupRMSNorm& p);
// float64 accumulation, no workspace.
void vector_norm(const TensorRef& x, const TensorRef& y, const VectorNorm& p);
void weight_norm(const TensorRef& v, const TensorRef& g, const TensorRef& y, const TensorRef& norm,
                 const WeightNorm& p);
// float64 throughout (W, u and v widened), the outputs rounded once to f32; no workspace.
void spectral_norm_power_iter(const TensorRef& x, const TensorRef& u, const TensorRef& v, const TensorRef& sigma,
                              const TensorRef& u_out, const TensorRef& v_out, const SpectralNormPowerIter& p);
// The backward ops in float64 from the given statistics, gradients rounded once.
void rms_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight, const TensorRef& rstd,
                       const TensorRef& grad_x, const TensorRef* grad_weight, const RMSNormBackward& p);
void layer_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const LayerNormBackward& p);

}  // namespace solops::reference
