// Row norms: the shape rule, the validation of a call, the cost models and the public entry points.
#include <climits>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "norm/row_norm.hpp"
#include "solops/norm.hpp"

namespace solops {
namespace detail {

RowGeometry resolve_rows(std::string_view op, std::span<const int64_t> x_shape,
                         std::span<const int64_t> normalized_shape) {
  require(!normalized_shape.empty(), op, "normalized_shape must be non-empty");
  require(normalized_shape.size() <= x_shape.size(), op, "normalized_shape ", shape_text(normalized_shape),
          " has more dims than x ", shape_text(x_shape));
  checked_product(op, "x", x_shape);  // so that every product of its sizes fits in int64
  const size_t lead = x_shape.size() - normalized_shape.size();
  int64_t row_len = 1;
  for (size_t d = 0; d < normalized_shape.size(); ++d) {
    require(normalized_shape[d] >= 1, op, "normalized_shape ", shape_text(normalized_shape),
            " has an empty dim: every row needs at least one element");
    require(x_shape[lead + d] == normalized_shape[d], op, "normalized_shape ", shape_text(normalized_shape),
            " does not match the trailing dims of x ", shape_text(x_shape));
    row_len *= normalized_shape[d];
    require(row_len <= INT_MAX, op, "normalized_shape ", shape_text(normalized_shape),
            " has 2^31 or more elements: rows are indexed in 32 bits");
  }
  int64_t rows = 1;
  for (size_t d = 0; d < lead; ++d) {
    require(x_shape[d] >= 0, op, "x ", shape_text(x_shape), " has a negative dim");
    rows *= x_shape[d];
  }
  return {rows, static_cast<int>(row_len)};
}

void check_eps(std::string_view op, double eps) {
  require(std::isfinite(eps) && eps >= 0, op, "eps = ", eps, " must be finite and >= 0");
}

void check_group_shape(std::string_view op, std::span<const int64_t> x_shape,
                       std::span<const int64_t> normalized_shape) {
  require(x_shape.size() >= 2, op, "x ", shape_text(x_shape), " must have rank >= 2: it is viewed as [..., G, D]");
  require(normalized_shape.size() == 1, op, "normalized_shape ", shape_text(normalized_shape),
          " must be (D,): each length-D vector is normalized on its own");
  require(x_shape[x_shape.size() - 2] <= INT_MAX, op, "x ", shape_text(x_shape),
          " has 2^31 or more groups: groups are indexed in 32 bits");
}

int group_count(const RowNormTensors& t) {
  return t.affine == AffineRows::per_group ? static_cast<int>(t.x.sizes()[t.x.sizes().size() - 2]) : 1;
}

std::span<const int64_t> last_dim(std::string_view op, std::span<const int64_t> x_shape) {
  require(!x_shape.empty(), op, "x must have at least one dim (the normalized one), got a scalar");
  return x_shape.last(1);
}

namespace {

// What every row-norm call checks of a tensor that may be absent: placement, dtype and shape.
struct TensorChecks {
  std::string_view op;
  Placement placement;

  void operator()(std::string_view name, const TensorRef* tensor, DType dtype, std::span<const int64_t> shape) const {
    if (!tensor) return;
    check_tensor(placement, op, name, *tensor);
    check_dtype(op, name, *tensor, dtype);
    check_shape(op, name, *tensor, shape);
  }
};

// The fused add-norms' aliasing rule: `out` may be the very tensor `in` where may_be_in (the
// in-place form), and otherwise shares no byte with it.
void check_fused_output(std::string_view op, std::string_view out_name, const TensorRef& out,
                        std::string_view in_name, const TensorRef& in, bool may_be_in) {
  if (may_be_in) {
    require(out.data == in.data || !overlaps(out, in), op, out_name, " and ", in_name,
            " overlap in memory without being the same tensor; the in-place form passes ", in_name, " itself as ",
            out_name);
    return;
  }
  require(!overlaps(out, in), op, out_name, " and ", in_name,
          " overlap in memory; the only aliasing allowed is output = x and residual_out = residual (the in-place "
          "form)");
}

}  // namespace

RowGeometry validate_row_norm(std::string_view op, Placement placement, std::span<const int64_t> normalized_shape,
                              double eps, const RowNormTensors& t) {
  const TensorChecks check{op, placement};
  check("x", &t.x, t.x.dtype, t.x.sizes());
  check_float_dtype(op, "x", t.x);
  if (t.affine == AffineRows::per_group) check_group_shape(op, t.x.sizes(), normalized_shape);
  const RowGeometry g = resolve_rows(op, t.x.sizes(), normalized_shape);
  check_eps(op, eps);
  check("residual", t.residual, t.x.dtype, t.x.sizes());
  const bool modulation = t.affine == AffineRows::per_row;
  const std::span<const int64_t> affine_shape = modulation                           ? t.x.sizes()
                                                : t.affine == AffineRows::per_group ? t.x.sizes().last(2)
                                                                                    : normalized_shape;
  const std::string_view weight_name = modulation ? "scale" : "weight", bias_name = modulation ? "shift" : "bias";
  check(weight_name, t.weight, t.x.dtype, affine_shape);
  check(bias_name, t.bias, t.x.dtype, affine_shape);
  check("output", &t.y, t.row_scale ? DType::fp8_e4m3 : t.x.dtype, t.x.sizes());
  check("residual_out", t.residual_out, t.x.dtype, t.x.sizes());
  const std::span<const int64_t> stats_shape = leading_dims(t.x.sizes(), normalized_shape);
  check("mean", t.mean, DType::f32, stats_shape);
  check("rstd", t.rstd, DType::f32, stats_shape);
  check("scale", t.row_scale, DType::f32, stats_shape);

  if (!t.residual) {
    // The row scale first: its overlaps read "<tensor> and scale".
    const NamedTensor outputs[] = {{"scale", t.row_scale}, {"output", &t.y}, {"mean", t.mean}, {"rstd", t.rstd}};
    const NamedTensor tensors[] = {{"x", &t.x},           {weight_name, t.weight}, {bias_name, t.bias},
                                   {"output", &t.y},      {"mean", t.mean},        {"rstd", t.rstd},
                                   {"scale", t.row_scale}};
    check_outputs_apart(op, outputs, tensors);
    return g;
  }
  const std::pair<std::string_view, const TensorRef*> inputs[] = {
      {"x", &t.x}, {"residual", t.residual}, {"weight", t.weight}, {"bias", t.bias}};
  for (const auto& [name, input] : inputs) {
    if (!input) continue;
    check_fused_output(op, "output", t.y, name, *input, name == "x");
    check_fused_output(op, "residual_out", *t.residual_out, name, *input, name == "residual");
  }
  check_fused_output(op, "residual_out", *t.residual_out, "output", t.y, false);
  return g;
}

std::span<const int64_t> leading_dims(std::span<const int64_t> x_shape, std::span<const int64_t> normalized_shape) {
  return x_shape.first(x_shape.size() - normalized_shape.size());
}

std::pair<RowGeometry, RowGeometry> validate_qk_norm(const QKNormNames& names, Placement placement,
                                                     std::span<const int64_t> normalized_shape, double eps,
                                                     const RowNormTensors& q, const RowNormTensors& k) {
  const std::string_view op = names.op;
  const RowGeometry q_rows = validate_row_norm(names.q, placement, normalized_shape, eps, q);
  check_dtype(op, "k", k.x, q.x.dtype);
  const RowGeometry k_rows = validate_row_norm(names.k, placement, normalized_shape, eps, k);
  // Within each norm validate_row_norm has checked the overlaps; these are the ones across.
  check_no_overlap(op, "q_out", q.y, "k", k.x);
  check_no_overlap(op, "k_out", k.y, "q", q.x);
  check_no_overlap(op, "q_out", q.y, "k_out", k.y);
  if (k.weight) check_no_overlap(op, "q_out", q.y, "k_weight", *k.weight);
  if (q.weight) check_no_overlap(op, "k_out", k.y, "q_weight", *q.weight);
  return {q_rows, k_rows};
}

RowGeometry validate_row_norm_backward(std::string_view op, Placement placement,
                                       std::span<const int64_t> normalized_shape, const RowNormBackwardTensors& t) {
  const TensorChecks check{op, placement};
  check("x", &t.x, t.x.dtype, t.x.sizes());
  check_float_dtype(op, "x", t.x);
  const RowGeometry g = resolve_rows(op, t.x.sizes(), normalized_shape);
  const std::span<const int64_t> stats_shape = leading_dims(t.x.sizes(), normalized_shape);
  check("grad_out", &t.grad_out, t.x.dtype, t.x.sizes());
  check("weight", t.weight, t.x.dtype, normalized_shape);
  check("mean", t.mean, DType::f32, stats_shape);
  check("rstd", &t.rstd, DType::f32, stats_shape);
  check("grad_x", &t.grad_x, t.x.dtype, t.x.sizes());
  check("grad_weight", t.grad_weight, t.x.dtype, normalized_shape);
  check("grad_bias", t.grad_bias, t.x.dtype, normalized_shape);
  const NamedTensor outputs[] = {{"grad_x", &t.grad_x}, {"grad_weight", t.grad_weight}, {"grad_bias", t.grad_bias}};
  const NamedTensor tensors[] = {{"grad_out", &t.grad_out}, {"x", &t.x},
                                 {"weight", t.weight},      {"mean", t.mean},
                                 {"rstd", &t.rstd},         {"grad_x", &t.grad_x},
                                 {"grad_weight", t.grad_weight}, {"grad_bias", t.grad_bias}};
  check_outputs_apart(op, outputs, tensors);
  // The workspace holds the partials of the op's parameter gradients (RMSNorm one, LayerNorm two,
  // whichever are asked for: the layout is the kernels'), needed only where one is asked for.
  const bool parameter_gradients = t.grad_weight || t.grad_bias;
  const int gradients = t.mean ? 2 : 1;
  check_workspace(op, placement, parameter_gradients ? backward_workspace_elements(g, gradients) : 0, t.workspace,
                  tensors, t.mean ? "layer_norm_backward_workspace_elements" : "rms_norm_backward_workspace_elements");
  return g;
}

Cost row_norm_cost(std::span<const int64_t> x_shape, DType dtype, std::span<const int64_t> normalized_shape,
                   int flops_per_element, int row_tensors, int affine_tensors, int stats_per_row) {
  const RowGeometry g = resolve_rows("row_norm_cost", x_shape, normalized_shape);
  const double elements = static_cast<double>(g.rows) * g.row_len;
  const double moved = row_tensors * elements + affine_tensors * static_cast<double>(g.row_len);
  return {flops_per_element * elements,
          moved * static_cast<double>(dtype_size(dtype)) + stats_per_row * 4.0 * static_cast<double>(g.rows)};
}

Cost quant_norm_cost(std::span<const int64_t> x_shape, DType dtype, std::span<const int64_t> normalized_shape,
                     int flops_per_element, int affine_tensors) {
  const RowGeometry g = resolve_rows("quant_norm_cost", x_shape, normalized_shape);
  // x and the affine tensors in x's dtype, the f32 scale as one statistic per row; then the codes.
  Cost cost = row_norm_cost(x_shape, dtype, normalized_shape, flops_per_element, 1, affine_tensors, 1);
  cost.bytes += static_cast<double>(g.rows) * g.row_len;
  return cost;
}

}  // namespace detail

namespace {

using detail::NormKind;

double rms_eps(const RMSNorm& p) { return p.eps.value_or(detail::kRmsNormDefaultEps); }

std::vector<int64_t> checked_shape(std::string_view op, std::span<const int64_t> x_shape,
                                   std::span<const int64_t> normalized_shape, double eps) {
  detail::resolve_rows(op, x_shape, normalized_shape);
  detail::check_eps(op, eps);
  return {x_shape.begin(), x_shape.end()};
}

std::vector<int64_t> checked_scale_shape(std::string_view op, std::span<const int64_t> x_shape,
                                         std::span<const int64_t> normalized_shape, double eps) {
  checked_shape(op, x_shape, normalized_shape, eps);
  return norm_stats_shape(x_shape, normalized_shape);
}

void run(std::string_view op, std::span<const int64_t> normalized_shape, const detail::NormMath& math,
         const detail::RowNormTensors& t, cudaStream_t stream) {
  const detail::RowGeometry g =
      detail::validate_row_norm(op, detail::Placement::device, normalized_shape, math.eps, t);
  if (math.kind == NormKind::rms) detail::launch_rows<NormKind::rms>(op, g, math, t, stream);
  else detail::launch_rows<NormKind::layer>(op, g, math, t, stream);
}

}  // namespace

std::vector<int64_t> norm_stats_shape(std::span<const int64_t> x_shape, std::span<const int64_t> normalized_shape) {
  detail::resolve_rows("norm_stats_shape", x_shape, normalized_shape);
  const std::span<const int64_t> lead = detail::leading_dims(x_shape, normalized_shape);
  return {lead.begin(), lead.end()};
}

std::vector<int64_t> rms_norm_output_shape(std::span<const int64_t> x_shape, const RMSNorm& p) {
  return checked_shape("rms_norm", x_shape, p.normalized_shape, rms_eps(p));
}

std::vector<int64_t> layer_norm_output_shape(std::span<const int64_t> x_shape, const LayerNorm& p) {
  return checked_shape("layer_norm", x_shape, p.normalized_shape, p.eps);
}

std::vector<int64_t> gemma_rms_norm_output_shape(std::span<const int64_t> x_shape, const GemmaRMSNorm& p) {
  return checked_shape("gemma_rms_norm", x_shape, p.normalized_shape, p.eps);
}

std::vector<int64_t> fused_add_rms_norm_output_shape(std::span<const int64_t> x_shape, const FusedAddRMSNorm& p) {
  constexpr std::string_view kOp = "fused_add_rms_norm";
  return checked_shape(kOp, x_shape, detail::last_dim(kOp, x_shape), p.eps);
}

std::vector<int64_t> fused_add_layer_norm_output_shape(std::span<const int64_t> x_shape,
                                                       const FusedAddLayerNorm& p) {
  constexpr std::string_view kOp = "fused_add_layer_norm";
  return checked_shape(kOp, x_shape, detail::last_dim(kOp, x_shape), p.eps);
}

std::vector<int64_t> ada_layer_norm_output_shape(std::span<const int64_t> x_shape, const AdaLayerNorm& p) {
  constexpr std::string_view kOp = "ada_layer_norm";
  return checked_shape(kOp, x_shape, detail::last_dim(kOp, x_shape), p.eps);
}

std::vector<int64_t> rms_norm_quant_output_shape(std::span<const int64_t> x_shape, const RMSNormQuant& p) {
  return checked_shape("rms_norm_quant", x_shape, p.normalized_shape, p.eps);
}

std::vector<int64_t> layer_norm_quant_output_shape(std::span<const int64_t> x_shape, const LayerNormQuant& p) {
  return checked_shape("layer_norm_quant", x_shape, p.normalized_shape, p.eps);
}

std::vector<int64_t> rms_norm_quant_scale_shape(std::span<const int64_t> x_shape, const RMSNormQuant& p) {
  return checked_scale_shape("rms_norm_quant", x_shape, p.normalized_shape, p.eps);
}

std::vector<int64_t> layer_norm_quant_scale_shape(std::span<const int64_t> x_shape, const LayerNormQuant& p) {
  return checked_scale_shape("layer_norm_quant", x_shape, p.normalized_shape, p.eps);
}

std::vector<int64_t> group_rms_norm_output_shape(std::span<const int64_t> x_shape, const GroupRMSNorm& p) {
  constexpr std::string_view kOp = "group_rms_norm";
  detail::check_group_shape(kOp, x_shape, p.normalized_shape);
  return checked_shape(kOp, x_shape, p.normalized_shape, p.eps);
}

std::vector<int64_t> qk_norm_output_shape(std::span<const int64_t> x_shape, const QKNorm& p) {
  return checked_shape("qk_norm", x_shape, p.normalized_shape, p.eps);
}

// Spec §2.1, 2.2, 2.17, 2.5, 2.4: FLOPs per element; tensors of x's size (read or written) and
// affine tensors of the row's size.
Cost rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const RMSNorm& p) {
  rms_norm_output_shape(x_shape, p);
  return detail::row_norm_cost(x_shape, dtype, p.normalized_shape, 4, 2, 1);
}

Cost layer_norm_cost(std::span<const int64_t> x_shape, DType dtype, const LayerNorm& p) {
  layer_norm_output_shape(x_shape, p);
  return detail::row_norm_cost(x_shape, dtype, p.normalized_shape, 5, 2, 2);
}

Cost gemma_rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const GemmaRMSNorm& p) {
  gemma_rms_norm_output_shape(x_shape, p);
  return detail::row_norm_cost(x_shape, dtype, p.normalized_shape, 5, 2, 1);
}

Cost fused_add_rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const FusedAddRMSNorm& p) {
  fused_add_rms_norm_output_shape(x_shape, p);
  return detail::row_norm_cost(x_shape, dtype, x_shape.last(1), 5, 4, 1);
}

Cost fused_add_layer_norm_cost(std::span<const int64_t> x_shape, DType dtype, const FusedAddLayerNorm& p) {
  fused_add_layer_norm_output_shape(x_shape, p);
  return detail::row_norm_cost(x_shape, dtype, x_shape.last(1), 6, 4, 2);
}

// Spec §2.3: x, scale, shift read and y written, each of x's size.
Cost ada_layer_norm_cost(std::span<const int64_t> x_shape, DType dtype, const AdaLayerNorm& p) {
  ada_layer_norm_output_shape(x_shape, p);
  return detail::row_norm_cost(x_shape, dtype, x_shape.last(1), 5, 4, 0);
}

// Spec §2.16, 2.15 (the bias present).
Cost rms_norm_quant_cost(std::span<const int64_t> x_shape, DType dtype, const RMSNormQuant& p) {
  rms_norm_quant_output_shape(x_shape, p);
  return detail::quant_norm_cost(x_shape, dtype, p.normalized_shape, 7, 1);
}

Cost layer_norm_quant_cost(std::span<const int64_t> x_shape, DType dtype, const LayerNormQuant& p) {
  layer_norm_quant_output_shape(x_shape, p);
  return detail::quant_norm_cost(x_shape, dtype, p.normalized_shape, 8, 2);
}

// Spec §2.18: RMSNormFwd's cost for each of q and k.
Cost qk_norm_cost(std::span<const int64_t> q_shape, std::span<const int64_t> k_shape, DType dtype, const QKNorm& p) {
  qk_norm_output_shape(q_shape, p);
  qk_norm_output_shape(k_shape, p);
  const Cost q = detail::row_norm_cost(q_shape, dtype, p.normalized_shape, 4, 2, 1);
  const Cost k = detail::row_norm_cost(k_shape, dtype, p.normalized_shape, 4, 2, 1);
  return {q.flops + k.flops, q.bytes + k.bytes};
}

// Spec §2.19: x read and y written, the [G, D] weight once, one f32 rstd per vector.
Cost group_rms_norm_cost(std::span<const int64_t> x_shape, DType dtype, const GroupRMSNorm& p) {
  group_rms_norm_output_shape(x_shape, p);
  Cost cost = detail::row_norm_cost(x_shape, dtype, p.normalized_shape, 4, 2, 0, 1);
  const int64_t weight_elements = x_shape[x_shape.size() - 2] * x_shape.back();
  cost.bytes += static_cast<double>(weight_elements) * static_cast<double>(dtype_size(dtype));
  return cost;
}

// Spec §2.14, 2.13: grad_out, x and grad_x per element; weight and its gradients per column; the
// f32 statistics per row.
Cost rms_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const RMSNormBackward& p) {
  detail::resolve_rows("rms_norm_backward", x_shape, p.normalized_shape);
  return detail::row_norm_cost(x_shape, dtype, p.normalized_shape, 9, 3, 2, 1);
}

Cost layer_norm_backward_cost(std::span<const int64_t> x_shape, DType dtype, const LayerNormBackward& p) {
  detail::resolve_rows("layer_norm_backward", x_shape, p.normalized_shape);
  return detail::row_norm_cost(x_shape, dtype, p.normalized_shape, 12, 3, 3, 2);
}

void rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const RMSNorm& p,
              cudaStream_t stream) {
  run("rms_norm", p.normalized_shape, {NormKind::rms, rms_eps(p)}, {.x = x, .weight = weight, .y = y}, stream);
}

void layer_norm(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                const LayerNorm& p, cudaStream_t stream) {
  run("layer_norm", p.normalized_shape, {NormKind::layer, p.eps}, {.x = x, .weight = weight, .bias = bias, .y = y},
      stream);
}

void rms_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                         const RMSNorm& p, cudaStream_t stream) {
  run("rms_norm_with_stats", p.normalized_shape, {NormKind::rms, rms_eps(p)},
      {.x = x, .weight = weight, .y = y, .rstd = &rstd}, stream);
}

void layer_norm_with_stats(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& y,
                           const TensorRef& mean, const TensorRef& rstd, const LayerNorm& p, cudaStream_t stream) {
  run("layer_norm_with_stats", p.normalized_shape, {NormKind::layer, p.eps},
      {.x = x, .weight = weight, .bias = bias, .y = y, .mean = &mean, .rstd = &rstd}, stream);
}

void group_rms_norm(const TensorRef& x, const TensorRef* weight, const TensorRef& y, const TensorRef& rstd,
                    const GroupRMSNorm& p, cudaStream_t stream) {
  run("group_rms_norm", p.normalized_shape, {NormKind::rms, p.eps},
      {.x = x, .weight = weight, .y = y, .rstd = &rstd, .affine = detail::AffineRows::per_group}, stream);
}

void rms_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight, const TensorRef& rstd,
                       const TensorRef& grad_x, const TensorRef* grad_weight, const TensorRef* workspace,
                       const RMSNormBackward& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "rms_norm_backward";
  const detail::RowNormBackwardTensors t{.grad_out = grad_out, .x = x, .weight = weight, .rstd = rstd,
                                         .grad_x = grad_x, .grad_weight = grad_weight, .workspace = workspace};
  const detail::RowGeometry g = detail::validate_row_norm_backward(kOp, detail::Placement::device,
                                                                   p.normalized_shape, t);
  detail::launch_rows_backward<NormKind::rms>(kOp, g, t, stream);
}

void layer_norm_backward(const TensorRef& grad_out, const TensorRef& x, const TensorRef* weight,
                         const TensorRef& mean, const TensorRef& rstd, const TensorRef& grad_x,
                         const TensorRef* grad_weight, const TensorRef* grad_bias, const TensorRef* workspace,
                         const LayerNormBackward& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "layer_norm_backward";
  const detail::RowNormBackwardTensors t{.grad_out = grad_out, .x = x, .weight = weight, .mean = &mean,
                                         .rstd = rstd, .grad_x = grad_x, .grad_weight = grad_weight,
                                         .grad_bias = grad_bias, .workspace = workspace};
  const detail::RowGeometry g = detail::validate_row_norm_backward(kOp, detail::Placement::device,
                                                                   p.normalized_shape, t);
  detail::launch_rows_backward<NormKind::layer>(kOp, g, t, stream);
}

int64_t rms_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const RMSNormBackward& p) {
  return detail::backward_workspace_elements(detail::resolve_rows("rms_norm_backward", x_shape, p.normalized_shape), 1);
}

int64_t layer_norm_backward_workspace_elements(std::span<const int64_t> x_shape, const LayerNormBackward& p) {
  return detail::backward_workspace_elements(detail::resolve_rows("layer_norm_backward", x_shape, p.normalized_shape),
                                             2);
}

void gemma_rms_norm(const TensorRef& x, const TensorRef& weight, const TensorRef& y, const GemmaRMSNorm& p,
                    cudaStream_t stream) {
  run("gemma_rms_norm", p.normalized_shape, {NormKind::rms, p.eps, 1.0f}, {.x = x, .weight = &weight, .y = y},
      stream);
}

void fused_add_rms_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight, const TensorRef& output,
                        const TensorRef& residual_out, const FusedAddRMSNorm& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "fused_add_rms_norm";
  run(kOp, detail::last_dim(kOp, x.sizes()), {NormKind::rms, p.eps},
      {.x = x, .residual = &residual, .weight = weight, .y = output, .residual_out = &residual_out}, stream);
}

void fused_add_layer_norm(const TensorRef& x, const TensorRef& residual, const TensorRef* weight,
                          const TensorRef* bias, const TensorRef& output, const TensorRef& residual_out,
                          const FusedAddLayerNorm& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "fused_add_layer_norm";
  run(kOp, detail::last_dim(kOp, x.sizes()), {NormKind::layer, p.eps},
      {.x = x, .residual = &residual, .weight = weight, .bias = bias, .y = output, .residual_out = &residual_out},
      stream);
}

void ada_layer_norm(const TensorRef& x, const TensorRef& scale, const TensorRef& shift, const TensorRef& y,
                    const AdaLayerNorm& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "ada_layer_norm";
  run(kOp, detail::last_dim(kOp, x.sizes()), {NormKind::layer, p.eps},
      {.x = x, .weight = &scale, .bias = &shift, .y = y, .affine = detail::AffineRows::per_row}, stream);
}

void rms_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef& q, const TensorRef& scale,
                    const RMSNormQuant& p, cudaStream_t stream) {
  run("rms_norm_quant", p.normalized_shape, {NormKind::rms, p.eps},
      {.x = x, .weight = weight, .y = q, .row_scale = &scale}, stream);
}

void layer_norm_quant(const TensorRef& x, const TensorRef* weight, const TensorRef* bias, const TensorRef& q,
                      const TensorRef& scale, const LayerNormQuant& p, cudaStream_t stream) {
  run("layer_norm_quant", p.normalized_shape, {NormKind::layer, p.eps},
      {.x = x, .weight = weight, .bias = bias, .y = q, .row_scale = &scale}, stream);
}

void qk_norm(const TensorRef& q, const TensorRef& k, const TensorRef* q_weight, const TensorRef* k_weight,
             const TensorRef& q_out, const TensorRef& k_out, const QKNorm& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "qk_norm";
  const detail::RowNormTensors q_rows{.x = q, .weight = q_weight, .y = q_out};
  const detail::RowNormTensors k_rows{.x = k, .weight = k_weight, .y = k_out};
  const auto [q_geometry, k_geometry] =
      detail::validate_qk_norm({kOp, "qk_norm (q)", "qk_norm (k)"}, detail::Placement::device, p.normalized_shape,
                               p.eps, q_rows, k_rows);
  // Few rows (decode) in one launch of the RMSNorm kernel over q's rows and then k's: as two
  // launches, a decode step took two kernels' latency, twice RMSNorm's.
  detail::launch_row_pair<NormKind::rms>(kOp, q_geometry, k_geometry, {NormKind::rms, p.eps}, q_rows, k_rows, stream);
}

}  // namespace solops
