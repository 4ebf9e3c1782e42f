// TopkSelectorFwd (spec §5.1): what the entry points (topk_selector_rules.cpp), the CPU reference
// (topk_selector_ref.cpp) and the kernels (topk_selector.cu) share.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/check.hpp"
#include "solops/topk.hpp"

namespace solops::detail {

// index_score [B, S, S_kv, G] and the call's topk: B * S query rows of S_kv keys in G groups.
struct TopkGeometry {
  int64_t batch = 0, queries = 0, keys = 0, groups = 0, topk = 0;
};

// The shape rule: index_score of rank 4 with no negative size, G >= 1, S_kv < 2^31 (positions are
// int32), 1 <= topk <= S_kv. Since topk <= S_kv, the output [B, S, G, topk] has no more elements
// than index_score, whose sizes multiply within int64.
TopkGeometry resolve_topk_selector(std::string_view op, std::span<const int64_t> index_score_shape,
                                   const TopkSelector& p);

// The tensors of one call; starts and ends may be null.
struct TopkSelectorTensors {
  const TensorRef& index_score;
  const TensorRef* starts = nullptr;
  const TensorRef* ends = nullptr;
  const TensorRef& indexes;
};

// Every check of a call: index_score a float tensor, then the shape rule; starts and ends (where
// given) int32 [B, S]; indexes int32 [B, S, G, topk], overlapping no input.
TopkGeometry validate_topk_selector(std::string_view op, Placement placement, const TopkSelectorTensors& t,
                                    const TopkSelector& p);

void launch_topk_selector(std::string_view op, const TopkGeometry& geometry, const TopkSelectorTensors& t,
                          bool sorted, cudaStream_t stream);

}  // namespace solops::detail
