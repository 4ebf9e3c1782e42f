// TopkSelectorFwd: the shape rule, the validation of a call, the cost model and the entry point.
#include <climits>

#include "topk/topk_selector.hpp"

namespace solops {
namespace detail {

TopkGeometry resolve_topk_selector(std::string_view op, std::span<const int64_t> index_score_shape,
                                   const TopkSelector& p) {
  const std::span<const int64_t> shape = index_score_shape;
  require(shape.size() == 4, op, "index_score ", shape_text(shape), " must be 4-D [B, S, S_kv, G]");
  for (int64_t size : shape) require(size >= 0, op, "index_score ", shape_text(shape), " has a negative dim");
  checked_product(op, "index_score", shape);
  require(shape[3] >= 1, op, "index_score ", shape_text(shape), " has G = 0 kv groups (only B and S may be 0)");
  require(shape[2] <= INT_MAX, op, "index_score has S_kv = ", shape[2],
          " keys, more than int32 positions address (2^31 - 1)");
  require(p.topk >= 1, op, "topk = ", p.topk, " must be >= 1");
  require(p.topk <= shape[2], op, "topk = ", p.topk, " must be <= S_kv = ", shape[2]);
  return {.batch = shape[0], .queries = shape[1], .keys = shape[2], .groups = shape[3], .topk = p.topk};
}

TopkGeometry validate_topk_selector(std::string_view op, Placement placement, const TopkSelectorTensors& t,
                                    const TopkSelector& p) {
  check_tensor(placement, op, "index_score", t.index_score);
  check_float_dtype(op, "index_score", t.index_score);
  const TopkGeometry g = resolve_topk_selector(op, t.index_score.sizes(), p);
  const int64_t rows[] = {g.batch, g.queries};
  const NamedTensor inputs[] = {{"index_score", &t.index_score}, {"starts", t.starts}, {"ends", t.ends}};
  for (const auto& [name, window] : std::span(inputs).subspan(1)) {
    if (!window) continue;
    check_tensor(placement, op, name, *window);
    check_dtype(op, name, *window, DType::i32);
    check_shape(op, name, *window, rows);
  }
  const int64_t output[] = {g.batch, g.queries, g.groups, g.topk};
  check_tensor(placement, op, "indexes", t.indexes);
  check_dtype(op, "indexes", t.indexes, DType::i32);
  check_shape(op, "indexes", t.indexes, output);
  const NamedTensor outputs[] = {{"indexes", &t.indexes}};
  check_outputs_apart(op, outputs, inputs);
  return g;
}

}  // namespace detail

std::vector<int64_t> topk_selector_output_shape(std::span<const int64_t> index_score_shape, const TopkSelector& p) {
  const detail::TopkGeometry g = detail::resolve_topk_selector("topk_selector", index_score_shape, p);
  return {g.batch, g.queries, g.groups, g.topk};
}

Cost topk_selector_cost(std::span<const int64_t> index_score_shape, DType dtype, const TopkSelector& p) {
  const detail::TopkGeometry g = detail::resolve_topk_selector("topk_selector_cost", index_score_shape, p);
  const auto rows = static_cast<double>(g.batch * g.queries);
  const double scores = rows * static_cast<double>(g.keys * g.groups);
  const double windows = rows * 2 * 4;
  const double indexes = rows * static_cast<double>(g.groups * g.topk) * 4;
  return {scores, scores * static_cast<double>(dtype_size(dtype)) + windows + indexes};
}

void topk_selector(const TensorRef& index_score, const TensorRef* starts, const TensorRef* ends,
                   const TensorRef& indexes, const TopkSelector& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "topk_selector";
  const detail::TopkSelectorTensors t{index_score, starts, ends, indexes};
  const detail::TopkGeometry g = detail::validate_topk_selector(kOp, detail::Placement::device, t, p);
  detail::launch_topk_selector(kOp, g, t, p.sorted, stream);
}

}  // namespace solops
