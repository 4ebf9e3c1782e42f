// CPU references of the row norms (spec §2.1, 2.2, 2.3, 2.4, 2.5, 2.13, 2.14, 2.15, 2.16, 2.17,
// 2.18, 2.19): the executable specification. Statistics in float64; the fused add-norms round
// x + residual to the dtype (residual_out) and normalize that rounded sum, as the spec's reference
// does. The quantizing norms keep y in float64 and divide it by the scale as stored (f32), which the
// codes dequantize with.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/host_values.hpp"
#include "norm/row_norm.hpp"
#include "solops/reference.hpp"

namespace solops::reference {
namespace {

using detail::NormKind;

// Normalizes the rows of validated tensors.
void normalize_rows(const detail::RowGeometry& g, const detail::NormMath& math, const detail::RowNormTensors& t) {
  const int64_t n = g.row_len;
  const int64_t groups = detail::group_count(t);
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t m = 0; m < g.rows; ++m) {
    const int64_t first = m * n;
    // The whole row is read before anything is written: the in-place form may alias them.
    for (int64_t j = 0; j < n; ++j) {
      row[j] = detail::load_value(t.x, first + j);
      if (t.residual) row[j] += detail::load_value(*t.residual, first + j);
    }
    if (t.residual) {
      for (int64_t j = 0; j < n; ++j) {
        detail::store_value(*t.residual_out, first + j, row[j]);
        row[j] = detail::load_value(*t.residual_out, first + j);
      }
    }
    double mean = 0;
    if (math.kind == NormKind::layer) {
      for (double v : row) mean += v;
      mean /= static_cast<double>(n);
    }
    double squares = 0;
    for (double v : row) squares += (v - mean) * (v - mean);
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(n) + math.eps);
    if (t.mean) detail::store_value(*t.mean, m, mean);
    if (t.rstd) detail::store_value(*t.rstd, m, inv_std);
    const int64_t affine_first = t.affine == detail::AffineRows::per_row ? first : m % groups * n;
    for (int64_t j = 0; j < n; ++j) {
      const double scale = t.weight ? math.weight_offset + detail::load_value(*t.weight, affine_first + j) : 1.0;
      const double shift = t.bias ? detail::load_value(*t.bias, affine_first + j) : 0.0;
      row[j] = (row[j] - mean) * inv_std * scale + shift;
    }
    if (t.row_scale) {
      // NaN wins both maxima, as torch's amax and clamp_min propagate it.
      double amax = 0;
      for (double v : row) amax = std::isnan(amax) ? amax : std::max(std::abs(v), amax);
      detail::store_value(*t.row_scale, m, std::max(amax, double{detail::kMinAmax}) / detail::kE4m3Max);
      const double row_scale = detail::load_value(*t.row_scale, m);
      for (double& v : row) v /= row_scale;
    }
    for (int64_t j = 0; j < n; ++j) detail::store_value(t.y, first + j, row[j]);
  }
}

void reference_row_norm(std::string_view op, std::span<const int64_t> normalized_shape, const detail::NormMath& math,
                        const detail::RowNormTensors& t) {
  normalize_rows(detail::validate_row_norm(op, detail::Placement::host, normalized_shape, math.eps, t), math, t);
}

// The gradients in float64 from the given statistics; the column sums are rounded once at the end.
void reference_row_norm_backward(std::string_view op, NormKind kind, std::span<const int64_t> normalized_shape,
                                 const detail::RowNormBackwardTensors& t) {
  const detail::RowGeometry g =
      detail::validate_row_norm_backward(op, detail::Placement::host, normalized_shape, t);
  const int64_t n = g.row_len;
  std::vector<double> normalized(static_cast<size_t>(n)), scaled(static_cast<size_t>(n));
  std::vector<double> weight_sum(static_cast<size_t>(n)), bias_sum(static_cast<size_t>(n));
  for (int64_t m = 0; m < g.rows; ++m) {
    const int64_t first = m * n;
    const double mean = t.mean ? detail::load_value(*t.mean, m) : 0.0;
    const double rstd = detail::load_value(t.rstd, m);
    double scaled_mean = 0, projection = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double dy = detail::load_value(t.grad_out, first + j);
      normalized[j] = (detail::load_value(t.x, first + j) - mean) * rstd;
      scaled[j] = dy * (t.weight ? detail::load_value(*t.weight, j) : 1.0);
      scaled_mean += scaled[j];
      projection += scaled[j] * normalized[j];
      weight_sum[j] += dy * normalized[j];
      bias_sum[j] += dy;
    }
    scaled_mean = kind == NormKind::layer ? scaled_mean / static_cast<double>(n) : 0.0;
    projection /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j) {
      detail::store_value(t.grad_x, first + j, rstd * (scaled[j] - scaled_mean - normalized[j] * projection));
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    if (t.grad_weight) detail::store_value(*t.grad_weight, j, weight_sum[j]);
    if (t.grad_bias) detail::store_value(*t.grad_bias, j, bias_sum[j]);
  }
}

}  // namespace

void rms_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                         const RMSNorm& p) {
  reference_row_norm("reference::rms_norm_with_stats", p.normalized_shape,
                     {NormKind::rms, p.eps.value_or(detail::kRmsNormDefaultEps)},
                     {.x = x, .weight = weight, .y = y, .rstd = &rstd});
}

void group_rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                    const GroupRMSNorm& p) {
  reference_row_norm("reference::group_rms_norm", p.normalized_shape, {NormKind::rms, p.eps},
                     {.x = x, .weight = weight, .y = y, .rstd = &rstd, .affine = detail::AffineRows::per_group});
}

void layer_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                           const TensorRef& mean, const TensorRef& rstd, const LayerNorm& p) {
  reference_row_norm("reference::layer_norm_with_stats", p.normalized_shape, {NormKind::layer, p.eps},
                     {.x = x, .weight = weight, .bias = bias, .y = y, .mean = &mean, .rstd = &rstd});
}

void rms_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight, const TensorRef& rstd,
                       const TensorRef& grad_x, const TensorRef* grad_weight, const RMSNormBackward& p) {
  reference_row_norm_backward(
      "reference::rms_norm_backward", NormKind::rms, p.normalized_shape,
      {.grad_out = grad_out, .x = x, .weight = weight, .rstd = rstd, .grad_x = grad_x, .grad_weight = grad_weight});
}

void layer_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const LayerNormBackward& p) {
  reference_row_norm_backward("reference::layer_norm_backward", NormKind::layer, p.normalized_shape,
                              {.grad_out = grad_out, .x = x, .weight = weight, .mean = &mean, .rstd = rstd,
                               .grad_x = grad_x, .grad_weight = grad_weight, .grad_bias = grad_bias});
}

void rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const RMSNorm& p) {
  reference_row_norm("reference::rms_norm", p.normalized_shape,
                     {NormKind::rms, p.eps.value_or(detail::kRmsNormDefaultEps)}, {.x = x, .weight = weight, .y = y});
}

void layer_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const LayerNorm& p) {
  reference_row_norm("reference::layer_norm", p.normalized_shape, {NormKind::layer, p.eps},
                     {.x = x, .weight = weight, .bias = bias, .y = y});
}

void gemma_rms_norm(const TensorRef& x, const TensorRef& weight, const TensorRef& y, const GemmaRMSNorm& p) {
  reference_row_norm("reference::gemma_rms_norm", p.normalized_shape, {NormKind::rms, p.eps, 1.0f},
                     {.x = x, .weight = &weight, .y = y});
}

void fused_add_rms_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight,
                        const TensorRef& output, const TensorRef& residual_out, const FusedAddRMSNorm& p) {
  constexpr std::string_view kOp = "reference::fused_add_rms_norm";
  reference_row_norm(kOp, detail::last_dim(kOp, x.sizes()), {NormKind::rms, p.eps},
                     {.x = x, .residual = &residual, .weight = weight, .y = output, .residual_out = &residual_out});
}

void fused_add_layer_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight,
                          const TensorRef* bias, const TensorRef& output, const TensorRef& residual_out,
                          const FusedAddLayerNorm& p) {
  constexpr std::string_view kOp = "reference::fused_add_layer_norm";
  reference_row_norm(kOp, detail::last_dim(kOp, x.sizes()), {NormKind::layer, p.eps},
                     {.x = x, .residual = &residual, .weight = weight, .bias = bias, .y = output,
                      .residual_out = &residual_out});
}

void ada_layer_norm(const TensorRef& x, const TensorRef& scale, const TensorRef& shift, const TensorRef& y,
                    const AdaLayerNorm& p) {
  constexpr std::string_view kOp = "reference::ada_layer_norm";
  reference_row_norm(kOp, detail::last_dim(kOp, x.sizes()), {NormKind::layer, p.eps},
                     {.x = x, .weight = &scale, .bias = &shift, .y = y, .affine = detail::AffineRows::per_row});
}

void rms_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef& q, const TensorRef& scale,
                    const RMSNormQuant& p) {
  reference_row_norm("reference::rms_norm_quant", p.normalized_shape, {NormKind::rms, p.eps},
                     {.x = x, .weight = weight, .y = q, .row_scale = &scale});
}

void layer_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& q,
                      const TensorRef& scale, const LayerNormQuant& p) {
  reference_row_norm("reference::layer_norm_quant", p.normalized_shape, {NormKind::layer, p.eps},
                     {.x = x, .weight = weight, .bias = bias, .y = q, .row_scale = &scale});
}

void qk_norm(const TensorRef& q, const TensorRef& k, const TensorRef* q_weight, const TensorRef* k_weight,
             const TensorRef& q_out, const TensorRef& k_out, const QKNorm& p) {
  const detail::RowNormTensors q_rows{.x = q, .weight = q_weight, .y = q_out};
  const detail::RowNormTensors k_rows{.x = k, .weight = k_weight, .y = k_out};
  const auto [q_geometry, k_geometry] =
      detail::validate_qk_norm({"reference::qk_norm", "reference::qk_norm (q)", "reference::qk_norm (k)"},
                               detail::Placement::host, p.normalized_shape, p.eps, q_rows, k_rows);
  const detail::NormMath math{NormKind::rms, p.eps};
  normalize_rows(q_geometry, math, q_rows);
  normalize_rows(k_geometry, math, k_rows);
}

}  // namespace solops::reference
