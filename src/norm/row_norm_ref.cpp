// CPU references of the row norms (spec §2.1, 2.2, 2.3, 2.4, 2.5, 2.15, 2.16, 2.17): the executable
// specification. Statistics in float64; the fused add-norms round x + residual to the dtype
// (residual_out) and normalize that rounded sum, as the spec's reference does. The quantizing norms
// keep y in float64 and divide it by the scale as stored (f32), which the codes dequantize with.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/host_values.hpp"
#include "norm/row_norm.hpp"
#include "solops/reference.hpp"

namespace solops::reference {
namespace {

using detail::NormKind;

void reference_row_norm(std::string_view op, std::span<const int64_t> normalized_shape, const detail::NormMath& math,
                        const detail::RowNormTensors& t) {
  const detail::RowGeometry g =
      detail::validate_row_norm(op, detail::Placement::host, normalized_shape, math.eps, t);
  const int64_t n = g.row_len;
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
    const int64_t affine_first = t.modulation ? first : 0;
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

}  // namespace

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
                     {.x = x, .weight = &scale, .bias = &shift, .y = y, .modulation = true});
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

}  // namespace solops::reference
