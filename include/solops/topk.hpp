// TopkSelectorFwd (spec §5.1, §6.13): the key selection of DeepSeek-V3.2's sparse attention. For every
// query row (b, s) and kv group g, the topk key positions j with the highest index_score[b, s, j, g]
// among the row's window max(starts[b, s], 0) <= j < min(ends[b, s], S_kv), as int32 absolute
// positions in indexes[b, s, g, :].
//
// How the rules are decided (spec §5.1, §6.13), the same in the kernel and the reference:
// - Order: scores compare as floats (f16 and bf16 widened exactly to f32), with every NaN above
//   +inf, whatever its sign and payload, and -inf lowest; -0 and +0 are equal.
// - Ties: equal scores (NaNs among themselves, -0 and +0) rank by position, the lower first. The
//   selection is therefore one set, the same on every run and every device: the first topk of the
//   window in (score descending, position ascending) order.
// - Short windows: a window of count < topk positions (count 0 where end <= start) gives all of its
//   positions in the first count slots and -1 in the others.
// - Slot order: sorted = false gives the selected positions in ascending position order; sorted =
//   true in the order above (score descending, ties by position). Both are deterministic.
// Semantics and defaults: docs/api.md.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "solops/cost.hpp"
#include "solops/tensor.hpp"

namespace solops {

struct TopkSelector {
  int64_t topk = 0;     // 1 <= topk <= S_kv
  bool sorted = false;  // slots in (score descending, position ascending) order instead of by position
};

// [B, S, G, topk] of index_score [B, S, S_kv, G]. Checks the shape rule: index_score of rank 4 with no
// negative size, G >= 1, S_kv < 2^31 (positions are int32), 1 <= topk <= S_kv, and an output whose
// sizes multiply within int64.
std::vector<int64_t> topk_selector_output_shape(std::span<const int64_t> index_score_shape, const TopkSelector& p);

// Spec §5.1: one compare a score, B * S * S_kv * G flops; the scores read once, starts and ends
// (4 bytes a query row each) read once, the int32 indexes written once.
Cost topk_selector_cost(std::span<const int64_t> index_score_shape, DType dtype, const TopkSelector& p);

// index_score: f32, f16 or bf16 [B, S, S_kv, G], contiguous (G innermost). starts, ends: int32 [B, S],
// shared by every group, or null: 0 and S_kv. indexes: int32 [B, S, G, topk], apart from every input.
// Every offset into index_score is 64-bit. No allocation, no synchronisation: capturable in a CUDA graph.
void topk_selector(const TensorRef& index_score, const TensorRef* starts, const TensorRef* ends,
                   const TensorRef& indexes, const TopkSelector& p, cudaStream_t stream = nullptr);

namespace reference {

// The exact selection on host tensors, by the rules above (a comparison of the scores as the spec
// orders them, no key encoding): the executable specification of topk_selector.
void topk_selector(const TensorRef& index_score, const TensorRef* starts, const TensorRef* ends,
                   const TensorRef& indexes, const TopkSelector& p);

}  // namespace reference
}  // namespace solops
