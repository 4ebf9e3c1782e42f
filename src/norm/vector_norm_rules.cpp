// L1NormFwd, L2NormFwd and WeightNormFwd: the dims rules, the reduction plan, the validation of a
// call, the cost models and the entry points.
#include <algorithm>

#include "core/integer.hpp"
#include "norm/vector_norm.hpp"

namespace solops {
namespace detail {
namespace {

// The split of each output's reduction, a function of the shape alone. Outputs that each reduce
// one contiguous run (full reductions, reductions over trailing dims) split as torch.compile splits
// them: about kRunTargetBlocks blocks in all, none with fewer than kRunMinChunk elements (8192 half
// elements: a round of loads of a block), in one wave of eight blocks an SM whose partials a second
// kernel adds. Other layouts split over about kTargetBlocks blocks (four 256-thread blocks
// on each of the H200's 132 SMs, all resident at once, so that the split reductions can meet at a
// grid-wide barrier and no partial wave of short blocks trails the rest), none with fewer than
// kMinChunk elements: a chunk of 16384 half elements is eight 16-byte loads a thread of 256, all in
// flight together. Chunks are whole multiples of kChunkAlign elements, so that every chunk of a run
// that starts on a 16-byte boundary does too.
constexpr int64_t kRunTargetBlocks = 1024;
constexpr int64_t kRunMinChunk = 8192;
constexpr int64_t kTargetBlocks = 4 * 132;
constexpr int64_t kMinChunk = 16384;
constexpr int64_t kChunkAlign = 64;
}  // namespace

ReductionPlan plan_vector_norm(std::string_view op, std::span<const int64_t> x_shape, const VectorNorm& p) {
  require(p.ord == 1 || p.ord == 2, op, "ord = ", p.ord, " is not supported: L1NormFwd takes 1, L2NormFwd 2");
  const int rank = static_cast<int>(x_shape.size());
  require(rank <= kMaxRank, op, "x ", shape_text(x_shape), " has more than ", kMaxRank, " dims");
  for (int64_t size : x_shape) require(size >= 0, op, "x ", shape_text(x_shape), " has a negative dim");
  checked_product(op, "x", x_shape);  // so that every product of its sizes fits in int64
  ReductionPlan plan;
  plan.is_reduced = std::vector<bool>(static_cast<size_t>(rank), p.dim.empty());
  for (int64_t d : p.dim) {
    require(d >= -rank && d < rank, op, "dim ", d, " is out of range for x ", shape_text(x_shape), " (rank ",
            rank, ")");
    const auto wrapped = static_cast<size_t>(d < 0 ? d + rank : d);
    require(!plan.is_reduced[wrapped], op, "dim ", shape_text(p.dim), " names dim ", wrapped, " twice");
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
  const int64_t target_blocks = plan.one_run_an_output() ? kRunTargetBlocks : kTargetBlocks;
  const int64_t min_chunk = plan.one_run_an_output() ? kRunMinChunk : kMinChunk;
  const int64_t wanted_splits = std::max<int64_t>(
      1, std::min(ceil_div(target_blocks, std::max<int64_t>(plan.outputs, 1)), ceil_div(plan.reduced, min_chunk)));
  plan.chunk = std::max(kChunkAlign, ceil_div(ceil_div(plan.reduced, wanted_splits), kChunkAlign) * kChunkAlign);
  plan.splits = std::max<int64_t>(1, ceil_div(plan.reduced, plan.chunk));
  return plan;
}

ReductionPlan validate_vector_norm(std::string_view op, Placement placement, const TensorRef& x, const TensorRef& y,
                                   const TensorRef* workspace, const VectorNorm& p) {
  check_tensor(placement, op, "x", x);
  check_float_dtype(op, "x", x);
  const ReductionPlan plan = plan_vector_norm(op, x.sizes(), p);
  check_tensor(placement, op, "output", y);
  check_dtype(op, "output", y, x.dtype);
  check_shape(op, "output", y, plan.output_shape);
  check_no_overlap(op, "x", x, "output", y);
  const NamedTensor tensors[] = {{"x", &x}, {"output", &y}};
  check_workspace(op, placement, plan.workspace_elements(), workspace, tensors, "vector_norm_workspace_elements");
  return plan;
}

WeightNormPlan plan_weight_norm(std::string_view op, std::span<const int64_t> x_shape, const WeightNorm& p) {
  const auto rank = static_cast<int64_t>(x_shape.size());
  checked_product(op, "v", x_shape);  // so that every product of its sizes fits in int64
  // Spec §2.20 asks for the fork's wrapping (-1 = the last axis); §6.7, which this repo follows,
  // takes torch._weight_norm's: -1 is one norm over the whole tensor and no other negative dim exists.
  require(p.dim >= -1 && p.dim < rank, op, "dim ", p.dim, " is out of range for v ", shape_text(x_shape),
          ": it must be in [0, ", rank, ") or -1 (the whole tensor)");
  VectorNorm reduction{.ord = 2};
  for (int64_t d = 0; d < rank; ++d) {
    if (d != p.dim) reduction.dim.push_back(d);
  }
  WeightNormPlan plan;
  if (p.dim >= 0) {
    plan.slices = x_shape[static_cast<size_t>(p.dim)];
    for (auto d = static_cast<size_t>(p.dim) + 1; d < x_shape.size(); ++d) plan.inner *= x_shape[d];
  } else {
    for (int64_t size : x_shape) plan.inner *= size;
  }
  // An empty dim list reduces every dim, so a rank-1 v (each norm is one |v_i|) reduces a size-1
  // dim appended to it instead.
  if (rank == 1 && p.dim == 0) {
    const int64_t column[] = {x_shape[0], 1};
    plan.norms = plan_vector_norm(op, column, {.ord = 2, .dim = {1}});
  } else {
    plan.norms = plan_vector_norm(op, x_shape, reduction);
  }
  return plan;
}

WeightNormPlan validate_weight_norm(std::string_view op, Placement placement, const TensorRef& v, const TensorRef& g,
                                    const TensorRef& y, const TensorRef& norm, const TensorRef* workspace,
                                    const WeightNorm& p) {
  check_tensor(placement, op, "v", v);
  check_float_dtype(op, "v", v);
  const WeightNormPlan plan = plan_weight_norm(op, v.sizes(), p);
  check_tensor(placement, op, "g", g);
  check_dtype(op, "g", g, v.dtype);
  const std::span<const int64_t> g_shape = g.sizes();
  const auto spread = std::count_if(g_shape.begin(), g_shape.end(), [](int64_t size) { return size != 1; });
  require(g.numel() == plan.slices && spread <= 1, op, "g ", shape_text(g_shape), " must hold ", plan.slices,
          " values along one dim (v.shape[dim], or 1 for dim -1): [n] or PyTorch's [1, .., n, .., 1]");
  check_tensor(placement, op, "output", y);
  check_dtype(op, "output", y, v.dtype);
  check_shape(op, "output", y, v.sizes());
  check_tensor(placement, op, "norm", norm);
  check_dtype(op, "norm", norm, DType::f32);
  check_shape(op, "norm", norm, std::vector<int64_t>{plan.slices});
  for (const NamedTensor& input : {NamedTensor{"v", &v}, NamedTensor{"g", &g}}) {
    check_no_overlap(op, input.name, *input.tensor, "output", y);
    check_no_overlap(op, input.name, *input.tensor, "norm", norm);
  }
  check_no_overlap(op, "output", y, "norm", norm);
  const NamedTensor tensors[] = {{"v", &v}, {"g", &g}, {"output", &y}, {"norm", &norm}};
  check_workspace(op, placement, plan.norms.workspace_elements(), workspace, tensors,
                  "weight_norm_workspace_elements");
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

std::vector<int64_t> weight_norm_norm_shape(std::span<const int64_t> x_shape, const WeightNorm& p) {
  return {detail::plan_weight_norm("weight_norm", x_shape, p).slices};
}

int64_t weight_norm_workspace_elements(std::span<const int64_t> x_shape, const WeightNorm& p) {
  return detail::plan_weight_norm("weight_norm", x_shape, p).norms.workspace_elements();
}

Cost weight_norm_cost(std::span<const int64_t> x_shape, DType dtype, const WeightNorm& p) {
  const detail::WeightNormPlan plan = detail::plan_weight_norm("weight_norm_cost", x_shape, p);
  const auto numel = static_cast<double>(plan.norms.outputs * plan.norms.reduced);
  const auto n = static_cast<double>(plan.slices);
  return {4 * numel, (2 * numel + n) * static_cast<double>(dtype_size(dtype)) + 4 * n};
}

void weight_norm(const TensorRef& v, const TensorRef& g, const TensorRef& y, const TensorRef& norm,
                 const TensorRef* workspace, const WeightNorm& p, cudaStream_t stream) {
  constexpr std::string_view kOp = "weight_norm";
  const detail::WeightNormPlan plan =
      detail::validate_weight_norm(kOp, detail::Placement::device, v, g, y, norm, workspace, p);
  detail::launch_weight_norm(kOp, plan, v, g, y, norm, workspace, stream);
}

void vector_norm(const TensorRef& x, const TensorRef& y, const TensorRef* workspace, const VectorNorm& p,
                 cudaStream_t stream) {
  constexpr std::string_view kOp = "vector_norm";
  const detail::ReductionPlan plan = detail::validate_vector_norm(kOp, detail::Placement::device, x, y, workspace, p);
  detail::launch_vector_norm(kOp, plan, p.ord, x, y, workspace, stream);
}

}  // namespace solops
