// The row norms (RMSNorm, LayerNorm, GemmaRMSNorm, the fused add-norms and the quantizing norms): the shape rule, the
// validation of a call, and the launcher, shared by the entry points (norm_rules.cpp), the CPU
// references (row_norm_ref.cpp) and the kernels (row_norm.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>

#include "core/check.hpp"
#include "solops/cost.hpp"

namespace solops::detail {

enum class NormKind { rms, layer };

// M rows of N contiguous elements; N is int32, so in-row indexing is too.
struct RowGeometry {
  int64_t rows = 0;
  int row_len = 0;
};

// What a row norm computes: its statistic and the scale it applies. Gemma's weight is stored
// zero-centred, so its scale is weight_offset + weight with weight_offset = 1.
struct NormMath {
  NormKind kind = NormKind::rms;
  double eps = 0;
  float weight_offset = 0;
};

// Which rows of weight and bias scale and shift a row of x: the same one for every row (the
// normalized shape), x's own (AdaLayerNorm's scale and shift have x's shape), or row m % G of a
// [G, D] weight for x viewed as [..., G, D] (GroupRMSNorm).
enum class AffineRows { shared, per_row, per_group };

// The tensors of one call. residual and residual_out are given together (the fused add-norms) or
// not at all; weight and bias may be null. mean and rstd are the training forward's per-row f32
// statistics, written when given. With row_scale (the quantizing norms) y holds the fp8 codes and
// row_scale the f32 scale of each row. `affine` says which row of weight and bias each row of x takes.
struct RowNormTensors {
  const TensorRef& x;
  const TensorRef* residual = nullptr;
  const TensorRef* weight = nullptr;
  const TensorRef* bias = nullptr;
  const TensorRef& y;
  const TensorRef* residual_out = nullptr;
  const TensorRef* mean = nullptr;
  const TensorRef* rstd = nullptr;
  const TensorRef* row_scale = nullptr;
  AffineRows affine = AffineRows::shared;
};

// The tensors of a backward call (mean: LayerNorm only). weight, grad_weight and grad_bias may be null.
struct RowNormBackwardTensors {
  const TensorRef& grad_out;
  const TensorRef& x;
  const TensorRef* weight = nullptr;
  const TensorRef* mean = nullptr;
  const TensorRef& rstd;
  const TensorRef& grad_x;
  const TensorRef* grad_weight = nullptr;
  const TensorRef* grad_bias = nullptr;
  const TensorRef* workspace = nullptr;  // f32, row_norm_backward_workspace_elements of them
};

// The backward's grad_weight and grad_bias partials (row_norm_backward.cuh): the row kernel's most
// blocks when it writes them, a function of the shape alone (so the order of the sums is too):
// about 4.3 MB of f32 partials a gradient, but at least two blocks an SM (264) and at most four
// (528), at most one a row; and the f32 workspace of `gradients` of them, none for a single row (it
// writes its terms). Fewer blocks keep fewer rows in flight at N = 8192, more write and re-read more
// partials at N = 4096 (LayerNorm's two gradients most); at N = 16384 the count changed nothing.
inline int64_t backward_partial_blocks(const RowGeometry& g) {
  constexpr int64_t kPartialBytes = int64_t{132} * 8192 * sizeof(float);
  const int64_t blocks = kPartialBytes / (std::max<int64_t>(g.row_len, 1) * int64_t{sizeof(float)});
  return std::max<int64_t>(1, std::min(g.rows, std::clamp<int64_t>(blocks, 2 * 132, 4 * 132)));
}
inline int64_t backward_workspace_elements(const RowGeometry& g, int gradients) {
  return g.rows > 1 ? backward_partial_blocks(g) * g.row_len * gradients : 0;
}

// The quantizing norms' per-row scale (spec §2.15): amax / 448, amax at least kMinAmax.
inline constexpr float kE4m3Max = 448.0f;
inline constexpr float kMinAmax = 1e-12f;

// The shape rule: normalized_shape non-empty, with no empty dim, equal to x's trailing dims.
RowGeometry resolve_rows(std::string_view op, std::span<const int64_t> x_shape,
                         std::span<const int64_t> normalized_shape);
void check_eps(std::string_view op, double eps);
// GroupRMSNorm's shape rule: x of rank >= 2, normalized_shape its last dim alone, G below 2^31.
void check_group_shape(std::string_view op, std::span<const int64_t> x_shape,
                       std::span<const int64_t> normalized_shape);
// GroupRMSNorm's G (x's second-last dim) for a validated per-group call, 1 otherwise.
int group_count(const RowNormTensors& t);
// The fused add-norms normalize x's last dim.
std::span<const int64_t> last_dim(std::string_view op, std::span<const int64_t> x_shape);

// F.rms_norm(eps=None) on CUDA uses the f32 machine epsilon for f32, f16 and bf16 inputs (spec §6.1).
inline constexpr double kRmsNormDefaultEps = FLT_EPSILON;

// Every check of a call: the shape rule and eps, every tensor on the placement's memory with x's
// dtype (the quantizing norms: y fp8_e4m3, row_scale f32 of x's leading dims), weight and bias of
// the normalized shape (AdaLayerNorm's scale and shift: x's shape; GroupRMSNorm's weight: x's last two
// dims), outputs of x's shape, and the aliasing rule
// (outputs overlap no input, except the fused add-norms' in-place form: y == x and
// residual_out == residual, pointer for pointer). Returns the geometry.
RowGeometry validate_row_norm(std::string_view op, Placement placement, std::span<const int64_t> normalized_shape,
                              double eps, const RowNormTensors& t);

// x's leading dims: the shape of the quantizing norms' row_scale.
std::span<const int64_t> leading_dims(std::span<const int64_t> x_shape, std::span<const int64_t> normalized_shape);

// The op names QKNorm's messages give: the op's, and each norm's ("qk_norm (q)"), as constants since
// building them would cost two strings a call.
struct QKNormNames {
  std::string_view op, q, k;
};

// QKNorm: validate_row_norm of each of the two norms (their messages name the query "q" and the key
// "k"), k of q's dtype, and no output of one overlapping a tensor of the other.
std::pair<RowGeometry, RowGeometry> validate_qk_norm(const QKNormNames& names, Placement placement,
                                                     std::span<const int64_t> normalized_shape, double eps,
                                                     const RowNormTensors& q, const RowNormTensors& k);

// Every check of a backward call: the shape rule; grad_out and grad_x of x's shape and dtype;
// weight, grad_weight and grad_bias of the normalized shape; mean and rstd f32 of x's leading
// dims; no output overlapping any other tensor.
RowGeometry validate_row_norm_backward(std::string_view op, Placement placement,
                                       std::span<const int64_t> normalized_shape, const RowNormBackwardTensors& t);

// Spec §2: `flops_per_element` per element of x, and every tensor's elements once.
Cost row_norm_cost(std::span<const int64_t> x_shape, DType dtype, std::span<const int64_t> normalized_shape,
                   int flops_per_element, int row_tensors, int affine_tensors, int stats_per_row = 0);
// Spec §2.15, 2.16: x and the affine tensors in x's dtype, one fp8 code per element, one f32 scale per row.
Cost quant_norm_cost(std::span<const int64_t> x_shape, DType dtype, std::span<const int64_t> normalized_shape,
                     int flops_per_element, int affine_tensors);

// The CUDA kernels of one statistic on validated tensors (norm_rms.cu, norm_layer.cu).
template <NormKind kKind>
void launch_rows(std::string_view op, const RowGeometry& g, const NormMath& math, const RowNormTensors& t,
                 cudaStream_t stream);
extern template void launch_rows<NormKind::rms>(std::string_view, const RowGeometry&, const NormMath&,
                                                const RowNormTensors&, cudaStream_t);
extern template void launch_rows<NormKind::layer>(std::string_view, const RowGeometry&, const NormMath&,
                                                  const RowNormTensors&, cudaStream_t);
// Two row norms of one statistic and row length (QKNorm's q and k), each with its own weight; no
// bias, residual, statistics or quantization. Few rows run in one launch, first's rows then second's.
template <NormKind kKind>
void launch_row_pair(std::string_view op, const RowGeometry& first_g, const RowGeometry& second_g,
                     const NormMath& math, const RowNormTensors& first, const RowNormTensors& second,
                     cudaStream_t stream);
extern template void launch_row_pair<NormKind::rms>(std::string_view, const RowGeometry&, const RowGeometry&,
                                                    const NormMath&, const RowNormTensors&, const RowNormTensors&,
                                                    cudaStream_t);
template <NormKind kKind>
void launch_rows_backward(std::string_view op, const RowGeometry& g, const RowNormBackwardTensors& t,
                          cudaStream_t stream);
extern template void launch_rows_backward<NormKind::rms>(std::string_view, const RowGeometry&,
                                                         const RowNormBackwardTensors&, cudaStream_t);
extern template void launch_rows_backward<NormKind::layer>(std::string_view, const RowGeometry&,
                                                           const RowNormBackwardTensors&, cudaStream_t);

}  // namespace solops::detail
