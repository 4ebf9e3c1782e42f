/* solops C ABI of the top-k family (spec §5); the shared types are in solops/c/common.h. */
#ifndef SOLOPS_C_TOPK_H
#define SOLOPS_C_TOPK_H

#include "solops/c/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TopkSelectorFwd: topk in [1, S_kv]; sorted = 0 gives the selected positions in ascending order,
 * sorted != 0 by score descending (ties: the lower position first). */
typedef struct {
  int64_t topk;
  int32_t sorted;
} solops_topk_selector_params;

/* TopkSelectorFwd (spec 5.1, 6.13): for every query row (b, s) and kv group g, the topk positions j of
 * the highest index_score[b, s, j, g] in the window max(starts[b, s], 0) <= j < min(ends[b, s], S_kv),
 * as SOLOPS_I32 indexes[b, s, g, :]; a window of count < topk positions pads with -1 after them. NaN
 * ranks above +inf, -0 ties +0, ties take the lower position: the selection is one set. index_score:
 * SOLOPS_F32, SOLOPS_F16 or SOLOPS_BF16 [B, S, S_kv, G], contiguous; starts and ends: SOLOPS_I32 [B, S]
 * or NULL (0 and S_kv); indexes [B, S, G, topk] (the output shape) overlaps no input. */
solops_status solops_topk_selector_output_shape(int32_t index_score_rank, const int64_t* index_score_shape,
                                                const solops_topk_selector_params* p, int32_t* out_rank,
                                                int64_t* out_shape);
solops_status solops_topk_selector(const solops_tensor* index_score, const solops_tensor* starts,
                                   const solops_tensor* ends, const solops_tensor* indexes,
                                   const solops_topk_selector_params* p, void* stream);
solops_status solops_reference_topk_selector(const solops_tensor* index_score, const solops_tensor* starts,
                                             const solops_tensor* ends, const solops_tensor* indexes,
                                             const solops_topk_selector_params* p);
solops_status solops_topk_selector_cost(int32_t index_score_rank, const int64_t* index_score_shape,
                                        int32_t index_score_dtype, const solops_topk_selector_params* p,
                                        solops_cost* cost);

#ifdef __cplusplus
}
#endif

#endif /* SOLOPS_C_TOPK_H */
