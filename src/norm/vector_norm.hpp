// L1NormFwd and L2NormFwd (spec §2.22, 2.23), and WeightNormFwd (spec §2.20) whose norms are the same
// reduction: the plan shared by the entry points (vector_norm_rules.cpp), the CPU references
// (vector_norm_ref.cpp) and the kernels (vector_norm.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/check.hpp"
#include "solops/norm.hpp"

namespace solops::detail {

inline constexpr int kMaxRank = 8;

// Adjacent dims of one kind (kept or reduced) merged: at most four of each alternate in x. An
// element sits at kept_offset(o) + reduced_offset(r) for output o and reduced index r; the
// innermost reduced dim is the run a block walks, `inner` elements `inner_stride` apart.
struct ReductionPlan {
  std::vector<int64_t> output_shape;
  std::vector<bool> is_reduced;  // per dim of x
  int64_t outputs = 0;  // M: elements of the output
  int64_t reduced = 0;  // N: elements reduced into each output
  int kept_rank = 0, reduced_rank = 0;
  std::array<int64_t, kMaxRank> kept_sizes{}, kept_strides{}, reduced_sizes{}, reduced_strides{};
  int64_t inner = 1, inner_stride = 1;
  int64_t splits = 1;  // blocks (and f32 partial sums) per output; 1 needs no workspace
  int64_t chunk = 1;   // reduced elements a split covers (the last split may cover fewer)

  int64_t workspace_elements() const { return splits > 1 ? outputs * splits : 0; }
  // Whether each output's reduced elements are one contiguous run (a full reduction of x, or one
  // over its trailing dims): such reductions split into more, smaller chunks (plan_vector_norm).
  bool one_run_an_output() const { return reduced_rank <= 1 && inner_stride == 1; }
};

// The dims rule (in range, wrapped, no duplicates; none = all), ord 1 or 2, and the split of each
// output's reduction over blocks, a function of the shape alone (so the sum order, and the result,
// is the same on every run and every device).
ReductionPlan plan_vector_norm(std::string_view op, std::span<const int64_t> x_shape, const VectorNorm& p);

// Every check of a call: the plan; x a float tensor, y of x's dtype and the output shape; the
// workspace f32 with at least workspace_elements() elements (or absent when none are needed); y and
// the workspace apart from each other and from x.
ReductionPlan validate_vector_norm(std::string_view op, Placement placement, const TensorRef& x, const TensorRef& y,
                                   const TensorRef* workspace, const VectorNorm& p);

void launch_vector_norm(std::string_view op, const ReductionPlan& plan, int ord, const TensorRef& x,
                        const TensorRef& y, const TensorRef* workspace, cudaStream_t stream);

// WeightNorm as a vector norm over every dim but dim (every dim for dim = -1): `slices` = n outputs,
// x's element i belonging to slice (i / inner) % slices.
struct WeightNormPlan {
  ReductionPlan norms;
  int64_t slices = 1, inner = 1;
};

// The dim rule: dim in [0, rank) or -1 (PyTorch's whole tensor).
WeightNormPlan plan_weight_norm(std::string_view op, std::span<const int64_t> x_shape, const WeightNorm& p);

// Every check of a call: the plan; v a float tensor; g of v's dtype with `slices` elements along at
// most one dim; y of v's shape and dtype; norm f32 [slices]; the workspace as for vector_norm; no
// output overlapping another tensor of the call.
WeightNormPlan validate_weight_norm(std::string_view op, Placement placement, const TensorRef& v, const TensorRef& g,
                                    const TensorRef& y, const TensorRef& norm, const TensorRef* workspace,
                                    const WeightNorm& p);

void launch_weight_norm(std::string_view op, const WeightNormPlan& plan, const TensorRef& v, const TensorRef& g,
                        const TensorRef& y, const TensorRef& norm, const TensorRef* workspace, cudaStream_t stream);

}  // namespace solops::detail
