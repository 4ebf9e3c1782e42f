// CPU references of the row norms (spec §2.1, 2.2, 2.4, 2.5, 2.17, 2.18): the executable specification.
// Statistics in float64; the fused add-norms round x + residual to the dtype (residual_out) and
// normalize that rounded sum, as the spec's reference does.
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
    for (int64_t j = 0; j < n; ++j) {
      const double scale = t.weight ? math.weight_offset + detail::load_value(*t.weight, j) : 1.0;
      const double shift = t.bias ? detail::load_value(*t.bias, j) : 0.0;
      detail::store_value(t.y, first + j, (row[j] - mean) * inv_std * scale + shift);
    }
  }
}

void reference_row_norm(std::string_view op, std::span<const int64_t> normalized_shape, const detail::NormMath& math,
                        const detail::RowNormTensors& t) {
  normalize_rows(detail::validate_row_norm(op, detail::Placement::host, normalized_shape, math.eps, t), math, t);
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

void qk_norm(const TensorRef& q, const TensorRef& k, const TensorRef* q_weight, const TensorRef* k_weight,
             const TensorRef& q_out, const TensorRef& k_out, const QKNorm& p) {
  const detail::RowNormTensors q_rows{.x = q, .weight = q_weight, .y = q_out};
  const detail::RowNormTensors k_rows{.x = k, .weight = k_weight, .y = k_out};
  const auto [q_geometry, k_geometry] = detail::validate_qk_norm("reference::qk_norm", detail::Placement::host,
                                                                 p.normalized_shape, p.eps, q_rows, k_rows);
  const detail::NormMath math{NormKind::rms, p.eps};
  normalize_rows(q_geometry, math, q_rows);
  normalize_rows(k_geometry, math, k_rows);
}

}  // namespace solops::reference
