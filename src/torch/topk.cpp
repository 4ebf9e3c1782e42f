// The top-k family's PyTorch binding: torch.ops.solops.topk_selector (and its reference, shape and cost
// targets, binding.hpp), in the spec's argument order (index_score, starts, ends, topk) with sorted
// after them; starts and ends may be None (0 and S_kv).
#include "solops/reference.hpp"
#include "solops/topk.hpp"
#include "torch/binding.hpp"

namespace solops::torch_binding {
namespace {

template <Target kTarget>
auto topk_selector(const Tensor& index_score, const std::optional<Tensor>& starts, const std::optional<Tensor>& ends,
                   int64_t topk, bool sorted) {
  constexpr std::string_view kOp = "topk_selector";
  const TopkSelector p{topk, sorted};
  // index_score's dtype first, then the shape rule, then the op's checks: the order the fake keeps.
  const DType scores_dtype = dtype(index_score, kOp, "index_score");
  if constexpr (kTarget == Target::cost) {
    return cost_list(topk_selector_cost(sizes(index_score), scores_dtype, p));
  } else {
    const Call<kTarget> call(index_score);
    Tensor indexes = call.empty(topk_selector_output_shape(sizes(index_score), p), DType::i32);
    const TensorRef scores = view(index_score, kOp, "index_score"), out = view(indexes, kOp, "indexes");
    const auto starts_ref = view(starts, kOp, "starts"), ends_ref = view(ends, kOp, "ends");
    call.run(
        [&](cudaStream_t stream) {
          solops::topk_selector(scores, pointer(starts_ref), pointer(ends_ref), out, p, stream);
        },
        [&] { reference::topk_selector(scores, pointer(starts_ref), pointer(ends_ref), out, p); });
    return indexes;
  }
}

template <Target kTarget>
constexpr Op kTopkOps[] = {
    {"topk_selector", "(Tensor index_score, Tensor? starts, Tensor? ends, int topk, bool sorted=False)", "Tensor",
     TORCH_BOX(&topk_selector<kTarget>)},
};

}  // namespace
}  // namespace solops::torch_binding

SOLOPS_REGISTER_FAMILY(solops::torch_binding::kTopkOps)
