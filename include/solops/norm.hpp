// Row-wise normalization operators (spec §2.1, 2.2, 2.3, 2.4, 2.5, 2.13, 2.14, 2.15, 2.16, 2.17,
// 2.18, 2.19), the vector-norm reductions L1NormFwd and L2NormFwd (spec §2.22, 2.23),
// WeightNormFwd (spec §2.20), SpectralNormPowerIterFwd (spec §2.21) and BatchNormInferenceFwd (spec
// §2.7, per channel), GroupNormFwd / GroupNormBwd and InstanceNormFwd / InstanceNormBwd (spec §2.9-2.12,
// §6.4, per (sample, group) of channels). The row norms normalize each of the M rows of x (the trailing dims
// normalized_shape, N elements, contiguous) on its own; statistics run in f32 and the result is
// rounded once to x's dtype.
// Semantics and defaults: docs/api.md.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "solops/cost.hpp"
#include "solops/tensor.hpp"

namespace solops {

// y = x / sqrt(mean(x^2) + eps) * weight.
struct RMSNorm {
  std::vector<int64_t> normalized_shape;  // the trailing dims of x; non-empty
  // nullopt: the f32 machine epsilon, as F.rms_norm(eps=None) on CUDA (spec §6.1).
  std::optional<double> eps = std::nullopt;
};

// y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance.
struct LayerNorm {
  std::vector<int64_t> normalized_shape;
  double eps = 1e-5;
};

// RMSNorm with a zero-centred weight: y = x / sqrt(mean(x^2) + eps) * (1 + weight), 1 + weight in f32.
struct GemmaRMSNorm {
  std::vector<int64_t> normalized_shape;
  double eps = 1e-6;
};

// Residual add, then RMSNorm or LayerNorm over the last dim: residual_out = x + residual (rounded
// to x's dtype), output = norm(residual_out).
struct FusedAddRMSNorm {
  double eps = 1e-6;
};
struct FusedAddLayerNorm {
  double eps = 1e-5;
};

// Parameter-free LayerNorm over the last dim, then a per-element modulation (DiT-style, spec §2.3):
// y = scale * (x - mean) / sqrt(var + eps) + shift, scale and shift of x's shape. DiT's
// x-hat * (1 + scale) + shift is this op given 1 + scale.
struct AdaLayerNorm {
  double eps = 1e-5;
};

// RMSNorm and LayerNorm quantized per row to float8_e4m3fn (spec §2.15, 2.16): the f32 result y
// of the norm (not rounded to x's dtype) gives scale = max(max_j |y_j|, 1e-12) / 448 and
// q = e4m3(y / scale), round to nearest even, saturating; q.float() * scale dequantizes.
struct RMSNormQuant {
  std::vector<int64_t> normalized_shape;
  double eps = 1e-6;
};
struct LayerNormQuant {
  std::vector<int64_t> normalized_shape;
  double eps = 1e-5;
};

// QK-norm (Qwen3, OLMo-2): two independent RMSNorms over the same trailing normalized_shape, one of
// the query with q_weight and one of the key with k_weight; q and k may differ in their leading dims.
struct QKNorm {
  std::vector<int64_t> normalized_shape;
  double eps = 1e-6;
};

// Group RMSNorm (spec §2.19, the fork's definition): x is viewed as [..., G, D] and each length-D
// vector is RMS-normalized on its own, scaled by weight[g, :] (weight [G, D] = x's last two dims):
// y[..., g, :] = x[..., g, :] / sqrt(mean(x[..., g, :]^2) + eps) * weight[g, :].
struct GroupRMSNorm {
  std::vector<int64_t> normalized_shape;  // (D,): x's last dim
  double eps = 1e-6;
};

// torch.linalg.vector_norm(x, ord, dim, keepdim) for ord 1 (sum |x|) and 2 (sqrt(sum x^2)): a
// reduction, not a normalization (spec §2.22, 2.23, §6.9). f32 accumulation, rounded once to x's
// dtype (an f16 result beyond 65504 is +inf); NaN propagates.
struct VectorNorm {
  int ord = 2;               // 1 or 2
  std::vector<int64_t> dim = {};  // the reduced dims, negative ones wrapped; empty: every dim
  bool keepdim = false;
};

// torch._weight_norm(v, g, dim): y = v * (g / ||v||), the L2 norm taken over every dim of v except
// dim, one norm (and one g) per index along dim. dim = -1 is PyTorch's "one norm of the whole
// tensor" (spec §6.7), not the last axis. f32 norms and scaling, rounded once; no eps (a zero
// slice gives inf or NaN as in PyTorch).
struct WeightNorm {
  int64_t dim = 0;  // in [0, rank) or -1
};

// SpectralNormPowerIterFwd (spec §2.21): n_iter steps of power iteration on the matrix W = x [O, I],
// all in f32 (W widened exactly): v = normalize(W^T u), then u = normalize(W v), with normalize(a) =
// a / max(||a||_2, eps) (NaN propagates); then sigma = u^T (W v). This is torch.nn.utils.spectral_norm's
// update (v first); torch.nn.utils.parametrizations.spectral_norm updates u first (docs/api.md).
struct SpectralNormPowerIter {
  std::vector<int64_t> normalized_shape;  // must be (I,): validation only
  int64_t n_iter = 1;                     // >= 0; 0: sigma of the given u and v, which are copied out
  double eps = 1e-12;                     // >= 0, not NaN
};

// BatchNormInferenceFwd (spec §2.7, §6.3): F.batch_norm(training=False) over x [B, C, *spatial]
// (rank >= 2, channels in dim 1) with fixed running statistics: y = (x - running_mean[c]) /
// sqrt(running_var[c] + eps) * weight[c] + bias[c], computed in f32 as one FMA an element (x *
// scale[c] + shift[c]) and rounded once to x's dtype. Nothing is updated. The [C] tensors may be f32
// or x's dtype (spec §6.3).
struct BatchNormInference {
  double eps = 1e-5;  // finite, >= 0
};

// BatchNormFwd in training mode (spec §2.6, §6.3): F.batch_norm(training=True) over x [B, C, *spatial]
// with the batch's statistics of each channel, over L = B · prod(spatial) values: mean, the biased
// variance var, invstd = 1 / sqrt(var + eps) and y = (x - mean) * invstd * weight + bias, in f32,
// rounded once to x's dtype. The saved mean and invstd (f32) are outputs, for the backward. Where
// given, the running statistics are updated in place as PyTorch does: running_mean = (1 - momentum)
// * running_mean + momentum * mean, running_var = (1 - momentum) * running_var + momentum * var * L /
// (L - 1) (the unbiased variance). nn.BatchNorm's momentum=None (a cumulative average) is its
// module's: it passes momentum = 1 / num_batches_tracked.
struct BatchNormTraining {
  double momentum = 0.1;  // finite
  double eps = 1e-5;      // finite, >= 0
};

// The gradients of RMSNorm and LayerNorm given the forward's saved per-row statistics; eps is
// folded into rstd, so it is no parameter.
struct RMSNormBackward {
  std::vector<int64_t> normalized_shape;
};
struct LayerNormBackward {
  std::vector<int64_t> normalized_shape;
};

// GroupNormFwd (spec §2.9): F.group_norm over x [B, C, *spatial] (rank >= 2): the C channels split
// into num_groups groups of C / num_groups consecutive channels, each (sample, group) normalized over
// its (C / G) * S elements (S the product of the spatial dims) with the biased variance, then the
// per-channel weight and bias. Statistics in f32, the output rounded once to x's dtype.
struct GroupNorm {
  int64_t num_groups = 1;  // > 0, divides C
  double eps = 1e-5;       // finite, >= 0
};
// InstanceNormFwd (spec §2.11, §6.4): F.instance_norm, GroupNorm with one channel a group. With
// use_input_stats each (sample, channel) is normalized by its own statistics and, where running
// statistics are given, they are updated in place as PyTorch does: running_mean = (1 - momentum) *
// running_mean + momentum * (the batch average of the instances' means), running_var the same of
// their unbiased variances. Without use_input_stats each channel is normalized by the running
// statistics (required then), which are only read.
struct InstanceNorm {
  bool use_input_stats = true;
  double momentum = 0.1;  // finite
  double eps = 1e-5;      // finite, >= 0
};
// The gradients of GroupNorm and InstanceNorm from the statistics their forward saved (eps is folded
// into rstd). InstanceNorm without use_input_stats is the gradient of its fixed-statistics form
// (the saved statistics are then the running ones: no centring terms).
struct GroupNormBackward {
  int64_t num_groups = 1;
};
struct InstanceNormBackward {
  bool use_input_stats = true;
};

// Output shapes (x's shape; the fused ops' two outputs both have it). They check the shape rule
// (normalized_shape non-empty, equal to x's trailing dims; eps >= 0) and throw solops::Error.
std::vector<int64_t> rms_norm_output_shape(std::span<const int64_t> x_shape, const RMSNorm& p);
std::vector<int64_t> layer_norm_output_shape(std::span<const int64_t> x_shape, const LayerNorm& p);
std::vector<int64_t> gemma_rms_norm_output_shape(std::span<const int64_t> x_shape, const GemmaRMSNorm& p);
std::vector<int64_t> fused_add_rms_norm_output_shape(std::span<const int64_t> x_shape, const FusedAddRMSNorm& p);
std::vector<int64_t> fused_add_layer_norm_output_shape(std::span<const int64_t> x_shape,
                                                       const FusedAddLayerNorm& p);
std::vector<int64_t> ada_layer_norm_output_shape(std::span<const int64_t> x_shape, const AdaLayerNorm& p);
// The quantizing norms: q has x's shape, scale x's leading dims (one per row).
std::vector<int64_t> rms_norm_quant_output_shape(std::span<const int64_t> x_shape, const RMSNormQuant& p);
std::vector<int64_t> layer_norm_quant_output_shape(std::span<const int64_t> x_shape, const LayerNormQuant& p);
std::vector<int64_t> rms_norm_quant_scale_shape(std::span<const int64_t> x_shape, const RMSNormQuant& p);
std::vector<int64_t> layer_norm_quant_scale_shape(std::span<const int64_t> x_shape, const LayerNormQuant& p);
// GroupRMSNorm (x of rank >= 2, normalized_shape of length 1): y has x's shape, rstd
// norm_stats_shape (x.shape[:-1]).
std::vector<int64_t> group_rms_norm_output_shape(std::span<const int64_t> x_shape, const GroupRMSNorm& p);
// The vector norm's output: x's shape without the reduced dims (size 1 with keepdim; 0-d for a
// full reduction). Checks ord and dim (in range, no duplicates).
std::vector<int64_t> vector_norm_output_shape(std::span<const int64_t> x_shape, const VectorNorm& p);
// The f32 elements of workspace the call needs: 0 when every output is reduced by one block.
int64_t vector_norm_workspace_elements(std::span<const int64_t> x_shape, const VectorNorm& p);
// WeightNorm: norm is f32 [n], n = x.shape[dim] (1 for dim = -1); y has x's shape. Checks dim.
std::vector<int64_t> weight_norm_norm_shape(std::span<const int64_t> x_shape, const WeightNorm& p);
// The f32 elements of workspace the call needs: 0 when every slice's norm is one block's.
int64_t weight_norm_workspace_elements(std::span<const int64_t> x_shape, const WeightNorm& p);
// SpectralNormPowerIter: the f32 elements of workspace the call needs (0 when one block of rows
// sums each column of W^T u, and for n_iter = 0). Checks the shape rule: x [O, I] of rank 2 (O or I
// may be 0), I below 2^31, normalized_shape (I,), n_iter >= 0, eps >= 0.
int64_t spectral_norm_power_iter_workspace_elements(std::span<const int64_t> x_shape,
                                                    const SpectralNormPowerIter& p);
// BatchNormInference: x's shape. Checks the shape rule: x of rank >= 2, eps finite and >= 0.
std::vector<int64_t> batch_norm_inference_output_shape(std::span<const int64_t> x_shape,
                                                       const BatchNormInference& p);
// BatchNormTraining and BatchNormBackward: the f32 elements of workspace the call needs (0 where
// a cluster of blocks holds each channel's values; else the partials of a two-pass reduction); y
// and grad_x have x's shape, the saved statistics and the parameters' gradients [C]. They check the
// shape rule: x of rank >= 2, fewer than 2^31 values a channel; the forward's eps finite and >= 0,
// momentum finite, and more than one value a channel (L > 1, as F.batch_norm in training) unless x
// is empty. channels_last: x is a 4-D channels_last tensor (not also contiguous), whose channels the
// kernels walk as rows of C values, so its plan and workspace differ from a contiguous x's.
int64_t batch_norm_training_workspace_elements(std::span<const int64_t> x_shape, const BatchNormTraining& p,
                                               bool channels_last = false);
int64_t batch_norm_backward_workspace_elements(std::span<const int64_t> x_shape, bool channels_last = false);
// Either of q and k: the shape rule applies to each on its own, and each output has its input's shape.
std::vector<int64_t> qk_norm_output_shape(std::span<const int64_t> x_shape, const QKNorm& p);
// The shape of the saved statistics (mean, rstd): x's leading dims, one f32 per row.
std::vector<int64_t> norm_stats_shape(std::span<const int64_t> x_shape, std::span<const int64_t> normalized_shape);
// GroupNorm and InstanceNorm: y has x's shape; the saved statistics (mean, rstd) are f32 [B, G]
// (InstanceNorm: [B, C]). Each checks the shape rule: x of rank >= 2 without a negative dim, G > 0
// dividing C, each group's (C / G) * S elements below 2^31, eps finite and >= 0 (InstanceNorm: also
// momentum finite and, with use_input_stats, S != 1, as F.instance_norm).
std::vector<int64_t> group_norm_output_shape(std::span<const int64_t> x_shape, const GroupNorm& p);
std::vector<int64_t> group_norm_stats_shape(std::span<const int64_t> x_shape, const GroupNorm& p);
std::vector<int64_t> instance_norm_output_shape(std::span<const int64_t> x_shape, const InstanceNorm& p);
std::vector<int64_t> instance_norm_stats_shape(std::span<const int64_t> x_shape, const InstanceNorm& p);
// The f32 elements of workspace a call needs: InstanceNorm's forward 2 * B * C where it updates
// running statistics (each instance's mean and variance, averaged over the batch by a second
// kernel), else 0; the backward ops 2 * B * C where a parameter gradient is asked for (each
// (sample, channel)'s sums, added over the batch by a second kernel), else 0.
int64_t instance_norm_workspace_elements(std::span<const int64_t> x_shape, const InstanceNorm& p,
                                         bool running_stats);
int64_t group_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const GroupNormBackward& p,
                                               bool parameter_gradients = true);
int64_t instance_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const InstanceNormBackward& p,
                                                  bool parameter_gradients = true);

// Roofline cost (the spec's formulas, with the affine parameters present).
Cost rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const RMSNorm& p);
Cost layer_norm_cost(std::span<const int64_t> x_shape, DType dtype, const LayerNorm& p);
Cost gemma_rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const GemmaRMSNorm& p);
Cost fused_add_rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const FusedAddRMSNorm& p);
Cost fused_add_layer_norm_cost(std::span<const int64_t> x_shape, DType dtype, const FusedAddLayerNorm& p);
Cost ada_layer_norm_cost(std::span<const int64_t> x_shape, DType dtype, const AdaLayerNorm& p);
Cost rms_norm_quant_cost(std::span<const int64_t> x_shape, DType dtype, const RMSNormQuant& p);
Cost layer_norm_quant_cost(std::span<const int64_t> x_shape, DType dtype, const LayerNormQuant& p);
Cost qk_norm_cost(std::span<const int64_t> q_shape, std::span<const int64_t> k_shape, DType dtype, const QKNorm& p);
Cost group_rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const GroupRMSNorm& p);
// Spec §2.22, 2.23: FLOPs 2·M·N (+ M square roots for ord 2), bytes (M·N + M)·eb.
Cost vector_norm_cost(std::span<const int64_t> x_shape, DType dtype, const VectorNorm& p);
// Spec §2.20: FLOPs 4·numel, bytes (2·numel + n)·eb + 4·n.
Cost weight_norm_cost(std::span<const int64_t> x_shape, DType dtype, const WeightNorm& p);
// Spec §2.21: FLOPs (4·n_iter + 2)·O·I + (4·n_iter + 2)·(O + I), bytes O·I·eb + 8·(O + I) + 4.
Cost spectral_norm_power_iter_cost(std::span<const int64_t> x_shape, DType dtype, const SpectralNormPowerIter& p);
// Spec §2.7: FLOPs 4·numel, bytes 2·numel·eb + 16·C (weight, bias and both running statistics read).
Cost batch_norm_inference_cost(std::span<const int64_t> x_shape, DType dtype, const BatchNormInference& p);
// Spec §2.6: FLOPs 10·C·L, bytes 2·C·L·eb + 16·C (weight, bias and both running statistics read);
// §2.8: FLOPs 8·C·L, bytes 3·C·L·eb + 12·C (TileOPs' formulas: neither counts the statistics' writes
// or reads, and both count x read once, which a tensor larger than the L2 cannot be: docs/perf/norm.md).
Cost batch_norm_training_cost(std::span<const int64_t> x_shape, DType dtype, const BatchNormTraining& p);
Cost batch_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype);
Cost rms_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const RMSNormBackward& p);
Cost layer_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const LayerNormBackward& p);
// Spec §2.9, 2.11: FLOPs (5 with weight and bias, else 3) * numel; bytes (2 * numel + 2 * C with weight
// and bias) * eb, + 8 * C where running statistics are read and 8 * C more where they are updated
// (defined here: the true minimum). Spec §2.10, 2.12: FLOPs 12 * numel; bytes 3 * numel * eb + 2 * C *
// eb (the parameter gradients) + C * eb with a weight + 8 * B * G (InstanceNorm: 8 * B * C) for the
// saved statistics (the unused bias is not read).
Cost group_norm_cost(std::span<const int64_t> x_shape, DType dtype, const GroupNorm& p, bool affine);
Cost instance_norm_cost(std::span<const int64_t> x_shape, DType dtype, const InstanceNorm& p, bool affine,
                        bool running_stats);
Cost group_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const GroupNormBackward& p, bool weight);
Cost instance_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const InstanceNormBackward& p,
                                 bool weight);

// Every tensor: a contiguous CUDA tensor of x's dtype (f32, f16 or bf16). weight and bias have the
// normalized shape and may be null (PyTorch's None: scale 1, shift 0); outputs have x's shape and
// may not overlap any input.
void rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const RMSNorm& p,
              cudaStream_t stream = nullptr);
void layer_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const LayerNorm& p, cudaStream_t stream = nullptr);
void gemma_rms_norm(const TensorRef& x, const TensorRef& weight, const TensorRef& y, const GemmaRMSNorm& p,
                    cudaStream_t stream = nullptr);

// The forward for training: as rms_norm and layer_norm, and also writes each row's statistics
// for the backward (contiguous f32 CUDA tensors of norm_stats_shape): rstd = 1 / sqrt(mean(x^2) +
// eps) for RMSNorm, mean and rstd = 1 / sqrt(var + eps) for LayerNorm. No output may overlap
// another tensor of the call.
void rms_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                         const RMSNorm& p, cudaStream_t stream = nullptr);
void layer_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                           const TensorRef& mean, const TensorRef& rstd, const LayerNorm& p,
                           cudaStream_t stream = nullptr);

// GroupRMSNorm: weight [G, D] of x's dtype (null: scale 1); y of x's shape and dtype; rstd the f32
// 1 / sqrt(mean(x^2) + eps) of each vector, of x.shape[:-1]. No output may overlap another tensor.
void group_rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                    const GroupRMSNorm& p, cudaStream_t stream = nullptr);

// The vector norm: y of x's dtype and vector_norm_output_shape. workspace: a contiguous f32 CUDA
// tensor of at least vector_norm_workspace_elements elements, or null when that is 0; the call
// allocates nothing, so it is capture-safe. Deterministic: per-block partial sums in a fixed
// order, then each output's partials added in order: by a second kernel where each output reduces
// one contiguous run (a full reduction, or one over trailing dims), elsewhere in the same kernel
// after a grid-wide barrier (a cooperative launch of at most four blocks an SM). y and the
// workspace may not overlap each other or x.
void vector_norm(const TensorRef& x, const TensorRef& y, const TensorRef* workspace, const VectorNorm& p,
                 cudaStream_t stream = nullptr);

// WeightNorm: v (x) a contiguous float CUDA tensor; g of v's dtype with n elements, shaped [n] or as
// PyTorch stores it (n along one dim, 1 elsewhere; any all-ones shape for dim = -1); y of v's shape
// and dtype; norm f32 [n]; workspace as for vector_norm (weight_norm_workspace_elements). The norms
// are vector_norm's deterministic reduction, then one scaling pass. Outputs and the workspace may
// not overlap each other or an input.
void weight_norm(const TensorRef& v, const TensorRef& g, const TensorRef& y, const TensorRef& norm,
                 const TensorRef* workspace, const WeightNorm& p, cudaStream_t stream = nullptr);

// SpectralNormPowerIter: x a contiguous float CUDA tensor [O, I]; u f32 [O] and v f32 [I] (only read);
// sigma f32 0-d, u_out f32 [O], v_out f32 [I]; workspace a contiguous f32 CUDA tensor of at least
// spectral_norm_power_iter_workspace_elements elements, or null when that is 0. A few kernels per
// iteration on `stream`, nothing allocated (capture-safe); every sum in a fixed order, so the same
// inputs give the same bits on every run. No output, nor the workspace, may overlap another tensor.
void spectral_norm_power_iter(const TensorRef& x, const TensorRef& u, const TensorRef& v, const TensorRef& sigma,
                              const TensorRef& u_out, const TensorRef& v_out, const TensorRef* workspace,
                              const SpectralNormPowerIter& p, cudaStream_t stream = nullptr);

// BatchNormInference, the spec's argument order (x, weight, bias, running_mean, running_var; not
// F.batch_norm's): x a CUDA tensor [B, C, *spatial] of f32, f16 or bf16, contiguous or (4-D)
// channels_last; weight, bias, running_mean and running_var contiguous CUDA tensors [C], each f32 or x's
// dtype, weight and bias may be null (scale 1, shift 0, as F.batch_norm's None); y of x's shape, dtype
// and memory format, overlapping no input.
void batch_norm_inference(const TensorRef& x, const TensorRef* weight, const TensorRef* bias,
                          const TensorRef& running_mean, const TensorRef& running_var, const TensorRef& y,
                          const BatchNormInference& p, cudaStream_t stream = nullptr);

// BatchNormTraining, the spec's argument order (x, running_mean, running_var, weight, bias, as
// F.batch_norm): x a CUDA tensor [B, C, *spatial] of f32, f16 or bf16, contiguous or (4-D)
// channels_last; running_mean, running_var, weight and bias contiguous CUDA tensors [C], each f32 or
// x's dtype, any of them null (running statistics both or neither: not updated; weight 1, bias 0); y of
// x's shape, dtype and memory format; save_mean and save_invstd f32 [C]; workspace as
// batch_norm_training_workspace_elements says for x's layout. The
// running statistics are written last, by one thread a channel, after every check has passed: a
// rejected call leaves them as they were. Deterministic: every sum in a fixed order, no float atomics.
// No tensor the call writes (the running statistics among them) may overlap another of the call.
void batch_norm_training(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                         const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef& save_mean,
                         const TensorRef& save_invstd, const TensorRef* workspace, const BatchNormTraining& p,
                         cudaStream_t stream = nullptr);

// BatchNormBwd (spec §2.8): the gradients of training-mode batch norm from the forward's saved mean
// and invstd (f32 [C]): grad_bias = sum(grad_out), grad_weight = invstd * sum(grad_out * (x - mean))
// over each channel's L values, grad_x = weight * invstd * (grad_out - grad_bias / L - (x - mean) *
// invstd * grad_weight / L), all in f32. grad_out, x and grad_x share x's shape, dtype and memory format
// (contiguous, or 4-D channels_last; workspace as batch_norm_backward_workspace_elements says for it); weight
// (null: 1) [C] of f32 or x's dtype; grad_weight and grad_bias [C], each f32 or x's dtype, either may
// be null (not computed). Deterministic, as the forward. Outputs overlap no tensor of the call.
void batch_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& save_mean, const TensorRef& save_invstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const TensorRef* workspace,
                         cudaStream_t stream = nullptr);

// The backward ops (spec §2.13, 2.14). grad_out, x and grad_x have x's shape and dtype; weight
// (null: scale 1), grad_weight and grad_bias have the normalized shape and x's dtype; mean and
// rstd are f32 of norm_stats_shape. grad_weight and grad_bias may be null (not computed). Outputs
// may not overlap any tensor of the call. grad_weight and grad_bias are column sums over the rows
// in f32: blocks of rows write their own sums, in row order, to `workspace` (a contiguous f32 CUDA
// tensor of at least rms_norm_backward_workspace_elements / layer_norm_backward_workspace_elements
// elements, overlapping no other tensor; null is allowed where that is 0 or where neither gradient
// is asked for), and those are added in block order: deterministic, no atomics, nothing allocated.
void rms_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight, const TensorRef& rstd,
                       const TensorRef& grad_x, const TensorRef* grad_weight, const TensorRef* workspace,
                       const RMSNormBackward& p, cudaStream_t stream = nullptr);
void layer_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const TensorRef* workspace,
                         const LayerNormBackward& p, cudaStream_t stream = nullptr);
// The f32 elements of the backward's workspace for x_shape (0 for a single row); also checks the
// shape rule.
int64_t rms_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const RMSNormBackward& p);
int64_t layer_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const LayerNormBackward& p);

// The fused add-norms. residual has x's shape, weight and bias [N]. The in-place form (spec §6.6):
// output may be x itself and residual_out may be residual itself (the same data pointer); any
// other overlap between an output and a tensor of the call is rejected.
void fused_add_rms_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight, const TensorRef& output,
                        const TensorRef& residual_out, const FusedAddRMSNorm& p, cudaStream_t stream = nullptr);
void fused_add_layer_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight,
                          const TensorRef* bias, const TensorRef& output, const TensorRef& residual_out,
                          const FusedAddLayerNorm& p, cudaStream_t stream = nullptr);

// AdaLayerNorm: scale, shift and y have x's shape and dtype; y may not overlap an input.
void ada_layer_norm(const TensorRef& x, const TensorRef& scale, const TensorRef& shift, const TensorRef& y,
                    const AdaLayerNorm& p, cudaStream_t stream = nullptr);

// The quantizing norms. x, weight and bias as for rms_norm and layer_norm (weight and bias may be
// null); q is a contiguous fp8_e4m3 CUDA tensor of x's shape, scale a contiguous f32 CUDA tensor of
// x's leading dims. No output may overlap another tensor of the call.
void rms_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef& q, const TensorRef& scale,
                    const RMSNormQuant& p, cudaStream_t stream = nullptr);
void layer_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& q,
                      const TensorRef& scale, const LayerNormQuant& p, cudaStream_t stream = nullptr);

// q_out = RMSNorm(q) * q_weight and k_out = RMSNorm(k) * k_weight. k has q's dtype; the weights (of
// the normalized shape) may be null. No output may overlap another output or any input.
void qk_norm(const TensorRef& q, const TensorRef& k, const TensorRef* q_weight, const TensorRef* k_weight,
             const TensorRef& q_out, const TensorRef& k_out, const QKNorm& p, cudaStream_t stream = nullptr);

// GroupNorm and InstanceNorm: x a contiguous (NCHW-style, channels in dim 1) CUDA tensor of f32, f16
// or bf16; weight and bias [C] of x's dtype, each may be null (scale 1, shift 0); y of x's shape and
// dtype. The *_with_stats forms (training) also write mean and rstd = 1 / sqrt(var + eps) of each
// (sample, group), f32 [B, G] (InstanceNorm: [B, C]; without use_input_stats the running statistics
// each instance was normalized with). InstanceNorm's running_mean and running_var are f32 [C], given
// together or not at all, updated in place with use_input_stats (an empty batch makes them NaN, empty
// planes leave them, as PyTorch); workspace as instance_norm_workspace_elements says (null where that
// is 0). One kernel a call, one block a group (several a block for groups of one warp); InstanceNorm's
// running-statistics update adds a second, which averages each channel over the batch in batch order:
// deterministic, no atomics, nothing allocated (capture-safe). Every check is made before anything
// is written. No output (running statistics included) may overlap another tensor of the call.
void group_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const GroupNorm& p, cudaStream_t stream = nullptr);
void group_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                           const TensorRef& mean, const TensorRef& rstd, const GroupNorm& p,
                           cudaStream_t stream = nullptr);
void instance_norm(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                   const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef* workspace,
                   const InstanceNorm& p, cudaStream_t stream = nullptr);
void instance_norm_with_stats(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                              const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                              const TensorRef& mean, const TensorRef& rstd, const TensorRef* workspace,
                              const InstanceNorm& p, cudaStream_t stream = nullptr);

// The backward of GroupNorm and InstanceNorm (spec §2.10, 2.12; our argument order: grad_out first,
// as layer_norm_backward): grad_out, x and grad_x of x's shape and dtype; weight (null: scale 1),
// grad_weight and grad_bias [C] of x's dtype, the gradients may be null (not computed); mean and rstd
// the forward's f32 statistics. grad_x comes from one kernel, one block a group; the parameter
// gradients sum each channel over the batch, whose samples other blocks hold: each block writes its
// (sample, channel) sums to the workspace (backward_workspace_elements; null where no gradient is
// asked for) and a second kernel adds them in batch order (deterministic, no atomics). Outputs and the
// workspace may not overlap any tensor of the call.
void group_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const TensorRef* workspace,
                         const GroupNormBackward& p, cudaStream_t stream = nullptr);
void instance_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                            const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                            const TensorRef* grad_weight, const TensorRef* grad_bias, const TensorRef* workspace,
                            const InstanceNormBackward& p, cudaStream_t stream = nullptr);

// CPU references (solops/reference.hpp): the executable specification. Host tensors only; float64
// accumulation, one rounding to the output dtype; slow by design.
namespace reference {

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
// float64: (x - running_mean) / sqrt(running_var + eps) * weight + bias, rounded once.
void batch_norm_inference(const TensorRef& x, const TensorRef* weight, const TensorRef* bias,
                          const TensorRef& running_mean, const TensorRef& running_var, const TensorRef& y,
                          const BatchNormInference& p);
// float64 statistics and gradients, each output rounded once; no workspace.
void batch_norm_training(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                         const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef& save_mean,
                         const TensorRef& save_invstd, const BatchNormTraining& p);
void batch_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& save_mean, const TensorRef& save_invstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias);
// The backward ops in float64 from the given statistics, gradients rounded once.
void rms_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight, const TensorRef& rstd,
                       const TensorRef& grad_x, const TensorRef* grad_weight, const RMSNormBackward& p);
void layer_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const LayerNormBackward& p);
// GroupNorm and InstanceNorm in float64 (two-pass statistics; the running statistics' update too),
// each output rounded once; no workspace. mean and rstd may be null in the forward (not written).
void group_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const TensorRef* mean, const TensorRef* rstd, const GroupNorm& p);
void instance_norm(const TensorRef& x, const TensorRef* running_mean, const TensorRef* running_var,
                   const TensorRef* weight, const TensorRef* bias, const TensorRef& y, const TensorRef* mean,
                   const TensorRef* rstd, const InstanceNorm& p);
void group_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const GroupNormBackward& p);
void instance_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                            const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                            const TensorRef* grad_weight, const TensorRef* grad_bias, const InstanceNormBackward& p);

}  // namespace reference

}  // namespace solops
