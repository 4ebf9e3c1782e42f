// L1NormFwd and L2NormFwd: the dims rule, the reduction plan, the validation of a call, the cost
// model and the entry point.
#include <algorithm>

#include "norm/vector_norm.hpp"

namespace solops {
namespace detail {
namespace {

// The split of each output's reduction: about kTargetBlocks blocks in all (several waves of 132
// SMs), none with fewer than kMinChunk elements (a block's loads must outweigh its launch and
// reduction).
constexpr int64_t kTargetBlocks = 1024;
constexpr int64_t kMinChunk = 8192;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

ReductionPlan plan_vector_norm(std::string_view op, std::span<const int64_t> x_shape, const VectorNorm& p) {
  require(p.ord == 1 || p.ord == 2, op, "ord = ", p.ord, " is not supported: L1NormFwd takes 1, L2NormFwd 2");
  const int rank = static_cast<int>(x_shape.size());
  require(rank <= kMaxRank, op, "x ", shape_string(x_shape), " has more than ", kMaxRank, " dims");
  for (int64_t size : x_shape) require(size >= 0, op, "x ", shape_string(x_shape), " has a negative dim");
  ReductionPlan plan;
  plan.is_reduced.assign(static_cast<size_t>(rank), p.dim.empty());
  for (int64_t d : p.dim) {
    require(d >= -rank && d < rank, op, "dim ", d, " is out of range for x ", shape_string(x_shape), " (rank ",
            rank, ")");
    const auto wrapped = static_cast<size_t>(d < 0 ? d + rank : d);
    require(!plan.is_reduced[wrapped], op, "dim ", shape_string(p.dim), " names dim ", wrapped, " twice");
    plan.is_reduced[wrapped] = true;
  }
  plan.outputs = plan.reduced = 1;
  // Merged groups, outer to inner; dims of size 1 merge with anything.
  int64_t stride = 1;
  std::vector<std::pair<bool, std::pair<int64_t, int64_t>>> groups;  // reduced?, (size, innermost stride)
  for (int d = rank - 1; d >= 0; --d) {
    const int64_t size = x_shape[static_cast<size_t>(d)];
    const bool reduced = plan.is_reduced[static_cast<size_t>(d)];
    (reduced ? plan.reduced : plan.outputs) *= size;
    if (size != 1) {
      if (!groups.empty() && groups.back().first == reduced) groups.back().second.first *= size;
      else groups.push_back({reduced, {size, stride}});
    }
    stride *= size;
  }
  for (int d = 0; d < rank; ++d) {
    if (!plan.is_reduced[static_cast<size_t>(d)]) plan.output_shape.push_back(x_shape[static_cast<size_t>(d)]);
    else if (p.keepdim) plan.output_shape.push_back(1);
  }
  for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
    const auto [size, group_stride] = it->second;
    int& count = it->first ? plan.reduced_rank : plan.kept_rank;
    (it->first ? plan.reduced_sizes : plan.kept_sizes)[static_cast<size_t>(count)] = size;
    (it->first ? plan.reduced_strides : plan.kept_strides)[static_cast<size_t>(count)] = group_stride;
    ++count;
  }
  // An empty reduction keeps inner = 1: the kernels divide by it.
  if (plan.reduced_rank > 0 && plan.reduced > 0) {
    plan.inner = plan.reduced_sizes[static_cast<size_t>(plan.reduced_rank - 1)];
    plan.inner_stride = plan.reduced_strides[static_cast<size_t>(plan.reduced_rank - 1)];
  }
  plan.splits = std::max<int64_t>(
      1, std::min(ceil_div(kTargetBlocks, std::max<int64_t>(plan.outputs, 1)), ceil_div(plan.reduced, kMinChunk)));
  return plan;
}

ReductionPlan validate_vector_norm(std::string_view op, Placement placement, const TensorRef& x, const TensorRef& y,
                                   const TensorRef* workspace, const VectorNorm& p) {
  const auto check_tensor = placement == Placement::device ? check_device_tensor : check_host_tensor;
  check_tensor(op, "x", x);
  check_float_dtype(op, "x", x);
  const ReductionPlan plan = plan_vector_norm(op, x.sizes(), p);
  check_tensor(op, "output", y);
  check_dtype(op, "output", y, x.dtype);
  check_shape(op, "output", y, plan.output_shape);
  check_no_overlap(op, "x", x, "output", y);
  const int64_t needed = plan.workspace_elements();
  if (workspace) {
    check_tensor(op, "workspace", *workspace);
    check_dtype(op, "workspace", *workspace, DType::f32);
    require(workspace->numel() >= needed, op, "workspace has ", workspace->numel(), " elements, fewer than the ",
            needed, " this call needs (vector_norm_workspace_elements)");
    check_no_overlap(op, "x", x, "workspace", *workspace);
    check_no_overlap(op, "output", y, "workspace", *workspace);
  } else {
    require(needed == 0 || placement == Placement::host, op, "workspace is null but this call needs ", needed,
            " f32 elements (vector_norm_workspace_elements)");
  }
  return plan;
}

}  // namespace detail

std::vector<int64_t> vector_norm_output_shape(std::span<const int64_t> x_shape, const VectorNorm& p) {
  return detail::plan_vector_norm("vector_norm", x_shape, p).output_shape;
}

int64_t vector_norm_workspace_elements(std::span<const int64_t> x_shape, const VectorNorm& p) {
  return detail::plan_vector_norm("vector_norm", x_shape, p).workspace_elements();
}

Cost vector_norm_cost(std::span<const int64_t> x_shape, DType dtype, const VectorNorm& p) {
  const detail::ReductionPlan plan = detail::plan_vector_norm("vector_norm_cost", x_shape, p);
  const auto m = static_cast<double>(plan.outputs), n = static_cast<double>(plan.reduced);
  return {2 * m * n + (p.ord == 2 ? m : 0.0), (m * n + m) * static_cast<double>(dtype_size(dtype))};
}

void vector_norm(const TensorRef& x, const TensorRef& y, const TensorRef* workspace, const VectorNorm& p,
                 cudaStream_t stream) {
  constexpr std::string_view kOp = "vector_norm";
  const detail::ReductionPlan plan = detail::validate_vector_norm(kOp, detail::Placement::device, x, y, workspace, p);
  detail::launch_vector_norm(kOp, plan, p.ord, x, y, workspace, stream);
}

}  // namespace solops
